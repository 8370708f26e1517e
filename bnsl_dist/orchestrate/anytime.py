"""Per-seed anytime search on Dask, reduced per checkpoint budget.

One task per seed runs the optimizer for the whole budget (budgets are enforced inside
the task) and returns its trace as plain data; the reduce takes, at each checkpoint
budget, the best DAG over all seeds. Seeds are ``SeedSequence(base_seed).spawn(K)``
children (or an explicit list of integers), so with an iteration budget the result
is the same as a serial run, whatever the number of workers.

The cache reaches the workers once: a ``.jkl`` path is read by one task whose key is
a hash of the file's path, size and modification time (recoverable if a worker dies);
an in-memory cache is scattered.

Output (:func:`search_distributed`, :func:`search_serial`) — JSON-ready::

    {"algorithm", "params", "budget": {"seconds", "max_iterations"},
     "unit": "seconds" | "iterations", "seeds": [...],
     "best": {"score", "dag", "seed", "elapsed", "iterations", "bound"},
     "checkpoints": [{"budget", "score", "seed", "dag"}, ...],
     "runs": [{"seed", "iterations", "seconds", "incumbents": [...]}, ...]}

``dag`` values are the project's DAG JSON. A checkpoint with no incumbent yet has
``score`` and ``dag`` None.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.search.base import (
    DEFAULT_CHECKPOINTS,
    AnytimeTrace,
    Budget,
    Incumbent,
    make_optimizer,
)

__all__ = ["search_distributed", "search_serial", "run_seed", "reduce_runs", "seed_streams",
           "iteration_checkpoints", "drain", "DEFAULT_CHECKPOINTS"]

SeedSpec = int | np.random.SeedSequence


def seed_streams(seeds: int | Sequence[int], base_seed: int = 0) -> list[SeedSpec]:
    """K independent streams (``SeedSequence(base_seed).spawn(K)``) or the given ints."""
    if isinstance(seeds, int | np.integer):
        k = int(seeds)
        if k < 1:
            raise InvalidConfigError(f"seeds must be >= 1, got {k}")
        return list(np.random.SeedSequence(int(base_seed)).spawn(k))
    out = [int(s) for s in seeds]
    if not out:
        raise InvalidConfigError("an empty list of seeds")
    if len(set(out)) != len(out):
        raise InvalidConfigError("seeds listed twice")
    return list(out)


def _seed_label(s: SeedSpec) -> int | list[int]:
    if isinstance(s, np.random.SeedSequence):
        return [int(s.entropy), *(int(k) for k in s.spawn_key)]  # type: ignore[arg-type]
    return int(s)


def drain(stream: Iterator[Incumbent]) -> AnytimeTrace:
    """Collect an optimizer's stream, doing nothing else while it runs (its iteration
    count is the generator's return value when it gives one)."""
    return AnytimeTrace.collect(stream)


def run_seed(cache: ParentSetCache, algorithm: str, params: dict[str, Any], budget: Budget,
             seed: SeedSpec) -> dict[str, Any]:
    """Run one optimizer for the whole budget; its trace as plain data (a Dask task)."""
    opt = make_optimizer(algorithm, **params)
    rng = np.random.default_rng(seed)
    trace = drain(opt.run(cache, budget, rng))
    return {"seed": _seed_label(seed),
            "iterations": trace.total_iterations,
            "seconds": trace.total_seconds,
            "incumbents": [{"elapsed": float(i.elapsed), "score": float(i.score),
                            "iterations": int(i.iterations),
                            "bound": None if i.bound is None else float(i.bound),
                            "parents": [list(p) for p in i.dag.parents]}
                           for i in trace.incumbents]}


def iteration_checkpoints(max_iterations: int) -> list[int]:
    """1, 10, 100, ... below ``max_iterations``, then ``max_iterations``."""
    out = []
    c = 1
    while c < max_iterations:
        out.append(c)
        c *= 10
    out.append(int(max_iterations))
    return out


def _checkpoints(budget: Budget, checkpoints: Sequence[float] | None
                 ) -> tuple[str, list[float]]:
    if budget.seconds is not None:
        cps = [float(c) for c in (checkpoints or DEFAULT_CHECKPOINTS) if c < budget.seconds]
        return "seconds", sorted(set(cps)) + [float(budget.seconds)]
    if budget.max_iterations is None:  # pragma: no cover - Budget forbids it
        raise InvalidConfigError("a budget needs seconds or max_iterations")
    if checkpoints is None or tuple(checkpoints) == DEFAULT_CHECKPOINTS:
        return "iterations", [float(c) for c in iteration_checkpoints(budget.max_iterations)]
    cps = [float(c) for c in checkpoints if c < budget.max_iterations]
    return "iterations", sorted(set(cps)) + [float(budget.max_iterations)]


