"""build_cache / explore_variable: settings, metadata, subsets, errors, .jkl round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnsl_dist.cache import CacheSpec, build_cache, explore_variable, read_jkl, write_jkl
from bnsl_dist.data import CategoricalData
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.scores import LocalScorer
from tests.cache.oracle import all_scores, non_dominated


@pytest.fixture(scope="module")
def asia():
    return sample(read_bif(bundled_path("bif/asia.bif.gz")), 2000, rng=5)


def test_sequential_cache_is_the_brute_force_cache(asia):
    cache = build_cache(asia, method="sequential")
    codes = np.asarray(asia.codes)
    assert cache.names == asia.names
    assert np.array_equal(cache.arities, asia.arities)
    for v in range(asia.n_vars):
        kept, ambiguous = non_dominated(all_scores(codes, asia.arities, v))
        got = dict(cache.sets_of(v))
        assert set(got) - ambiguous == set(kept) - ambiguous
        assert cache.sets_of(v)[-1][0] == ()
    # pruning again changes nothing
    again = cache.prune_dominated()
    assert np.array_equal(again.scores, cache.scores)
    assert np.array_equal(again.par_flat, cache.par_flat)


def test_meta_records_settings_and_counts(asia):
    cache = build_cache(asia, method="independence", scores_per_variable=40, max_indegree=3,
                        candidate_limit=7)
    m = cache.meta
    assert m["method"] == "independence" and m["score"] == "bic"
    assert m["n_samples"] == 2000 and m["scores_per_variable"] == 40
    assert m["max_indegree"] == 3 and m["candidate_limit"] == 7
    assert m["data_hash"] == asia.content_hash()
    used, stop = m["stats"]["exact_scores"], m["stats"]["stopped_by"]
    assert all(k == 40 if why == "scores" else k < 40 for k, why in zip(used, stop, strict=True))
    assert "scores" in stop
    assert max(len(cache.parents_at(i)) for i in range(cache.n_sets)) <= 3


def test_score_budget_is_deterministic_and_matches_explore_variable(asia):
    a = build_cache(asia, scores_per_variable=60)
    b = build_cache(asia, scores_per_variable=60)
    for k in ("offsets", "scores", "par_offsets", "par_flat"):
        assert np.array_equal(getattr(a, k), getattr(b, k))
    scorer = LocalScorer(asia, "bic")
    for v in (0, 5):
        assert explore_variable(scorer, v, scores_per_variable=60) == a.sets_of(v)
        assert explore_variable(asia, v, settings=CacheSpec(scores_per_variable=60)) \
            == a.sets_of(v)


def test_variables_subset_gets_only_empty_sets_elsewhere(asia):
    cache = build_cache(asia, method="sequential", max_indegree=1,
                        variables=[asia.names[2], 4])
    assert cache.meta["variables"] == [2, 4]
    scorer = LocalScorer(asia, "bic")
    for v in range(asia.n_vars):
        if v in (2, 4):
            assert cache.n_sets_of(v) >= 1
        else:
            assert cache.sets_of(v) == [((), scorer.score(v, ()))]


@pytest.mark.parametrize("variables", [None, [5, 2]])
def test_a_built_cache_carries_the_variables_entropies(asia, variables):
    """The explored variables bring their entropies from where they were explored and
    the client fills in the others': all equal, to the bit, the scorer's ``entropies``
    (what the cache held before), which equals -sum p log p of the columns' frequencies
    counted here with numpy."""
    cache = build_cache(asia, method="independence", scores_per_variable=30,
                        variables=variables)
    assert cache.entropies is not None
    np.testing.assert_array_equal(cache.entropies, LocalScorer(asia, "ll").entropies())
    for v in range(asia.n_vars):
        p = np.bincount(asia.codes[:, v]) / asia.n_samples
        p = p[p > 0]
        assert cache.entropies[v] == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12)


def test_bdeu_and_ess(asia):
    cache = build_cache(asia, method="sequential", score="bdeu", ess=3.0, max_indegree=1)
    scorer = LocalScorer(asia, "bdeu", 3.0)
    for v in range(asia.n_vars):
        for ps, s in cache.sets_of(v):
            assert s == scorer.score(v, ps)


def test_cache_survives_a_jkl_round_trip(asia, tmp_path):
    cache = build_cache(asia, scores_per_variable=50)
    p = tmp_path / "asia.jkl.gz"
    write_jkl(cache, p)
    back = read_jkl(p)
    for k in ("offsets", "scores", "par_offsets", "par_flat"):
        assert np.array_equal(getattr(back, k), getattr(cache, k))
    assert back.names == cache.names and np.array_equal(back.arities, cache.arities)
    assert back.meta["stats"] == cache.meta["stats"]


def test_independence_default_budget_is_one_second():
    assert CacheSpec().seconds == 1.0
    assert CacheSpec().seconds_per_variable == 1.0  # the applied default is recorded
    assert CacheSpec(scores_per_variable=5).seconds is None
    assert CacheSpec(seconds_per_variable=math.inf).seconds is None
    assert CacheSpec(method="sequential").seconds is None


@pytest.mark.parametrize("kwargs,field", [
    ({"method": "greedy"}, "method"),
    ({"score": "ll"}, "score"),
    ({"ess": 0.0}, "ess"),
    ({"max_indegree": -1}, "max_indegree"),
    ({"max_indegree": 1.5}, "max_indegree"),
    ({"scores_per_variable": 0}, "scores_per_variable"),
    ({"seconds_per_variable": -1.0}, "seconds_per_variable"),
    ({"candidate_limit": 0}, "candidate_limit"),
    ({"max_open": 0}, "max_open"),
    ({"variables": ["nope"]}, "variables"),
    ({"variables": [0, 0]}, "variables"),
])
def test_bad_settings_name_the_field(asia, kwargs, field):
    with pytest.raises(InvalidConfigError, match=field):
        build_cache(asia, **kwargs)


def test_missing_values_are_a_data_error():
    x = np.array([[0, 1], [1, 0], [1, 1]])
    d = CategoricalData.from_array(x, missing=np.array([[False, True], [False, False],
                                                        [False, False]]))
    with pytest.raises(DataError, match="missing"):
        build_cache(d, method="sequential")


def test_explore_variable_checks_its_inputs(asia):
    with pytest.raises(InvalidConfigError, match="out of range"):
        explore_variable(asia, 99, method="sequential")
    with pytest.raises(InvalidConfigError, match=r"structure score \(bdeu, bic\)"):
        explore_variable(LocalScorer(asia, "ll"), 0, method="sequential")
    with pytest.raises(InvalidConfigError, match="not both"):
        explore_variable(asia, 0, settings=CacheSpec(), method="sequential")


@pytest.mark.parametrize("method", ["independence", "sequential"])
def test_one_and_two_variables(method):
    one = CategoricalData.from_array(np.array([[0], [1], [1]]))
    c1 = build_cache(one, method=method, scores_per_variable=10)
    assert c1.n_vars == 1 and c1.sets_of(0)[0][0] == ()
    x = np.random.default_rng(1).integers(0, 2, size=(200, 1))
    two = CategoricalData.from_array(np.column_stack([x[:, 0], x[:, 0]]))
    c2 = build_cache(two, method=method, scores_per_variable=10)
    assert [ps for ps, _ in c2.sets_of(0)] == [(1,), ()]
    assert [ps for ps, _ in c2.sets_of(1)] == [(0,), ()]


def test_cache_spec_round_trips_and_rejects_unknown_keys():
    spec = CacheSpec(method="sequential", score="bdeu", ess=2.0, max_indegree=2,
                     seconds_per_variable=math.inf)
    assert CacheSpec.model_validate_json(spec.model_dump_json()) == spec
    with pytest.raises(InvalidConfigError, match="max_indgree"):
        build_cache(CategoricalData.from_array(np.zeros((3, 2), int)), max_indgree=2)
