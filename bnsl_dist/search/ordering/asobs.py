"""ASOBS, ASOBS-ENT and the window search (Win-ASOBS).

ASOBS relaxes OBS's consistency rule: walking a sampled order from its last variable
to its first (the paper's "j = n, ..., 1"), each variable takes its best cached set
containing none of its current descendants, so arcs from later variables
(back-arcs) are allowed when acyclic. A variable's predecessors are never its
descendants then, so its OBS choice stays available: ASOBS >= OBS for the same order.
Ancestor and descendant bitsets are kept transitively closed by a numba kernel; above
``SEARCH_FROM`` variables descendants are found by a labelled search or by bitsets
over blocks of 512 positions, whichever runs faster on the first orders (same DAGs).

ASOBS-ENT samples orders in which high-entropy variables tend to be processed FIRST, so
that they get the most parent sets to choose from (nothing processed before them
constrains them). The paper puts them "at the end of the order provided to ASOBS, so
that they are offered plenty of different parent sets" (Scanagatta et al. 2018, §4.2),
and BLIP does so; its sampling formula, though, fills an order front to back with
probabilities proportional to the entropies of the unplaced variables, putting them at
the front. ASOBS walks an order from its last variable to its first, so
``high_entropy="first"`` mirrors the sampled orders
(:func:`~bnsl_dist.search.ordering.samplers.entropy_orders`). ``asobs-ent-last`` and
``winasobs-ent-last`` keep the other direction (high-entropy variables processed last,
with the fewest choices), which the project ran as ``asobs-ent`` before; records of that
time are read as ``asobs-ent-last`` (:mod:`bnsl_dist.results.legacy`).

After each ASOBS pass a local improvement starts FROM the ASOBS solution (BLIP feeds its
local search a mirrored order instead — a bug we do not copy): a topological order of
the ASOBS DAG is taken (the one closest to the sampled order; OBS on it would return
the ASOBS DAG itself, as each better set of a variable holds one of its descendants,
which the order puts after it), then adjacent swaps until none improves
(``local_search="swap"``, BLIP's ASOBS), and with ``local_search="window"``
(Win-ASOBS) the window search after that: swaps are its
cheapest moves (a block of one moved by one step), so doing them first reaches good
orders sooner (measured on book: -313159 instead of -313179 after the same 20 s).

Registered names (same class, different defaults):

==================  ==========  ============  ====================================
name                sampler     local_search  high-entropy variables processed
==================  ==========  ============  ====================================
asobs               uniform     swap          (no entropy)
asobs-ent           entropy     swap          first (the paper's ASOBS-ENT)
asobs-ent-last      entropy     swap          last
winasobs            uniform     window        (no entropy)
winasobs-ent        entropy     window        first
winasobs-ent-last   entropy     window        last
==================  ==========  ============  ====================================

Every parameter can be overridden on any of them (e.g. ``asobs`` with
``local_search="none"`` is the bare ASOBS pass of the paper).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import FlatCache, ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, Stopwatch, register
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering import _window_kernels as WK
from bnsl_dist.search.ordering.obs import exact_total, search_orders
from bnsl_dist.search.ordering.samplers import entropy_orders, entropy_weights, uniform_orders

__all__ = ["ASOBS", "ASOBSEnt", "ASOBSEntLast", "WinASOBS", "WinASOBSEnt", "WinASOBSEntLast",
           "candidate_bitsets",
           "window_refine", "window_index", "window_relations", "WindowIndex",
           "SEARCH_FROM"]

_SAMPLERS = ("uniform", "entropy")
_LOCAL = ("none", "swap", "window")
_CLOSURES = {"bitsets": K.CLOSURE_BITSETS, "dfs": K.CLOSURE_SEARCH,
             "blocks": K.CLOSURE_BLOCKS}
#: Above this many variables "auto" tracks descendants by search instead of bitsets.
#: ASOBS + OBS + swaps (as the optimizer ran then; no OBS since: it returned the ASOBS
#: DAG) with the search against bitsets (same orders), the search's speed
#: relative (both testing sets by candidate masks): 0.78 on plants (69 variables), 1.0 on
#: dna (180), 1.13 on book (500), 1.36 on cwebkb (839); bare passes 0.59, 0.83, 1.24,
#: 1.89: part ``closure`` of workflows/benchmarks/asobs_large.py
#: (workflows/results/benchmarks/asobs_large_cand.json). The cross-over now lies between
#: 180 and 500 variables (it was at about 500 before the candidate masks); left at 512.
SEARCH_FROM = 512
#: Above SEARCH_FROM "auto" times the search and the blocks on the first orders and
#: keeps the faster: neither wins everywhere. Passes per second, blocks over search,
#: same orders, one run: 1.5 on the synthetic caches of 1,556 and 3,000 variables, 1.8
#: on 5,000, 1.9 on 10,000 (deep chains of descendants: the search's labels go stale);
#: 0.66 on BLIP's cwebkb cache (839 variables), 0.69 on book and 0.39 on a cache of 2,000
#: variables learned from data (part ``kernels`` of workflows/benchmarks/asobs_large.py;
#: workflows/results/benchmarks/asobs_large_cand.json).
#: Block steps per window-kernel call between two clock checks.
_WINDOW_CHUNK = 50_000


def candidate_bitsets(fc: FlatCache) -> NDArray[np.uint64]:
    """(n, W) bitsets: variables appearing in at least one cached set of each variable."""
    n = fc.n
    nw = max(1, (n + 63) // 64)
    out = np.zeros((n, nw), dtype=np.uint64)
    child = np.repeat(fc.owner, fc.sizes)  # the child of each member of each set
    par = fc.par_flat
    np.bitwise_or.at(out, (child, par >> 6),
                     np.left_shift(np.uint64(1), (par & 63).astype(np.uint64)))
    return out


class WindowIndex(NamedTuple):
    """What the window search reads of a cache besides its flat arrays: each variable's
    candidates as a bitset row (``cand``, :func:`candidate_bitsets`) and sorted
    (``cand_var[cand_off[a]:cand_off[a+1]]``), and for each candidate entry e the rows
    of the variable's sets holding it, ascending (``rows[row_off[e]:row_off[e+1]]``)."""

    cand: NDArray[np.uint64]
    cand_off: NDArray[np.int64]
    cand_var: NDArray[np.int64]
    row_off: NDArray[np.int64]
    rows: NDArray[np.int64]


