"""Elimination cliques of an undirected graph (adjacency lists ``list[set[int]]``, as in
:mod:`bnsl_dist.graph`) along an elimination order. Private to :mod:`bnsl_dist.inference`."""

from __future__ import annotations

from collections.abc import Sequence

from bnsl_dist.graph.treewidth import eliminate

__all__ = ["elimination_cliques"]


def elimination_cliques(adj: Sequence[set[int]], order: Sequence[int]) -> list[tuple[int, ...]]:
    """``cliques[v]``: ``v`` and its not-yet-eliminated neighbours when ``v`` is eliminated
    (fill edges added along the way), sorted ascending."""
    g = [set(s) for s in adj]
    cliques: list[tuple[int, ...]] = [()] * len(g)
    for v in order:
        cliques[v] = tuple(sorted(eliminate(g, v) | {v}))
    return cliques