def reduce_runs(runs: Sequence[dict[str, Any]], names: Sequence[str], *, algorithm: str,
                params: dict[str, Any], budget: Budget,
                checkpoints: Sequence[float] | None = DEFAULT_CHECKPOINTS) -> dict[str, Any]:
    """The best DAG over seeds at each checkpoint budget (ties: the earlier seed)."""
    unit, cps = _checkpoints(budget, checkpoints)
    key = "elapsed" if unit == "seconds" else "iterations"

    def best_within(limit: float) -> tuple[int, dict[str, Any]] | None:
        found: tuple[int, dict[str, Any]] | None = None
        for r, run in enumerate(runs):
            for inc in run["incumbents"]:
                if inc[key] <= limit and (found is None or inc["score"] > found[1]["score"]):
                    found = (r, inc)
        return found

    def dag_json(inc: dict[str, Any]) -> dict[str, Any]:
        return DAG.from_parents(inc["parents"], names).to_json_dict()

    rows = []
    for c in cps:
        hit = best_within(c)
        rows.append({"budget": c, "score": None if hit is None else hit[1]["score"],
                     "seed": None if hit is None else runs[hit[0]]["seed"],
                     "dag": None if hit is None else dag_json(hit[1])})
    top = best_within(float("inf"))
    best = None
    if top is not None:
        r, inc = top
        best = {"score": inc["score"], "dag": dag_json(inc), "seed": runs[r]["seed"],
                "elapsed": inc["elapsed"], "iterations": inc["iterations"],
                "bound": inc["bound"]}
    return {"algorithm": algorithm, "params": dict(params),
            "budget": {"seconds": budget.seconds, "max_iterations": budget.max_iterations},
            "unit": unit, "seeds": [run["seed"] for run in runs], "best": best,
            "checkpoints": rows,
            "runs": [{"seed": run["seed"], "iterations": run["iterations"],
                      "seconds": run["seconds"],
                      "incumbents": [{k: v for k, v in inc.items() if k != "parents"}
                                     for inc in run["incumbents"]]} for run in runs]}


def _validate(algorithm: str, params: dict[str, Any]) -> None:
    make_optimizer(algorithm, **params)  # unknown names / parameters fail here, early


def search_serial(cache: ParentSetCache, algorithm: str, params: dict[str, Any] | None,
                  budget: Budget, seeds: int | Sequence[int], *, base_seed: int = 0,
                  checkpoints: Sequence[float] | None = DEFAULT_CHECKPOINTS
                  ) -> dict[str, Any]:
    """:func:`search_distributed` without Dask: the seeds one after the other."""
    params = dict(params or {})
    _validate(algorithm, params)
    runs = [run_seed(cache, algorithm, params, budget, s)
            for s in seed_streams(seeds, base_seed)]
    return reduce_runs(runs, cache.names, algorithm=algorithm, params=params, budget=budget,
                       checkpoints=checkpoints)


def _load_jkl(path: str) -> ParentSetCache:
    from bnsl_dist.cache import read_jkl

    return read_jkl(path)


def _file_key(path: Path) -> str:
    from bnsl_dist.orchestrate.workers import task_key

    st = path.stat()
    return task_key("load-cache", str(path.resolve()), st.st_size, st.st_mtime_ns)


def _warm_workers(client: Any, algorithm: str, params: dict[str, Any]) -> None:
    """Load the optimizer's numba kernels in every worker before the timed runs, so
    compilation (or loading numba's disk cache) never counts against a budget."""
    from bnsl_dist.orchestrate.workers import algorithm_spec, register_warmup

    try:
        spec = algorithm_spec(algorithm, params)
    except (TypeError, ValueError):
        return  # parameters that are not plain JSON: skip the warm-up, not the run
    register_warmup(client, algorithms=[spec])


def search_distributed(client: Any, cache: ParentSetCache | str | os.PathLike[str],
                       algorithm: str, params: dict[str, Any] | None, budget: Budget,
                       seeds: int | Sequence[int], *, base_seed: int = 0,
                       checkpoints: Sequence[float] | None = DEFAULT_CHECKPOINTS
                       ) -> dict[str, Any]:
    """One Dask task per seed, each running ``algorithm`` for the whole ``budget``.

    Parameters
    ----------
    client : distributed.Client
    cache : ParentSetCache or path of a ``.jkl`` / ``.jkl.gz`` file
    algorithm, params : a registered optimizer name and its keyword parameters
    budget : Budget — per seed (every task gets all of it)
    seeds : int (K streams spawned from ``base_seed``) or a list of integer seeds
    checkpoints : budgets (seconds, or iterations for an iteration budget) at which the
        best DAG over seeds is reported; the budget itself is always the last one.

    Returns
    -------
    dict — see the module docstring; equal to :func:`search_serial`'s result except
    for measured times.
    """
    from bnsl_dist.orchestrate.workers import task_key

    params = dict(params or {})
    _validate(algorithm, params)
    _warm_workers(client, algorithm, params)
    streams = seed_streams(seeds, base_seed)
    if isinstance(cache, ParentSetCache):
        names = cache.names
        cache_f = client.scatter(cache, broadcast=False)
    else:
        path = Path(cache)
        if not path.is_file():
            raise InvalidConfigError(f"{path}: no such cache file")
        local = _load_jkl(str(path))  # validates here, with a clear error
        names = local.names
        cache_f = client.submit(_load_jkl, str(path), key=_file_key(path), pure=False)
    futures = [client.submit(run_seed, cache_f, algorithm, params, budget, s,
                             key=task_key(f"search-{algorithm}", cache_f.key, params, budget,
                                          _seed_label(s), i), pure=False)
               for i, s in enumerate(streams)]
    runs = client.gather(futures)
    return reduce_runs(runs, names, algorithm=algorithm, params=params, budget=budget,
                       checkpoints=checkpoints)
