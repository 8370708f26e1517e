"""Elimination cliques of an undirected graph (adjacency lists ``list[set[int]]``, as in
:mod:`bnsl_dist.graph`) along an elimination order. Private to :mod:`bnsl_dist.inference`."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["elimination_cliques"]


def elimination_cliques(adj: Sequence[set[int]], order: Sequence[int]) -> list[tuple[int, ...]]:
    """``cliques[v]``: ``v`` and its not-yet-eliminated neighbours when ``v`` is eliminated
    (fill edges added along the way), sorted ascending."""
    g = [set(s) for s in adj]
    cliques: list[tuple[int, ...]] = [()] * len(g)
    for v in order:
        nb = list(g[v])
        cliques[v] = tuple(sorted(nb + [v]))
        for i, a in enumerate(nb):
            g[a].discard(v)
            for b in nb[i + 1:]:
                g[a].add(b)
                g[b].add(a)
        g[v] = set()
    return cliques