def window_index(fc: FlatCache) -> WindowIndex:
    """The :class:`WindowIndex` of a cache (as many entries in ``rows`` as members in
    ``par_flat``)."""
    child = np.repeat(fc.owner, fc.sizes)
    row = np.repeat(np.arange(fc.sizes.size, dtype=np.int64), fc.sizes)
    member = fc.par_flat.astype(np.int64)
    by = np.lexsort((row, member, child))
    child, member, row = child[by], member[by], row[by]
    first = np.ones(child.size, dtype=np.bool_)
    first[1:] = (child[1:] != child[:-1]) | (member[1:] != member[:-1])
    starts = np.flatnonzero(first)
    cand_off = np.zeros(fc.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(child[starts], minlength=fc.n), out=cand_off[1:])
    return WindowIndex(candidate_bitsets(fc), cand_off, member[starts],
                       np.append(starts, child.size).astype(np.int64), row)


def window_relations(n: int, words: int) -> tuple[NDArray[np.uint64], NDArray[np.uint64],
                                                  NDArray[np.uint64], NDArray[np.int64]]:
    """Fresh (better, better_of, children, built) for the window search's kernel
    (``_window_kernels.window_search``): ``built`` -1, so that its first call derives
    every variable's relations from the chosen sets."""
    return (np.zeros((n, words), dtype=np.uint64), np.zeros((n, words), dtype=np.uint64),
            np.zeros((n, words), dtype=np.uint64), np.full(n, -1, dtype=np.int64))


