"""Sequential exploration: equal to brute force over all non-dominated sets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bnsl_dist.cache.sequential import explore_sequential
from bnsl_dist.data import CategoricalData
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.scores import LocalScorer
from tests.cache.oracle import all_scores, assert_same_families, non_dominated


def _sample(net: str, n_rows: int, seed: int, keep: int | None = None) -> CategoricalData:
    d = sample(read_bif(bundled_path(f"bif/{net}.bif.gz")), n_rows, rng=seed)
    return d if keep is None else d.select(list(range(keep)))


CASES = [
    ("asia", 1000, None, "bic", None),
    ("asia", 1000, None, "bdeu", None),
    ("sachs", 600, None, "bic", None),
    ("sachs", 300, None, "bdeu", None),
    ("child", 500, 10, "bic", None),
    ("child", 2000, None, "bic", 2),
    ("child", 2000, None, "bdeu", 2),
]


@pytest.mark.parametrize("net,n_rows,keep,score,d", CASES)
def test_equals_brute_force_non_dominated_sets(net, n_rows, keep, score, d):
    data = _sample(net, n_rows, seed=11, keep=keep)
    scorer = LocalScorer(data, score)
    codes = np.asarray(data.codes)
    n_found = 0
    for v in range(data.n_vars):
        got, stats = explore_sequential(scorer, v, max_indegree=d)
        kept, ambiguous = non_dominated(all_scores(codes, data.arities, v, score, max_size=d))
        assert_same_families(got, kept, ambiguous)
        # sorted best first, ∅ last
        assert got[-1][0] == ()
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        assert stats.stopped_by == "complete"
        n_found += len(got)
    assert n_found > data.n_vars  # not only empty sets


def test_bound_prunes_on_small_samples():
    """With few rows the BIC bound must skip sets (and still lose nothing)."""
    data = _sample("sachs", 60, seed=3)
    scorer = LocalScorer(data, "bic")
    stats = [explore_sequential(scorer, v)[1] for v in range(data.n_vars)]
    assert all(s.exact_scores < 2 ** (data.n_vars - 1) for s in stats)


@st.composite
def small_data(draw):
    n_vars = draw(st.integers(2, 5))
    n_rows = draw(st.integers(2, 40))
    arities = draw(st.lists(st.integers(1, 3), min_size=n_vars, max_size=n_vars))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, a, size=n_rows) for a in arities])
    # dependence: copy or XOR some columns into others
    for j in range(1, n_vars):
        mode = draw(st.sampled_from(["free", "copy", "xor"]))
        if mode == "copy":
            src = draw(st.integers(0, j - 1))
            codes[:, j] = codes[:, src] % arities[j]
        elif mode == "xor" and j >= 2:
            codes[:, j] = (codes[:, 0] + codes[:, 1]) % arities[j]
    return CategoricalData.from_array(codes, arities=arities)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_data())
def test_penalty_bound_never_prunes_a_non_dominated_set(data):
    scorer = LocalScorer(data, "bic")
    codes = np.asarray(data.codes)
    for v in range(data.n_vars):
        got, _ = explore_sequential(scorer, v)
        everything = all_scores(codes, data.arities, v, "bic")
        kept, ambiguous = non_dominated(everything)
        assert_same_families(got, kept, ambiguous)
        # The bound itself: BIC(P) <= -(ln N / 2)(r - 1) q(P) for every set.
        pen = 0.5 * math.log(data.n_samples) * (data.arities[v] - 1)
        for ps, s in everything.items():
            q = float(np.prod([data.arities[p] for p in ps])) if ps else 1.0
            assert s <= -pen * q + 1e-9


def test_score_budget_is_exact_and_reproducible():
    data = _sample("child", 500, seed=5)
    scorer = LocalScorer(data, "bic")
    a, sa = explore_sequential(scorer, 3, max_scores=57)
    b, sb = explore_sequential(scorer, 3, max_scores=57)
    assert sa.exact_scores == 57 and sa.stopped_by == "scores"
    assert a == b
    # No kept set is dominated by another kept set.
    for pa, s_a in a:
        for pb, s_b in a:
            if set(pa) < set(pb):
                assert s_b > s_a


def test_time_budget_stops():
    data = _sample("child", 500, seed=5)
    scorer = LocalScorer(data, "bdeu")
    got, stats = explore_sequential(scorer, 0, seconds=0.05)
    assert stats.stopped_by == "seconds"
    assert got[-1][0] == ()


def test_max_indegree_zero_and_one():
    data = _sample("asia", 300, seed=2)
    scorer = LocalScorer(data, "bic")
    got0, _ = explore_sequential(scorer, 1, max_indegree=0)
    assert [ps for ps, _ in got0] == [()]
    got1, _ = explore_sequential(scorer, 1, max_indegree=1)
    assert all(len(ps) <= 1 for ps, _ in got1)
