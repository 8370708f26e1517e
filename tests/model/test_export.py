"""Export to pgmpy / networkx: pgmpy computes the same joint probabilities as our CPTs."""

from __future__ import annotations

import gzip
import itertools
import warnings

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.data import bundled_path
from bnsl_dist.graph import DAG
from bnsl_dist.model import BayesianNetwork, from_pgmpy, to_networkx, to_pgmpy

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pgmpy = pytest.importorskip("pgmpy")
    from pgmpy.readwrite import BIFReader


def _net(rng):
    dag = DAG.from_parents([(), (), (0, 1), (2, 0), (1,)], ["A", "B", "C", "D", "E"])
    ar = [2, 3, 2, 3, 2]
    cpts = tuple(rng.dirichlet(np.ones(ar[v]), size=int(np.prod([ar[p] for p in dag.parents[v]])))
                 for v in range(5))
    states = tuple(tuple(f"{n}{k}" for k in range(r)) for n, r in zip("abcde", ar, strict=True))
    return BayesianNetwork(dag, states, cpts)


def test_pgmpy_joint_equals_ours():
    net = _net(np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = to_pgmpy(net)
        model.check_model()
    ar = net.arities
    for x in itertools.product(*[range(r) for r in ar]):
        ours = float(np.exp(net.log_prob_rows(np.array([x]))[0]))
        theirs = 1.0
        for s in net.names:
            cpd = model.get_cpds(s)
            theirs *= cpd.get_value(**{u: net.states[net.names.index(u)][x[net.names.index(u)]]
                                       for u in cpd.variables})
        assert theirs == pytest.approx(ours, rel=1e-12)


def test_round_trip_and_bif_reader_agree():
    net = _net(np.random.default_rng(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = from_pgmpy(to_pgmpy(net))
    assert back.dag == net.dag and back.states == net.states
    for a, b in zip(back.cpts, net.cpts, strict=True):
        np.testing.assert_allclose(a, b)
    # pgmpy's own BIF parser (evidence in the file's order) read back into our layout
    # gives our BIF reader's CPTs
    from bnsl_dist.model.bif import read_bif

    p = bundled_path("bif/asia.bif.gz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = BIFReader(string=gzip.decompress(p.read_bytes()).decode()).get_model()
        theirs = from_pgmpy(model)
    ours = read_bif(p)
    perm = [theirs.names.index(s) for s in ours.names]
    assert [theirs.states[u] for u in perm] == list(ours.states)
    xs = np.array(list(itertools.product(*[range(r) for r in ours.arities])))
    xt = np.empty_like(xs)
    xt[:, perm] = xs
    np.testing.assert_allclose(theirs.log_prob_rows(xt), ours.log_prob_rows(xs), rtol=1e-12)


def test_networkx_graph():
    net = _net(np.random.default_rng(2))
    g = to_networkx(net)
    assert nx.is_directed_acyclic_graph(g)
    assert set(g.edges) == {(net.names[p], net.names[v]) for p, v in net.dag.arcs()}
    assert g.nodes["C"]["parents"] == ["A", "B"] and g.nodes["C"]["states"] == ["c0", "c1"]
    assert set(to_networkx(net.dag).edges) == set(g.edges)
