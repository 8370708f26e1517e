"""Elimination width, min-fill / min-degree bounds and certificates against naive oracles
(networkx elimination, exact treewidth by all orders and by the subset recursion)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.approximation import treewidth_min_degree, treewidth_min_fill_in

from bnsl_dist.exceptions import InfeasibleError, InvalidConfigError
from bnsl_dist.graph import (
    DAG,
    TreewidthCertificate,
    certify,
    eliminate,
    elimination_width,
    min_degree_order,
    min_fill_order,
    moral_graph,
)
from tests.graph.naive_treewidth import (
    adj_of,
    naive_elimination_width,
    random_ktree,
    treewidth_by_orders,
    treewidth_dp,
)
from tests.graph.test_moral import random_dag


def random_graph(n: int, p: float, seed: int) -> nx.Graph:
    g = nx.gnp_random_graph(n, p, seed=seed)
    return g


def test_exact_oracles_agree():
    for seed in range(8):
        g = random_graph(6, 0.5, seed)
        assert treewidth_dp(g) == treewidth_by_orders(g)
    assert treewidth_dp(nx.complete_graph(5)) == 4
    assert treewidth_dp(nx.cycle_graph(6)) == 2
    assert treewidth_dp(nx.path_graph(5)) == 1
    assert treewidth_dp(nx.empty_graph(3)) == 0


@pytest.mark.parametrize("seed", range(10))
def test_elimination_width_matches_naive(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 14))
    g = random_graph(n, float(rng.uniform(0.1, 0.6)), seed)
    adj = adj_of(g, n)
    order = [int(v) for v in rng.permutation(n)]
    assert elimination_width(adj, order) == naive_elimination_width(g, order)
    assert adj == adj_of(g, n)  # input untouched


@pytest.mark.parametrize("seed", range(10))
def test_eliminate_matches_networkx(seed):
    # one step of an elimination, against networkx: v's neighbours joined pairwise and v
    # removed (left as an isolated vertex here, so that the indices stay)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 12))
    g = random_graph(n, float(rng.uniform(0.1, 0.7)), seed)
    adj = adj_of(g, n)
    v = int(rng.integers(n))
    want_nb = set(g.neighbors(v))
    h = g.copy()
    h.add_edges_from((a, b) for a in want_nb for b in want_nb if a < b)
    h.remove_edges_from(list(h.edges(v)))
    assert eliminate(adj, v) == want_nb
    assert adj == adj_of(h, n)


def test_elimination_width_rejects_bad_orders():
    adj = [{1}, {0}, set()]
    with pytest.raises(InvalidConfigError):
        elimination_width(adj, [0, 1])
    with pytest.raises(InvalidConfigError):
        elimination_width(adj, [0, 1, 1])


@pytest.mark.parametrize("heuristic", [min_fill_order, min_degree_order])
@pytest.mark.parametrize("seed", range(10))
def test_heuristics_are_valid_upper_bounds(heuristic, seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 11))
    g = random_graph(n, float(rng.uniform(0.2, 0.7)), 100 + seed)
    adj = adj_of(g, n)
    order, width = heuristic(adj)
    assert sorted(order) == list(range(n))
    assert width == naive_elimination_width(g, order)
    assert width >= treewidth_dp(g)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_heuristics_are_exact_on_ktrees(k):
    # k-trees are chordal with treewidth exactly k: both greedy rules find a perfect
    # elimination order, and networkx's heuristics agree.
    rng = np.random.default_rng(k)
    n = 30
    _, _, edges = random_ktree(n, k, rng)
    g = nx.Graph(list(edges))
    adj = adj_of(g, n)
    assert min_fill_order(adj)[1] == k
    assert min_degree_order(adj)[1] == k
    assert treewidth_min_fill_in(g)[0] == k
    assert treewidth_min_degree(g)[0] == k


def test_min_fill_on_larger_sparse_graph_is_consistent():
    g = random_graph(300, 0.01, 5)
    adj = adj_of(g, 300)
    order, width = min_fill_order(adj)
    assert width == naive_elimination_width(g, order)
    nx_width = treewidth_min_fill_in(g)[0]
    assert abs(width - nx_width) <= 2  # both min-fill; only tie-breaking differs


@pytest.mark.parametrize("seed", range(8))
def test_certify_any_dag(seed):
    rng = np.random.default_rng(200 + seed)
    dag = random_dag(int(rng.integers(2, 10)), 0.35, rng)
    cert = certify(dag)
    assert cert.check(dag)
    g = nx.Graph()
    g.add_nodes_from(range(dag.n_vars))
    g.add_edges_from((min(a, b), max(a, b)) for a, nb in enumerate(moral_graph(dag))
                     for b in nb)
    exact = treewidth_dp(g)
    assert cert.width >= exact
    assert naive_elimination_width(g, cert.order) == cert.width == cert.width_on(dag)
    assert certify(dag, k=cert.width) == cert
    if exact >= 1:
        with pytest.raises(InfeasibleError):
            certify(dag, k=exact - 1)


def test_certificate_check_and_json():
    dag = DAG.from_parents([(), (0,), (0, 1), (2,)])  # treewidth 2
    good = TreewidthCertificate((3, 2, 1, 0), 2)
    assert good.check(dag)
    assert not TreewidthCertificate((3, 2, 1, 0), 1).check(dag)
    assert not TreewidthCertificate((3, 2, 1), 2).check(dag)
    assert not TreewidthCertificate((3, 2, 1, 1), 2).check(dag)
    assert TreewidthCertificate.from_json_dict(good.to_json_dict()) == good
    with pytest.raises(InvalidConfigError):
        TreewidthCertificate.from_json_dict({"order": [0]})
