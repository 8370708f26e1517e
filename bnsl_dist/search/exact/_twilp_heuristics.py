"""TWILP's feasibility side: cutting a DAG down to treewidth k, the §5.2 heuristic, and
the root graph (a k-tree on N ∪ R) that certifies a DAG for the ILP's y-variables.

References
----------
P. Parviainen, H. S. Farahani, J. Lagergren, "Learning bounded tree-width Bayesian
networks using integer linear programming", AISTATS 2014, §3 (root graphs, Lemma 5),
§5.2 (feasibility heuristic). P. Eades, X. Lin, W. F. Smyth, IPL 47(6), 1993.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from bnsl_dist.graph import (
    eliminate,
    min_degree_order,
    min_fill_order,
    moral_graph,
    topological_order,
)
from bnsl_dist.search.exact._ilp_families import Families, bits, eades_order

if TYPE_CHECKING:
    from bnsl_dist.search.exact._ilp_common import ScipStop

__all__ = ["fit_treewidth", "feasibility_heuristic", "root_graph_arcs", "best_subset",
           "chordal_cut", "order_width", "start_dag", "STARTS"]


def best_subset(fam: Families, v: int, allowed: int) -> int:
    """v's best cached set inside the ``allowed`` mask (∅ always fits)."""
    for i in fam.sets_of(v):
        if not fam.masks[i] & ~allowed:
            return i
    raise AssertionError("a cache always holds the empty set")  # pragma: no cover


def _elimination(adj: list[set[int]], order: Sequence[int], k: int) -> tuple[int, set[int]]:
    """Replay an elimination: (width, first bag wider than k, or an empty set)."""
    g = [set(s) for s in adj]
    width, bag = 0, set[int]()
    for v in order:
        nb = eliminate(g, v)
        width = max(width, len(nb))
        if len(nb) > k and not bag:
            bag = {v} | nb
    return width, bag


def order_width(parents: Sequence[Sequence[int]], k: int,
                due: Callable[[], bool] | None = None) -> tuple[list[int], int, set[int]]:
    """Min-fill's elimination order of the moral graph (min-degree's when narrower), its
    width, and its first bag wider than ``k`` (empty when none). ``due``: asked before
    each elimination; True gives up (:class:`TimeoutError`)."""
    adj = moral_graph(parents)
    order, width = min_fill_order(adj, due)
    if width > k:
        o2, w2 = min_degree_order(adj, due)
        if w2 < width:
            order, width = o2, w2
    bag: set[int] = set()
    if width > k:
        _, bag = _elimination(adj, order, k)
    return order, width, bag


def fit_treewidth(fam: Families, chosen: Sequence[int], k: int, stop: ScipStop | None = None,
                  max_eliminations: int | None = None) -> tuple[list[int], list[int]]:
    """Remove arcs from a DAG until min-fill / min-degree certify treewidth <= k.

    Each step removes, among the arcs touching the first elimination bag wider than k,
    the one whose loss is least (the child then takes its best cached subset of its
    remaining parents). Returns the new choice and an elimination order of width <= k.

    The steps' min-fill / min-degree orders are given up, and the DAG cut so far is
    finished by :func:`chordal_cut`, once

    - ``stop`` (the cell's deadline) leaves no more time than :func:`chordal_cut` is
      estimated to take (``stop``'s step costs, ``"twilp.cut"`` per parent set). One
      min-fill order costs a minute on a large greedy DAG (cwebkb, 839 variables, width
      130: 50-70 s an order on the loaded development machine) and cutting it to k = 2
      takes one per arc removed, so without a deadline a 36 s TWILP cell on cr52 spent
      263 s here;
    - or the orders have made ``max_eliminations`` eliminations in all (an iteration
      budget's bound: a count, so the same DAG on every machine). Each step also
      replays at most one order to find its bag, so the work is at most about twice
      the count.

    With neither, every step runs.
    """
    chosen = [int(i) for i in chosen]
    reserve = 0.0 if stop is None else stop.costs.estimate("twilp.cut", fam.n_sets)
    left = max_eliminations

    def due() -> bool:
        nonlocal left
        if left is not None:
            if left <= 0:
                return True
            left -= 1
        return stop is not None and stop.remaining() <= reserve

    while True:
        parents = fam.parents(chosen)
        try:
            order, width, bag = order_width(
                parents, k, None if stop is None and max_eliminations is None else due)
        except TimeoutError:
            t0 = time.perf_counter()
            out = chordal_cut(fam, chosen, k)
            if stop is not None:
                stop.costs.record("twilp.cut", fam.n_sets, time.perf_counter() - t0)
            return out
        if width <= k:
            return chosen, order
        best: tuple[float, int, int] | None = None
        for v, i in enumerate(chosen):
            for p in bits(fam.masks[i]):
                if p in bag or v in bag:
                    j = best_subset(fam, v, fam.masks[i] & ~(1 << p))
                    loss = float(fam.scores[i] - fam.scores[j])
                    if best is None or loss < best[0]:
                        best = (loss, v, j)
        assert best is not None  # a bag wider than k always contains arcs
        chosen[best[1]] = best[2]


