"""Exact DP (Silander–Myllymäki) against brute force and published optima."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.exact import exact_dp, exact_dp_indices
from tests.naive import brute_force_best, load_jkl, naive_is_acyclic, random_cache


@pytest.mark.parametrize("method", ["table", "scan"])
@pytest.mark.parametrize("seed", range(12))
def test_dp_equals_brute_force(method, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    cache = random_cache(n, rng, max_sets_per_var=int(rng.integers(1, 12)), max_indegree=3)
    want, _ = brute_force_best(cache)
    got, chosen = exact_dp_indices(cache, method=method)
    assert got == pytest.approx(want, abs=1e-9)
    parents = [cache.parents_at(int(g)) for g in chosen]
    assert naive_is_acyclic(parents)
    assert sum(cache.score_of(v, ps) for v, ps in enumerate(parents)) == pytest.approx(got)


@pytest.mark.parametrize("seed", range(6))
def test_dp_over_a_subset_equals_brute_force_on_the_restricted_cache(seed):
    rng = np.random.default_rng(100 + seed)
    cache = random_cache(11, rng, max_sets_per_var=12, max_indegree=3)
    subset = sorted(int(x) for x in rng.choice(11, size=6, replace=False))[::-1]
    sub, keep = cache.restrict(subset)
    want, _ = brute_force_best(sub)
    got, parents = exact_dp(cache, subset)
    assert got == pytest.approx(want, abs=1e-9)
    assert len(parents) == len(subset)
    for v, ps in zip(subset, parents, strict=True):
        assert set(ps) <= set(subset)
        assert cache.has_set(v, ps)
    local = [tuple(sorted(subset.index(p) for p in ps)) for ps in parents]
    assert naive_is_acyclic(local)


def test_dp_rejects_bad_variables():
    cache = random_cache(5, 0)
    with pytest.raises(InvalidConfigError, match="twice"):
        exact_dp(cache, [0, 1, 1])
    with pytest.raises(InvalidConfigError, match="out of range"):
        exact_dp(cache, [0, 9])
    with pytest.raises(InvalidConfigError, match="limit"):
        exact_dp(cache, max_vars=3)


def test_dp_empty_subset():
    assert exact_dp(random_cache(4, 0), []) == (0.0, [])


@pytest.mark.parametrize(("name", "optimum"), [("wine.BIC.3.jkl.gz", -1258.4459086),
                                                ("child-5000.blip.jkl.gz", -71542.801)])
def test_dp_reaches_published_optima(name, optimum):
    cache = load_jkl(name, bundled=True)
    incs = list(make_optimizer("dp").run(cache, Budget(seconds=60), np.random.default_rng(0)))
    assert incs[-1].score == pytest.approx(optimum, abs=1e-3)
    assert incs[-1].bound == incs[-1].score
