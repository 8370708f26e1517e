"""SEM-kMAX: completions are brute-force MPEs, imputation beats the mode and nears the
true network, serial and Dask runs agree."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnsl_dist.data import bundled_path
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.search import Budget
from bnsl_dist.sem import (
    complete_rows,
    imputation_accuracy,
    impute,
    mode_impute,
    random_chain,
    structural_em,
)
from tests.naive_scores import exhaustive_cache_builder as exhaustive_builder


@pytest.fixture(scope="module")
def asia():
    net = read_bif(bundled_path("bif/asia.bif.gz"))
    truth = sample(net, 3000, np.random.default_rng(7))
    masked = mask_mcar(truth, 0.2, np.random.default_rng(8))
    return net, truth, masked


def _brute_mpe_logp(net, row, miss):
    best = -np.inf
    idx = np.nonzero(miss)[0]
    for vals in itertools.product(*[range(int(net.arities[v])) for v in idx]):
        r = row.astype(np.int64).copy()
        r[idx] = vals
        best = max(best, float(net.log_prob_rows(r[None, :])[0]))
    return best


def test_completion_is_the_brute_force_mpe(asia):
    net, _, masked = asia
    rows = np.nonzero(masked.missing.any(axis=1))[0][:60]
    filled = complete_rows(net, None, masked.codes[rows], masked.missing[rows], "mpe")
    np.testing.assert_array_equal(filled[~masked.missing[rows]],
                                  masked.codes[rows][~masked.missing[rows]])
    got = net.log_prob_rows(filled)
    for a, r in enumerate(rows):
        assert got[a] == pytest.approx(_brute_mpe_logp(net, masked.codes[r],
                                                       masked.missing[r]), abs=1e-9)


def test_random_chain_spans_every_variable():
    parents, perm = random_chain(6, np.random.default_rng(0))
    assert sorted(perm) == list(range(6))
    assert sum(len(p) for p in parents) == 5
    assert parents[perm[0]] == []


def test_sem_beats_mode_and_nears_the_true_network(asia):
    net, truth, masked = asia
    res = structural_em(masked, k=2, rng=3, max_iterations=6,
                        cache_builder=exhaustive_builder("bic", max_indegree=2),
                        search_budget=Budget(max_iterations=200))
    acc_sem = imputation_accuracy(truth, masked, res.completed)
    acc_mode = imputation_accuracy(truth, masked, mode_impute(masked))
    acc_true = imputation_accuracy(truth, masked, impute(net, masked))
    assert acc_sem > acc_mode + 0.02
    assert acc_sem >= acc_true - 0.02
    assert res.history and res.history[0].iteration == 1
    assert res.completed.missing is None
    assert all(h.score <= 0 for h in res.history)
    # the final network's junction tree respects the treewidth bound
    from bnsl_dist.graph import TreewidthCertificate
    assert TreewidthCertificate(res.order, 2).check(res.network.dag)


def test_marginal_e_step_variant(asia):
    net, truth, masked = asia
    a = imputation_accuracy(truth, masked, impute(net, masked, method="marginal"))
    b = imputation_accuracy(truth, masked, impute(net, masked, method="mpe"))
    assert a > 0.5 and b > 0.5


@pytest.mark.dask
def test_dask_e_step_equals_serial(asia):
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.sem import DaskEStep

    _, _, masked = asia
    kwargs = dict(k=2, rng=11, max_iterations=3, cache_builder=exhaustive_builder("bic", max_indegree=2),
                  search_budget=Budget(max_iterations=100))
    serial = structural_em(masked, **kwargs)
    with connect(workers=2, announce=False, dashboard=False) as client:
        runner = DaskEStep(client, batch_size=200)
        dist = structural_em(masked, e_step_runner=runner, **kwargs)
        assert runner.n_tasks > 2
    np.testing.assert_array_equal(serial.completed.codes, dist.completed.codes)
    assert serial.network.dag == dist.network.dag
