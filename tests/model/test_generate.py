"""Random networks: acyclic (networkx), in-degree and arity bounds, valid CPTs, locality,
seed determinism and parameter validation."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from bnsl_dist.exceptions import DataError
from bnsl_dist.model.generate import random_dag, random_network


def _graph(dag):
    g = nx.DiGraph()
    g.add_nodes_from(range(dag.n_vars))
    g.add_edges_from(dag.arcs())
    return g


@pytest.mark.parametrize("n,k,ar", [(1, 3, (2, 4)), (7, 6, (2, 2)), (300, 4, (2, 4)),
                                    (500, 2, (3, 7))])
def test_structure_and_cpts(n, k, ar):
    net = random_network(n, k, arity_range=ar, rng=n + k)
    assert net.n_vars == n
    assert nx.is_directed_acyclic_graph(_graph(net.dag))
    assert max((len(p) for p in net.dag.parents), default=0) <= k
    assert ar[0] <= net.arities.min() and net.arities.max() <= ar[1]
    for v, t in enumerate(net.cpts):
        q = int(np.prod([net.arities[p] for p in net.dag.parents[v]]))
        assert t.shape == (q, net.arities[v])
        assert (t >= 0).all()
        np.testing.assert_allclose(t.sum(axis=1), 1.0, atol=1e-12)
    assert len(set(net.names)) == n


def test_arities_and_indegrees_cover_their_ranges():
    net = random_network(2000, 4, arity_range=(2, 4), rng=1)
    assert set(net.arities.tolist()) == {2, 3, 4}
    deg = np.bincount([len(p) for p in net.dag.parents], minlength=5)
    assert (deg > 0).all()  # every in-degree 0..4 occurs
    # in-degree is uniform on 0..4 (after the first few positions): mean about 2
    assert abs(deg @ np.arange(5) / 2000 - 2.0) < 0.15
    assert nx.is_directed_acyclic_graph(_graph(net.dag))


@pytest.mark.parametrize("t,d", [(1000, 1), (1000, 3), (6, 3)])
def test_parent_distances_are_log_uniform(t, d):
    """Distances back in the order follow P(k) = ln((k+1)/k) / ln(t+1) (near parents)."""
    from bnsl_dist.model.generate import _pick_parents

    gen = np.random.default_rng(0)
    picks = [_pick_parents(t, d, gen) for _ in range(4000)]
    assert all(len(set(x.tolist())) == d for x in picks)
    draws = np.concatenate(picks)
    assert draws.min() >= 1 and draws.max() <= t
    k = np.arange(1, t + 1)
    p = np.log1p(1.0 / k) / np.log(t + 1.0)
    first = np.bincount([x[0] for x in picks], minlength=t + 1)[1:]  # the first draw follows p
    big = p * len(picks) >= 5
    obs = np.append(first[big], first[~big].sum())
    exp = np.append(p[big], p[~big].sum()) * len(picks)
    assert stats.chisquare(obs[exp > 0], exp[exp > 0]).pvalue > 1e-4
    if t > 100:  # half of the parents lie within sqrt(t) positions; uniform would give ~3%
        counts = np.bincount(draws, minlength=t + 1)[1:]
        assert counts[: int(np.sqrt(t))].sum() / draws.size >= 0.45
        assert np.median(draws) < t / 4


def test_seed_determinism():
    a = random_network(400, 3, rng=11)
    b = random_network(400, 3, rng=np.random.default_rng(11))
    c = random_network(400, 3, rng=12)
    assert a.dag == b.dag and a.states == b.states
    assert all(np.array_equal(x, y) for x, y in zip(a.cpts, b.cpts, strict=True))
    assert a.dag != c.dag


def test_max_parent_configs_and_concentration():
    net = random_network(500, 5, arity_range=(2, 5), rng=3, max_parent_configs=12)
    for ps in net.dag.parents:
        assert np.prod([net.arities[p] for p in ps]) <= 12
    sharp = random_network(300, 2, rng=3, concentration=0.05)
    flat = random_network(300, 2, rng=3, concentration=50.0)
    peak = np.mean([t.max(axis=1).mean() for t in sharp.cpts])
    even = np.mean([(t.max(axis=1) - 1 / t.shape[1]).mean() for t in flat.cpts])
    assert peak > 0.9 and even < 0.1
    for t in sharp.cpts:
        np.testing.assert_allclose(t.sum(axis=1), 1.0, atol=1e-12)


@pytest.mark.parametrize("kwargs,msg", [
    ({"n_vars": 0}, "n_vars"), ({"max_indegree": -1}, "max_indegree"),
    ({"arity_range": (3, 2)}, "arity_range"), ({"arity_range": (0, 2)}, "arity_range"),
    ({"arity_range": "ab"}, "arity_range"), ({"concentration": 0.0}, "concentration"),
    ({"max_parent_configs": 0}, "max_parent_configs"), ({"n_vars": 2.5}, "n_vars"),
])
def test_bad_parameters(kwargs, msg):
    args = {"n_vars": 10, "max_indegree": 2, **kwargs}
    with pytest.raises(DataError, match=msg):
        random_network(rng=0, **args)


def test_random_dag_alone():
    dag = random_dag(200, 3, rng=2)
    assert nx.is_directed_acyclic_graph(_graph(dag)) and dag.max_indegree() <= 3
    assert dag == random_dag(200, 3, rng=2)
    with pytest.raises(DataError, match="needs the arities"):
        random_dag(10, 2, rng=0, max_parent_configs=4)
