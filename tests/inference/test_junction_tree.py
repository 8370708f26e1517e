"""Junction-tree inference against brute-force enumeration (tests/inference/naive_inference)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from bnsl_dist.exceptions import BNSLError, DataError
from bnsl_dist.graph import DAG, elimination_width, moral_graph
from bnsl_dist.inference import (
    JunctionTreeTooLargeError,
    as_evidence,
    build_junction_tree,
    parse_assignments,
)
from bnsl_dist.model.network import BayesianNetwork
from tests.inference.naive_inference import (
    brute_marginals,
    brute_mpe,
    brute_prob_evidence,
    joint_table,
    random_network,
)


def _random_evidence(net: BayesianNetwork, rows: int, p: float, rng: np.random.Generator
                     ) -> np.ndarray:
    ev = np.full((rows, net.n_vars), -1, dtype=np.int64)
    for b in range(rows):
        for v in range(net.n_vars):
            if rng.random() < p:
                ev[b, v] = rng.integers(0, len(net.states[v]))
    return ev


def _check_against_brute_force(net: BayesianNetwork, jt, ev: np.ndarray) -> None:
    logp = jt.log_prob_evidence(ev)
    post = jt.posterior(ev)
    mpe = jt.mpe(ev)
    np.testing.assert_allclose(post.log_prob_evidence, logp, rtol=1e-12)
    for b in range(ev.shape[0]):
        pe = brute_prob_evidence(net, ev[b])
        if pe == 0:
            assert logp[b] == -np.inf
            assert mpe.log_prob[b] == -np.inf
            assert all(np.isnan(post.marginals[v][b]).all() for v in range(net.n_vars))
            continue
        assert np.exp(logp[b]) == pytest.approx(pe, rel=1e-9)
        truth = brute_marginals(net, ev[b])
        for v in range(net.n_vars):
            np.testing.assert_allclose(post.marginals[v][b], truth[v], atol=1e-10)
        best, argmaxes = brute_mpe(net, ev[b])
        assert np.exp(mpe.log_prob[b]) == pytest.approx(best, rel=1e-9)
        assert any(np.array_equal(mpe.assignment[b], a) for a in argmaxes)
        obs = ev[b] >= 0
        assert np.array_equal(mpe.assignment[b][obs], ev[b][obs])


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed", range(10))
def test_matches_brute_force_min_fill(seed, sparse):
    # sparse: P(e) and MPE row by row over evidence-consistent entries; else batched
    rng = np.random.default_rng(seed)
    net = random_network(int(rng.integers(1, 9)), rng, max_parents=3, max_arity=3,
                         zeros=0.25 if seed % 3 == 0 else 0.0)
    jt = build_junction_tree(net, sparse=sparse)
    _check_against_brute_force(net, jt, _random_evidence(net, 6, 0.35 + 0.3 * sparse, rng))


@pytest.mark.parametrize("seed", range(6))
def test_matches_brute_force_any_order(seed):
    # a random (non-perfect) elimination order: fill edges are added, answers unchanged
    rng = np.random.default_rng(100 + seed)
    net = random_network(int(rng.integers(5, 9)), rng, max_parents=4, density=0.9)
    order = [int(v) for v in rng.permutation(net.n_vars)]
    jt = build_junction_tree(net, order, sparse=bool(seed % 2))
    assert jt.width == elimination_width(moral_graph(net.dag), order)
    _check_against_brute_force(net, jt, _random_evidence(net, 5, 0.3, rng))


def test_junction_tree_invariants():
    rng = np.random.default_rng(7)
    net = random_network(12, rng, max_parents=3, max_arity=2, density=0.9)
    jt = build_junction_tree(net)
    cl = [set(c) for c in jt.cliques]
    # every family inside some clique; home clique holds its variable
    for v in range(net.n_vars):
        fam = {v, *net.dag.parents[v]}
        assert any(fam <= c for c in cl)
        assert v in cl[jt.home[v]]
    # running intersection: cliques holding a variable form a connected subtree
    for v in range(net.n_vars):
        holding = [c for c in range(len(cl)) if v in cl[c]]
        tops = [c for c in holding if jt.parent[c] < 0 or v not in cl[jt.parent[c]]]
        assert len(tops) == 1
    # no clique is contained in another (merged)
    for i, a in enumerate(cl):
        for j, b in enumerate(cl):
            assert i == j or not a <= b
    for c, sep in enumerate(jt.separators):
        p = jt.parent[c]
        assert set(sep) == (set() if p < 0 else cl[c] & cl[p])


def test_batched_equals_per_row_and_sparse_path():
    rng = np.random.default_rng(11)
    net = random_network(9, rng, max_parents=3)
    ev = _random_evidence(net, 40, 0.3, rng)
    jt = build_junction_tree(net, batch_memory=1, sparse=False)  # one row per batch
    jt_big = build_junction_tree(net, sparse=False)
    jt_sparse = build_junction_tree(net, sparse=True)
    jt_auto = build_junction_tree(net)
    for other in (jt_sparse, jt_auto):
        np.testing.assert_allclose(other.log_prob_evidence(ev), jt_big.log_prob_evidence(ev),
                                   rtol=1e-12)
        np.testing.assert_allclose(other.mpe(ev).log_prob, jt_big.mpe(ev).log_prob,
                                   rtol=1e-12)
    post = jt_big.posterior(ev)
    mpe = jt_big.mpe(ev)
    for b in range(ev.shape[0]):
        row = jt.posterior(ev[b])
        assert row.log_prob_evidence[0] == pytest.approx(post.log_prob_evidence[b], rel=1e-12)
        for v in range(net.n_vars):
            np.testing.assert_allclose(row.marginals[v][0], post.marginals[v][b], atol=1e-12)
        m = jt.mpe(ev[b])
        assert np.array_equal(m.assignment[0], mpe.assignment[b])
        assert m.log_prob[0] == pytest.approx(mpe.log_prob[b], rel=1e-12)
    np.testing.assert_allclose(jt.log_prob_evidence(ev), post.log_prob_evidence, rtol=1e-12)


def test_complete_rows_equal_cpt_product():
    rng = np.random.default_rng(5)
    net = random_network(8, rng)
    xs, p = joint_table(net)
    rows = xs[rng.choice(len(xs), 25)]
    jt = build_junction_tree(net)
    np.testing.assert_allclose(jt.log_prob_evidence(rows), np.log(p[[
        int(np.flatnonzero((xs == r).all(axis=1))[0]) for r in rows]]), rtol=1e-10)
    # no evidence: P = 1, marginals = prior marginals
    assert jt.log_prob_evidence(None)[0] == pytest.approx(0.0, abs=1e-12)


def _chain(n: int, rng: np.random.Generator) -> BayesianNetwork:
    dag = DAG.from_parents([()] + [(i - 1,) for i in range(1, n)])
    cpts = (np.array([[0.5, 0.5]]),) + tuple(rng.dirichlet([1, 1], size=2) for _ in range(n - 1))
    return BayesianNetwork(dag, (("a", "b"),) * n, cpts)


def test_no_underflow_on_thousands_of_variables():
    rng = np.random.default_rng(3)
    net = _chain(3000, rng)
    x = np.zeros((2, 3000), dtype=np.int64)
    x[1] = rng.integers(0, 2, 3000)
    jt = build_junction_tree(net)
    direct = net.log_prob_rows(x)
    assert np.all(direct < -1000)          # P(row) itself underflows a double
    ev = x.copy()
    ev[:, ::3] = -1                         # a third unobserved
    for sparse in (False, True):
        jt.sparse = sparse
        np.testing.assert_allclose(jt.log_prob_evidence(x), direct, rtol=1e-10)
        mpe = jt.mpe(ev)
        assert np.all(np.isfinite(mpe.log_prob))
        np.testing.assert_allclose(net.log_prob_rows(mpe.assignment), mpe.log_prob, rtol=1e-10)
    jt.sparse = None
    post = jt.posterior(ev, query=[1, 2999])
    for m in post.marginals.values():
        np.testing.assert_allclose(m.sum(axis=1), 1.0)


def test_mpe_assignment_is_locally_optimal_on_a_chain():
    rng = np.random.default_rng(4)
    net = _chain(60, rng)
    ev = np.full((1, 60), -1)
    ev[0, [5, 30, 59]] = [1, 0, 1]
    res = build_junction_tree(net).mpe(ev)
    x = res.assignment[0]
    base = net.log_prob_rows(x[None])[0]
    assert base == pytest.approx(res.log_prob[0], rel=1e-12)
    for v in range(60):
        if ev[0, v] < 0:
            y = x.copy()
            y[v] = 1 - y[v]
            assert net.log_prob_rows(y[None])[0] <= base + 1e-12


def test_memory_limit_names_the_largest_clique():
    rng = np.random.default_rng(0)
    # one child of 14 binary parents: the family is a clique of 2^15 entries
    n = 15
    dag = DAG.from_parents([()] * 14 + [tuple(range(14))])
    cpts = tuple(rng.dirichlet([1, 1], size=1) for _ in range(14)) + (
        rng.dirichlet([1, 1], size=2**14),)
    net = BayesianNetwork(dag, (("0", "1"),) * n, cpts)
    with pytest.raises(JunctionTreeTooLargeError, match=r"32,768 entries") as err:
        build_junction_tree(net, memory_limit=100_000)
    assert isinstance(err.value, BNSLError)
    assert "X0, X1" in str(err.value) and "MiB" in str(err.value)
    assert build_junction_tree(net).width == 14


def test_evidence_parsing():
    rng = np.random.default_rng(1)
    net = random_network(3, rng)
    ev = as_evidence(net, {"X0": "s1", 2: 0})
    assert ev.tolist() == [[1, -1, 0]]
    assert as_evidence(net, [{"X1": 1}, {}]).tolist() == [[-1, 1, -1], [-1, -1, -1]]
    assert parse_assignments("X0=s1, X2=0") == {"X0": "s1", "X2": "0"}
    with pytest.raises(DataError, match="unknown variable 'Q'"):
        as_evidence(net, {"Q": 0})
    with pytest.raises(DataError, match="no state 'zz'"):
        as_evidence(net, {"X0": "zz"})
    with pytest.raises(DataError, match="out of range"):
        as_evidence(net, np.array([[0, 0, 9]]))
    with pytest.raises(DataError, match="NAME=STATE"):
        parse_assignments("X0")
    with pytest.raises(DataError, match="permutation|each of the"):
        build_junction_tree(net, [0, 0, 1])


@pytest.mark.parametrize("token", ["--1", "-+1", "²", "\u0663", "1_0", "+1"])
def test_evidence_state_that_is_no_plain_integer(token):
    # int() fails on "--1" and "²" (a ValueError, a traceback from `bnsl-dist infer`) and
    # reads the Arabic-Indic "٣" as 3: none is a label or a code as written
    net = random_network(3, np.random.default_rng(1))
    assert token not in net.states[0]
    with pytest.raises(DataError, match=re.escape(f"no state {token!r}")):
        as_evidence(net, {"X0": token})
    assert as_evidence(net, {"X0": " 1 "}).tolist() == [[1, -1, -1]]  # a code as written


@pytest.mark.parametrize("k", [1, 2, 3])
def test_certificate_orders(k):
    # a network grown inside a k-tree: the reverse insertion order is a perfect
    # elimination order of width <= k; a min-fill certificate works as well
    from bnsl_dist.graph import KTree, certify

    rng = np.random.default_rng(20 + k)
    n = 9
    t = KTree(k, list(range(k + 1)))
    parents: list[tuple[int, ...]] = [tuple(range(v)) for v in range(k + 1)]
    for v in range(k + 1, n):
        cid = int(rng.integers(t.n_cliques))
        members = t.clique(cid)
        m = int(rng.integers(0, k + 1))
        parents.append(tuple(sorted(int(x) for x in rng.choice(members, m, replace=False))))
        t.add(v, cid)
    dag = DAG.from_parents(parents)
    ar = rng.integers(2, 4, size=n)
    cpts = tuple(rng.dirichlet(np.ones(ar[v]), size=int(np.prod([ar[p] for p in parents[v]])))
                 for v in range(n))
    net = BayesianNetwork(dag, tuple(tuple(str(s) for s in range(r)) for r in ar), cpts)
    ev = _random_evidence(net, 4, 0.3, rng)
    for order in (t.perfect_elimination_order(), certify(dag).order):
        jt = build_junction_tree(net, order)
        assert jt.width <= k
        _check_against_brute_force(net, jt, ev)


def _naive_bayes(n_leaves: int, rng: np.random.Generator) -> BayesianNetwork:
    """A 3-state root with ``n_leaves`` binary children (near-deterministic CPTs)."""
    dag = DAG.from_parents([()] + [(0,)] * n_leaves)
    leaf = [np.array([[0.99, 0.01], [0.01, 0.99], [0.5, 0.5]])[rng.permutation(3)]
            for _ in range(n_leaves)]
    return BayesianNetwork(dag, (("a", "b", "c"),) + (("0", "1"),) * n_leaves,
                           (np.array([[0.2, 0.3, 0.5]]),) + tuple(leaf))


def _naive_bayes_joint(net: BayesianNetwork, ev: np.ndarray) -> np.ndarray:
    """ln P(root = h, e) for each root state h, leaves read from ``ev`` (-1 summed out),
    added up in logs leaf by leaf."""
    out = np.log(net.cpts[0][0]).copy()
    for v in range(1, net.n_vars):
        if ev[v] >= 0:
            out += np.log(net.cpts[v][:, ev[v]])
    return out


@pytest.mark.parametrize("root_observed", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_many_disagreeing_children_do_not_underflow(sparse, root_observed):
    # a root with 600 children whose evidence disagrees: each child's message is
    # rescaled to a maximum of 1, but the product of 600 of them is below 1e-308 at
    # every root state, so P(e) came out 0 (ln -inf), the marginals NaN and the MPE
    # arbitrary, although ln P(e) is about -1,000
    rng = np.random.default_rng(0)
    n_leaves = 600
    net = _naive_bayes(n_leaves, rng)
    ev = rng.integers(0, 2, size=(3, n_leaves + 1))
    ev[:, 0] = 1 if root_observed else -1
    ev[1, 5] = ev[2, 7] = -1   # a leaf to impute
    jt = build_junction_tree(net, sparse=sparse)
    logp = jt.log_prob_evidence(ev)
    post = jt.posterior(ev, [0, 5, 7])
    mpe = jt.mpe(ev)
    for b in range(ev.shape[0]):
        joint = _naive_bayes_joint(net, ev[b])
        if root_observed:
            joint = np.where(np.arange(3) == 1, joint, -np.inf)
        top = joint.max()
        truth = top + np.log(np.exp(joint - top).sum())
        assert truth < -700                    # P(e) itself underflows a double
        assert logp[b] == pytest.approx(truth, rel=1e-10)
        assert post.log_prob_evidence[b] == pytest.approx(truth, rel=1e-10)
        root = np.exp(joint - truth)
        np.testing.assert_allclose(post.marginals[0][b], root, atol=1e-10)
        for leaf in (5, 7):
            if ev[b, leaf] < 0:
                np.testing.assert_allclose(post.marginals[leaf][b], root @ net.cpts[leaf],
                                           atol=1e-10)
        h = int(np.argmax(joint))              # the MPE: the best root state, then each
        best = ev[b].copy()                    # missing leaf at its likelier state
        best[0] = h
        for leaf in np.flatnonzero(ev[b] < 0):
            if leaf:
                best[leaf] = int(np.argmax(net.cpts[leaf][h]))
        assert np.array_equal(mpe.assignment[b], best)
        assert mpe.log_prob[b] == pytest.approx(net.log_prob_rows(best[None])[0], rel=1e-10)
