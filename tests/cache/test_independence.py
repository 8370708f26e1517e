"""Independence selection: BIC*, the search order, completeness, budgets, alarm."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bnsl_dist.cache import bic_star
from bnsl_dist.cache.independence import _best_first, explore_independence
from bnsl_dist.cache.sequential import explore_sequential
from bnsl_dist.data import CategoricalData
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.scores import LocalScorer
from tests.cache.oracle import all_scores, assert_same_families, naive_score, non_dominated


def _sample(net: str, n_rows: int, seed: int) -> CategoricalData:
    return sample(read_bif(bundled_path(f"bif/{net}.bif.gz")), n_rows, rng=seed)


# ---------------------------------------------------------------------- BIC*
def _product_design(rng, r_x=2):
    """X, A, B dependent; C (4 states) independent of (X, A, B) *in the sample*:
    every (x, a, b) row is repeated once with each value of C, so ii(X; {A,B}; C) = 0."""
    base = np.column_stack([rng.integers(0, r_x, 40), rng.integers(0, 3, 40),
                            rng.integers(0, 2, 40)])
    base[:, 0] = (base[:, 1] + base[:, 2] + (rng.random(40) < 0.2)) % r_x
    rows = [np.append(row, c) for row in base for c in range(4)]
    return np.array(rows)


@pytest.mark.parametrize("r_x", [2, 3])
def test_bic_star_equals_bic_when_interaction_information_is_zero(r_x):
    codes = _product_design(np.random.default_rng(r_x), r_x)
    ar = np.array([r_x, 3, 2, 4])
    n = codes.shape[0]
    s = {ps: naive_score(codes, ar, 0, ps) for ps in [(), (1, 2), (3,), (1, 2, 3)]}
    q1, q2 = 3.0 * 2.0, 4.0  # q(P1) is the product of the arities of A and B
    star = bic_star(s[(1, 2)], s[(3,)], s[()], q1, q2, n, r_x)
    assert math.isclose(star, s[(1, 2, 3)], rel_tol=1e-12)
    # BLIP's q(P1) = arity of the last member only would be wrong here
    blip = bic_star(s[(1, 2)], s[(3,)], s[()], 2.0, q2, n, r_x)
    assert not math.isclose(blip, s[(1, 2, 3)], rel_tol=1e-6)


def test_bic_star_differs_from_bic_under_interaction():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 2, 400), rng.integers(0, 2, 400)
    codes = np.column_stack([a ^ b, a, b])
    ar = np.array([2, 2, 2])
    s = {ps: naive_score(codes, ar, 0, ps) for ps in [(), (1,), (2,), (1, 2)]}
    star = bic_star(s[(1,)], s[(2,)], s[()], 2.0, 2.0, 400, 2)
    assert star < s[(1, 2)] - 100  # XOR: the pair is far better than BIC* predicts


# ---------------------------------------------------------------------- the order
def reference_search(codes, ar, child, budget, max_size, cand_limit, score="bic",
                     expand_dominated=True):
    """A direct Python transcription of docs/ALGORITHMS.md §3 (heapq; ties by push order).

    ``expand_dominated=False``: a scored set that a scored subset one member smaller
    scores at least as well pushes no children."""
    n_rows, n = codes.shape
    pen = 0.5 * math.log(n_rows) * (ar[child] - 1)

    def exact(ps):
        return naive_score(codes, ar, child, ps, score), naive_score(codes, ar, child, ps, "bic")

    def q(ps):
        return float(np.prod([float(ar[p]) for p in ps])) if ps else 1.0

    closed = {(): exact(())}
    others = [u for u in range(n) if u != child]
    for y in others:
        closed[(y,)] = exact((y,))
    cand = sorted(others, key=lambda y: (-closed[(y,)][0], y))[:cand_limit]
    heap, pushed, seq = [], set(), 0
    bic0 = closed[()][1]

    def push(ps, prio):
        nonlocal seq
        pushed.add(ps)
        heapq.heappush(heap, (-prio, seq, ps))
        seq += 1

    def allowed(ps, s_p, y):
        return score != "bic" or -pen * q(ps) > max(s_p, closed[(y,)][0])

    if max_size >= 2:
        for i, j in itertools.combinations(range(len(cand)), 2):
            y, z = cand[i], cand[j]
            ps = tuple(sorted((y, z)))
            if allowed(ps, closed[(y,)][0], z) and ps not in pushed:
                push(ps, bic_star(closed[(y,)][1], closed[(z,)][1], bic0, ar[y], ar[z],
                                  n_rows, ar[child]))
    n_scores = len(closed)
    while heap and n_scores < budget:
        _, _, ps = heapq.heappop(heap)
        closed[ps] = exact(ps)
        n_scores += 1
        if len(ps) >= max_size:
            continue
        s_p, bic_p = closed[ps]
        if not expand_dominated and any(
                closed.get(ps[:i] + ps[i + 1:], (-math.inf,))[0] >= s_p for i in range(len(ps))):
            continue
        for y in cand:
            if y in ps:
                continue
            new = tuple(sorted(ps + (y,)))
            if new in pushed or new in closed or not allowed(new, s_p, y):
                continue
            push(new, bic_star(bic_p, closed[(y,)][1], bic0, q(ps), ar[y], n_rows, ar[child]))
    return {ps: s for ps, (s, _) in closed.items()}


@pytest.mark.parametrize("net,n_rows,child,budget,max_size,cand_limit,score,expand", [
    ("sachs", 500, 0, 400, 11, 256, "bic", True),
    ("sachs", 500, 5, 300, 3, 6, "bic", True),
    ("child", 800, 8, 400, 20, 256, "bic", True),
    ("child", 800, 3, 400, 20, 10, "bdeu", True),
    ("child", 3000, 12, 300, 2, 256, "bic", True),
    ("sachs", 500, 0, 400, 11, 256, "bic", False),
    ("child", 800, 8, 400, 20, 256, "bic", False),
    ("child", 800, 3, 400, 20, 10, "bdeu", False),
    ("alarm", 2000, 24, 600, 20, 256, "bic", False),
])
def test_search_order_matches_a_direct_transcription(net, n_rows, child, budget, max_size,
                                                     cand_limit, score, expand):
    data = _sample(net, n_rows, seed=4)
    codes = np.asarray(data.codes)
    closed = reference_search(codes, data.arities, child, budget, max_size, cand_limit, score,
                              expand)
    kept, ambiguous = non_dominated_of(closed)
    scorer = LocalScorer(data, score)
    every, stats = explore_independence(scorer, child, max_scores=budget, max_indegree=max_size,
                                        candidate_limit=cand_limit, prune=False,
                                        expand_dominated=expand)
    assert stats.exact_scores == len(closed) == len(every)
    assert {ps for ps, _ in every} == set(closed)  # the same sets were scored
    if expand:
        assert stats.not_expanded == 0
    got, _ = explore_independence(scorer, child, max_scores=budget, max_indegree=max_size,
                                  candidate_limit=cand_limit, expand_dominated=expand)
    assert_same_families(got, kept, ambiguous)


def non_dominated_of(scored):
    """Dominance pruning against the scored sets only (the oracle's closed list)."""
    kept, ambiguous = {}, set()
    for ps, s in scored.items():
        subs = [scored[t] for k in range(len(ps)) for t in itertools.combinations(ps, k)
                if t in scored]
        best = max(subs) if subs else -math.inf
        if s > best:
            kept[ps] = s
        if subs and abs(s - best) <= 1e-9 * max(1.0, abs(s)):
            ambiguous.add(ps)
    return kept, ambiguous


# ---------------------------------------------------------------------- completeness
@pytest.mark.parametrize("net,n_rows,score,d", [
    ("asia", 800, "bic", None),
    ("asia", 800, "bdeu", None),
    ("sachs", 400, "bic", None),
    ("child", 1000, "bic", 2),
])
def test_unbudgeted_search_finds_every_non_dominated_set(net, n_rows, score, d):
    """All candidates, no budget, no trimming: the closed list covers every set that the
    bound does not prove dominated, so the output is exactly the non-dominated sets."""
    data = _sample(net, n_rows, seed=8)
    scorer = LocalScorer(data, score)
    codes = np.asarray(data.codes)
    for v in range(data.n_vars):
        got, stats = explore_independence(scorer, v, max_indegree=d, max_open=1 << 20)
        assert stats.stopped_by == "complete" and stats.trims == 0
        kept, ambiguous = non_dominated(all_scores(codes, data.arities, v, score, max_size=d))
        assert_same_families(got, kept, ambiguous)
        seq, _ = explore_sequential(scorer, v, max_indegree=d)
        assert [ps for ps, _ in got] == [ps for ps, _ in seq] or ambiguous


# ---------------------------------------------------------------------- invariants
def _check_cache_list(got, scorer, v, rel=1e-10):
    assert got[-1][0] == ()
    keys = [(-s, -len(ps), ps) for ps, s in got]
    assert keys == sorted(keys)
    assert len({ps for ps, _ in got}) == len(got)
    for ps, s in got:
        assert v not in ps and list(ps) == sorted(ps)
        assert math.isclose(s, scorer.score(v, ps), rel_tol=rel, abs_tol=1e-8)
    for pa, sa in got:
        for pb, sb in got:
            if set(pa) < set(pb):
                assert sb > sa


def test_budgets_limits_and_determinism():
    data = _sample("child", 2000, seed=1)
    scorer = LocalScorer(data, "bic")
    a, sa = explore_independence(scorer, 5, max_scores=800)
    b, sb = explore_independence(scorer, 5, max_scores=800)
    assert a == b and sa.exact_scores == 800 and sa.stopped_by == "scores"
    _check_cache_list(a, scorer, 5)
    c, _ = explore_independence(scorer, 5, max_scores=800, max_indegree=2)
    assert max(len(ps) for ps, _ in c) <= 2
    _check_cache_list(c, scorer, 5)
    e, _ = explore_independence(scorer, 5, max_scores=800, candidate_limit=3)
    singles = sorted((u for u in range(20) if u != 5), key=lambda u: (-scorer.score(5, (u,)), u))
    allowed = set(singles[:3])
    assert all(set(ps) <= allowed for ps, _ in e if len(ps) > 1)
    t, st = explore_independence(scorer, 5, seconds=0.2)
    assert st.stopped_by in ("seconds", "complete")
    _check_cache_list(t, scorer, 5)
    # fewer scores than ∅ and the singletons: those are scored anyway
    f, sf = explore_independence(scorer, 5, max_scores=3)
    assert sf.exact_scores == 20
    assert all(len(ps) <= 1 for ps, _ in f)


def test_tiny_open_list_is_trimmed_and_deterministic():
    data = _sample("child", 1000, seed=2)
    scorer = LocalScorer(data, "bdeu")
    a, sa = explore_independence(scorer, 2, max_scores=600, max_open=7)
    b, _ = explore_independence(scorer, 2, max_scores=600, max_open=7)
    assert sa.trims > 0 and a == b
    _check_cache_list(a, scorer, 2)


def test_bdeu_scores_are_bdeu():
    data = _sample("asia", 500, seed=3)
    scorer = LocalScorer(data, "bdeu", 2.5)
    got, _ = explore_independence(scorer, 4, max_scores=60)
    codes = np.asarray(data.codes)
    for ps, s in got:
        assert math.isclose(s, naive_score(codes, data.arities, 4, ps, "bdeu", 2.5),
                            rel_tol=1e-10)


@pytest.mark.slow  # compiles the kernels for uint16 codes
def test_uint16_codes_and_constant_variables():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, size=(300, 5))
    x[:, 4] = 0  # constant
    x[:, 3] = (x[:, 0] + x[:, 1]) % 3
    d = CategoricalData.from_array(x, arities=[3, 3, 300, 3, 1])  # 300 states: uint16
    assert d.codes.dtype == np.uint16
    scorer = LocalScorer(d, "bic")
    got, _ = explore_independence(scorer, 3, max_scores=200)
    assert got[0][0] == (0, 1)
    _check_cache_list(got, scorer, 3)
    const, _ = explore_independence(scorer, 4, max_scores=200)
    assert [ps for ps, _ in const] == [()]


