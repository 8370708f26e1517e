"""qds-BNSL: the ε-qd forest (Algorithm 1), learning on the roots (Algorithm 2), the
anytime contract of the lifted incumbents, screening as a stage of `learn`."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnsl_dist.data import CategoricalData, resolve_data
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph import find_cycle
from bnsl_dist.scores import LocalScorer
from bnsl_dist.scores.entropy import conditional_entropy_matrix
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.qds import ScreeningSpec, epsilon_for_root_fraction, qd_forest, qds_learn
from tests.naive_scores import exhaustive_cache_builder as exhaustive_cache
from tests.naive_scores import naive_entropy


def _deterministic_data(seed=0, n_rows=400):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n_rows)
    b = (a + rng.integers(0, 2, n_rows)) % 3
    c = rng.integers(0, 2, n_rows)
    f = np.array([0, 1, 1])[a]          # f is a function of a (fewer states)
    g = (b * 2 + c) % 4                 # g is a function of (b, c), not of one variable
    e = (c + (rng.random(n_rows) < 0.2)) % 2
    return CategoricalData.from_array(np.stack([a, b, c, f, g, e], axis=1),
                                      names=["a", "b", "c", "f", "g", "e"])


def test_conditional_entropy_matrix_matches_naive():
    d = _deterministic_data()
    m = conditional_entropy_matrix(d)
    for i, j in itertools.permutations(range(d.n_vars), 2):
        assert m[i, j] == pytest.approx(naive_entropy(d.codes, i, [j]), abs=1e-12)
    assert m[3, 0] == pytest.approx(0.0, abs=1e-12)  # f | a is deterministic


def test_two_cycles_broken_by_smaller_conditional_entropy():
    h = np.array([[0.0, 0.10, 0.9],
                  [0.05, 0.0, 0.9],
                  [0.9, 0.9, 0.0]])
    parent = qd_forest(h, np.array([2, 2, 2]), epsilon=0.2)
    # H(1|0)=0.05 <= H(0|1)=0.10: keep 0 -> 1, drop 1 -> 0
    assert parent.tolist() == [-1, 0, -1]


def test_simplest_parent_is_the_one_with_fewest_states():
    # variable 0 has candidates 1 (5 states, H=0.01) and 2 (3 states, H=0.02): takes 2
    h = np.array([[0.0, 0.01, 0.02], [0.9, 0.0, 0.9], [0.9, 0.9, 0.0]])
    assert qd_forest(h, np.array([2, 5, 3]), epsilon=0.05).tolist() == [2, -1, -1]
    # with equal arities the smaller conditional entropy wins
    assert qd_forest(h, np.array([2, 3, 3]), epsilon=0.05).tolist() == [1, -1, -1]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 9), eps=st.floats(0.0, 1.0))
def test_forest_is_acyclic_with_one_parent_each(seed, n, eps):
    rng = np.random.default_rng(seed)
    h = rng.random((n, n))
    np.fill_diagonal(h, 0.0)
    parent = qd_forest(h, rng.integers(2, 5, n), eps)
    plist = [[] if p < 0 else [int(p)] for p in parent]
    assert find_cycle(plist) is None
    for i, p in enumerate(parent):
        if p >= 0:
            assert h[i, p] <= eps + 1e-12


def test_root_fraction_epsilon_is_the_smallest_reaching_the_target():
    d = resolve_data("nltcs/test")
    h = conditional_entropy_matrix(d)
    eps = epsilon_for_root_fraction(h, d.arities, 0.5)
    roots = int((qd_forest(h, d.arities, eps) < 0).sum())
    assert roots <= d.n_vars // 2
    smaller = h[h < eps - 1e-12]
    if smaller.size:
        assert int((qd_forest(h, d.arities, smaller.max()) < 0).sum()) > d.n_vars // 2


def test_proposition_1_deterministic_screening_keeps_the_mll_optimum():
    """ε = 0 removes f (a function of a); F ∪ G*_R has the MLL of the optimal DAG on all
    the data (Rahier et al. 2018, Proposition 1)."""
    d = _deterministic_data()
    builder = exhaustive_cache("ll")
    res = qds_learn(d, Budget(max_iterations=1), 0, cache_builder=builder, inner="dp",
                    epsilon=0.0, score="ll")
    assert res.forest_parent[3] == 0
    assert 3 not in res.roots
    full_opt = next(iter(make_optimizer("dp").run(builder(d), Budget(max_iterations=1),
                                                  np.random.default_rng(0))))
    s = LocalScorer(d, "ll")
    ll_qds = s.score_parents(res.dag.parents).sum()
    assert ll_qds == pytest.approx(full_opt.score, rel=1e-12, abs=1e-9)


def test_qds_contract_on_data():
    d = resolve_data("nltcs/test")
    builder = exhaustive_cache("bic", max_indegree=1)
    incs = qds_learn(d, Budget(max_iterations=1), np.random.default_rng(1),
                     cache_builder=builder, inner="dp", root_fraction=0.5).incumbents
    assert incs
    scorer = LocalScorer(d, "bic")
    for a, b in zip(incs, incs[1:], strict=False):
        assert b.score > a.score
    for inc in incs:
        assert find_cycle(inc.dag.parents) is None
        assert inc.score == pytest.approx(scorer.score_parents(inc.dag.parents).sum(), rel=1e-9)
    again = qds_learn(d, Budget(max_iterations=1), np.random.default_rng(1),
                      cache_builder=builder, inner="dp", root_fraction=0.5)
    assert again.dag == incs[-1].dag
    with pytest.raises(InvalidConfigError, match="not both"):
        qds_learn(d, Budget(max_iterations=1), 0, cache_builder=builder, epsilon=0.1,
                  root_fraction=0.5)


def test_screening_spec_defaults_and_errors():
    assert ScreeningSpec().root_fraction == 0.5 and ScreeningSpec().epsilon is None
    assert ScreeningSpec(epsilon=0.1).root_fraction is None
    with pytest.raises(ValueError, match="not both"):
        ScreeningSpec(epsilon=0.1, root_fraction=0.5)
    with pytest.raises(ValueError, match="root_fraction"):
        ScreeningSpec(root_fraction=1.5)


def test_cli_learn_qds(tmp_path):
    import json

    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.graph import DAG

    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["learn", "nltcs/test", "--algorithm", "hc-tabu",
                                    "--root-fraction", "0.5", "--serial",
                                    "--iterations", "3", "--scores-per-variable", "100",
                                    "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    d = resolve_data("nltcs/test")
    dag = DAG.from_json_dict(r["dag"], names=d.names)
    assert r["spec"]["screening"] == {"epsilon": None, "root_fraction": 0.5}
    assert r["screening"]["n_roots"] <= d.n_vars // 2
    assert r["cache"]["n_vars"] == d.n_vars
    assert r["score"] == pytest.approx(LocalScorer(d, "bic").score_parents(dag.parents).sum(),
                                       rel=1e-9)
    bad = CliRunner().invoke(main, ["learn", "nltcs", "--algorithm", "asobs",
                                    "--epsilon", "0.1", "--root-fraction", "0.5", "--serial",
                                    "-o", str(out)])
    assert bad.exit_code == 2 and "not both" in bad.output
