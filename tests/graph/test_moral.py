"""moral_graph against networkx.moral_graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.graph import DAG, moral_graph, undirected_edges
from tests.graph.naive_treewidth import nx_moral


def random_dag(n: int, p: float, rng: np.random.Generator) -> DAG:
    perm = rng.permutation(n)
    parents = [[int(perm[j]) for j in range(i) if rng.random() < p] for i in range(n)]
    out: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        out[int(perm[i])] = parents[i]
    return DAG.from_parents(out)


@pytest.mark.parametrize("seed", range(6))
def test_moral_graph_matches_networkx(seed):
    rng = np.random.default_rng(seed)
    dag = random_dag(int(rng.integers(1, 15)), 0.3, rng)
    expected = nx_moral(dag.parents)
    got = moral_graph(dag)
    assert undirected_edges(got) == sorted((min(a, b), max(a, b)) for a, b in expected.edges)
    assert moral_graph(dag.parents) == got
    assert all(v not in nb for v, nb in enumerate(got))


def test_v_structure_is_married():
    g = moral_graph(DAG.from_parents([(), (), (0, 1), (2,)]))
    assert g == [{1, 2}, {0, 2}, {0, 1, 3}, {2}]
    assert nx.is_connected(nx.Graph(undirected_edges(g)))
