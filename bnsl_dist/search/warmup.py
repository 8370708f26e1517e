"""Compile, or load from numba's disk cache, the kernels a job needs before its clock
starts: a cache build of a toy data set per cache-building method and two iterations of
each optimizer on a toy cache, once per process.

The kernels are ``cache=True`` numba functions: a fresh process loads their machine code
in about half a second (more for the first call of each), which a timed stage would
otherwise pay. :func:`bnsl_dist.pipeline.tasks.within.learn_within` warms its stages here before it
splits its time limit; the Dask drivers do it in every worker
(:class:`bnsl_dist.orchestrate.workers.WarmupPlugin`).

Compiling them (a fresh environment, an upgrade: numba's disk cache is empty) takes tens
of seconds instead; :func:`compile_clock` measures that time, which a time limit does not
count (loading from the disk cache counts: it is the same on every run).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["AlgorithmSpec", "algorithm_spec", "warm_up", "CompileClock", "compile_clock",
           "COMPILING", "kernels_cached", "kernels_phase"]

#: What a command says while numba compiles its kernels (an empty disk cache).
COMPILING = ("compiling the numba kernels: once per machine (about a minute on 2 cores); "
             "later runs and local workers load them")

#: (algorithm name, canonical JSON of its parameters, k or None)
AlgorithmSpec = tuple[str, str, int | None]

_WARMED: set[Any] = set()  # per process: what is already warm


def algorithm_spec(algorithm: str, params: dict[str, Any] | str | None = None,
                   k: int | None = None) -> AlgorithmSpec:
    """Normalise an optimizer and its parameters for :func:`warm_up`."""
    p = json.loads(params) if isinstance(params, str) else dict(params or {})
    if "k" in p:
        k = p.pop("k")
    return (algorithm, json.dumps(p, sort_keys=True, default=str), None if k is None else int(k))


def _toy_cache() -> Any:
    """Six binary variables, their sequential cache up to two parents, and entropies."""
    import numpy as np

    from bnsl_dist.cache import build_cache
    from bnsl_dist.data.dataset import CategoricalData
    from bnsl_dist.scores.local import LocalScorer

    data = CategoricalData.from_array(np.random.default_rng(0).integers(0, 2, size=(200, 6)))
    cache = build_cache(data, method="sequential", max_indegree=2)
    cache.entropies = LocalScorer(data, "ll").entropies()
    return data, cache


def warm_up(cache_methods: Iterable[str] = (), algorithms: Iterable[AlgorithmSpec] = ()
            ) -> dict[str, str]:
    """Compile (or load from numba's disk cache) the kernels of these cache-building
    methods and optimizers, each once per process: a cache build of a toy data set per
    method, two iterations of each optimizer on a toy cache. Returns problems by name
    (never raises: the real run reports real errors)."""
    import numpy as np

    from bnsl_dist.search.base import Budget, make_optimizer, optimizer_stream

    todo_m = [m for m in cache_methods if ("method", m) not in _WARMED]
    todo_a = [a for a in algorithms if ("algorithm", a) not in _WARMED]
    if not todo_m and not todo_a:
        return {}
    problems: dict[str, str] = {}
    data, cache = _toy_cache()
    for method in todo_m:
        try:
            from bnsl_dist.cache import build_cache

            build_cache(data, method=method, scores_per_variable=20, max_indegree=2)
            _WARMED.add(("method", method))
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            problems[f"cache:{method}"] = f"{type(exc).__name__}: {exc}"
    for spec in todo_a:
        name, params_json, k = spec
        try:
            params = json.loads(params_json)
            if k is not None:
                params["k"] = min(k, data.n_vars - 1)
            opt = make_optimizer(name, **params)
            for _ in optimizer_stream(opt, cache, Budget(seconds=30.0, max_iterations=2),
                                      np.random.default_rng(0), data):
                pass
            _WARMED.add(("algorithm", spec))
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            problems[name] = f"{type(exc).__name__}: {exc}"
    return problems


def kernels_cached() -> bool:
    """Whether numba's disk cache holds this package's compiled kernels (the index file
    of a scoring kernel every job runs): False on a fresh install, a new numba or an
    emptied ``__pycache__`` / ``NUMBA_CACHE_DIR``, where :func:`warm_up` compiles."""
    import os

    from bnsl_dist.scores import _kernels

    try:
        kernel: Any = _kernels.family_score  # numba's own layout (0.5x-0.6x)
        index = kernel._cache._cache_file._index_path
    except AttributeError:  # another numba's layout: say nothing wrong, say "loading"
        return True
    return os.path.exists(index)


def kernels_phase() -> str:
    """The phase a command names before :func:`warm_up`: :data:`COMPILING`, or loading."""
    return "loading the numba kernels" if kernels_cached() else COMPILING


@dataclass
class CompileClock:
    """Seconds numba spent compiling inside a :func:`compile_clock` block (set when the
    block ends)."""

    seconds: float = 0.0


@contextmanager
def compile_clock() -> Iterator[CompileClock]:
    """Measure the time numba spends compiling in this process inside the block: its
    outermost ``numba:compile`` events (a kernel's callees compile inside its event).
    Loading machine code from numba's disk cache fires no such event, so a warm process
    reads 0."""
    from numba.core import event

    clock = CompileClock()
    with event.install_recorder("numba:compile") as rec:
        try:
            yield clock
        finally:
            depth, start, total = 0, 0.0, 0.0
            for ts, ev in rec.buffer:
                if ev.is_start:
                    if depth == 0:
                        start = ts
                    depth += 1
                elif depth > 0:
                    depth -= 1
                    if depth == 0:
                        total += ts - start
            clock.seconds = total
