"""Moral graph of a DAG: the undirected graph whose treewidth is the DAG's treewidth.

Undirected graphs are adjacency lists ``list[set[int]]`` over nodes ``0..n-1`` throughout
:mod:`bnsl_dist.graph` (``adj[u]`` holds the neighbours of ``u``; no self loops).
"""

from __future__ import annotations

from collections.abc import Sequence

from bnsl_dist.graph.dag import DAG

__all__ = ["moral_graph", "undirected_edges"]


def moral_graph(dag: DAG | Sequence[Sequence[int]]) -> list[set[int]]:
    """Moralise a DAG: link every node to its parents and marry the parents of each node.

    Parameters
    ----------
    dag : DAG or sequence of parent sequences
        The DAG (``dag.parents[v]`` are the parents of ``v``), or its parent lists.

    Returns
    -------
    list of set of int
        ``adj[u]`` = neighbours of ``u`` in the moral graph.

    Examples
    --------
    >>> from bnsl_dist.graph import DAG, moral_graph
    >>> moral_graph(DAG.from_parents([(), (), (0, 1)]))   # a v-structure 0 -> 2 <- 1
    [{1, 2}, {0, 2}, {0, 1}]

    References
    ----------
    S. L. Lauritzen, D. J. Spiegelhalter, "Local computations with probabilities on
    graphical structures and their application to expert systems", JRSS-B 50(2), 1988,
    §3 (moralisation). M. Scanagatta et al., "Approximate structure learning for large
    Bayesian networks", Machine Learning 107, 2018, §5.1 (treewidth of a DAG).
    """
    parents = dag.parents if isinstance(dag, DAG) else dag
    n = len(parents)
    adj: list[set[int]] = [set() for _ in range(n)]
    for v, ps in enumerate(parents):
        ps = [int(p) for p in ps]
        for i, p in enumerate(ps):
            adj[p].add(v)
            adj[v].add(p)
            for q in ps[i + 1:]:
                adj[p].add(q)
                adj[q].add(p)
    return adj


def undirected_edges(adj: Sequence[set[int]]) -> list[tuple[int, int]]:
    """The edges ``(u, v)``, ``u < v``, of an adjacency-list graph, sorted."""
    return sorted((u, v) for u, nb in enumerate(adj) for v in nb if u < v)
