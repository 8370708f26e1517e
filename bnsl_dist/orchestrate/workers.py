"""What every Dask driver shares: the numba warm-up worker plugin and task keys.

Every driver (``learn``'s search, the cache build, grids, SEM) calls
:func:`register_warmup` with the kernels *its* job needs (cache-building methods and
optimizers), before submitting timed work. The plugin runs in every worker process,
also in workers that join later, and remembers per process what it already warmed, so
a reused cluster (``--scheduler``, ``bnsl-dist cluster start``) warms each kernel once
per worker for its whole life. The kernels are ``cache=True`` numba functions: with a
shared ``NUMBA_CACHE_DIR`` (or the default ``__pycache__`` beside the package) workers
load the compiled code from disk instead of compiling it.

Task keys come from :func:`task_key` (``dask.base.tokenize`` of the arguments), so the
same work gets the same key and different work never collides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from dask.base import tokenize
from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["WarmupPlugin", "WarmupSpec", "register_warmup", "task_key", "warm_up"]

#: (algorithm name, canonical JSON of its parameters, k or None)
AlgorithmSpec = tuple[str, str, int | None]
WarmupSpec = tuple[tuple[str, ...], tuple[AlgorithmSpec, ...]]

_WARMED: set[Any] = set()  # per worker process: what is already warm


def task_key(prefix: str, *parts: Any) -> str:
    """``<prefix>-<tokenize(parts)>``: the one task-key helper of the orchestrate layer."""
    return f"{prefix}-{tokenize(*parts)}"


def algorithm_spec(algorithm: str, params: dict[str, Any] | str | None = None,
                   k: int | None = None) -> AlgorithmSpec:
    """Normalise an optimizer and its parameters for :func:`register_warmup`."""
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


class WarmupPlugin(WorkerPlugin):
    """Runs :func:`warm_up` in every worker process, now and in workers that join later;
    problems are kept in ``worker.bnsl_warmup_problems``. Idempotent: registering it
    again under its name (the same needs) does nothing."""

    idempotent = True

    def __init__(self, spec: WarmupSpec) -> None:
        self.spec = spec

    def setup(self, worker: Any) -> None:
        found = warm_up(*self.spec)
        worker.bnsl_warmup_problems = {**getattr(worker, "bnsl_warmup_problems", {}), **found}


def register_warmup(client: Any, *, cache_methods: Iterable[str] = (),
                    algorithms: Iterable[AlgorithmSpec] = ()) -> None:
    """Warm the kernels a job needs on every worker of ``client`` (blocks until the
    current workers are warm). Plugins are named by what they warm: registering the same
    needs twice is a no-op; workers joining later run every registered plugin."""
    spec: WarmupSpec = (tuple(sorted(set(cache_methods))),
                        tuple(sorted(set(algorithms), key=lambda a: (a[0], a[1], a[2] or 0))))
    if not spec[0] and not spec[1]:
        return
    client.register_plugin(WarmupPlugin(spec), name=task_key("bnsl-warmup", spec))
