"""OBS — ordering-based search — and the anytime loop shared by the order samplers.

For a sampled order every variable takes its best cached set whose members all precede
it; then adjacent swaps that improve the score (only the two swapped families change)
are applied, sweep after sweep, until none improves. Orders are processed in batches
by one numba kernel; the batch size depends only on n, so an iteration budget gives
the same result whatever the machine. Every order that beats the best so far is
reported with its own index as ``iterations`` (not the batch's end), so the best
within c iterations of a run is the best of a run of c iterations.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Generator, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import FlatCache, ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, Stopwatch, register
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering.samplers import uniform_orders

__all__ = ["OBS", "batch_size", "cache_masks", "candidate_masks", "obs_masks",
           "search_orders"]

#: Orders per kernel call: about 2048 variable-visits, between 1 and 256 orders.
_BATCH_WORK = 2048
_MAX_BATCH = 256
#: Timed batches per candidate closure kernel before :class:`_ClosurePick` keeps one.
_TRIALS = 3
#: What :class:`_ClosurePick` times batches by: the calling thread's CPU time (load from
#: other processes does not count), but wall time on Windows, whose thread times advance
#: by clock ticks of ~16 ms, longer than many batches.
_clock = time.perf_counter if sys.platform == "win32" else time.thread_time
#: Batches after which :class:`_ClosurePick` times the candidates again (the machine's
#: load may have changed); a few slow batches in a thousand.
_RECHECK = 1000


class _ClosurePick:
    """The ASOBS closure kernel of each batch. Given several candidates (which choose the
    same sets, so results do not depend on the pick), the first batch warms up, the
    next ``_TRIALS`` per candidate alternate among them, timed (``_clock``: the CPU time
    of the calling thread, in which the kernel runs), and the candidate with the least
    time per order runs; every ``_RECHECK`` batches the trial is repeated (without the
    warm-up)."""

    def __init__(self, closure: int | Sequence[int]) -> None:
        self.cands = [closure] if isinstance(closure, int) else list(closure)
        self.chosen = self.cands[0]
        self.since = 0
        self.plan: list[int] = []
        if len(self.cands) > 1:
            self._trial(warm_up=True)

    def _trial(self, warm_up: bool) -> None:
        self.plan = ([self.cands[0]] if warm_up else []) + self.cands * _TRIALS
        self.timed_from = 1 if warm_up else 0  # the warm-up compiles or loads the kernel
        self.step = 0
        self.spent = dict.fromkeys(self.cands, 0.0)
        self.orders = dict.fromkeys(self.cands, 0)

    def next(self) -> int:
        return self.plan[self.step] if self.plan else self.chosen

    def record(self, closure: int, seconds: float, orders: int) -> None:
        if len(self.cands) == 1:
            return
        if not self.plan:
            self.since += 1
            if self.since == _RECHECK:
                self._trial(warm_up=False)
            return
        if self.step >= self.timed_from:
            self.spent[closure] += seconds
            self.orders[closure] += orders
        self.step += 1
        if self.step == len(self.plan):
            self.chosen = min(self.cands,
                              key=lambda c: self.spent[c] / max(1, self.orders[c]))
            self.plan = []
            self.since = 0


def batch_size(n_vars: int) -> int:
    return max(1, min(_MAX_BATCH, _BATCH_WORK // max(1, n_vars)))


def cache_masks(fc: FlatCache, words: int | None = None) -> NDArray[np.uint64]:
    """The set masks of the kernels (``pmask``, :func:`~._kernels.set_masks`), with
    ``words`` words (default :func:`~._kernels.mask_words` of the number of variables);
    a 1-D array for one word."""
    words = int(K.mask_words(fc.n)) if words is None else words
    masks: NDArray[np.uint64] = K.set_masks(fc.par_offsets, fc.par_flat, words)
    return masks[:, 0].copy() if words == 1 else masks


def candidate_masks(fc: FlatCache) -> tuple[NDArray[np.int64], NDArray[np.int64],
                                             NDArray[np.uint64]]:
    """(cand_off, cand, cmask) of the ASOBS passes (:func:`~._kernels.candidate_masks`)."""
    out: tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.uint64]] = \
        K.candidate_masks(fc.offsets, fc.par_offsets, fc.par_flat)
    return out


#: (pmask, cand_off, cand, cmask): what OBS and the ASOBS passes test sets by.
ObsMasks = tuple[NDArray[np.uint64], NDArray[np.int64], NDArray[np.int64], NDArray[np.uint64]]


def obs_masks(fc: FlatCache) -> ObsMasks:
    """(pmask, cand_off, cand, cmask): the masks OBS and the ASOBS passes read
    (:func:`cache_masks`, :func:`candidate_masks`)."""
    cand_off, cand, cmask = candidate_masks(fc)
    return cache_masks(fc), cand_off, cand, cmask


def exact_total(fc: FlatCache, chosen: NDArray[np.int64]) -> float:
    """Sum of the chosen local scores (the value reported in incumbents)."""
    return float(np.sum(fc.scores[chosen]))


def search_orders(cache: ParentSetCache, budget: Budget, rng: np.random.Generator, *,
                  draw: Callable[[np.random.Generator, int], NDArray[np.int64]],
                  use_asobs: bool, use_swaps: bool, max_sweeps: int = 1_000_000,
                  closure: int | Sequence[int] = K.CLOSURE_BITSETS,
                  refine: Callable[..., Iterator[tuple[float, NDArray[np.int64]]]]
                  | None = None) -> Generator[Incumbent, None, int]:
    """The anytime loop: sample orders, evaluate them in batches, yield improvements.

    Parameters
    ----------
    draw : callable (rng, n_orders) -> (n_orders, n) int64 array of orders.
    use_asobs, use_swaps, closure : what the kernel does per order (``run_orders``);
        several closures: the fastest of them on the first batches (:class:`_ClosurePick`).
    refine : optional generator ``refine(fc, order, chosen, watch, rng)`` run on the
        best DAG of each batch (batch size 1 then); it improves ``chosen`` in place and
        yields (score, chosen) whenever it has something better, so long refinements
        stay anytime. One iteration = one sampled order (with its refinement).

    Returns
    -------
    The number of iterations run (the generator's return value; incumbents only tell
    the iteration of the last improvement).
    """
    fc = cache.flat
    n = fc.n
    watch = budget.stopwatch()
    best = -np.inf
    b = 1 if refine is not None else batch_size(n)
    out_scores = np.empty(b, dtype=np.float64)
    chosen = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    masks = obs_masks(fc)
    max_size = int(fc.sizes.max()) if fc.sizes.size else 0
    pick = _ClosurePick(closure)
    one_score = np.empty(1, dtype=np.float64)
    one_chosen = np.empty(n, dtype=np.int64)
    one_order = np.empty(n, dtype=np.int64)
    while not watch.done():
        left = watch.iterations_left()
        m = b if left is None else min(b, left)
        orders = np.ascontiguousarray(draw(rng, m), dtype=np.int64)
        kernel = pick.next()
        t0 = _clock()
        top = K.run_orders_masked(orders, use_asobs, use_swaps, max_sweeps, fc.offsets,
                                  fc.par_offsets, fc.par_flat, *masks, max_size, fc.scores,
                                  out_scores[:m], chosen, order, kernel)
        pick.record(kernel, _clock() - t0, m)
        it0 = watch.iterations
        watch.tick(m)
        # every order of the batch that beats the best so far, at its own iteration (the
        # kernel keeps the DAG of the batch's first best order only: the orders that beat
        # the best before it are rare and run again alone, same DAG)
        sc = out_scores[:m]
        prev = np.concatenate(([-np.inf], np.maximum.accumulate(sc)[:-1]))
        tol = 1e-9 * max(1.0, abs(best)) if np.isfinite(best) else np.inf
        for r in np.flatnonzero((sc > prev) & (sc > best - tol)).tolist():
            ch = chosen
            if r != top:
                K.run_orders_masked(np.ascontiguousarray(orders[r:r + 1]), use_asobs,
                                    use_swaps, max_sweeps, fc.offsets, fc.par_offsets,
                                    fc.par_flat, *masks, max_size, fc.scores, one_score,
                                    one_chosen, one_order, kernel)
                ch = one_chosen
            score = exact_total(fc, ch)
            if score > best:
                best = score
                yield _incumbent(cache, watch, score, ch, it0 + r + 1)
        if refine is not None:
            if use_asobs and not use_swaps:  # a bare pass leaves no order: take one
                K.topological_order_near(orders[top], chosen, fc.par_offsets, fc.par_flat,
                                         order)
            for s, ch in refine(fc, order, chosen, watch, rng):
                if s > best:
                    best = s
                    yield _incumbent(cache, watch, s, ch)
    return watch.iterations


def _incumbent(cache: ParentSetCache, watch: Stopwatch, score: float,
               chosen: NDArray[np.int64], iterations: int | None = None) -> Incumbent:
    return Incumbent(watch.elapsed(), score, cache.dag_from_indices(chosen),
                     iterations=watch.iterations if iterations is None else iterations)


@register("obs")
class OBS:
    """Ordering-based search with adjacent-swap local search, over uniform orders.

    Parameters
    ----------
    swaps : bool
        Run the adjacent-swap hill climbing after each order (default True).
    max_sweeps : int
        Bound on swap sweeps per order.

    One iteration is one sampled order.

    References
    ----------
    M. Teyssier, D. Koller, "Ordering-based search: a simple and effective algorithm
    for learning Bayesian networks", UAI 2005, §3–4 (best consistent parent sets,
    swap operator with two families rescored).
    """

    name = "obs"
    exact = False

    def __init__(self, *, swaps: bool = True, max_sweeps: int = 1_000_000) -> None:
        self.swaps = swaps
        self.max_sweeps = max_sweeps
        self._check()  # where the spec is read (the registry builds one), not in each run

    def _check(self) -> None:
        if self.max_sweeps < 1:
            raise InvalidConfigError("obs: max_sweeps must be >= 1")

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield improving incumbents; return the number of orders processed."""
        self._check()
        n = cache.n_vars
        return (yield from search_orders(cache, budget, rng,
                                 draw=lambda g, m: uniform_orders(g, m, n),
                                 use_asobs=False, use_swaps=bool(self.swaps),
                                 max_sweeps=int(self.max_sweeps)))
