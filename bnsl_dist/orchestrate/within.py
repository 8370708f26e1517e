"""``learn --time-limit`` on Dask: the cache is built once, each worker thread exploring a
slice of the variables (:func:`~bnsl_dist.pipeline.within.explore_slice`) until the cache's
share of the limit ends, so each variable gets as many times the time of a one-process
run as there are threads; the cache is scattered once, then one
:func:`~bnsl_dist.pipeline.within.run_in_time` task per seed searches and polishes on it.
Every task is bounded by the same absolute deadline; the data are scattered once."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.orchestrate.workers import compiled_since, register_warmup, task_key
from bnsl_dist.pipeline.within import (
    cache_deadline,
    cache_stage,
    check_time_limit,
    explore_slice,
    merge_in_time,
    run_in_time,
    shared_cache,
)
from bnsl_dist.search.base import DEFAULT_ALGORITHM
from bnsl_dist.search.warmup import compile_clock
from bnsl_dist.within import Progress, stage_algorithms

__all__ = ["learn_in_time_distributed"]

def _seed_task(data: CategoricalData, deadline: float | None, base_seed: int, index: int,
               options: Mapping[str, Any], cache: ParentSetCache,
               topic: str | None) -> dict[str, Any]:
    """One seed's search and polish (:func:`run_in_time`) on a worker; each improvement of
    its best score is logged to the scheduler's ``topic`` for the client's live display
    (as many events as the seed's trace has incumbents)."""
    on_progress = None
    if topic is not None:
        from distributed import get_worker

        worker = get_worker()

        def on_progress(p: Progress) -> None:
            if p.best_score is not None:
                worker.log_event(topic, {"seed": index, "best": float(p.best_score)})

    return run_in_time(data, deadline, base_seed, index, options, on_progress, cache)


def _gather(client: Any, futures: list[Any], stage: str, t0: float, deadline: float | None,
            best: list[float], on_progress: Callable[[Progress], None] | None) -> Any:
    """The futures' results; meanwhile ``on_progress`` hears the stage, the best score the
    seeds reported and the time left, twice a second."""
    if on_progress is None:
        return client.gather(futures)
    from distributed import wait

    while True:
        now = time.time()
        on_progress(Progress(stage, 0, 0, max(best) if best else None, now - t0,
                             None if deadline is None else max(0.0, deadline - now)))
        try:
            wait(futures, timeout=0.5)
            break
        except TimeoutError:
            continue
    return client.gather(futures)


def learn_in_time_distributed(client: Any, data: CategoricalData, time_limit: float | None,
                              n_seeds: int, base_seed: int = 0,
                              options: Mapping[str, Any] | None = None,
                              started: float | None = None, margin: float = 0.0,
                              on_progress: Callable[[Progress], None] | None = None,
                              on_cache: Callable[[ParentSetCache], None] | None = None
                              ) -> dict[str, Any]:
    """The best of ``n_seeds`` time-limited runs on one cache built by every worker.

    ``time_limit`` counts from ``started`` (a ``time.time()``, e.g. when the command
    began, so the cluster's start is inside the limit; the workers' compiling of the
    kernels, an empty numba cache, is not) and ``margin`` seconds are kept
    for gathering. ``time_limit=None``: bounded by ``options``' caps
    (``scores_per_variable``, ``search_iterations``, ``polish_iterations``), and the
    result is the same as :func:`~bnsl_dist.pipeline.within.learn_in_time`'s serially.
    ``on_progress`` hears, twice a second, the stage, the best score the seeds reported
    and the time left; ``on_cache`` gets the cache.
    """
    check_time_limit(time_limit)
    t0 = time.time() if started is None else started
    opts = dict(options or {})
    polish = bool(opts.get("polish", True))
    w0 = time.time()
    with compile_clock() as here:  # an empty disk cache: the client compiles, workers load
        register_warmup(client, cache_methods=("independence",), algorithms=stage_algorithms(
            str(opts.get("search", DEFAULT_ALGORITHM)), opts.get("search_params"), polish))
    # compiling (an empty numba cache, here or on the workers) is not counted, as serially;
    # counting the client's (a cold first run: 24 s of a 10 s limit) left the cache stage
    # no time, and the result was the empty DAG
    compiled = min(time.time() - w0, max(here.seconds, compiled_since(client, w0)))
    deadline = None if time_limit is None else t0 + float(time_limit) - margin + compiled
    data_f = client.scatter(data, broadcast=True, hash=False)
    # what names this call's tasks: the scattered data's key is unique (hash=False), so
    # two calls on one scheduler (the same seed, no time limit) never share a task key,
    # which would hand one the other's results
    run = (data_f.key, base_seed, deadline, opts)
    info = client.scheduler_info().get("workers", {})
    # one slice per worker thread, pinned to it (a worker of t threads takes t slices)
    slots = [w for w in sorted(info) for _ in range(int(info[w].get("nthreads", 1)))] or [None]
    n = data.n_vars
    slices = [list(range(i, n, len(slots))) for i in range(min(len(slots), n))]
    t_cache = time.time()
    cache_end = None if deadline is None else cache_deadline(deadline, opts)
    parts = _gather(client, [
        client.submit(explore_slice, data_f, part, cache_end, deadline, opts,
                      key=task_key("within-cache", run, i),
                      workers=None if w is None else [w], allow_other_workers=True,
                      pure=False)
        for i, (part, w) in enumerate(zip(slices, slots, strict=False))],
        f"cache: {n} variables in {len(slices)} slices", t0, deadline, [], on_progress)
    cache = shared_cache(data, parts, opts)
    if on_cache is not None:
        on_cache(cache)
    cache_info = cache_stage(cache, time.time() - t_cache, len(slices))
    cache_f = client.scatter(cache, broadcast=True, hash=False)
    topic = None if on_progress is None else task_key("within-best", run)
    best: list[float] = []
    if topic is not None:
        client.subscribe_topic(topic, lambda event: best.append(float(event[1]["best"])))
    try:
        futures = [client.submit(_seed_task, data_f, deadline, base_seed, i, opts, cache_f,
                                 topic, key=task_key("within", run, i),
                                 pure=False)
                   for i in range(n_seeds)]
        runs = _gather(client, futures, f"search + polish: {n_seeds} seed(s) on "
                       f"{cache.n_sets} parent sets", t0, deadline, best, on_progress)
    finally:
        if topic is not None:
            client.unsubscribe_topic(topic)
    return merge_in_time(runs, data.names, time_limit=time_limit, options=opts,
                         wall=time.time() - t0, cache=cache_info, compile_seconds=compiled)