def window_refine(fc: FlatCache, order: NDArray[np.int64], chosen: NDArray[np.int64],
                  watch: Stopwatch, rng: np.random.Generator, *, max_window: int,
                  chunk: int = _WINDOW_CHUNK, index: WindowIndex | None = None,
                  reach: int | None = None) -> Iterator[tuple[float, NDArray[np.int64]]]:
    """The window search from ``order`` and ``chosen``, in chunks; yields (score, chosen)
    after each chunk that improved. ``chosen`` must hold each variable's best set
    consistent with ``order``, as OBS and the swaps leave it (the anytime loop's swaps
    do). ``index``: :func:`window_index` if already known."""
    n = fc.n
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    index = window_index(fc) if index is None else index
    todo = rng.permutation(n).astype(np.int64)
    rel = window_relations(n, index.cand.shape[1])
    for r in ([n] if reach is None or reach >= n else [reach, n]):
        state = np.array([0, 1, 0], dtype=np.int64)
        converged = False
        while not converged:
            if watch.remaining() <= 0.0:
                return
            gain, converged = WK.window_search(order, pos, chosen, *index, fc.offsets,
                                               fc.par_offsets, fc.par_flat, fc.scores,
                                               todo, max_window, state, chunk, r, *rel)
            if gain > 0.0:
                yield exact_total(fc, chosen), chosen


