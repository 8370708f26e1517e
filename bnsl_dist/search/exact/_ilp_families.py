"""A cache as the ILP learners (``ilp``, ``twilp``) see it, and the DAGs they start from.

- :class:`Families`: a cache's parent sets as Python-int bit masks (and uint64 words),
  with the two equivalent forms of a cluster constraint's row;
- :func:`repair`: an ASOBS-style pass that turns per-variable preferences into a DAG
  (each variable takes its first preferred set avoiding its current descendants);
  :func:`order_search` / :func:`greedy_dag`: ASOBS + swaps over orders (the
  numba kernels of :mod:`bnsl_dist.search.ordering`); :func:`lp_order`;
- :func:`eades_order`: the Eades-Lin-Smyth feedback-arc-set ordering heuristic.

All are deterministic: ties are broken by index.

References
----------
J. Cussens, "Bayesian network learning with cutting planes", UAI 2011, §3 (cluster
constraints). P. Eades, X. Lin, W. F. Smyth, "A fast and effective heuristic for the
feedback arc set problem", Information Processing Letters 47(6), 1993.
M. Scanagatta et al., "Learning Bayesian networks with thousands of variables",
NIPS 2015, §3 (ASOBS: best parent set avoiding descendants).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.search.base import Stopwatch

__all__ = ["Families", "bits", "eades_order", "greedy_dag", "lp_order", "order_search",
           "repair", "start_deadline"]


def bits(mask: int) -> Iterator[int]:
    """Members of a bit mask, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Families:
    """The parent sets of a cache as bit masks (set ``i`` of variable ``owner[i]``).

    Attributes
    ----------
    n : int
        Number of variables.
    start : list of int
        Sets of variable v are ``start[v] .. start[v+1]-1``, best first (cache order).
    masks : list of int
        Members of each set as a bit mask.
    scores : ndarray of float64
        Local score of each set.
    owner : ndarray of int64
        The child variable of each set.
    """

    def __init__(self, cache: ParentSetCache) -> None:
        f = cache.flat
        self.cache = cache
        self.n = f.n
        self.start = f.offsets.tolist()
        self.scores: NDArray[np.float64] = f.scores
        self.owner: NDArray[np.int64] = f.owner
        self.masks: list[int] = cache.set_masks
        self.mask_words: NDArray[np.uint64] = cache.mask_words
        self.best: NDArray[np.float64] = f.scores[f.offsets[:-1]]
        self.offsets = f.offsets
        self.par_offsets = f.par_offsets
        self.par_flat = f.par_flat

    @property
    def n_sets(self) -> int:
        return len(self.masks)

    def sets_of(self, v: int) -> range:
        return range(self.start[v], self.start[v + 1])

    def score(self, chosen: Sequence[int]) -> float:
        return float(self.scores[np.asarray(chosen, dtype=np.int64)].sum())

    def parents(self, chosen: Sequence[int]) -> list[tuple[int, ...]]:
        return [tuple(bits(self.masks[int(i)])) for i in chosen]

    def chosen_from_values(self, x: NDArray[np.float64]) -> list[int]:
        """For an integral point, the set each variable takes (its largest value)."""
        return [int(self.start[v] + np.argmax(x[self.start[v]:self.start[v + 1]]))
                for v in range(self.n)]

    def cluster_sets(self, cluster: int) -> list[int]:
        """Indices of the sets that keep ``cluster`` open: v in C, no member in C."""
        out: list[int] = []
        for v in bits(cluster):
            out.extend(i for i in self.sets_of(v) if not self.masks[i] & cluster)
        return out

    def cluster_row(self, cluster: int) -> tuple[list[int], float, float]:
        """The cluster constraint in its shorter equivalent form, as (set indices, lb, ub).

        Either ``sum_{open sets} z >= 1`` or, using one set per variable, ``sum_{v in C}
        sum_{S ∩ C ≠ ∅} z <= |C| - 1``: whichever has fewer terms.
        """
        cw = np.array([(cluster >> (64 * w)) & 0xFFFFFFFFFFFFFFFF
                       for w in range(self.mask_words.shape[1])], dtype=np.uint64)
        members = list(bits(cluster))
        idx = np.concatenate([np.arange(self.start[v], self.start[v + 1]) for v in members])
        meets = (self.mask_words[idx] & cw).any(axis=1)
        open_, closed = idx[~meets], idx[meets]
        if len(open_) <= len(closed):
            return open_.tolist(), 1.0, np.inf
        return closed.tolist(), -np.inf, float(len(members) - 1)

