"""Shared driver of the k-tree learners: validation, cache arrays, the batched anytime loop.

A learner supplies a batch kernel; the driver runs batches of iterations (sized to
about :data:`BATCH_SECONDS` each, never past the budget's iterations). A batch stops
at its first iteration that beats the best so far, so every improvement is reported
with its exact iteration index and the incumbents of an iteration budget are the same
whatever the clock does. Each improvement becomes an
:class:`~bnsl_dist.search.base.Incumbent` carrying its
:class:`~bnsl_dist.graph.TreewidthCertificate`; the run returns the iterations run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._rng import as_rng
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.treewidth import TreewidthCertificate
from bnsl_dist.search.base import Budget, Incumbent, Stopwatch

__all__ = ["CacheArrays", "TreewidthLearner", "MAX_CLIQUE_VARS", "BATCH_SECONDS"]

#: The initial clique (min(k+1, n) variables) is solved by an exact DP over its subsets.
MAX_CLIQUE_VARS = 18
#: Target wall time of one kernel call (a call also ends at its first improvement).
BATCH_SECONDS = 0.05

#: kernel(seed, it0, threshold, out_scores, best_chosen, best_ins, best_attach) ->
#: offset of the first iteration scoring above threshold, or -1 (see ``kg_batch``)
BatchKernel = Callable[[int, int, float, NDArray[np.float64], NDArray[np.int64],
                        NDArray[np.int64], NDArray[np.int64]], int]


@dataclass(frozen=True)
class CacheArrays:
    """The cache's flat view (:attr:`ParentSetCache.flat`, shared, not copied) and the
    usable-set size limit, with the views the k-tree learners derive from both."""

    offsets: NDArray[np.int64]
    scores: NDArray[np.float64]
    par_offsets: NDArray[np.int64]
    par_flat: NDArray[np.int64]
    sizes: NDArray[np.int64]
    owner: NDArray[np.int64]
    max_size: int

    @classmethod
    def of(cls, cache: ParentSetCache, k: int, max_parents: int | None) -> CacheArrays:
        max_size = k if max_parents is None else min(k, max_parents)
        f = cache.flat
        return cls(f.offsets, f.scores, f.par_offsets, f.par_flat, f.sizes, f.owner,
                   int(max_size))

    @property
    def usable(self) -> NDArray[np.bool_]:
        return self.sizes <= self.max_size

    def score_range(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Per variable the worst and best score among its usable sets."""
        starts = self.offsets[:-1]
        use = self.usable
        smax = np.maximum.reduceat(np.where(use, self.scores, -np.inf), starts)
        smin = np.minimum.reduceat(np.where(use, self.scores, np.inf), starts)
        return smin.astype(np.float64), smax.astype(np.float64)

    def _usable_entries(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The members of the usable sets (``par_flat`` entries) and their set ids."""
        set_of_entry = np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)
        keep = self.usable[set_of_entry]
        return self.par_flat[keep], set_of_entry[keep]

    def inverted_index(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per variable p, the usable sets that contain p (ascending): offsets, set ids."""
        n = len(self.offsets) - 1
        members, sets = self._usable_entries()
        # sets are ascending already: a stable sort on the member keeps them so
        idx = np.argsort(members, kind="stable")
        inv_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(members, minlength=n), out=inv_offsets[1:])
        return inv_offsets, np.ascontiguousarray(sets[idx])

    def candidates(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Per variable the members of its usable sets (sorted): offsets, flat."""
        n = len(self.offsets) - 1
        members, sets = self._usable_entries()
        # one int64 code per (owner, member) pair, ordered as the pairs, deduplicated
        # after a plain sort (np.unique, row-wise or not, is ~50x slower on big caches)
        codes = np.sort(self.owner[sets] * np.int64(n) + members)
        codes = codes[np.flatnonzero(np.diff(codes, prepend=np.int64(-1)))]
        cand_offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes // n, minlength=n), out=cand_offsets[1:])
        return cand_offsets, np.ascontiguousarray(codes % n, dtype=np.int64)


def check_max_parents(name: str, max_parents: Any) -> None:
    if max_parents is not None and (isinstance(max_parents, bool)
                                    or not isinstance(max_parents, int | np.integer)
                                    or max_parents < 0):
        raise InvalidConfigError(f"{name}: max_parents must be None or an integer >= 0, "
                                 f"got {max_parents!r}")


def check_k(name: str, k: Any, max_parents: Any, n_vars: int) -> tuple[int, int | None]:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise InvalidConfigError(f"{name}: the treewidth bound k must be an integer >= 1, "
                                 f"got {k!r}")
    check_max_parents(name, max_parents)
    if n_vars < 1:
        raise InvalidConfigError(f"{name}: the cache has no variables")
    if min(int(k) + 1, n_vars) > MAX_CLIQUE_VARS:
        raise InvalidConfigError(f"{name}: k={k} needs an exact DP over {min(k + 1, n_vars)} "
                                 f"variables; at most {MAX_CLIQUE_VARS} are supported")
    return int(k), None if max_parents is None else int(max_parents)


def kernel_k(k: int, n_vars: int) -> int:
    """The bound the kernels and cache views get: k >= n - 1 is one clique of all n
    variables (a larger k sized their arrays past memory, or past int64)."""
    return min(int(k), max(n_vars - 1, 1))


def _batches(kernel: BatchKernel, n: int, sw: Stopwatch, seed: int, single: bool,
             improvements: bool
             ) -> Iterator[tuple[int, NDArray[np.float64], int, NDArray[np.int64],
                                 NDArray[np.int64], NDArray[np.int64], float]]:
    """Run the kernel in batches; yield (iterations before the batch, the scores of the
    iterations it ran, offset of the improving iteration or -1, its chosen sets,
    insertion order and attach ids, elapsed).

    ``sw`` was started before the learner's setup (the cache views), which so counts
    against the budget: a setup that uses it all up leaves no iteration. With
    ``improvements`` a batch ends at the first iteration beating the best so far, else
    every batch runs in full (no improvement reported)."""
    size = 1
    best = -np.inf
    chosen = np.empty(n, dtype=np.int64)
    ins = np.empty(n, dtype=np.int64)
    attach = np.empty(n, dtype=np.int64)
    while not sw.done():
        left = sw.iterations_left()
        if left is not None:
            size = min(size, left)
        out = np.empty(size, dtype=np.float64)
        t0 = time.perf_counter()
        arg = int(kernel(seed, sw.iterations, best if improvements else np.inf, out, chosen,
                         ins, attach))
        dt = time.perf_counter() - t0
        ran = size if arg < 0 else arg + 1
        it0 = sw.iterations
        sw.tick(ran)
        if arg >= 0:
            best = float(out[arg])
        yield it0, out[:ran], arg, chosen, ins, attach, sw.elapsed()
        if single:
            break
        per = max(dt / ran, 1e-7)
        target = min(BATCH_SECONDS, sw.remaining())
        size = int(min(max(1.0, target / per), 4 * size, 1_000_000))


class TreewidthLearner:
    """Base of the k-tree learners: subclasses define ``_kernel(cache, arrays)``; the
    hyper-parameters are ``k`` and ``max_parents`` unless a subclass declares more."""

    name: ClassVar[str]
    exact: ClassVar[bool] = False

    k: int
    max_parents: int | None

    def __init__(self, *, k: int, max_parents: int | None = None) -> None:
        check_max_parents(self.name, max_parents)
        self.k = k
        self.max_parents = max_parents

    def _kernel(self, cache: ParentSetCache, arrays: CacheArrays) -> BatchKernel:
        raise NotImplementedError

    def _setup(self, cache: ParentSetCache, budget: Budget
               ) -> tuple[int, BatchKernel, Stopwatch]:
        """Check k, derive the kernel and start the budget's stopwatch before the
        derived views (up to seconds on a cache of 10^5 - 10^6 sets) are built."""
        k, mp = check_k(self.name, self.k, self.max_parents, cache.n_vars)
        sw = budget.stopwatch()
        arrays = CacheArrays.of(cache, kernel_k(k, cache.n_vars), mp)
        return k, self._kernel(cache, arrays), sw

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator | int | None) -> Generator[Incumbent, None, int]:
        """Yield every strictly better bounded-treewidth DAG until the budget ends;
        return the number of iterations run.

        One iteration builds one DAG; an incumbent's ``iterations`` is the index (from
        1) of the iteration that built it, so with an iteration budget the incumbents,
        their iteration indices and the count run depend only on the seed. Each
        incumbent's ``info`` holds ``certificate`` (a
        :class:`~bnsl_dist.graph.TreewidthCertificate`: the reverse insertion order,
        width k), ``k``, ``insertion_order`` and ``attach`` (per inserted node the id of
        the k-clique it joined, -1 for the initial clique; see
        :meth:`bnsl_dist.graph.KTree.replay`). When ``k + 1 >= n`` the single exact DP
        is optimal and the run stops; it is reported with ``bound`` = its score unless
        ``max_parents`` excluded a cached set (the DP is then optimal among the capped
        DAGs only, and no bound is claimed).
        """
        k, kernel, sw = self._setup(cache, budget)
        n = cache.n_vars
        seed = int(as_rng(rng).integers(0, 2**63 - 1))
        single = k + 1 >= n
        proven = single and (self.max_parents is None
                             or self.max_parents >= int(cache.flat.sizes.max(initial=0)))
        best = -np.inf
        total = 0
        for it0, out, arg, chosen, ins, attach, elapsed in _batches(kernel, n, sw, seed,
                                                                    single, True):
            total = it0 + len(out)
            if arg < 0:
                continue
            # the exact sum in cache order (the kernel's running total may differ in the
            # last bits); a tie within rounding is not an improvement
            score = float(sum(float(s) for s in cache.scores[chosen]))
            if not score > best:
                continue
            best = score
            dag = cache.dag_from_indices(chosen)
            cert = TreewidthCertificate(tuple(int(v) for v in ins[::-1]), k)
            yield Incumbent(elapsed, score, dag, iterations=it0 + arg + 1,
                            bound=score if proven else None,
                            info={"certificate": cert, "k": k,
                                  "insertion_order": tuple(int(v) for v in ins),
                                  "attach": tuple(int(c) for c in attach)})
        return total

    def iteration_scores(self, cache: ParentSetCache, budget: Budget,
                         rng: np.random.Generator | int | None
                         ) -> tuple[NDArray[np.float64], float]:
        """The score of every iteration's DAG within the budget, and the seconds used
        (same iterations as :meth:`run` with the same seed and iteration budget)."""
        k, kernel, sw = self._setup(cache, budget)
        seed = int(as_rng(rng).integers(0, 2**63 - 1))
        parts: list[NDArray[np.float64]] = []
        elapsed = 0.0
        for batch in _batches(kernel, cache.n_vars, sw, seed, k + 1 >= cache.n_vars,
                              False):
            parts.append(batch[1].copy())
            elapsed = batch[-1]
        return (np.concatenate(parts) if parts else np.zeros(0)), elapsed
