"""Naive treewidth oracles for tests (networkx graphs / plain sets; no project code).

- :func:`nx_moral` — moral graph of a parents list via networkx.
- :func:`naive_elimination_width` — eliminate on a networkx graph, adding fill edges.
- :func:`treewidth_by_orders` — exact treewidth: min width over all elimination orders.
- :func:`treewidth_dp` — exact treewidth by the subset recursion of Bodlaender, Fomin,
  Koster, Kratsch, Thilikos (2006): TW(S) = min_v max(TW(S - v), |Q(S - v, v)|).
- :func:`random_ktree` — a random k-tree as (insertion order, attach ids, edges),
  built from plain sets.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import networkx as nx
import numpy as np

__all__ = ["nx_moral", "naive_elimination_width", "treewidth_by_orders", "treewidth_dp",
           "random_ktree", "adj_of"]


def nx_moral(parents: Sequence[Sequence[int]]) -> nx.Graph:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parents)))
    g.add_edges_from((int(p), v) for v, ps in enumerate(parents) for p in ps)
    return nx.moral_graph(g)


def adj_of(g: nx.Graph, n: int) -> list[set[int]]:
    return [set(g.neighbors(v)) if v in g else set() for v in range(n)]


def naive_elimination_width(g: nx.Graph, order: Sequence[int]) -> int:
    h = g.copy()
    width = 0
    for v in order:
        nb = list(h.neighbors(v))
        width = max(width, len(nb))
        h.add_edges_from(itertools.combinations(nb, 2))
        h.remove_node(v)
    return width


def treewidth_by_orders(g: nx.Graph) -> int:
    nodes = list(g.nodes)
    return min((naive_elimination_width(g, o) for o in itertools.permutations(nodes)),
               default=0)


def treewidth_dp(g: nx.Graph) -> int:
    nodes = list(g.nodes)
    n = len(nodes)
    if n == 0:
        return 0
    idx = {v: i for i, v in enumerate(nodes)}
    nbr = [0] * n
    for a, b in g.edges:
        nbr[idx[a]] |= 1 << idx[b]
        nbr[idx[b]] |= 1 << idx[a]

    def q(s: int, v: int) -> int:
        # vertices outside s + {v} reachable from v through s
        seen = 1 << v
        frontier = [v]
        out = 0
        while frontier:
            u = frontier.pop()
            m = nbr[u] & ~seen
            seen |= m
            while m:
                low = m & -m
                m ^= low
                w = low.bit_length() - 1
                if (s >> w) & 1:
                    frontier.append(w)
                else:
                    out += 1
        return out

    tw = [0] * (1 << n)
    tw[0] = -1
    for s in range(1, 1 << n):
        best = n
        rest = s
        while rest:
            low = rest & -rest
            rest ^= low
            v = low.bit_length() - 1
            best = min(best, max(tw[s ^ low], q(s ^ low, v)))
        tw[s] = best
    return max(tw[-1], 0)


def random_ktree(n: int, k: int, rng: np.random.Generator
                 ) -> tuple[list[int], list[int], set[tuple[int, int]]]:
    """Insertion order, attach ids (KTree's numbering rule) and the edge set."""
    order = [int(v) for v in rng.permutation(n)]
    cliques: list[tuple[int, ...]] = []
    first = order[:k + 1]
    for j in range(k + 1):
        cliques.append(tuple(first[:j] + first[j + 1:]))
    edges = {(min(a, b), max(a, b)) for a, b in itertools.combinations(first, 2)}
    attach = [-1] * (k + 1)
    for v in order[k + 1:]:
        c = int(rng.integers(len(cliques)))
        attach.append(c)
        base = cliques[c]
        for u in base:
            edges.add((min(u, v), max(u, v)))
        for p in range(k):
            cliques.append(base[:p] + (v,) + base[p + 1:])
    return order, attach, edges
