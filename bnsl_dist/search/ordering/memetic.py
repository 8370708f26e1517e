"""Memetic search over orders: a population of locally optimal orders, recombined.

Every order the search evaluates goes through the same local search, Win-ASOBS's: an
ASOBS pass (acyclic back-arcs), adjacent swaps from a topological order of its DAG,
then the window search (blocks of up to ``max_window`` variables moved step by step,
the families updated incrementally; :mod:`~bnsl_dist.search.ordering.asobs`). The
orders it starts from are, first, ASOBS-ENT's entropy-weighted samples until the
population holds ``population`` distinct local optima (on large caches, see below, a
share of them children already); then children of the population:

- with probability ``crossover``, an order crossover of two parents, each the better of
  two members drawn at random: a random segment of the first parent is kept in place
  and the other variables follow the second parent's relative order, so that runs of
  well-placed variables survive (Lee & van Beek 2017 recombine locally optimal orders
  the same way);
- else a mutation of one parent: with probability ``shuffle``, a neighbourhood
  reordered: up to ``cluster`` variables (at least 3, the number drawn at random), those
  nearest a variable drawn in proportion to its degree in the skeleton of the parent's
  DAG, put back in the
  positions they hold in a random order or reversed. A cluster of tightly linked
  variables is thus reoriented at once: on sparse caches (msweb's) the local optima the
  population converges to differ from better ones by the orientation of such a cluster
  of 10-15 variables, which neither the window search's blocks of up to 5 nor a few
  random moves reach. Otherwise ``mutation``·n variables (at least 2) moved to random
  positions, a kick larger than one move of the local search.

A child's local optimum replaces the worst member when it is better and its score is
not already in the population (distinct scores keep the population diverse). After
``restart`` children in a row without a new best, the population keeps its best
``keep`` members and is filled again from fresh samples (on large caches, from samples
and children: ``grow``).

On large caches (more than ``SHORT_WALKS_FROM`` variables) a local search takes
seconds and samples alone would fill the population only after most of a minute (the
search being Win-ASOBS-ENT until then): there, once the population holds two members,
a share ``grow`` of the children are new samples and the others are bred, until it is
full; the population grows with every child's local optimum meanwhile.

One iteration is one local search (of a sample or of a child); incumbents are yielded
whenever the local search passes the best so far, with the iteration they come from.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Generator

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, Stopwatch, register
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering import _memetic_kernels as MK
from bnsl_dist.search.ordering.asobs import SEARCH_FROM, WindowIndex, window_index, window_refine
from bnsl_dist.search.ordering.obs import (
    ObsMasks,
    _clock,
    _ClosurePick,
    _incumbent,
    exact_total,
    obs_masks,
)
from bnsl_dist.search.ordering.samplers import entropy_orders, entropy_weights

__all__ = ["Memetic", "MemeticSearch", "SHORT_WALKS_FROM", "prepare"]

#: Above this many variables the window search walks short first (``Memetic(reach=)``);
#: below (plants, dna, book, msweb: ahead of MINOBS already) the search is unchanged.
SHORT_WALKS_FROM = 512


class _Population:
    """Locally optimal orders and their scores; at most ``size``, distinct scores."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.orders: list[NDArray[np.int64]] = []
        self.chosen: list[NDArray[np.int64]] = []
        self.scores: list[float] = []

    def full(self) -> bool:
        return len(self.orders) >= self.size

    def offer(self, score: float, order: NDArray[np.int64],
              chosen: NDArray[np.int64]) -> None:
        tol = 1e-9 * max(1.0, abs(score))
        if any(abs(score - s) <= tol for s in self.scores):
            return
        if not self.full():
            self.orders.append(order.copy())
            self.chosen.append(chosen.copy())
            self.scores.append(score)
            return
        worst = int(np.argmin(self.scores))
        if score > self.scores[worst]:
            self.orders[worst] = order.copy()
            self.chosen[worst] = chosen.copy()
            self.scores[worst] = score

    def keep_best(self, keep: int) -> None:
        top = np.argsort(self.scores, kind="stable")[::-1][:keep]
        self.orders = [self.orders[i] for i in top]
        self.chosen = [self.chosen[i] for i in top]
        self.scores = [self.scores[i] for i in top]

    def pick(self, rng: np.random.Generator) -> int:
        """The better of two members drawn at random (binary tournament)."""
        i: int
        j: int
        i, j = rng.integers(len(self.orders), size=2)
        return int(i if self.scores[i] >= self.scores[j] else j)


