"""Islands: one memetic search per seed, the searches exchanging their best orders.

Each seed's search (:class:`~bnsl_dist.search.ordering.memetic.MemeticSearch`, from the
seed's own generator) runs its budget in ``epochs`` equal parts (of its iterations or
seconds); after each part it sends its ``migrants`` best members to the next island
in a ring (island ``i`` to ``i + 1``, the last to the first), which offers them to its
population before its next part. A good order found on one island is thus recombined
on the others, instead of each seed searching alone; the ring keeps the islands apart
for a while (a member needs ``len(islands) - 1`` exchanges to reach every island).
While its population is not yet full an island sends all its members
(:meth:`~bnsl_dist.search.ordering.memetic.MemeticSearch.emigrants`): on large caches a
population fills slowly, one local search per sample, and the islands' samples together
fill each population sooner, so that recombination starts sooner.

An epoch ends with the first local search that ends past its bound, so that no local
search is cut short; the budget itself is kept as a search's (the last local search is
cut at the deadline). With an iteration budget the exchanges are barriers and the
result depends on the seeds only: :func:`run_islands` (here, one island after another)
and the same epochs on Dask (:mod:`bnsl_dist.orchestrate.islands`) give the same
result. With a budget in seconds an island's clock is its own here (the islands run
one after another, each its budget), and the wall clock since the islands started on
Dask, where an island goes on with the other's latest migrants without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import AnytimeTrace, Budget, Incumbent
from bnsl_dist.search.ordering.memetic import Memetic, MemeticSearch

__all__ = ["Epoch", "Island", "Member", "epoch_bounds", "run_epoch", "run_islands"]

#: A population member: (score, order, each variable's chosen set).
Member = tuple[float, NDArray[np.int64], NDArray[np.int64]]


@dataclass
class Island:
    """One seed's search between epochs, and the search seconds it has used (its own
    clock: the islands run one after another)."""

    search: MemeticSearch
    seconds: float = 0.0


@dataclass
class Epoch:
    """What an epoch gives: the island after it, its new incumbents (elapsed and
    iterations counted from the island's start), its migrants, and whether its budget
    is spent."""

    island: Island
    incumbents: list[Incumbent]
    migrants: list[Member]
    done: bool


def epoch_bounds(budget: Budget, epochs: int) -> list[tuple[int | None, float | None]]:
    """The end of each epoch: (iterations, seconds), equal parts of the budget in its
    unit (iterations when it has them); the last is the budget."""
    if epochs < 1:
        raise InvalidConfigError(f"epochs must be >= 1, got {epochs}")
    its, secs = budget.max_iterations, budget.seconds
    if its is not None:
        return [(its * (e + 1) // epochs, None) for e in range(epochs)]
    assert secs is not None
    return [(None, secs * (e + 1) / epochs) for e in range(epochs)]


def run_epoch(island: Island, cache: ParentSetCache, budget: Budget,
              incoming: Sequence[Member], until: tuple[int | None, float | None],
              migrants: int, origin: float | None = None) -> Epoch:
    """One epoch of ``island``: ``incoming`` offered to its population, then its search
    advanced to ``until`` (:func:`epoch_bounds`) within ``budget``. Its clock: the
    island's own seconds, or with ``origin`` (a ``time.time()``) the wall clock since
    then. The island is advanced in place (on Dask, a copy of it)."""
    search = island.search
    search.immigrate(list(incoming))
    elapsed = island.seconds if origin is None else time.time() - origin
    watch = budget.stopwatch().resume(search.iterations, elapsed)
    incs = list(search.advance(cache, watch, until_iterations=until[0],
                               until_seconds=until[1]))
    island.seconds = watch.elapsed()
    return Epoch(island, incs, search.emigrants(migrants), watch.done())


def run_islands(params: Memetic, cache: ParentSetCache, budget: Budget,
                rngs: Sequence[np.random.Generator], *, epochs: int,
                migrants: int) -> list[AnytimeTrace]:
    """Every island's run, one island after another, epoch by epoch (see the module
    docstring); each island's trace as :class:`~bnsl_dist.search.base.AnytimeTrace`
    (its incumbents, iterations and seconds)."""
    islands = [Island(MemeticSearch(params, rng)) for rng in rngs]
    traces = [AnytimeTrace() for _ in islands]
    incoming: list[list[Member]] = [[] for _ in islands]
    for until in epoch_bounds(budget, epochs):
        done = [run_epoch(isl, cache, budget, incoming[i], until, migrants)
                for i, isl in enumerate(islands)]
        for i, ep in enumerate(done):
            islands[i] = ep.island
            traces[i].incumbents += ep.incumbents
        incoming = ring([ep.migrants for ep in done])
    for tr, isl in zip(traces, islands, strict=True):
        tr.total_iterations, tr.total_seconds = isl.search.iterations, isl.seconds
    return traces


def ring(sent: Sequence[list[Member]]) -> list[list[Member]]:
    """What each island receives: the migrants of the island before it (none when
    alone)."""
    if len(sent) < 2:
        return [[] for _ in sent]
    return [list(sent[i - 1]) for i in range(len(sent))]
