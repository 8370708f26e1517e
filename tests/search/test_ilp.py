"""ILP structure learning (``ilp``) and ``solve_clique_ilp`` against independent optima:
the exact DP, brute force over orders, and the published optima of two bundled caches."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import AnytimeTrace, Budget, make_optimizer
from bnsl_dist.search.exact.dp import exact_dp
from bnsl_dist.search.exact.ilp import ILP, solve_clique_ilp
from tests.naive import brute_force_best, load_jkl, naive_is_acyclic, random_cache

pytestmark = pytest.mark.ilp


def _run(cache, seconds=60.0, seed=0, **params):
    return list(make_optimizer("ilp", **params).run(cache, Budget(seconds=seconds),
                                                    np.random.default_rng(seed)))


def _check_stream(cache, incs, optimum):
    prev = -np.inf
    for inc in incs:
        assert naive_is_acyclic(inc.dag.parents)
        assert inc.score == pytest.approx(sum(cache.score_of(v, ps)
                                              for v, ps in enumerate(inc.dag.parents)))
        assert inc.score > prev
        prev = inc.score
        assert inc.bound is not None and inc.bound >= optimum - 1e-6
        assert inc.score <= optimum + 1e-9


@pytest.mark.parametrize("n,seed", [(4, 1), (6, 2), (8, 3), (9, 4), (10, 5), (11, 6), (12, 7),
                                    (12, 8)])
def test_lazy_matches_dp_on_random_caches(n, seed):
    cache = random_cache(n, seed, max_sets_per_var=12, max_indegree=3)
    opt, parents = exact_dp(cache)
    incs = _run(cache)
    _check_stream(cache, incs, opt)
    last = incs[-1]
    assert last.score == pytest.approx(opt, rel=1e-12, abs=1e-9)
    assert last.info["optimal"] is True
    assert last.bound == last.score and last.gap == 0.0


@pytest.mark.parametrize("encoding", ["cuts", "order"])
@pytest.mark.parametrize("seed", [11, 12])
def test_cpsat_encodings_reach_the_optimum(encoding, seed):
    cache = random_cache(7, seed, max_sets_per_var=8, max_indegree=2)
    opt, _ = brute_force_best(cache)
    incs = _run(cache, seconds=30, encoding=encoding)
    _check_stream(cache, incs, opt)
    # CP-SAT works on scores rounded to 1e-6: optimal up to that rounding.
    assert incs[-1].score == pytest.approx(opt, abs=1e-5)


def test_node_cuts_off_still_exact():
    cache = random_cache(10, 21, max_sets_per_var=10)
    opt, _ = exact_dp(cache)
    incs = _run(cache, node_cuts=False)
    assert incs[-1].score == pytest.approx(opt, abs=1e-9)


def test_published_optimum_wine():
    cache = load_jkl("wine.BIC.3.jkl.gz", bundled=True)
    incs = _run(cache, seconds=120)
    assert incs[-1].score == pytest.approx(-1258.4459086, abs=1e-6)
    assert incs[-1].info["optimal"]


def test_published_optimum_child_5000():
    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    incs = _run(cache, seconds=120)
    assert incs[-1].score == pytest.approx(-71542.801, abs=1e-3)
    assert incs[-1].info["optimal"]


def test_iteration_budget_is_deterministic_and_bounded():
    cache = random_cache(12, 31, max_sets_per_var=14)
    opt, _ = exact_dp(cache)
    runs = [list(ILP().run(cache, Budget(max_iterations=3), np.random.default_rng(5)))
            for _ in range(2)]
    sig = [[(i.score, i.dag.parents, i.iterations, i.bound) for i in r] for r in runs]
    assert sig[0] == sig[1]
    assert all(i.bound >= opt - 1e-6 for i in runs[0])


def test_closing_the_stream_stops_the_solver():
    cache = random_cache(12, 41, max_sets_per_var=14)
    before = {t.ident for t in threading.enumerate()}
    gen = ILP().run(cache, Budget(seconds=30), np.random.default_rng(0))
    next(gen)
    gen.close()
    leftover = [t for t in threading.enumerate()
                if t.ident not in before and t.name == "bnsl-ilp-solver"]
    assert not leftover


@pytest.mark.parametrize("seed", [51, 52, 53])
def test_solve_clique_ilp_matches_dp_on_subsets(seed):
    rng = np.random.default_rng(seed)
    cache = random_cache(14, rng, max_sets_per_var=12)
    variables = [int(v) for v in rng.choice(14, size=9, replace=False)]
    score, parents = solve_clique_ilp(cache, variables)
    opt, dp_parents = exact_dp(cache, variables)
    assert score == pytest.approx(opt, abs=1e-9)
    assert len(parents) == len(variables)
    pos = {v: i for i, v in enumerate(variables)}
    local = [tuple(pos[p] for p in ps) for ps in parents]
    assert naive_is_acyclic(local)
    assert sum(cache.score_of(v, ps) for v, ps in zip(variables, parents, strict=True)) == pytest.approx(opt)


def test_solve_clique_ilp_edge_cases():
    cache = random_cache(5, 3)
    assert solve_clique_ilp(cache, []) == (0.0, [])
    s, ps = solve_clique_ilp(cache, [2])
    assert ps == [()] and s == pytest.approx(cache.score_of(2, ()))
    with pytest.raises(InvalidConfigError):
        solve_clique_ilp(cache, [1, 1])
    with pytest.raises(InvalidConfigError):
        solve_clique_ilp(cache, [7])
    with pytest.raises(InvalidConfigError):
        solve_clique_ilp(cache, [0, 1], time_limit=0)


def test_bad_parameters():
    with pytest.raises(InvalidConfigError):
        make_optimizer("ilp", encoding="magic")
    with pytest.raises(InvalidConfigError):
        make_optimizer("ilp", n_greedy=0)


@pytest.mark.parametrize("name,kw", [("ilp", {}), ("twilp", {"k": 2})])
def test_iterations_is_the_count_run(name, kw):
    """The run reports the solver's iterations (SCIP nodes, root included), not the
    iteration of its last improvement (0 for an incumbent found at the root)."""
    cache = random_cache(14, 1, max_sets_per_var=25, max_indegree=3)
    trace = AnytimeTrace.collect(make_optimizer(name, **kw).run(
        cache, Budget(seconds=30), np.random.default_rng(0)))
    assert trace.incumbents
    assert trace.total_iterations >= max(1, max(i.iterations for i in trace.incumbents))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_start_stops_taking_orders_at_its_deadline(seed):
    """The exact solvers' start (ASOBS + swaps over random orders) takes no new order
    after its deadline, but always runs the first; with no deadline it is the batch."""
    import time

    from bnsl_dist.search.exact._ilp_families import Families, greedy_dag, order_search

    fam = Families(random_cache(25, seed, max_sets_per_var=6))
    perms = np.random.default_rng(seed)
    drawn = np.stack([perms.permutation(fam.n) for _ in range(6)])
    one_by_one = [order_search(fam, r[None, :]) for r in drawn]
    scores = [fam.score(c) for c in one_by_one]
    best = one_by_one[int(np.argmax(scores))]  # argmax: the first of equals

    rng = np.random.default_rng(seed)
    assert greedy_dag(fam, rng, 6, deadline=time.perf_counter() - 1.0) == one_by_one[0]
    assert rng.permutation(fam.n).tolist() == perms.permutation(fam.n).tolist()
    assert greedy_dag(fam, np.random.default_rng(seed), 6, deadline=float("inf")) == best
    assert greedy_dag(fam, np.random.default_rng(seed), 6) == best


def test_start_deadline_is_half_a_seconds_budget_and_none_for_iterations():
    from bnsl_dist.search.exact._ilp_families import start_deadline

    watch = Budget(seconds=3.6).stopwatch()
    assert start_deadline(watch) == pytest.approx(watch.start + 1.8)
    assert start_deadline(Budget(max_iterations=5).stopwatch()) is None