class ASOBS:
    """Acyclic selection ordering-based search over sampled orders.

    Parameters
    ----------
    sampler : {"uniform", "entropy"}
        How orders are sampled; "entropy": ASOBS-ENT (positions filled front to back
        with probability proportional to the entropy of the unplaced variables).
    high_entropy : {"first", "last"}, optional
        Entropy sampler only: whether ASOBS processes high-entropy variables first
        (giving them the most parent sets: the paper's ASOBS-ENT, BLIP's behaviour) or
        last. Default: "last" for the ``*-last`` names, else "first". A spec of an
        entropy-sampling ASOBS always names it (:meth:`pinned_params`).
    local_search : {"none", "swap", "window"}
        Improvement after each ASOBS pass (see the module docstring).
    entropies : sequence of float, optional
        Entropies H(X_i) for the entropy sampler. Default: ``cache.entropies``
        when the cache was built from data, else a proxy from the cache, −score(X, ∅)
        (:func:`~bnsl_dist.search.ordering.samplers.entropy_weights`).
    max_window : int
        Largest block moved by the window search (1..5 in Win-ASOBS).
    max_sweeps : int
        Bound on adjacent-swap sweeps per order.
    closure : {"auto", "bitsets", "dfs", "blocks"}
        How descendants are tracked during a pass: transitively closed ancestor and
        descendant bitsets (O((|anc|+|desc|)·n/64) per variable); ("dfs") searches
        up from the members of the sets scanned, pruned by labels
        (:func:`~bnsl_dist.search.ordering._kernels.asobs_pass_up`); or ("blocks")
        closed bitsets over blocks of 512 positions, with each variable's ancestors in
        the block found once per block
        (:func:`~bnsl_dist.search.ordering._kernels.asobs_pass_blocks`). All give the
        same DAG; "auto" takes bitsets up to ``SEARCH_FROM`` variables and above
        times the search and the blocks on the first orders, then keeps the faster
        (measured in workflows/benchmarks/asobs_large.py).

    One iteration is one sampled order (with its local search).

    References
    ----------
    M. Scanagatta, C. P. de Campos, G. Corani, M. Zaffalon, "Learning Bayesian networks
    with thousands of variables", NIPS 2015, §3 (ASOBS); M. Scanagatta, G. Corani,
    C. P. de Campos, M. Zaffalon, "Approximate structure learning for large Bayesian
    networks", Machine Learning 107, 2018, §4.2 (entropy-based sampling, ASOBS-ENT);
    M. Scanagatta, G. Corani, M. Zaffalon, "Improved local search in Bayesian networks
    structure learning", AMBN 2017 (window local search).
    """

    name = "asobs"
    exact = False
    _default_sampler = "uniform"
    _default_local_search = "swap"
    _default_high_entropy = "first"

    def __init__(self, *, sampler: str | None = None, local_search: str | None = None,
                 entropies: Sequence[float] | None = None, max_window: int = 5,
                 max_sweeps: int = 1_000_000, closure: str = "auto",
                 high_entropy: str | None = None) -> None:
        self.sampler = self._default_sampler if sampler is None else sampler
        self.local_search = self._default_local_search if local_search is None else local_search
        self.entropies = entropies
        self.max_window = max_window
        self.max_sweeps = max_sweeps
        self.closure = closure
        self.high_entropy = (self._default_high_entropy if high_entropy is None
                             else high_entropy)
        self._check()  # where the spec is read (the registry builds one), not in each run

    def _check(self) -> None:
        if self.sampler not in _SAMPLERS:
            raise InvalidConfigError(f"{self.name}: sampler must be one of {_SAMPLERS}, "
                                     f"got {self.sampler!r}")
        if self.local_search not in _LOCAL:
            raise InvalidConfigError(f"{self.name}: local_search must be one of {_LOCAL}, "
                                     f"got {self.local_search!r}")
        if int(self.max_window) < 1:
            raise InvalidConfigError(f"{self.name}: max_window must be >= 1")
        if int(self.max_sweeps) < 1:
            raise InvalidConfigError(f"{self.name}: max_sweeps must be >= 1")
        if self.high_entropy not in ("first", "last"):
            raise InvalidConfigError(f"{self.name}: high_entropy must be 'first' or 'last', "
                                     f"got {self.high_entropy!r}")
        if self.closure != "auto" and self.closure not in _CLOSURES:
            raise InvalidConfigError(f"{self.name}: closure must be 'auto' or one of "
                                     f"{tuple(_CLOSURES)}, "
                                     f"got {self.closure!r}")

    @classmethod
    def pinned_params(cls, params: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters a search spec of this optimizer always names with their value,
        given the ``params`` it names: ``high_entropy`` when orders are sampled by
        entropy. Its default changed (ASOBS-ENT processed high-entropy variables last
        until it was made the paper's variant), so naming it makes the cells of the two
        meanings differ in key and record (:class:`~bnsl_dist.search.spec.SearchSpec`)."""
        if "high_entropy" in params or params.get("sampler", cls._default_sampler) != "entropy":
            return {}
        return {"high_entropy": cls._default_high_entropy}

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield improving incumbents; return the number of orders processed."""
        self._check()
        n = cache.n_vars
        if self.sampler == "entropy":
            weights, _ = entropy_weights(cache, self.entropies)

            direction = str(self.high_entropy)

            def draw(g: np.random.Generator, m: int) -> NDArray[np.int64]:
                return entropy_orders(g, m, weights, direction)
        else:
            def draw(g: np.random.Generator, m: int) -> NDArray[np.int64]:
                return uniform_orders(g, m, n)

        refine = None
        if self.local_search == "window":
            max_window = int(self.max_window)
            cached: list[WindowIndex] = []

            def refine(fc: FlatCache, order: NDArray[np.int64], chosen: NDArray[np.int64],
                       watch: Stopwatch, g: np.random.Generator
                       ) -> Iterator[tuple[float, NDArray[np.int64]]]:
                if not cached:
                    cached.append(window_index(fc))
                return window_refine(fc, order, chosen, watch, g, max_window=max_window,
                                     index=cached[0])

        closure: int | tuple[int, ...] = (
            _CLOSURES[self.closure] if self.closure != "auto"
            else K.CLOSURE_BITSETS if n <= SEARCH_FROM
            else (K.CLOSURE_SEARCH, K.CLOSURE_BLOCKS))
        return (yield from search_orders(cache, budget, rng, draw=draw, use_asobs=True,
                                 use_swaps=self.local_search in ("swap", "window"),
                                 max_sweeps=int(self.max_sweeps), refine=refine,
                                 closure=closure))


register("asobs")(ASOBS)


@register("asobs-ent")
class ASOBSEnt(ASOBS):
    """ASOBS-ENT (Scanagatta et al. 2018, §4.2): entropy-weighted orders, high-entropy
    variables processed first (``high_entropy="first"``, docs/ALGORITHMS.md §4)."""

    _default_sampler = "entropy"


@register("asobs-ent-last")
class ASOBSEntLast(ASOBSEnt):
    """ASOBS with entropy-weighted orders processing high-entropy variables last (fewest
    parent sets): the direction the project ran as ``asobs-ent`` before."""

    _default_high_entropy = "last"


@register("winasobs")
class WinASOBS(ASOBS):
    """ASOBS followed by the window local search, uniform orders."""

    _default_local_search = "window"


@register("winasobs-ent")
class WinASOBSEnt(ASOBS):
    """ASOBS followed by the window local search, entropy-weighted orders processing
    high-entropy variables first."""

    _default_sampler = "entropy"
    _default_local_search = "window"


@register("winasobs-ent-last")
class WinASOBSEntLast(WinASOBSEnt):
    """Win-ASOBS with entropy-weighted orders processing high-entropy variables last."""

    _default_high_entropy = "last"