@register("memetic")
class Memetic:
    """Memetic search: a population of Win-ASOBS local optima, order crossover and
    mutation (see the module docstring).

    Parameters
    ----------
    population : int
        Distinct local optima kept.
    crossover : float
        Probability that a child is a crossover (else a mutation).
    mutation : float
        Share of the variables a mutation moves (at least 2).
    restart : int
        Children in a row without a new best before the population is renewed.
    keep : int
        Members kept at a renewal.
    max_window : int
        Largest block moved by the window search.
    high_entropy : {"last", "first"}
        Direction of the entropy-weighted samples (as ASOBS-ENT's).
    shuffle : float
        Probability that a mutation reorders a neighbourhood (else it moves variables).
    cluster : int
        Largest neighbourhood a mutation reorders (at least 3).
    epochs : int
        Several seeds searched together (``learn --seeds N``): parts of the budget
        after each of which every seed's search sends its ``migrants`` best members to
        the next's (:mod:`~bnsl_dist.search.ordering.islands`); 0: the seeds search
        alone. One seed's run does not depend on it.
    migrants : int
        Best members sent at each exchange (all of them while the population is not
        full).
    reach : int
        On caches of more than ``SHORT_WALKS_FROM`` variables, the window search first walks
        each block at most ``reach`` steps each way until no such move improves, and
        only then to the ends of the order (0: to the ends from the start). Most of
        the gain of a sample's first window search lies within a few positions, and a
        walk over 900 positions costs 30 times one over 32: on c20ng (910 variables) a
        sample's first window search does not end within 10 s, but its short walks do.
        8 rather than 32: medians of 5 seeds better on c20ng, cwebkb and ad at 10 s and
        on cwebkb and ad at 60 s (``workflows/results/benchmarks/memetic_reach8.md``).
        Against full walks again once the window search was 2.4-7.9 times faster: no
        consistent sign on the three caches (``memetic_reach_head.md``).
    grow : float
        On caches of more than ``SHORT_WALKS_FROM`` variables, the share of children
        that are new samples while the population holds 2 members or more but is not
        full; the others are bred from it (1: samples until it is full). A local search
        there takes seconds, and a population of 20 filled by samples alone fills after
        most of a minute (cwebkb at about 50 s, c20ng not within 60 s): the search would
        be restarts until then. 0.5 against 1, seeds 0-2 at 60 s: c20ng +303, +156,
        +44; cwebkb +87, +45, +54; ad +25, +82, -2; at 10 s -24 to +87, 4 of 9 equal
        (``workflows/results/benchmarks/memetic_grow.md``).

    References
    ----------
    C. Lee, P. van Beek, "Metaheuristics for score-and-search Bayesian network structure
    learning", Canadian AI 2017 (memetic search over orders, MINOBS); M. Scanagatta,
    G. Corani, M. Zaffalon, "Improved local search in Bayesian networks structure
    learning", AMBN 2017 (window local search); M. Scanagatta et al., NIPS 2015
    (ASOBS).
    """

    name = "memetic"
    exact = False

    def __init__(self, *, population: int = 20, crossover: float = 0.5,
                 mutation: float = 0.02, restart: int = 200, keep: int = 4,
                 max_window: int = 5, high_entropy: str = "last", shuffle: float = 0.5,
                 cluster: int = 16, epochs: int = 10, migrants: int = 2,
                 reach: int = 8, grow: float = 0.5) -> None:
        self.population = population
        self.crossover = crossover
        self.mutation = mutation
        self.restart = restart
        self.keep = keep
        self.max_window = max_window
        self.high_entropy = high_entropy
        self.shuffle = shuffle
        self.cluster = cluster
        self.epochs = epochs
        self.migrants = migrants
        self.reach = reach
        self.grow = grow
        self._check()

    def _check(self) -> None:
        if int(self.population) < 2:
            raise InvalidConfigError("memetic: population must be >= 2")
        if not 0.0 <= float(self.crossover) <= 1.0:
            raise InvalidConfigError("memetic: crossover must be in [0, 1]")
        if not 0.0 <= float(self.mutation) <= 1.0:
            raise InvalidConfigError("memetic: mutation must be in [0, 1]")
        if int(self.restart) < 1:
            raise InvalidConfigError("memetic: restart must be >= 1")
        if not 1 <= int(self.keep) <= int(self.population):
            raise InvalidConfigError("memetic: keep must be in [1, population]")
        if not 0.0 <= float(self.grow) <= 1.0:
            raise InvalidConfigError("memetic: grow must be in [0, 1]")
        if int(self.max_window) < 1:
            raise InvalidConfigError("memetic: max_window must be >= 1")
        if not 0.0 <= float(self.shuffle) <= 1.0:
            raise InvalidConfigError("memetic: shuffle must be in [0, 1]")
        if int(self.cluster) < 3:
            raise InvalidConfigError("memetic: cluster must be >= 3")
        if int(self.epochs) < 0:
            raise InvalidConfigError("memetic: epochs must be >= 0")
        if not 1 <= int(self.migrants) <= int(self.population):
            raise InvalidConfigError("memetic: migrants must be in [1, population]")
        if int(self.reach) < 0:
            raise InvalidConfigError("memetic: reach must be >= 0")
        if self.high_entropy not in ("first", "last"):
            raise InvalidConfigError(f"memetic: high_entropy must be 'first' or 'last', "
                                     f"got {self.high_entropy!r}")

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield improving incumbents; return the number of local searches run."""
        search = MemeticSearch(self, rng)
        yield from search.advance(cache, budget.stopwatch())
        return search.iterations


#: What a search derives from a cache, per cache: an island's epochs on a worker (the
#: scattered cache stays there) do not derive it again (0.15 s on cwebkb).
_Setup = tuple[NDArray[np.float64], ObsMasks, WindowIndex, int]
_SETUPS: weakref.WeakKeyDictionary[ParentSetCache, _Setup] = weakref.WeakKeyDictionary()


def _derive(cache: ParentSetCache) -> _Setup:
    """The entropy weights, OBS masks, window search index and largest set size."""
    fc = cache.flat
    return (entropy_weights(cache, None)[0], obs_masks(fc), window_index(fc),
            int(fc.sizes.max()) if fc.sizes.size else 0)


def _setup(cache: ParentSetCache) -> _Setup:
    """:func:`_derive`'s arrays, derived once per cache object (in this process)."""
    out = _SETUPS.get(cache)
    if out is None:
        out = _SETUPS[cache] = _derive(cache)
    return out


