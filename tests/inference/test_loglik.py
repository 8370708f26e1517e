"""Data-set log-likelihood: sums of per-row log-probabilities, with and without missing
cells, and the mapping of data columns/labels onto the network."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.data import CategoricalData
from bnsl_dist.exceptions import DataError
from bnsl_dist.inference import align_data, log_likelihood
from bnsl_dist.model import fit_cpts
from bnsl_dist.scores import LocalScorer
from tests.inference.naive_inference import joint_table, random_network


def _rows(net, n, rng):
    xs, p = joint_table(net)
    return xs[rng.choice(len(xs), size=n, p=p / p.sum())], xs, p


def test_complete_rows_sum_of_log_probabilities():
    rng = np.random.default_rng(0)
    net = random_network(6, rng)
    rows, xs, p = _rows(net, 200, rng)
    d = CategoricalData.from_array(rows, arities=net.arities, names=net.names)
    res = log_likelihood(net, d)
    lut = {tuple(x): np.log(q) for x, q in zip(xs.tolist(), p, strict=True)}
    expected = [lut[tuple(r)] for r in rows.tolist()]
    np.testing.assert_allclose(res.per_row, expected, rtol=1e-10)
    np.testing.assert_allclose(res.per_row, net.log_prob_rows(rows), rtol=1e-12)
    assert res.total == pytest.approx(sum(expected), rel=1e-10)
    assert res.n_rows == 200 and res.mean == pytest.approx(res.total / 200)


def test_missing_cells_are_summed_out():
    rng = np.random.default_rng(1)
    net = random_network(6, rng)
    rows, xs, p = _rows(net, 30, rng)
    missing = rng.random(rows.shape) < 0.3
    d = CategoricalData.from_array(rows, arities=net.arities, names=net.names, missing=missing)
    res = log_likelihood(net, d)
    for i in range(30):
        obs = ~missing[i]
        mask = np.all(xs[:, obs] == rows[i, obs], axis=1)
        assert res.per_row[i] == pytest.approx(np.log(p[mask].sum()), rel=1e-10)


def test_training_loglik_of_ml_parameters_equals_ll_score():
    # independent route: the LL score of the scores/ module, family by family
    rng = np.random.default_rng(2)
    net = random_network(7, rng)
    rows, _, _ = _rows(net, 500, rng)
    d = CategoricalData.from_array(rows, arities=net.arities, names=net.names)
    fitted = fit_cpts(net.dag, d, alpha=0.0)
    scorer = LocalScorer(d, "ll")
    expected = sum(scorer.score(v, list(net.dag.parents[v])) for v in range(7))
    assert log_likelihood(fitted, d).total == pytest.approx(expected, rel=1e-10)


def test_align_by_name_and_label():
    rng = np.random.default_rng(3)
    net = random_network(3, rng, max_arity=2)  # states s0, s1
    # columns in another order, labels listed in another order
    d = CategoricalData.from_array(np.array([[0, 1, 1], [1, 0, 0]]),
                                   names=[net.names[2], net.names[0], net.names[1]],
                                   states=[("s1", "s0"), ("s0", "s1"), ("s1", "s0")])
    codes, miss = align_data(net, d)
    assert miss is None
    assert codes.tolist() == [[1, 0, 1], [0, 1, 0]]
    plain = CategoricalData.from_array(np.array([[0, 1, 1]]))  # default names X0.. = net's
    assert align_data(net, plain)[0].tolist() == [[0, 1, 1]]


def test_align_errors():
    rng = np.random.default_rng(4)
    net = random_network(3, rng, max_arity=2)
    with pytest.raises(DataError, match="no column for network variable"):
        align_data(net, CategoricalData.from_array(np.zeros((2, 3), int), names=["a", "b", "c"]))
    with pytest.raises(DataError, match="'zz' is not a state"):
        align_data(net, CategoricalData.from_array(np.array([[0, 0, 1]]),
                                                   states=[("zz",), None, None]))
    with pytest.raises(DataError, match="line 2.*not below"):
        align_data(net, CategoricalData.from_array(np.array([[0, 0, 0], [0, 0, 2]])))
