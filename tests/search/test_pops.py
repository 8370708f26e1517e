"""POPS constraints: parent relation graph, SCC order, source components, top-p POPS and
its suboptimality bound. Oracles: networkx (SCCs, condensation), brute force (optima)."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph import strongly_connected_components
from bnsl_dist.graph.dag import DAG
from bnsl_dist.search.base import Budget
from bnsl_dist.search.exact import _astar_kernels as K
from bnsl_dist.search.exact.astar import AStar
from bnsl_dist.search.exact.pops import (
    decompose,
    graph_density,
    parent_relation_graph,
    top_p_bound,
    top_p_cache,
)
from tests.naive import brute_force_best, random_cache


def _table1() -> ParentSetCache:
    """The POPS of Table 1 of Fan, Malone & Yuan (UAI 2014), X1..X6 as 0..5, scores
    decreasing down each row. X3's sets with X6 come first: were {X1, X2} its best set,
    X3 would never need X6 (the paper's example ignores scores) and the second
    component would split further."""
    rows = [[(1,), ()], [(0,), ()],
            [(1, 5), (0, 5), (0, 1), (1,), (5,), ()],
            [(0, 2), (0,), (2,), ()],
            [(3,), (1,), ()],
            [(1, 4), (1,), ()]]
    return ParentSetCache.from_lists([[(ps, -10.0 - i) for i, ps in enumerate(r)]
                                      for r in rows])


def _nx_graph(parents: list[list[int]]) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parents)))
    g.add_edges_from((p, v) for v, ps in enumerate(parents) for p in ps)
    return g


def _random_graph(rng: np.random.Generator, n: int, density: float) -> list[list[int]]:
    return [sorted(int(u) for u in range(n) if u != v and rng.random() < density)
            for v in range(n)]


def test_parent_relation_graph_is_union_of_members():
    cache = random_cache(9, 3, max_sets_per_var=6)
    for v, cands in enumerate(parent_relation_graph(cache)):
        assert cands == sorted({p for ps, _ in cache.sets_of(v) for p in ps})


def test_table1_components_and_subproblems():
    cache = _table1()
    assert strongly_connected_components(parent_relation_graph(cache)) == [[0, 1], [2, 3, 4, 5]]
    subs = decompose(cache)
    assert [list(s.variables) for s in subs] == [[0, 1], [2, 3, 4, 5]]
    assert list(subs[1].before) == [0, 1]
    assert decompose(cache, split=False)[0].m == 6
    # arcs (paper, Fig. 2): 1 + 1 + 3 + 2 + 2 + 2 of the 6 * 5 possible
    assert graph_density(parent_relation_graph(cache)) == pytest.approx(11 / 30)


def test_table1_recursive_constraints_fix_the_order_after_the_first_variable():
    sub = decompose(_table1())[1]  # local 0..3 = X3..X6, a 4-cycle X3->X4->X5->X6->X3
    full = int(sub.full)
    for first in range(4):
        r = full & ~(1 << first)
        order = []
        while r:
            src = int(K.source_scc(np.uint64(r), sub.par, sub.chi))
            assert bin(src).count("1") == 1  # a single choice at every step
            order.append(src.bit_length() - 1)
            r &= ~src
        assert order == [(first + i) % 4 for i in range(1, 4)]


@pytest.mark.parametrize("seed", range(6))
def test_scc_order_matches_networkx(seed):
    rng = np.random.default_rng(seed)
    parents = _random_graph(rng, int(rng.integers(1, 30)), float(rng.uniform(0.02, 0.3)))
    comps = strongly_connected_components(parents)
    g = _nx_graph(parents)
    assert sorted(map(tuple, comps)) == sorted(tuple(sorted(c))
                                               for c in nx.strongly_connected_components(g))
    where = {v: i for i, c in enumerate(comps) for v in c}
    assert all(where[p] <= where[v] for p, v in g.edges)  # parents' components first


@pytest.mark.parametrize("seed", range(6))
def test_source_scc_is_a_source_component_of_the_induced_graph(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(2, 40))
    parents = _random_graph(rng, n, float(rng.uniform(0.03, 0.4)))
    par = np.array([sum(1 << p for p in ps) for ps in parents], dtype=np.uint64)
    chi = np.zeros(n, dtype=np.uint64)
    for v, ps in enumerate(parents):
        for p in ps:
            chi[p] |= np.uint64(1 << v)
    for _ in range(20):
        keep = [v for v in range(n) if rng.random() < 0.7] or [0]
        r = sum(1 << v for v in keep)
        src = int(K.source_scc(np.uint64(r), par, chi))
        members = {v for v in range(n) if (src >> v) & 1}
        sub = _nx_graph(parents).subgraph(keep)
        assert any(members == set(c) for c in nx.strongly_connected_components(sub))
        assert not any(p not in members for v in members for p in parents[v] if p in keep)


def test_decompose_refuses_components_beyond_63_variables():
    n = 64
    ring = ParentSetCache.from_lists([[(((v - 1) % n,), -1.0), ((), -2.0)] for v in range(n)])
    with pytest.raises(InvalidConfigError, match="64 variables"):
        decompose(ring)
    with pytest.raises(InvalidConfigError, match="at most 63"):
        decompose(ring, split=False)
    chain = ParentSetCache.from_lists([[((v - 1,), -1.0), ((), -2.0)] if v else [((), -2.0)]
                                       for v in range(100)])
    assert [s.m for s in decompose(chain)] == [1] * 100


def test_decompose_drops_locally_dominated_sets():
    # x0 <- {x1}: -1 or {}: -5; x1 <- {x0, x2}: -2, {x2}: -1, {}: -5; x2 <- {}: 0.
    # {x0,x2} is worse than {x2}, so x1's only useful parent is x2: no cycle remains.
    cache = ParentSetCache.from_lists([[((1,), -1.0), ((), -5.0)],
                                       [((0, 2), -2.0), ((2,), -1.0), ((), -5.0)],
                                       [((), 0.0)]])
    assert strongly_connected_components(parent_relation_graph(cache)) == [[2], [0, 1]]
    assert [list(s.variables) for s in decompose(cache)] == [[2], [1], [0]]


def test_top_p_keeps_exactly_the_sets_inside_the_best_candidates():
    cache = random_cache(8, 11, max_sets_per_var=9)
    for p in (1, 2, 4):
        pruned = top_p_cache(cache, p)
        for v in range(cache.n_vars):
            sets = cache.sets_of(v)
            allowed = set().union(*(set(ps) for ps, _ in sets[:p]))
            assert pruned.sets_of(v) == [(ps, s) for ps, s in sets if set(ps) <= allowed]
    big = top_p_cache(cache, 100)
    assert all(big.sets_of(v) == cache.sets_of(v) for v in range(cache.n_vars))
    with pytest.raises(InvalidConfigError):
        top_p_cache(cache, 0)


def _pruned_optimum(cache: ParentSetCache, p: int) -> tuple[ParentSetCache, float, DAG]:
    pruned = top_p_cache(cache, p)
    score, parents = brute_force_best(pruned)
    return pruned, score, DAG.from_parents(parents)


def test_paper_epsilon_is_not_a_bound_but_ours_is():
    # The counterexample of top_p_bound's docstring.
    cache = ParentSetCache.from_lists([[((1,), -1.0), ((), -10.0)],
                                       [((0,), -1.0), ((2,), -8.0), ((), -10.0)],
                                       [((), 0.0)]])
    pruned = top_p_cache(cache, 1)
    dag = DAG.from_parents([(), (0,), ()])  # optimal for the pruned cache: -11
    assert brute_force_best(pruned)[0] == pytest.approx(-11.0)
    opt = brute_force_best(cache)[0]
    assert opt == pytest.approx(-9.0)
    tb = top_p_bound(cache, pruned, dag)
    assert tb.epsilon_paper == 1.0  # claims optimality, wrongly
    assert tb.upper_bound >= opt
    assert tb.epsilon > 1.0


@pytest.mark.parametrize("seed", range(12))
def test_epsilon_is_a_valid_bound_and_one_only_when_top_p_keeps_an_optimum(seed):
    rng = np.random.default_rng(500 + seed)
    cache = random_cache(int(rng.integers(3, 8)), rng, max_sets_per_var=8, max_indegree=3)
    opt = brute_force_best(cache)[0]
    for p in (1, 2, 3, 50):
        pruned, score, dag = _pruned_optimum(cache, p)
        tb = top_p_bound(cache, pruned, dag)
        assert tb.upper_bound >= opt - 1e-9  # a proven bound on the unconstrained optimum
        assert tb.epsilon >= 1.0
        assert tb.epsilon * tb.upper_bound == pytest.approx(score)
        if tb.epsilon == 1.0:
            assert score == pytest.approx(opt, abs=1e-9)
        if tb.n_pruned_sets == 0:
            assert tb.epsilon == 1.0 and score == pytest.approx(opt)


def test_epsilon_is_one_when_the_pruned_sets_cannot_help():
    # x1's pruned set {x2} scores worse than what x1 gets in the pruned optimum.
    cache = ParentSetCache.from_lists([[((1,), -1.0), ((), -3.0)],
                                       [((0,), -1.0), ((), -3.0), ((2,), -4.0)],
                                       [((), 0.0)]])
    pruned, score, dag = _pruned_optimum(cache, 1)
    assert pruned.n_sets == cache.n_sets - 1
    tb = top_p_bound(cache, pruned, dag)
    assert score == pytest.approx(brute_force_best(cache)[0])
    assert tb.epsilon == 1.0


def test_search_with_p_reports_a_valid_bound():
    rng = np.random.default_rng(77)
    for _ in range(4):
        cache = random_cache(7, rng, max_sets_per_var=8)
        opt = brute_force_best(cache)[0]
        for p in (1, 2):
            pruned_opt = brute_force_best(top_p_cache(cache, p))[0]
            for heuristic in ("simple", "pdb"):
                inc = list(AStar(p=p, heuristic=heuristic).run(cache, Budget(seconds=30),
                                                               np.random.default_rng(0)))[-1]
                assert inc.score == pytest.approx(pruned_opt)
                assert inc.bound >= opt - 1e-9
                assert inc.info["epsilon"] >= 1.0 and inc.info["p"] == p
                if inc.info["epsilon"] == 1.0:
                    assert inc.score == pytest.approx(opt)


def test_all_orders_of_table1_are_covered_by_the_search():
    # Every DAG from the Table 1 POPS: the constrained search finds the brute-force optimum.
    base = _table1()
    rng = np.random.default_rng(5)
    for _ in range(5):
        lists = [[(ps, s + float(rng.normal(0, 3))) for ps, s in base.sets_of(v)]
                 for v in range(base.n_vars)]
        cache = ParentSetCache.from_lists(lists)
        opt = brute_force_best(cache)[0]
        for constraints, heuristic in itertools.product(("off", "on", "recursive"),
                                                        ("simple", "pdb")):
            inc = list(AStar(constraints=constraints, heuristic=heuristic).run(
                cache, Budget(seconds=30), np.random.default_rng(0)))[-1]
            assert inc.score == pytest.approx(opt)
