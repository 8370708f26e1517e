"""Forward sampling (frequencies vs CPTs and vs the brute-force joint, seeds) and MCAR
masking (rate, independence from the values, determinism, nothing leaked)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from bnsl_dist.data import CategoricalData, bundled_path
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.graph import DAG
from bnsl_dist.model import BayesianNetwork, read_bif
from bnsl_dist.model.sampling import sample

SIGMA = 5.0


def _config_rows(codes: np.ndarray, parents: tuple[int, ...], arities) -> np.ndarray:
    """Parent configuration of every row, by the documented layout (first parent fastest)."""
    j = np.zeros(codes.shape[0], dtype=np.int64)
    radix = 1
    for p in parents:
        j += codes[:, p].astype(np.int64) * radix
        radix *= int(arities[p])
    return j


@pytest.mark.parametrize("name", ["asia", "sachs"])
def test_conditional_frequencies_match_cpts(name):
    net = read_bif(bundled_path(f"bif/{name}.bif.gz"))
    d = sample(net, 40_000, rng=12345)
    ar = net.arities
    checked = 0
    for v in range(net.n_vars):
        j = _config_rows(d.codes, net.dag.parents[v], ar)
        for cfg in range(net.cpts[v].shape[0]):
            x = d.codes[j == cfg, v].astype(np.int64)
            n = x.size
            if n == 0:
                continue
            counts = np.bincount(x, minlength=ar[v])
            p = net.cpts[v][cfg]
            assert np.all(counts[p == 0] == 0), "a zero-probability state was drawn"
            sd = np.sqrt(n * p * (1 - p))
            assert np.all(np.abs(counts - n * p) <= SIGMA * sd + 1e-9), (v, cfg, counts, n * p)
            checked += 1
    assert checked >= net.n_vars


def test_joint_matches_brute_force_chi_square():
    net = read_bif(bundled_path("bif/asia.bif.gz"))
    # the exact joint by enumeration, product of CPT entries looked up naively
    ar = net.arities.tolist()
    configs = list(itertools.product(*[range(a) for a in ar]))
    probs = []
    for x in configs:
        p = 1.0
        for v in range(net.n_vars):
            j, radix = 0, 1
            for q in net.dag.parents[v]:
                j += x[q] * radix
                radix *= ar[q]
            p *= net.cpts[v][j, x[v]]
        probs.append(p)
    probs = np.array(probs)
    assert abs(probs.sum() - 1) < 1e-12
    n = 50_000
    d = sample(net, n, rng=7)
    key = np.ravel_multi_index(d.codes.T.astype(np.int64), ar)
    observed = np.bincount(key, minlength=len(configs))
    expected = probs[np.ravel_multi_index(np.array(configs).T, ar)] * n
    assert observed[expected == 0].sum() == 0
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep] * obs[keep].sum() / exp[keep].sum()).pvalue > 1e-4


def test_same_seed_same_data_and_layout():
    net = read_bif(bundled_path("bif/child.bif.gz"))
    a = sample(net, 3000, rng=5)
    b = sample(net, 3000, rng=np.random.default_rng(5))
    c = sample(net, 3000, rng=6)
    np.testing.assert_array_equal(a.codes, b.codes)
    assert (a.codes != c.codes).any()
    assert a.codes.flags.f_contiguous and a.codes.dtype == np.uint8
    assert a.names == net.names and a.states == net.states
    np.testing.assert_array_equal(a.arities, net.arities)
    assert a.missing is None
    assert np.all(a.codes.max(axis=0) < net.arities)


def test_single_state_and_deterministic_variables():
    dag = DAG.from_parents([(), (0,), (1,)], ["A", "B", "C"])
    net = BayesianNetwork(dag, (("x",), ("u", "v"), ("p", "q", "r")),
                          (np.array([[1.0]]), np.array([[0.0, 1.0]]),
                           np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])))
    d = sample(net, 500, rng=0)
    assert (d.codes[:, 0] == 0).all() and (d.codes[:, 1] == 1).all()
    assert (d.codes[:, 2] == 0).all()


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_sample_size(bad):
    net = read_bif(bundled_path("bif/cancer.bif.gz"))
    with pytest.raises(DataError, match="n_samples"):
        sample(net, bad, rng=0)


@pytest.mark.parametrize("n", [10**20, 10**14])
def test_sample_too_large_to_hold(n):
    # `bnsl-dist data sample -n 99999999999999999999` was a ValueError traceback
    # ("Maximum allowed dimension exceeded"), 10**14 rows a MemoryError one
    net = read_bif(bundled_path("bif/cancer.bif.gz"))
    with pytest.raises(DataError, match=f"{n:,} rows of 5 variables do not fit in memory"):
        sample(net, n, rng=0)


def test_bad_rng():
    net = read_bif(bundled_path("bif/cancer.bif.gz"))
    with pytest.raises(InvalidConfigError, match="rng"):
        sample(net, 10, rng="seed")


# ------------------------------------------------------------------ MCAR masking
def _data(n=20_000, m=10, seed=0):
    x = np.random.default_rng(seed).integers(0, 3, size=(n, m))
    return CategoricalData.from_array(x, arities=[3] * m)


def test_mcar_rate_and_independence():
    d = _data()
    p = 0.3
    m = mask_mcar(d, p, rng=1)
    hidden = m.missing
    cells = hidden.size
    assert abs(hidden.mean() - p) <= SIGMA * np.sqrt(p * (1 - p) / cells)
    n = hidden.shape[0]
    col_sd = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(hidden.mean(axis=0) - p) <= SIGMA * col_sd)
    for value in range(3):  # the mask ignores the values (MCAR)
        sel = d.codes == value
        k = sel.sum()
        assert abs(hidden[sel].mean() - p) <= SIGMA * np.sqrt(p * (1 - p) / k)


def test_mcar_keeps_truth_in_input_and_hides_it_in_output():
    d = _data(2000, 5)
    before = d.codes.copy()
    m = mask_mcar(d, 0.5, rng=3)
    np.testing.assert_array_equal(d.codes, before)  # the input keeps the true codes
    assert d.missing is None
    assert (m.codes[m.missing] == 0).all()
    np.testing.assert_array_equal(m.codes[~m.missing], before[~m.missing])
    assert m.codes.flags.f_contiguous and m.missing.flags.f_contiguous
    assert m.names == d.names and np.array_equal(m.arities, d.arities)


def test_mcar_deterministic_union_and_edges():
    d = _data(1000, 4)
    a, b, c = mask_mcar(d, 0.2, rng=9), mask_mcar(d, 0.2, rng=9), mask_mcar(d, 0.2, rng=10)
    np.testing.assert_array_equal(a.missing, b.missing)
    assert (a.missing != c.missing).any()
    twice = mask_mcar(a, 0.2, rng=11)
    assert (twice.missing >= a.missing).all() and twice.missing.sum() > a.missing.sum()
    assert mask_mcar(d, 0.0, rng=0).missing is None
    assert mask_mcar(d, 1.0, rng=0).missing.all()
    for bad in (-0.1, 1.5, float("nan"), "x"):
        with pytest.raises(DataError, match="p must"):
            mask_mcar(d, bad, rng=0)
