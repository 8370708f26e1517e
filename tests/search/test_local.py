"""Tabu local search scored from the data, against naive scores (tests/naive_scores.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnsl_dist.data import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.base import AnytimeTrace
from bnsl_dist.search.local import TabuClimber, cache_candidates, tabu_search
from bnsl_dist.search.local import _kernels as K
from tests.naive import naive_is_acyclic, random_cache
from tests.naive_scores import exhaustive_cache_builder, naive_bdeu, naive_bic


def _naive(codes, ar, v, ps, score):
    ps = sorted(ps)
    return naive_bic(codes, ar, v, ps) if score == "bic" else naive_bdeu(codes, ar, v, ps)


def _random_data(seed, n, rows):
    """Chain-structured data with noise (so that arcs pay), arities 2..3."""
    rng = np.random.default_rng(seed)
    ar = rng.integers(2, 4, n)
    x = np.zeros((rows, n), dtype=np.int64)
    for j in range(n):
        noise = rng.integers(0, ar[j], rows)
        if j == 0:
            x[:, j] = noise
        else:
            src = x[:, rng.integers(0, j)] if j < 2 else (x[:, j - 1] + x[:, rng.integers(0, j)])
            keep = rng.random(rows) < 0.6
            x[:, j] = np.where(keep, src % ar[j], noise)
    return CategoricalData.from_array(x, arities=np.maximum(ar, x.max(axis=0) + 1))


def _random_dag(seed, n, p=0.3):
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    parents = [[] for _ in range(n)]
    for i in range(n):
        for j in range(i):
            if rng.random() < p:
                parents[order[i]].append(int(order[j]))
    return DAG.from_parents(parents)


def _naive_deltas(codes, ar, adj, score, max_indegree, allowed):
    n = adj.shape[0]
    out = np.full((n, n), -np.inf)
    fam = np.empty(n)
    for v in range(n):
        ps = set(np.flatnonzero(adj[:, v]).tolist())
        fam[v] = _naive(codes, ar, v, ps, score)
        for u in range(n):
            if u == v:
                continue
            if u in ps:
                out[u, v] = _naive(codes, ar, v, ps - {u}, score) - fam[v]
            elif allowed[u, v] and len(ps) < max_indegree:
                out[u, v] = _naive(codes, ar, v, ps | {u}, score) - fam[v]
    return fam, out


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 6), rows=st.integers(20, 120),
       steps=st.integers(0, 12), score=st.sampled_from(["bic", "bdeu"]),
       max_indegree=st.sampled_from([None, 1, 2]))
def test_incremental_move_scores_equal_full_rescoring(seed, n, rows, steps, score,
                                                      max_indegree):
    data = _random_data(seed, n, rows)
    codes = np.asarray(data.codes)
    ar = data.arities
    start = _random_dag(seed + 1, n)
    if max_indegree is not None:
        start = DAG.from_parents([ps[:max_indegree] for ps in start.parents])
    rng = np.random.default_rng(seed)
    cand = [[u for u in range(n) if u != v and rng.random() < 0.8] for v in range(n)]
    cl = TabuClimber(data, score=score, candidates=cand, max_indegree=max_indegree)
    cl.set_dag(start)
    tabu = np.full((3, 2), -1, dtype=np.int64)
    state = np.zeros(4, dtype=np.int64)
    s0 = cl.score()
    fstate = np.array([s0, s0])
    best_adj = cl.adj.copy()
    K.tabu_steps(cl.codes, cl.arities, cl.adj, best_adj, cl.allowed, cl.max_indegree, cl.kind,
                 cl.ess, cl.log_n, cl.nlogn, cl.zc, cl.zp, cl.memo, cl.fam, cl.delta, tabu,
                 state, fstate, 1000, steps)
    parents = [np.flatnonzero(cl.adj[:, v]).tolist() for v in range(n)]
    assert naive_is_acyclic(parents)
    fam, delta = _naive_deltas(codes, ar, cl.adj, score, cl.max_indegree, cl.allowed)
    np.testing.assert_allclose(cl.fam, fam, rtol=1e-9, atol=1e-7)
    finite = np.isfinite(delta)
    assert (np.isfinite(cl.delta) == finite).all()
    np.testing.assert_allclose(cl.delta[finite], delta[finite], rtol=1e-9, atol=1e-7)
    # the running score (start + sum of the moves' deltas) is the DAG's score
    assert math.isclose(fstate[0], fam.sum(), rel_tol=1e-9, abs_tol=1e-6)


def _naive_best_move(codes, ar, parents, score):
    """The best acyclic single-arc change (add / remove / reverse) and its delta."""
    n = len(parents)
    base = [_naive(codes, ar, v, parents[v], score) for v in range(n)]
    best = -math.inf
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            changes = []
            if u in parents[v]:
                changes.append({v: set(parents[v]) - {u}})
                changes.append({v: set(parents[v]) - {u}, u: set(parents[u]) | {v}})
            elif v not in parents[u]:
                changes.append({v: set(parents[v]) | {u}})
            for ch in changes:
                new = [ch.get(x, parents[x]) for x in range(n)]
                if naive_is_acyclic(new):
                    best = max(best, sum(_naive(codes, ar, x, ps, score) - base[x]
                                         for x, ps in ch.items()))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_a_step_takes_the_best_acyclic_move(seed):
    data = _random_data(seed, 5, 150)
    codes = np.asarray(data.codes)
    start = _random_dag(seed, 5, 0.4)
    cl = TabuClimber(data)
    cl.set_dag(start)
    s0 = cl.score()
    state = np.zeros(4, dtype=np.int64)
    fstate = np.array([s0, s0])
    K.tabu_steps(cl.codes, cl.arities, cl.adj, cl.adj.copy(), cl.allowed, cl.max_indegree,
                 cl.kind, cl.ess, cl.log_n, cl.nlogn, cl.zc, cl.zp, cl.memo, cl.fam, cl.delta,
                 np.full((2, 2), -1, dtype=np.int64), state, fstate, 10, 1)
    parents = [sorted(p) for p in start.parents]
    want = _naive_best_move(codes, data.arities, parents, "bic")
    after = sum(_naive(codes, data.arities, v, np.flatnonzero(cl.adj[:, v]), "bic")
                for v in range(5))
    before = sum(_naive(codes, data.arities, v, parents[v], "bic") for v in range(5))
    assert math.isclose(after - before, want, rel_tol=1e-9, abs_tol=1e-7)


@pytest.mark.parametrize("score", ["bic", "bdeu"])
def test_search_result_is_acyclic_rescores_and_is_seed_deterministic(score):
    data = _random_data(3, 8, 300)
    codes = np.asarray(data.codes)
    budget = Budget(max_iterations=4)
    runs = [list(tabu_search(data, None, budget, 7, score=score)) for _ in range(2)]
    assert [(i.score, i.dag) for i in runs[0]] == [(i.score, i.dag) for i in runs[1]]
    incs = runs[0]
    assert all(b.score > a.score for a, b in zip(incs, incs[1:], strict=False))
    for inc in incs:
        parents = [list(p) for p in inc.dag.parents]
        assert naive_is_acyclic(parents)
        want = sum(_naive(codes, data.arities, v, p, score) for v, p in enumerate(parents))
        assert math.isclose(inc.score, want, rel_tol=1e-10)
    assert incs[-1].dag.n_arcs > 0


def test_search_starts_from_the_given_dag_and_never_ends_below_it():
    data = _random_data(5, 7, 400)
    start = _random_dag(1, 7, 0.5)
    incs = list(tabu_search(data, start, Budget(max_iterations=3), 0, max_indegree=2))
    assert incs[0].dag == DAG.from_parents(start.parents, data.names)
    assert incs[-1].score >= incs[0].score
    assert max(len(p) for p in incs[-1].dag.parents) <= max(2, start.max_indegree())


def test_candidates_restrict_additions():
    data = _random_data(2, 6, 400)
    cand = [[] for _ in range(6)]
    cand[3] = [0]
    incs = list(tabu_search(data, None, Budget(max_iterations=2), 0, candidates=cand))
    for v, ps in enumerate(incs[-1].dag.parents):
        assert set(ps) <= set(cand[v]) | {u for u in range(6) if v in cand[u]}


def test_cache_candidates_are_members_both_ways():
    c = random_cache(6, 0)
    cand = cache_candidates(c)
    for v in range(6):
        members = {u for ps, _ in c.sets_of(v) for u in ps}
        back = {u for u in range(6) if any(v in ps for ps, _ in c.sets_of(u))}
        assert set(cand[v]) == members | back


def test_data_tabu_learns_from_data_and_refuses_a_bare_cache():
    data = _random_data(4, 6, 400)
    codes = np.asarray(data.codes)
    opt = make_optimizer("tabu-data", start="asobs", start_iterations=5, restarts=2)
    with pytest.raises(InvalidConfigError):
        list(opt.run(random_cache(3, 0), Budget(max_iterations=1), np.random.default_rng(0)))
    builder = exhaustive_cache_builder(max_indegree=1)
    incs = list(opt.learn(data, Budget(max_iterations=3), np.random.default_rng(0),
                          cache_builder=builder))
    assert incs[0].info["stage"] == "start"
    assert all(b.score > a.score for a, b in zip(incs, incs[1:], strict=False))
    best = incs[-1]
    want = sum(naive_bic(codes, data.arities, v, list(p)) for v, p in enumerate(best.dag.parents))
    assert math.isclose(best.score, want, rel_tol=1e-10)
    # the data-scored search reaches families the in-degree-1 cache does not hold
    assert max(map(len, best.dag.parents)) >= 2


def test_data_tabu_start_keeps_its_iteration_cap_beside_seconds():
    """With both a seconds and an iteration limit, the start optimizer stops at
    ``start_iterations`` (it ran its whole time share before: ~10^5 orders)."""
    data = _random_data(4, 6, 400)
    opt = make_optimizer("tabu-data", start="asobs", start_iterations=3, restarts=0)
    incs = list(opt.learn(data, Budget(seconds=60.0, max_iterations=2),
                          np.random.default_rng(0),
                          cache_builder=exhaustive_cache_builder(max_indegree=1)))
    starts = [i for i in incs if i.info["stage"] == "start"]
    assert starts and max(i.iterations for i in starts) <= 3
    climbs = [i for i in incs if i.info["stage"] != "start"]
    assert all(i.iterations <= 3 + 2 for i in climbs)  # the start's runs + the climbs


@pytest.mark.parametrize("seconds", [None, 60.0])
def test_data_tabu_stays_within_an_iteration_budget_below_start_iterations(seconds):
    """An iteration budget bounds the whole run, start and climbs together: with the
    default ``start_iterations`` (200) and 10 iterations, every incumbent is within the
    budget (``AnytimeTrace.within`` keeps them all) and some climb runs. Before, the
    start ran 200 orders and the climbs 10 more: every incumbent said 200+ iterations,
    ``within`` dropped them all and a cell failed ("no DAG within the budget")."""
    data = _random_data(4, 6, 400)
    budget = Budget(seconds=seconds, max_iterations=10)
    stream = make_optimizer("tabu-data").learn(
        data, budget, np.random.default_rng(0),
        cache_builder=exhaustive_cache_builder(max_indegree=1))
    trace = AnytimeTrace.collect(stream)
    assert trace.incumbents and trace.within(budget).incumbents == trace.incumbents
    assert trace.total_iterations == 10  # 9 orders, then one climb
    assert [i.info["stage"] for i in trace.incumbents][-1] == "tabu"
    assert max(i.iterations for i in trace.incumbents) <= 10
    # a budget of one iteration: the start's one order, no climb
    one = AnytimeTrace.collect(make_optimizer("tabu-data").learn(
        data, Budget(max_iterations=1), np.random.default_rng(0),
        cache_builder=exhaustive_cache_builder(max_indegree=1)))
    assert one.total_iterations == 1 and {i.info["stage"] for i in one.incumbents} == {"start"}


def test_bad_settings():
    data = _random_data(0, 3, 50)
    with pytest.raises(InvalidConfigError):
        list(tabu_search(data, None, Budget(max_iterations=1), tabu_length=0))
    with pytest.raises(InvalidConfigError):
        list(tabu_search(data, None, Budget(max_iterations=1), score="ll"))
    with pytest.raises(InvalidConfigError):
        list(tabu_search(data, DAG.empty(4), Budget(max_iterations=1)))
    with pytest.raises(InvalidConfigError):
        TabuClimber(data, candidates=[[5], [], []])


@pytest.mark.parametrize("score", ["bic", "bdeu"])
def test_reported_scores_survive_the_memo_being_emptied(monkeypatch, score):
    """The family memo is emptied whenever it outgrows its cap, between chunks of steps
    and at restarts; a best DAG found after that may have families scored only before.
    With a cap of 0 (emptied at every chance) and one step per chunk, every incumbent's
    score still equals its DAG's score counted naively (it raised KeyError before)."""
    import bnsl_dist.search.local.tabu as T

    monkeypatch.setattr(T, "_MEMO_CAP", 0)
    monkeypatch.setattr(T, "_CHUNK_WORK", 1)
    data = _random_data(7, 8, 300)
    codes = np.asarray(data.codes)
    incs = list(tabu_search(data, None, Budget(max_iterations=6), 3, score=score,
                            tabu_length=3))
    assert len(incs) > 3
    for inc in incs:
        naive = math.fsum(_naive(codes, data.arities, v, set(ps), score)
                          for v, ps in enumerate(inc.dag.parents))
        assert math.isclose(inc.score, naive, rel_tol=1e-9, abs_tol=1e-6)
    assert all(b.score > a.score for a, b in itertools.pairwise(incs))
