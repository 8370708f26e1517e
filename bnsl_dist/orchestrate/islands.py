"""The islands of :mod:`bnsl_dist.search.ordering.islands` on Dask: island ``i`` on
worker ``i`` (modulo the workers), each epoch a task
(:func:`~bnsl_dist.search.ordering.islands.run_epoch`) whose island comes back to the
client with its migrants, the cache scattered once.

With an iteration budget every epoch ends at a barrier and each island gets the
migrants of the same epoch as :func:`~bnsl_dist.search.ordering.islands.run_islands`
gives it: the same result. With a budget in seconds the clock is the wall clock since
the first epochs were submitted, and an island goes on as soon as its epoch ends, with
the latest migrants of the island before it. Before the clock starts the workers are
started, their kernels loaded, and what a search derives from the cache derived on each
(:func:`~bnsl_dist.search.ordering.memetic.prepare`), as a one-core run's warm-up does
before its own clock.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from distributed import as_completed

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.orchestrate.workers import task_key
from bnsl_dist.search.base import AnytimeTrace, Budget
from bnsl_dist.search.ordering.islands import (
    Island,
    Member,
    epoch_bounds,
    ring,
    run_epoch,
)
from bnsl_dist.search.ordering.memetic import Memetic, MemeticSearch, prepare

__all__ = ["islands_runner"]


def islands_runner(client: Any) -> Any:
    """:func:`~bnsl_dist.search.ordering.islands.run_islands` on ``client``'s workers."""

    def run(params: Memetic, cache: ParentSetCache, budget: Budget,
            rngs: Sequence[np.random.Generator], *, epochs: int,
            migrants: int) -> list[AnytimeTrace]:
        return run_islands_distributed(client, params, cache, budget, rngs,
                                       epochs=epochs, migrants=migrants)

    return run


def run_islands_distributed(client: Any, params: Memetic, cache: ParentSetCache,
                            budget: Budget, rngs: Sequence[np.random.Generator], *,
                            epochs: int, migrants: int) -> list[AnytimeTrace]:
    """Each island's trace, as :func:`~bnsl_dist.search.ordering.islands.run_islands`
    gives it (see the module docstring)."""
    workers = sorted(client.scheduler_info()["workers"])
    shared = client.scatter(cache, broadcast=True)
    islands = [Island(MemeticSearch(params, rng)) for rng in rngs]
    traces = [AnytimeTrace() for _ in islands]
    bounds = epoch_bounds(budget, epochs)
    tag = task_key("islands", time.time_ns())
    # what every epoch reads from the cache, derived on each worker before the clock
    client.gather([client.submit(prepare, shared, workers=[w], key=f"{tag}-prepare-{w}",
                                 pure=False) for w in workers[:len(islands)]])

    def submit(i: int, e: int, incoming: list[Member], origin: float | None) -> Any:
        return client.submit(run_epoch, islands[i], shared, budget, incoming, bounds[e],
                             migrants, origin, workers=[workers[i % len(workers)]],
                             key=f"{tag}-{i}-{e}", pure=False)

    if budget.max_iterations is not None:  # barriers: run_islands's result
        incoming: list[list[Member]] = [[] for _ in islands]
        for e in range(len(bounds)):
            done = client.gather([submit(i, e, incoming[i], None)
                                  for i in range(len(islands))])
            for i, ep in enumerate(done):
                islands[i] = ep.island
                traces[i].incumbents += ep.incumbents
            incoming = ring([ep.migrants for ep in done])
    else:
        origin = time.time()
        latest: list[list[Member]] = [[] for _ in islands]
        at = [0] * len(islands)
        futures = {submit(i, 0, [], origin): i for i in range(len(islands))}
        pending = as_completed(list(futures))
        for fut in pending:
            i = futures.pop(fut)
            ep = fut.result()
            islands[i] = ep.island
            traces[i].incumbents += ep.incumbents
            latest[i] = ep.migrants
            # the next epoch that ends ahead (a long local search may pass several)
            at[i] = next((e for e in range(at[i] + 1, len(bounds))
                          if (bounds[e][1] or 0.0) > ep.island.seconds), len(bounds))
            if not ep.done and at[i] < len(bounds):
                nxt = submit(i, at[i], latest[i - 1] if len(islands) > 1 else [], origin)
                futures[nxt] = i
                pending.add(nxt)
    for tr, isl in zip(traces, islands, strict=True):
        tr.total_iterations, tr.total_seconds = isl.search.iterations, isl.seconds
    return traces
