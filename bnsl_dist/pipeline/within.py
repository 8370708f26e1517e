"""``learn --time-limit``: the whole run (cache, search, polishing) within one wall-clock
limit, and the seeds' runs merged into one result.

The seeds share one cache, built first in the cache's share of the limit
(:func:`explore_slice` over all the variables here, over one slice of them per worker on
Dask). Then each seed runs :func:`bnsl_dist.within.learn_within`'s search and polish
stages on it (:func:`run_in_time` with ``cache``), bounded by a shared absolute deadline
(``time.time()``), so runs that start later (a Dask task queued behind another) still end
in time. The best DAG over the seeds is reported (ties: the earlier seed). Serially the
seeds take equal shares of what the cache left (:func:`learn_in_time`);
:func:`bnsl_dist.orchestrate.within.learn_in_time_distributed` runs a task per slice, then
one per seed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.learn import SCHEMA_VERSION
from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.search.base import DEFAULT_ALGORITHM
from bnsl_dist.search.warmup import compile_clock, kernels_phase, warm_up
from bnsl_dist.within import (
    Progress,
    cache_from_lists,
    cache_share,
    explore_within,
    learn_within,
    stage_algorithms,
)

__all__ = ["run_in_time", "learn_in_time", "merge_in_time", "explore_slice", "shared_cache",
           "cache_deadline", "cache_stage", "check_time_limit"]

#: learn_within's options that the cache stage reads.
_CACHE_OPTIONS = ("max_indegree", "scores_per_variable", "candidate_limit",
                  "expand_dominated")


def check_time_limit(time_limit: float | None) -> None:
    """``time_limit`` is None or a positive, finite number of seconds (as
    :func:`~bnsl_dist.within.learn_within` requires): checked before the cache stage,
    where NaN would end every stage at once and infinity overflow.

    Raises
    ------
    InvalidConfigError
        Any other value.
    """
    if time_limit is not None and not (
            isinstance(time_limit, (int, float)) and not isinstance(time_limit, bool)
            and math.isfinite(time_limit) and time_limit > 0):
        raise InvalidConfigError(f"time_limit must be a positive number of seconds, "
                                 f"got {time_limit!r}")


def cache_deadline(deadline: float, options: Mapping[str, Any],
                   now: float | None = None) -> float:
    """When the shared cache stage ends (``time.time()``): its share of the time left
    until ``deadline`` (``options``' ``shares`` and ``polish``, as in learn_within)."""
    now = time.time() if now is None else now
    return now + max(0.0, deadline - now) * cache_share(options.get("shares"),
                                                       options.get("polish", True))


def explore_slice(data: CategoricalData, variables: Sequence[int], cache_end: float | None,
                  deadline: float | None, options: Mapping[str, Any],
                  on_variable: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Independence selection for ``variables`` (:func:`bnsl_dist.within.explore_within`)
    spread until ``cache_end``; variables reached after ``deadline`` get ∅ only (both
    ``time.time()``; None: bounded by ``options["scores_per_variable"]`` alone).
    ``on_variable(i)`` after the i-th variable explored. Plain data out (a Dask task)."""
    now = time.time()
    scorer = LocalScorer(data, str(options.get("score", "bic")), float(options.get("ess", 1.0)))
    kw = {k: options[k] for k in _CACHE_OPTIONS if k in options}
    t0 = time.perf_counter()
    lists, exact = explore_within(scorer, list(variables),
                                  None if cache_end is None else cache_end - now,
                                  cutoff=None if deadline is None else deadline - now,
                                  on_variable=on_variable, **kw)
    return {"variables": [int(v) for v in variables], "lists": lists,
            "exact_scores": int(exact), "seconds": time.perf_counter() - t0}


def shared_cache(data: CategoricalData, slices: Sequence[Mapping[str, Any]],
                 options: Mapping[str, Any]) -> ParentSetCache:
    """One cache from :func:`explore_slice`'s results, which together cover every variable
    once."""
    lists: list[Any] = [None] * data.n_vars
    for part in slices:
        for v, sets in zip(part["variables"], part["lists"], strict=True):
            lists[v] = sets
    missing = [v for v, sets in enumerate(lists) if sets is None]
    if missing:
        raise ValueError(f"no slice explored variables {missing[:10]}")
    return cache_from_lists(data, lists, str(options.get("score", "bic")),
                            float(options.get("ess", 1.0)),
                            sum(int(p["exact_scores"]) for p in slices))


def cache_stage(cache: ParentSetCache, seconds: float, slices: int) -> dict[str, Any]:
    """The result JSON's ``cache`` entry: the stage's seconds, the cache's exact scores
    (:func:`shared_cache` put them in its meta) and sets, and the slices that built it."""
    return {"seconds": float(seconds), "exact_scores": int(cache.meta["exact_scores"]),
            "n_sets": cache.n_sets, "slices": int(slices)}


def run_in_time(data: CategoricalData, deadline: float | None, base_seed: int, index: int,
                options: Mapping[str, Any],
                on_progress: Callable[[Progress], None] | None = None,
                cache: ParentSetCache | None = None) -> dict[str, Any]:
    """Seed ``index``'s :func:`learn_within` until the absolute ``deadline``
    (``time.time()``; None: the iteration caps of ``options`` alone), on ``cache`` if
    given; its stream is ``SeedSequence(base_seed).spawn(n)[index]``. Plain data out (a
    Dask task)."""
    rng = np.random.default_rng(np.random.SeedSequence(base_seed, spawn_key=(index,)))
    limit = None if deadline is None else max(1e-3, deadline - time.time())
    res = learn_within(data, limit, rng, on_progress=on_progress, cache=cache, **dict(options))
    return {"seed": [int(base_seed), int(index)], "score": float(res.score),
            "parents": [list(p) for p in res.dag.parents],
            "seconds": {k: float(v) for k, v in res.seconds.items()},
            "n_sets": int(res.cache.n_sets),
            "incumbents": [{"elapsed": float(i.elapsed), "score": float(i.score),
                            "stage": (i.info or {}).get("stage")}
                           for i in res.trace.incumbents]}


def learn_in_time(data: CategoricalData, time_limit: float | None, n_seeds: int = 1,
                  base_seed: int = 0, options: Mapping[str, Any] | None = None,
                  on_progress: Callable[[Progress], None] | None = None,
                  started: float | None = None,
                  on_cache: Callable[[ParentSetCache], None] | None = None
                  ) -> dict[str, Any]:
    """The seeds one after the other in this process, on one cache built first in its
    share of ``time_limit`` (counted from ``started``, a ``time.time()``, default now; the
    split of :func:`learn_within`; compiling the kernels is not counted), each seed an
    equal share of what is left.
    ``time_limit=None``: bounded by ``options``' caps (reproducible; the same result as
    on any number of Dask workers). ``on_cache`` gets the cache once built."""
    check_time_limit(time_limit)
    t0 = time.time() if started is None else started
    opts = dict(options or {})
    if on_progress is not None:  # a fresh machine compiles for a minute: say so first
        on_progress(Progress(kernels_phase(), 0, 0, None, time.time() - t0, None))
    with compile_clock() as compiled:  # not counted in the limit (README, learn_within)
        warm_up(cache_methods=("independence",), algorithms=stage_algorithms(
            str(opts.get("search", DEFAULT_ALGORITHM)), opts.get("search_params"),
            bool(opts.get("polish", True))))
    deadline = None if time_limit is None else t0 + float(time_limit) + compiled.seconds
    n = data.n_vars
    t_cache = time.time()

    def explored(i: int) -> None:
        if on_progress is not None:
            now = time.time()
            on_progress(Progress("cache", i, n, None, now - t0,
                                 None if deadline is None else max(0.0, deadline - now)))

    explored(0)  # the stage starts (the first report came after its first variable)
    part = explore_slice(data, range(n),
                         None if deadline is None else cache_deadline(deadline, opts),
                         deadline, opts, on_variable=explored)
    cache = shared_cache(data, [part], opts)
    if on_cache is not None:
        on_cache(cache)
    cache_info = cache_stage(cache, time.time() - t_cache, 1)
    runs = []
    for i in range(n_seeds):
        end = None if deadline is None else time.time() + (deadline - time.time()) / (n_seeds - i)
        runs.append(run_in_time(data, end, base_seed, i, opts, on_progress, cache))
    return merge_in_time(runs, data.names, time_limit=time_limit, options=opts,
                         wall=time.time() - t0, cache=cache_info,
                         compile_seconds=compiled.seconds)


def merge_in_time(runs: Sequence[dict[str, Any]], names: Sequence[str], *,
                  time_limit: float | None, options: Mapping[str, Any],
                  wall: float, cache: Mapping[str, Any], compile_seconds: float = 0.0
                  ) -> dict[str, Any]:
    """The result JSON of a time-limited learn (README "Result JSON", ``mode``
    "time-limit"): the best run's DAG and score, every run's stage times and trace, the
    shared cache's stage (``cache``, :func:`cache_stage`) and the seconds spent compiling
    numba kernels before the limit's clock ran (``compile_seconds``)."""
    from bnsl_dist.graph.dag import DAG

    best = max(range(len(runs)), key=lambda r: (runs[r]["score"], -r))
    dag = DAG.from_parents(runs[best]["parents"], list(names))
    return {"schema_version": SCHEMA_VERSION, "mode": "time-limit",
            "dag": dag.to_json_dict(), "score": runs[best]["score"],
            "best_seed": runs[best]["seed"],
            "time_limit": None if time_limit is None else float(time_limit),
            "wall_seconds": float(wall), "compile_seconds": float(compile_seconds),
            "options": dict(options), "cache": dict(cache),
            "runs": [{k: v for k, v in r.items() if k != "parents"} for r in runs],
            "provenance": provenance()}