# ---------------------------------------------------------------------- alarm
@pytest.mark.slow
def test_alarm_finds_the_best_parent_set_for_most_variables():
    """N = 5,000 rows of alarm; budget 5,000 exact scores per variable (about 1 s on a
    busy core; scores rather than seconds keep the test deterministic). The best set
    found must score at least as well as the best set of up to the true in-degree
    (exhaustive search) for >= 90% of the variables."""
    net = read_bif(bundled_path("bif/alarm.bif.gz"))
    data = sample(net, 5000, rng=2024)
    scorer = LocalScorer(data, "bic")
    n = data.n_vars
    found = 0
    for v in range(n):
        k = len(net.dag.parents[v])
        others = [u for u in range(n) if u != v]
        best = max(scorer.score(v, ps) for j in range(k + 1)
                   for ps in itertools.combinations(others, j))
        got, _ = explore_independence(scorer, v, max_scores=5000)
        if got[0][1] >= best - 1e-9 * abs(best):
            found += 1
    assert found >= math.ceil(0.9 * n)


@pytest.mark.parametrize("score", ["bic", "bdeu"])
def test_singletons_by_state_bitsets_score_as_the_naive_oracle(score):
    # the singleton scores of the exploration (counted from state bitsets where both
    # variables have few states, else from the rows) against the naive scorer, and the
    # same sets and scores whether the bitsets are there or not
    from tests.naive_scores import naive_bdeu, naive_bic

    rng = np.random.default_rng(7)
    arities = np.array([2, 3, 4, 30, 2, 27, 3], dtype=np.int64)
    cols = [rng.integers(0, a, size=700) for a in arities]
    cols[1] = (cols[1] + cols[0]) % 3
    cols[4] = (cols[3] + cols[2]) % 2
    d = CategoricalData.from_array(np.stack(cols, axis=1), arities=arities)
    for child in range(len(arities)):
        sets, _ = explore_independence(LocalScorer(d, score), child, max_scores=len(arities),
                                       prune=False)
        got = {ps: s for ps, s in sets if len(ps) == 1}
        assert len(got) == len(arities) - 1
        for (p,), s in got.items():
            oracle = (naive_bic(d.codes, arities, child, [p]) if score == "bic"
                      else naive_bdeu(d.codes, arities, child, [p], 1.0))
            assert s == pytest.approx(oracle, rel=1e-12, abs=1e-9)
        with_bits, _ = explore_independence(LocalScorer(d, score), child, max_scores=40)
        without, _ = explore_independence(LocalScorer(d, score, bitsets=False), child,
                                          max_scores=40)
        assert with_bits == without


# ---------------------------------------------------------------------- candidates
@given(st.lists(st.sampled_from([-3.0, -2.5, -1.0, 0.0, 0.5]), min_size=0, max_size=40),
       st.integers(0, 45))
def test_best_first_is_the_head_of_a_stable_sort(scores, k):
    # heavy ties: the k-th score shared by many positions, which a partition scatters
    s = np.array(scores, dtype=np.float64)
    oracle = np.lexsort((np.arange(len(s)), -s))[:k]
    assert _best_first(s, k).tolist() == oracle.tolist()