def prepare(cache: ParentSetCache) -> None:
    """Derive now, once per cache object in this process, what every search of
    ``cache`` reads from it (its flat arrays, the samplers' weights, the ASOBS masks,
    the window search's index): a search started later does not. The
    islands on Dask call it on each worker before their clock starts, as a one-core
    run's warm-up derives it before its own."""
    _setup(cache)


class MemeticSearch:
    """One memetic search's state (population, generator, best, stall count,
    iterations), advanced by :meth:`advance` in one go or in epochs (an epoch ends
    with the first local search that ends past its bound), between which members may
    be exchanged with other searches (:meth:`emigrants`, :meth:`immigrate`: the
    islands of :mod:`~bnsl_dist.search.ordering.islands`). Picklable."""

    def __init__(self, params: Memetic, rng: np.random.Generator) -> None:
        params._check()
        self.params = params
        self.rng = rng
        self.pop = _Population(int(params.population))
        self.best = -np.inf
        self.stall = 0
        self.iterations = 0
        self.pick: _ClosurePick | None = None  # kept between epochs (its timings)

    def emigrants(self, k: int) -> list[tuple[float, NDArray[np.int64], NDArray[np.int64]]]:
        """The ``k`` best members, or all of them while the population is not full:
        (score, order, chosen sets). Islands whose populations are still filling thus
        fill each other's, and recombine sooner."""
        if not self.pop.full():
            k = len(self.pop.scores)
        top = np.argsort(self.pop.scores, kind="stable")[::-1][:k]
        return [(self.pop.scores[i], self.pop.orders[i], self.pop.chosen[i]) for i in top]

    def immigrate(self, members: list[tuple[float, NDArray[np.int64],
                                             NDArray[np.int64]]]) -> None:
        """Offer another search's members to the population (the best found here is
        this search's own, not theirs)."""
        for score, order, chosen in members:
            self.pop.offer(score, order, chosen)

    def advance(self, cache: ParentSetCache, watch: Stopwatch, *,
                until_iterations: int | None = None, until_seconds: float | None = None
                ) -> Generator[Incumbent, None, None]:
        """Local searches until ``watch`` is done, or (an epoch) until the iterations
        reach ``until_iterations`` or the elapsed seconds ``until_seconds``; yield
        the incumbents passing the best so far (``watch`` counts this search's
        iterations: it starts at :attr:`iterations`)."""
        p = self.params
        rng, pop = self.rng, self.pop
        fc = cache.flat
        n = fc.n
        child = np.empty((1, n), dtype=np.int64)
        mark = np.empty(n, dtype=np.bool_)
        # compiled or loaded here, not at the first child after the population fills (a
        # warm-up's few iterations would not reach them); types as in the loop
        ident, none = np.arange(n, dtype=np.int64), np.empty(0, dtype=np.int64)
        MK.order_crossover(ident, ident, np.int64(0), np.int64(0), mark, child[0])
        MK.move_variables(ident, none, none, child[0])
        MK.shuffle_neighbourhood(ident, fc.offsets[:-1].astype(np.int64), fc.par_offsets,
                                 fc.par_flat, 0.0, np.int64(1), np.zeros(n),
                                 child[0])
        weights, masks, index, max_size = _setup(cache)
        if self.pick is None:
            self.pick = _ClosurePick(K.CLOSURE_BITSETS if n <= SEARCH_FROM
                                     else (K.CLOSURE_SEARCH, K.CLOSURE_BLOCKS))
        pick = self.pick
        n_moves = max(2, math.ceil(float(p.mutation) * n))
        chosen = np.empty(n, dtype=np.int64)
        order = np.empty(n, dtype=np.int64)
        one_score = np.empty(1, dtype=np.float64)
        reach = int(p.reach) if n > SHORT_WALKS_FROM and int(p.reach) > 0 else None
        grow = float(p.grow) if n > SHORT_WALKS_FROM else 1.0

        def epoch_over() -> bool:
            return ((until_iterations is not None and watch.iterations >= until_iterations)
                    or (until_seconds is not None and watch.elapsed() >= until_seconds))

        while not watch.done() and not epoch_over():
            if n < 2 or len(pop.scores) < 2 or (not pop.full() and (
                    grow >= 1.0 or rng.random() < grow)):
                child[:] = entropy_orders(rng, 1, weights, str(p.high_entropy))
            elif rng.random() < float(p.crossover):
                lo, hi = np.sort(rng.integers(n + 1, size=2))
                MK.order_crossover(pop.orders[pop.pick(rng)], pop.orders[pop.pick(rng)],
                                   lo, hi, mark, child[0])
            elif rng.random() < float(p.shuffle):
                m = pop.pick(rng)
                if rng.random() < 0.5:
                    keys = rng.random(n)
                else:  # the neighbourhood reversed
                    keys = np.empty(n)
                    keys[pop.orders[m]] = -np.arange(n, dtype=np.float64)
                MK.shuffle_neighbourhood(pop.orders[m], pop.chosen[m], fc.par_offsets,
                                         fc.par_flat, rng.random(),
                                         rng.integers(3, int(p.cluster) + 1), keys, child[0])
            else:
                MK.move_variables(pop.orders[pop.pick(rng)], rng.integers(n, size=n_moves),
                                  rng.integers(n, size=n_moves), child[0])
            it = watch.iterations + 1
            kernel = pick.next()
            t0 = _clock()
            K.run_orders_masked(child, True, True, 1_000_000, fc.offsets, fc.par_offsets,
                                fc.par_flat, *masks, max_size, fc.scores, one_score, chosen,
                                order, kernel)
            pick.record(kernel, _clock() - t0, 1)
            score = exact_total(fc, chosen)
            improved = score > self.best
            if improved:
                self.best = score
                yield _incumbent(cache, watch, score, chosen, it)
            for s, ch in window_refine(fc, order, chosen, watch, rng,
                                       max_window=int(p.max_window), index=index,
                                       reach=reach):
                score = s
                if s > self.best:
                    self.best = s
                    improved = True
                    yield _incumbent(cache, watch, s, ch, it)
            watch.tick()
            self.iterations = watch.iterations
            pop.offer(score, order, chosen)
            self.stall = 0 if improved else self.stall + 1
            if self.stall >= int(p.restart) and pop.full():
                pop.keep_best(int(p.keep))
                self.stall = 0
