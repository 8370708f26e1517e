"""KTree against brute force over its cliques and the exact treewidth of its graph."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph import KTree
from tests.graph.naive_treewidth import naive_elimination_width, random_ktree, treewidth_dp


def build(n: int, k: int, seed: int) -> tuple[KTree, set[tuple[int, int]]]:
    order, attach, edges = random_ktree(n, k, np.random.default_rng(seed))
    return KTree.replay(k, order, attach), edges


@pytest.mark.parametrize(("n", "k"), [(2, 1), (6, 1), (9, 2), (9, 3), (12, 4), (7, 6)])
def test_structure(n, k):
    t, edges = build(n, k, seed=n * 10 + k)
    assert sorted(t.nodes) == list(range(n))
    assert t.n_cliques == (k + 1) + (n - k - 1) * k
    adj = t.adjacency()
    got_edges = {(min(a, b), max(a, b)) for a, nb in adj.items() for b in nb}
    assert got_edges == edges
    assert len(edges) == k * (k + 1) // 2 + (n - k - 1) * k
    for c in t.cliques():
        assert len(set(c)) == k
        assert all(b in adj[a] for a, b in itertools.combinations(c, 2))
    for v in range(n):
        assert t.cliques_containing(v) == [i for i, c in enumerate(t.cliques()) if v in c]
    g = nx.Graph(list(edges))
    g.add_nodes_from(range(n))
    peo = t.perfect_elimination_order()
    assert peo == t.nodes[::-1]
    # a perfect elimination order adds no fill edge and has width k
    h = g.copy()
    for v in peo:
        nb = list(h.neighbors(v))
        assert len(nb) <= k
        assert all(h.has_edge(a, b) for a, b in itertools.combinations(nb, 2))
        h.remove_node(v)
    assert naive_elimination_width(g, peo) == k
    if n <= 10:
        assert treewidth_dp(g) == k


@pytest.mark.parametrize("seed", range(5))
def test_fitting_cliques_is_brute_force(seed):
    rng = np.random.default_rng(seed)
    n, k = 11, 3
    t, _ = build(n, k, seed)
    cliques = t.cliques()
    for size in range(0, k + 2):
        for _ in range(15):
            ps = [int(x) for x in rng.choice(n + 2, size=size, replace=False)]  # may be absent
            expected = [i for i, c in enumerate(cliques) if set(ps) <= set(c)]
            assert t.fitting_cliques(ps) == expected


def test_add_numbering_and_errors():
    t = KTree(2, [5, 7, 9])
    assert [t.clique(i) for i in range(3)] == [(7, 9), (5, 9), (5, 7)]
    new = t.add(1, 0)
    assert new == [3, 4] and t.clique(3) == (1, 9) and t.clique(4) == (7, 1)
    assert 1 in t and len(t) == 4
    assert t.neighbors(1) == {7, 9}
    cert = t.certificate()
    assert cert.order == (1, 9, 7, 5) and cert.width == 2
    with pytest.raises(InvalidConfigError):
        t.add(1, 0)
    with pytest.raises(InvalidConfigError):
        t.add(2, 99)
    with pytest.raises(InvalidConfigError):
        KTree(0, [1])
    with pytest.raises(InvalidConfigError):
        KTree(2, [1, 1, 2])
    with pytest.raises(InvalidConfigError):
        KTree.replay(2, [0, 1, 2, 3], [-1, -1, -1])