def chordal_cut(fam: Families, chosen: Sequence[int], k: int) -> tuple[list[int], list[int]]:
    """A DAG of treewidth <= k from ``chosen`` in one pass over the cached sets, and its
    elimination order (width <= k).

    The variables are taken in a topological order of ``chosen``; each takes its best
    cached set S of at most k members, all taken before it and pairwise adjacent in the
    graph H built so far, and joins H adjacent to S. Every vertex's earlier neighbours
    in H form a clique of at most k, so H is chordal of width <= k with the reverse
    order as a perfect elimination order, and the moral graph lies inside H (S ∪ {v} is
    a clique of H). ∅ always qualifies; a variable keeps its parents of ``chosen`` when
    they qualify (its set in ``chosen`` is a candidate), so the result is never worse
    than the forest of each variable's best single parent.
    """
    n = fam.n
    topo = topological_order(fam.parents(chosen))
    near = [0] * n  # H's adjacency, as bit masks
    before = 0
    out = [0] * n
    for v in topo:
        for i in fam.sets_of(v):
            m = fam.masks[i]
            if m & ~before or m.bit_count() > k:
                continue
            if all(near[a] | (1 << a) | ~m == -1 for a in bits(m)):
                break
        else:  # pragma: no cover - a cache always holds the empty set
            raise AssertionError("a cache always holds the empty set")
        out[v] = i
        for a in bits(m):
            near[a] |= 1 << v
        near[v] = m
        before |= 1 << v
    return out, topo[::-1]


#: TWILP's start incumbents: the greedy DAG cut by :func:`fit_treewidth`, by
#: :func:`chordal_cut`, or the better of the two.
STARTS = ("best", "fit", "cut")


def start_dag(fam: Families, greedy: Sequence[int], k: int, how: str = "best",
              stop: ScipStop | None = None, max_eliminations: int | None = None
              ) -> tuple[list[int], list[int]]:
    """TWILP's first incumbent from the greedy DAG ``greedy``: its :func:`chordal_cut`
    (``how="cut"``), its :func:`fit_treewidth` within ``stop`` / ``max_eliminations``
    (``"fit"``), or the cut unless the fit scores higher (``"best"``; the cut runs
    first, one pass over the cached sets, and the fit takes the time left)."""
    if how not in STARTS:
        raise ValueError(f"unknown start {how!r}; expected one of {STARTS}")
    cut = chordal_cut(fam, greedy, k) if how != "fit" else None
    if how == "cut":
        assert cut is not None
        return cut
    fit = fit_treewidth(fam, greedy, k, stop, max_eliminations)
    if cut is not None and fam.score(cut[0]) >= fam.score(fit[0]):
        return cut
    return fit


def feasibility_heuristic(fam: Families, prefs: Sequence[Sequence[int]], k: int,
                          stop: ScipStop | None = None) -> tuple[list[int], list[int]]:
    """TWILP §5.2 for one preference list: the first preferred set of every variable,
    a feedback arc set removed (Eades-Lin-Smyth), then :func:`fit_treewidth` (within
    ``stop``'s deadline)."""
    chosen = [int(p[0]) if len(p) else best_subset(fam, v, 0) for v, p in enumerate(prefs)]
    weights = {(p, v): 1.0 for v, i in enumerate(chosen) for p in bits(fam.masks[i])}
    pos = {v: t for t, v in enumerate(eades_order(fam.n, weights))}
    for v, i in enumerate(chosen):
        keep = fam.masks[i]
        for p in bits(fam.masks[i]):
            if pos[p] > pos[v]:  # a backward arc: part of the feedback arc set
                keep &= ~(1 << p)
        if keep != fam.masks[i]:
            chosen[v] = best_subset(fam, v, keep)
    return fit_treewidth(fam, chosen, k, stop)


def root_graph_arcs(adj: Sequence[set[int]], order: Sequence[int],
                    k: int) -> list[tuple[int, int]]:
    """The arcs of a root graph (a k-tree on N ∪ R) containing a graph of width <= k.

    ``order`` is an elimination order of ``adj`` of width <= k (n >= k + 1). Nodes are
    inserted in reverse elimination order: the t-th of the first k points to the
    earlier ones and to roots ``n .. n+k-1-t``; every later one to a k-clique holding
    its later neighbours. Roots point to the roots of larger index.
    """
    n = len(adj)
    g = [set(s) for s in adj]
    higher: dict[int, set[int]] = {}
    for v in order:
        higher[v] = eliminate(g, v)
    ins = list(reversed(list(order)))
    arcs: list[tuple[int, int]] = []
    cliques: list[frozenset[int]] = []
    for t, v in enumerate(ins):
        if t < k:
            kids = list(ins[:t]) + [n + r for r in range(k - t)]
            if t == k - 1:
                cliques.append(frozenset(ins[:k]))
        else:
            h = higher[v]
            kc = next(c for c in cliques if h <= c)
            kids = sorted(kc)
            cliques.extend((kc - {x}) | {v} for x in kc)
        arcs.extend((v, c) for c in kids)
    arcs.extend((n + a, n + b) for a in range(k) for b in range(a + 1, k))
    return arcs
