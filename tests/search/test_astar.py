"""Order-graph search (A*, AWA*, BFBnB): optima against brute force, a naive subset DP
written here and published optima of staged caches; POPS constraints never change the
optimum nor grow the search; bounds, budgets, memory caps and errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import make_optimizer
from bnsl_dist.search.base import Budget
from bnsl_dist.search.exact.astar import AStar, AWAStar, BFBnB
from bnsl_dist.search.exact.heuristics import make_heuristic
from bnsl_dist.search.exact.pops import decompose
from tests.naive import brute_force_best, load_jkl, naive_is_acyclic, random_cache

CLASSES = (AStar, AWAStar, BFBnB)
MODES = list(itertools.product(("off", "on", "recursive"), ("simple", "pdb")))


def naive_dp(cache: ParentSetCache) -> float:
    """Best DAG score by the subset recursion F(S) = max_v F(S - v) + best(v in S - v),
    on Python sets (n <= 14)."""
    n = cache.n_vars
    sets = [[(frozenset(ps), s) for ps, s in cache.sets_of(v)] for v in range(n)]
    f = {0: 0.0}
    for mask in range(1, 1 << n):
        members = frozenset(v for v in range(n) if (mask >> v) & 1)
        best = -math.inf
        for v in members:
            rest = members - {v}
            local = max(s for ps, s in sets[v] if ps <= rest)
            best = max(best, f[mask ^ (1 << v)] + local)
        f[mask] = best
    return f[(1 << n) - 1]


def _final(opt, cache, budget=None):
    incs = list(opt.run(cache, budget or Budget(seconds=60), np.random.default_rng(0)))
    assert incs
    return incs


def _check_dag(inc, cache):
    assert naive_is_acyclic(inc.dag.parents)
    assert inc.score == pytest.approx(sum(cache.score_of(v, ps)
                                          for v, ps in enumerate(inc.dag.parents)))


@pytest.mark.parametrize("seed", range(8))
def test_small_caches_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    cache = random_cache(int(rng.integers(1, 8)), rng, max_sets_per_var=7, max_indegree=3)
    opt = brute_force_best(cache)[0]
    for cls in CLASSES:
        for constraints, heuristic in MODES:
            trace, stats = cls(constraints=constraints, heuristic=heuristic).solve(
                cache, Budget(seconds=60))
            for inc in trace.incumbents:
                _check_dag(inc, cache)
                assert inc.bound >= opt - 1e-9
            assert trace.incumbents[-1].score == pytest.approx(opt, rel=1e-12, abs=1e-9)
            # the proof may come after the last (strictly better) incumbent
            assert stats.proved_optimal and stats.stopped is None
            assert stats.bound == pytest.approx(opt, rel=1e-12, abs=1e-9)
            if cls is AStar:  # A* yields once, at the end
                assert len(trace.incumbents) == 1
                assert trace.incumbents[0].bound == pytest.approx(opt, rel=1e-12, abs=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_larger_caches_match_naive_dp_and_constraints_never_grow_the_search(seed):
    rng = np.random.default_rng(40 + seed)
    n = int(rng.integers(9, 14))
    cache = random_cache(n, rng, max_sets_per_var=int(rng.integers(3, 10)), max_indegree=3)
    opt = naive_dp(cache)
    for cls in CLASSES:
        expanded = {}
        for constraints, heuristic in MODES:
            inc = _final(cls(constraints=constraints, heuristic=heuristic, pdb_group_size=5),
                         cache)[-1]
            assert inc.score == pytest.approx(opt, rel=1e-12, abs=1e-9)
            expanded[constraints, heuristic] = inc.info["nodes_expanded"]
        if cls is AStar:
            for h in ("simple", "pdb"):
                assert expanded["recursive", h] <= expanded["on", h]
            assert expanded["on", "simple"] <= expanded["off", "simple"]
            for c in ("off", "on", "recursive"):
                assert expanded[c, "pdb"] <= expanded[c, "simple"]


def test_bundled_wine_and_child_caches_reach_their_published_optima():
    wine = load_jkl("wine.BIC.3.jkl.gz", bundled=True)
    for cls in CLASSES:
        trace, stats = cls().solve(wine, Budget(seconds=60))
        assert trace.best.score == pytest.approx(-1258.4459086, abs=1e-6)
        assert stats.proved_optimal
    child = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    expanded = {}
    for constraints in ("off", "recursive"):
        inc = _final(AStar(constraints=constraints), child)[-1]
        assert inc.score == pytest.approx(-71542.801, abs=1e-3)
        expanded[constraints] = inc.info["nodes_expanded"]
    assert expanded["recursive"] < expanded["off"]  # the first variable is its own SCC


MINOBS = {
    "minobs_asia_1000_1": -2333.8214091, "minobs_asia_250_1": -594.2942017,
    "minobs_cancer_1000_1": -2148.4965592, "minobs_cancer_250_1": -546.6367816,
    "minobs_earthquake_1000_1": -428.7147307, "minobs_earthquake_250_1": -114.7500201,
    "minobs_sachs_1000_1": -7664.0481910, "minobs_sachs_250_1": -1970.5675718,
    "minobs_survey_1000_1": -4003.6501759, "minobs_survey_250_1": -1011.1887092,
}


def test_shared_minobs_caches_reach_their_published_optima(shared_data):
    for stem, optimum in MINOBS.items():
        cache = load_jkl(shared_data / "jkl" / f"{stem}.BDeu.jkl.gz")
        for cls, constraints in ((AStar, "off"), (AStar, "recursive"), (AWAStar, "on"),
                                 (BFBnB, "recursive")):
            inc = _final(cls(constraints=constraints), cache)[-1]
            assert inc.score == pytest.approx(optimum, abs=1e-6), (stem, cls, constraints)
    asia = load_jkl(shared_data / "jkl" / "asia_10000.dat.3.jkl.gz")
    assert _final(AStar(), asia)[-1].score == pytest.approx(-22466.3965465, abs=1e-6)


def test_awastar_improves_with_valid_bounds_until_proved():
    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    opt = -71542.801
    incs = _final(AWAStar(), cache)
    assert len(incs) >= 2  # anytime: a first network, then better ones
    for a, b in itertools.pairwise(incs):
        assert b.score > a.score and b.elapsed >= a.elapsed
    for inc in incs:
        _check_dag(inc, cache)
        assert inc.score <= opt + 1e-3 <= inc.bound + 2e-3



@pytest.mark.parametrize("cls", CLASSES)
def test_iteration_budget_counts_expansions_and_bounds_stay_valid(cls):
    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    opt = -71542.801
    for iters in (1, 50, 3000):
        trace, stats = cls(constraints="off").solve(cache, Budget(max_iterations=iters))
        assert trace.incumbents
        for inc in trace.incumbents:
            _check_dag(inc, cache)
            assert inc.info["nodes_expanded"] <= inc.iterations <= iters
            assert not inc.info["proved_optimal"]
            assert inc.score <= opt + 1e-3 <= inc.bound + 2e-3
        assert stats.nodes_expanded <= iters
        assert stats.stopped == "budget" and not stats.proved_optimal
        assert stats.score <= opt + 1e-3 <= stats.bound + 2e-3


def test_memory_cap_stops_the_search_with_a_valid_network():
    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    inc = _final(AStar(constraints="off", heuristic="simple", max_memory_mb=1.0), cache)[-1]
    _check_dag(inc, cache)
    assert inc.info["stopped"] == "memory"
    assert inc.info["peak_memory_bytes"] <= 2**20
    assert inc.bound >= -71542.801 - 1e-3


def test_info_reports_nodes_and_memory():
    cache = random_cache(12, 9, max_sets_per_var=8)
    search = AStar(constraints="off", heuristic="simple").search(cache)
    incs = list(search.incumbents(Budget(seconds=30)))
    info = incs[-1].info
    assert info["nodes_expanded"] == search.stats.nodes_expanded > 0
    assert info["nodes_generated"] >= info["nodes_expanded"]
    assert info["peak_memory_bytes"] > 0
    assert info["n_subproblems"] == 1 and info["largest_subproblem"] == 12


def test_the_stream_returns_the_nodes_expanded():
    cache = random_cache(12, 4, max_sets_per_var=8)
    for cls in CLASSES:
        search = cls(constraints="off").search(cache)
        stream = search.incumbents(Budget(max_iterations=40))
        with pytest.raises(StopIteration) as stop:
            while True:
                next(stream)
        assert stop.value.value == search.stats.nodes_expanded <= 40


def test_same_budget_same_result():
    cache = random_cache(13, 21, max_sets_per_var=9)
    for cls in CLASSES:
        runs = [[(i.score, i.dag.parents, i.iterations, i.bound)
                 for i in cls().run(cache, Budget(max_iterations=200),
                                    np.random.default_rng(seed))] for seed in (1, 2)]
        assert runs[0] == runs[1]


@pytest.mark.parametrize("group_size", [3, 4])  # three breadth-first groups; a bisection
def test_pattern_database_is_admissible_on_every_node(group_size):
    # h(U) <= the exact cost to finish from U (computed here by brute force over orders).
    cache = random_cache(7, 31, max_sets_per_var=8)
    sub = decompose(cache, split=False)[0]
    heur = make_heuristic(sub, "pdb", group_size=group_size)
    assert len(heur.groups) == (3 if group_size == 3 else 2)
    assert sorted(x for g in heur.groups for x in g) == list(range(7))
    sets = [[(frozenset(ps), s) for ps, s in cache.sets_of(v)] for v in range(7)]
    best = [cache.best_score(v) for v in range(7)]
    for mask in range(1 << 7):
        placed = {v for v in range(7) if (mask >> v) & 1}
        rest = [v for v in range(7) if v not in placed]
        finish = math.inf
        for order in itertools.permutations(rest):
            before, cost = set(placed), 0.0
            for v in order:
                cost += best[v] - max(s for ps, s in sets[v] if ps <= before)
                before.add(v)
            finish = min(finish, cost)
        assert heur.value(((1 << 7) - 1) & ~mask) <= finish + 1e-9


def test_bad_parameters_are_config_errors():
    for params in ({"constraints": "all"}, {"heuristic": "dynamic"}, {"p": 0}, {"p": 1.5},
                   {"pdb_group_size": 30}, {"max_memory_mb": 0}, {"bound_expansions": 0}):
        with pytest.raises(InvalidConfigError):
            make_optimizer("astar", **params)
    ring = ParentSetCache.from_lists([[(((v - 1) % 70,), -1.0), ((), -2.0)] for v in range(70)])
    with pytest.raises(InvalidConfigError, match="component of 70"):
        list(AStar().run(ring, Budget(seconds=1), np.random.default_rng(0)))
    with pytest.raises(InvalidConfigError, match="at most 63"):
        list(AStar(constraints="off").run(ring, Budget(seconds=1), np.random.default_rng(0)))


def test_a_cache_of_sixty_independent_chains_is_solved_without_search():
    # 100 variables, each with one potential parent: every SCC is a single variable.
    lists = [[((v - 1,), -1.0), ((), -5.0)] if v % 10 else [((), -5.0)] for v in range(100)]
    cache = ParentSetCache.from_lists(lists)
    inc = _final(AWAStar(), cache)[-1]
    assert inc.score == pytest.approx(-10 * 5.0 - 90 * 1.0)
    assert inc.info["proved_optimal"] and inc.info["n_subproblems"] == 100
