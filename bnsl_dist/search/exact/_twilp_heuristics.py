"""TWILP's feasibility side: cutting a DAG down to treewidth k, the §5.2 heuristic, and
the root graph (a k-tree on N ∪ R) that certifies a DAG for the ILP's y-variables.

References
----------
P. Parviainen, H. S. Farahani, J. Lagergren, "Learning bounded tree-width Bayesian
networks using integer linear programming", AISTATS 2014, §3 (root graphs, Lemma 5),
§5.2 (feasibility heuristic). P. Eades, X. Lin, W. F. Smyth, IPL 47(6), 1993.
"""

from __future__ import annotations

from collections.abc import Sequence

from bnsl_dist.graph import eliminate, min_degree_order, min_fill_order, moral_graph
from bnsl_dist.search.exact._ilp_families import Families, bits, eades_order

__all__ = ["fit_treewidth", "feasibility_heuristic", "root_graph_arcs", "best_subset",
           "order_width"]


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


def order_width(parents: Sequence[Sequence[int]], k: int) -> tuple[list[int], int, set[int]]:
    adj = moral_graph(parents)
    order, width = min_fill_order(adj)
    if width > k:
        o2, w2 = min_degree_order(adj)
        if w2 < width:
            order, width = o2, w2
    bag: set[int] = set()
    if width > k:
        _, bag = _elimination(adj, order, k)
    return order, width, bag


def fit_treewidth(fam: Families, chosen: Sequence[int], k: int) -> tuple[list[int], list[int]]:
    """Remove arcs from a DAG until min-fill / min-degree certify treewidth <= k.

    Each step removes, among the arcs touching the first elimination bag wider than k,
    the one whose loss is least (the child then takes its best cached subset of its
    remaining parents). Returns the new choice and an elimination order of width <= k.
    """
    chosen = [int(i) for i in chosen]
    while True:
        parents = fam.parents(chosen)
        order, width, bag = order_width(parents, k)
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


def feasibility_heuristic(fam: Families, prefs: Sequence[Sequence[int]],
                          k: int) -> tuple[list[int], list[int]]:
    """TWILP §5.2 for one preference list: the first preferred set of every variable,
    a feedback arc set removed (Eades-Lin-Smyth), then :func:`fit_treewidth`."""
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
    return fit_treewidth(fam, chosen, k)


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