def repair(fam: Families, order: Sequence[int],
           prefs: Sequence[Sequence[int]] | None = None) -> list[int]:
    """A DAG from preferences: in ``order``, each variable takes its first preferred set
    (then its best cached set) that contains none of its current descendants.

    Ancestor / descendant masks are kept transitively closed, so the result is acyclic
    whatever the preferences (the empty set always fits).
    """
    n = fam.n
    desc = [1 << v for v in range(n)]
    anc = [1 << v for v in range(n)]
    chosen = [-1] * n
    for v in order:
        forb = desc[v]
        pick = -1
        for i in (prefs[v] if prefs is not None else ()):
            if not fam.masks[i] & forb:
                pick = int(i)
                break
        if pick < 0:
            for i in fam.sets_of(v):
                if not fam.masks[i] & forb:
                    pick = i
                    break
        chosen[v] = pick
        pm = fam.masks[pick]
        if pm:
            a_mask = 0
            for p in bits(pm):
                a_mask |= anc[p]
            d_mask = desc[v]
            for a in bits(a_mask):
                desc[a] |= d_mask
            for d in bits(d_mask):
                anc[d] |= a_mask
    for v in range(n):  # variables left out of ``order`` take the empty set
        if chosen[v] < 0:
            chosen[v] = next(i for i in fam.sets_of(v) if not fam.masks[i])
    return chosen


def order_search(fam: Families, orders: NDArray[np.int64], max_sweeps: int = 50) -> list[int]:
    """The best DAG of ASOBS + OBS + adjacent swaps over the given orders (rows).

    Uses the numba kernels of :mod:`bnsl_dist.search.ordering` (deterministic).
    """
    from bnsl_dist.search.ordering import _kernels as OK

    orders = np.ascontiguousarray(orders, dtype=np.int64)
    n = fam.n
    out_scores = np.empty(orders.shape[0], dtype=np.float64)
    chosen = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    OK.run_orders(orders, True, True, max_sweeps, fam.offsets, fam.par_offsets, fam.par_flat,
                  fam.scores, out_scores, chosen, order, OK.CLOSURE_BITSETS)
    return [int(i) for i in chosen]


def greedy_dag(fam: Families, rng: np.random.Generator, n_orders: int = 8,
               deadline: float | None = None) -> list[int]:
    """The best of ``n_orders`` random orders, each by ASOBS then adjacent swaps from a
    topological order of its DAG (deterministic given rng).

    ``deadline`` (a ``time.perf_counter()`` value): no order starts after it, but the
    first always runs, so a start exists. Without it the orders run as one batch. With
    it they run one at a time, the first of equal scores kept, as in the batch: on
    10,000 variables one order takes about a second, so eight of them took 11 s and an
    ILP with a 3.6 s budget had no DAG to show. The ``n_orders`` permutations are drawn
    either way, so ``rng`` ends in the same state.
    """
    orders = np.stack([rng.permutation(fam.n) for _ in range(max(1, n_orders))])
    if deadline is None:
        return order_search(fam, orders)
    best: list[int] = []
    best_score = -np.inf
    for row in orders:
        chosen = order_search(fam, row[None, :])
        score = fam.score(chosen)
        if not best or score > best_score:
            best, best_score = chosen, score
        if time.perf_counter() >= deadline:
            break
    return best


def start_deadline(watch: Stopwatch) -> float | None:
    """When the exact solvers' greedy start stops taking new orders: half of a seconds
    budget (the rest is the solver's), none for an iteration budget (then every order
    runs, and the start is the same on every machine)."""
    if watch.budget.seconds is None:
        return None
    return watch.start + 0.5 * watch.budget.seconds


def lp_order(fam: Families, x: NDArray[np.float64], tol: float = 1e-6) -> list[int]:
    """An order from an LP point: Eades-Lin-Smyth on the arc weights
    ``w(u -> v) = sum_{S ∋ u} x[S, v]`` (parents first)."""
    w: dict[tuple[int, int], float] = {}
    for i in np.nonzero(x > tol)[0].tolist():
        v = int(fam.owner[i])
        for p in bits(fam.masks[i]):
            w[(p, v)] = w.get((p, v), 0.0) + float(x[i])
    return eades_order(fam.n, w)


def eades_order(n: int, weights: dict[tuple[int, int], float]) -> list[int]:
    """A vertex order whose backward arcs form a small feedback arc set.

    Eades-Lin-Smyth: repeatedly peel sinks (to the back) and sources (to the front);
    otherwise move to the front the vertex of largest (weighted) out-minus-in degree.
    Ties go to the smallest index.
    """
    out_w = [dict() for _ in range(n)]  # type: list[dict[int, float]]
    in_w = [dict() for _ in range(n)]  # type: list[dict[int, float]]
    for (u, v), val in weights.items():
        if u != v and val > 0:
            out_w[u][v] = out_w[u].get(v, 0.0) + val
            in_w[v][u] = in_w[v].get(u, 0.0) + val
    alive = set(range(n))
    front: list[int] = []
    back: list[int] = []

    def remove(u: int) -> None:
        alive.discard(u)
        for v in out_w[u]:
            in_w[v].pop(u, None)
        for v in in_w[u]:
            out_w[v].pop(u, None)
        out_w[u] = {}
        in_w[u] = {}

    while alive:
        changed = True
        while changed:
            changed = False
            for u in sorted(alive):
                if not out_w[u]:
                    back.append(u)
                    remove(u)
                    changed = True
                elif not in_w[u]:
                    front.append(u)
                    remove(u)
                    changed = True
        if alive:
            u = max(sorted(alive), key=lambda a: sum(out_w[a].values()) - sum(in_w[a].values()))
            front.append(u)
            remove(u)
    return front + back[::-1]
