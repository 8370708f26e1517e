"""k-G, k-G_ENT, k-MAX and S2 against independent oracles.

- every incumbent's certificate checks, and independent bounds agree: the exact
  treewidth of the moral graph (subset recursion) is <= k, networkx's min-fill /
  min-degree bounds are >= it, and a networkx elimination along the certificate's
  order has width <= k;
- each run is replayed step by step on a pure-Python k-tree with brute-force fitting
  (every k-clique scanned): the initial clique's DAG is optimal (brute force), k-G gives
  each later variable its best fitting set, k-MAX inserts a variable of maximal h, S2
  gives each later variable its best set inside the k-clique it joined;
- on tiny caches the best bounded-treewidth DAG is found by enumerating all DAGs of the
  cache; k-MAX never beats it and reaches it on (almost) every cache;
- with k = n-1 every learner returns the exact optimum (brute force).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from networkx.algorithms.approximation import treewidth_min_degree, treewidth_min_fill_in

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph import KTree, TreewidthCertificate
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.ordering.samplers import entropy_weights
from bnsl_dist.search.treewidth import KGreedyEnt
from bnsl_dist.search.treewidth import _kernels as K
from bnsl_dist.search.treewidth._driver import CacheArrays
from tests.graph.naive_treewidth import naive_elimination_width, nx_moral, treewidth_dp
from tests.naive import brute_force_best, naive_is_acyclic, random_cache

ALGOS = [("kg", {}), ("kg-ent", {}), ("kg-ent", {"direction": "late"}), ("kmax", {}), ("s2", {})]


def run(name, cache, k, iters, seed=0, **kw):
    opt = make_optimizer(name, k=k, **kw)
    return list(opt.run(cache, Budget(max_iterations=iters), np.random.default_rng(seed)))


def usable_sets(cache, v, cap):
    return [(frozenset(ps), s) for ps, s in cache.sets_of(v) if len(ps) <= cap]


def fits(tree: KTree, ps) -> bool:
    return any(set(ps) <= set(c) for c in tree.cliques())


def check_bounds(inc, k, exact_limit=11):
    dag = inc.dag
    cert = inc.info["certificate"]
    assert isinstance(cert, TreewidthCertificate)
    assert cert.width == k and cert.check(dag)
    assert max((len(p) for p in dag.parents), default=0) <= k
    g = nx_moral(dag.parents)
    assert naive_elimination_width(g, cert.order) <= k
    if dag.n_vars <= exact_limit:
        tw = treewidth_dp(g)
        assert tw <= k
        assert treewidth_min_fill_in(g)[0] >= tw
        assert treewidth_min_degree(g)[0] >= tw


def replay(cache, inc, k, cap, algo):
    """Re-derive each step with a Python KTree and brute-force fitting."""
    n = cache.n_vars
    ins, attach = inc.info["insertion_order"], inc.info["attach"]
    parents = [frozenset(p) for p in inc.dag.parents]
    m = min(k + 1, n)
    first = list(ins[:m])
    assert sorted(ins) == list(range(n))
    assert inc.info["certificate"].order == tuple(ins[::-1])
    # the initial clique: families inside it, optimal among such DAGs
    assert all(parents[v] <= set(first) for v in first)
    sub = ParentSetCache.from_lists(
        [[(tuple(first.index(p) for p in ps), s) for ps, s in usable_sets(cache, v, cap)
          if ps <= set(first)] for v in first])
    opt, _ = brute_force_best(sub)
    assert sum(cache.score_of(v, parents[v]) for v in first) == pytest.approx(opt, abs=1e-9)
    if algo == "kmax":  # the clique grows through the pool of candidate parents
        cand = [set().union(*[ps for ps, _ in usable_sets(cache, v, cap)]) for v in range(n)]
        for i in range(1, m):
            pool = set().union(*[cand[u] for u in first[:i]]) - set(first[:i])
            assert not pool or first[i] in pool
    if n <= k + 1:
        return
    tree = KTree(k, first)
    smax = [max(s for _, s in usable_sets(cache, v, cap)) for v in range(n)]
    smin = [min(s for _, s in usable_sets(cache, v, cap)) for v in range(n)]

    def best_fitting(v):
        return next((ps, s) for ps, s in usable_sets(cache, v, cap) if fits(tree, ps))

    for v, c in zip(ins[m:], attach[m:], strict=True):
        if algo == "s2":  # the k-tree was sampled: v's best set inside the clique it joined
            ps = next(ps for ps, _ in usable_sets(cache, v, cap) if ps <= set(tree.clique(c)))
            assert parents[v] == ps, f"s2: {v} took {sorted(parents[v])}, best {sorted(ps)}"
            tree.add(v, c)
            continue
        ps, s = best_fitting(v)
        assert parents[v] == ps, f"{algo}: {v} took {sorted(parents[v])}, best fit {sorted(ps)}"
        assert set(ps) <= set(tree.clique(c))
        if algo == "kmax":
            def h(u):
                ps_u, s_u = best_fitting(u)
                span = smax[u] - smin[u]
                return 1.0 if span <= 0 else (s_u - smin[u]) / span
            outside = [u for u in range(n) if u not in tree]
            assert h(v) == pytest.approx(max(h(u) for u in outside), abs=1e-12)
        tree.add(v, c)


@pytest.mark.parametrize(("name", "kw"), ALGOS)
@pytest.mark.parametrize("k", [1, 2, 3])
def test_certificates_bounds_and_replay(name, kw, k):
    rng = np.random.default_rng(10 * k + len(name))
    for n in (5, 8, 11):
        cache = random_cache(n, rng, max_sets_per_var=10, max_indegree=4)
        incs = run(name, cache, k, 40, seed=n, **kw)
        assert incs
        for inc in incs:
            check_bounds(inc, k)
        replay(cache, incs[-1], k, k, name if name in ("kmax", "s2") else "kg")
        assert incs[-1].score == pytest.approx(cache.score_dag(incs[-1].dag), abs=1e-9)


@pytest.mark.parametrize("name", ["kg", "kmax", "s2"])
def test_max_parents_caps_sets(name):
    cache = random_cache(10, 3, max_sets_per_var=12, max_indegree=4)
    incs = run(name, cache, 4, 30, max_parents=2)
    for inc in incs:
        assert max(len(p) for p in inc.dag.parents) <= 2
        check_bounds(inc, 4)
    replay(cache, incs[-1], 4, 2, name if name in ("kmax", "s2") else "kg")


def test_larger_cache_certificates():
    cache = random_cache(60, 9, max_sets_per_var=15, max_indegree=4)
    for name in ("kg", "kg-ent", "kmax", "s2"):
        for k in (2, 4):
            incs = run(name, cache, k, 15)
            for inc in incs:
                check_bounds(inc, k, exact_limit=0)
            replay(cache, incs[-1], k, k, name if name in ("kmax", "s2") else "kg")


def best_bounded_by_enumeration(cache, k):
    """Best DAG of treewidth <= k made of cached sets: all combinations, best first."""
    lists = [cache.sets_of(v) for v in range(cache.n_vars)]
    combos = sorted(((sum(s for _, s in c), [ps for ps, _ in c])
                     for c in itertools.product(*lists)), key=lambda t: -t[0])
    seen: dict[frozenset, int] = {}
    for s, parents in combos:
        if any(len(p) > k for p in parents) or not naive_is_acyclic(parents):
            continue
        g = nx_moral(parents)
        key = frozenset(map(frozenset, g.edges))
        if key not in seen:
            seen[key] = treewidth_dp(g)
        if seen[key] <= k:
            return s
    raise AssertionError("the empty DAG always qualifies")


@pytest.mark.timeout(120)
def test_kmax_reaches_brute_force_bounded_optimum():
    rng = np.random.default_rng(5)
    total = hits = 0
    kg_hits = 0
    for _ in range(14):
        n = int(rng.integers(4, 8))
        cache = random_cache(n, rng, max_sets_per_var=5 if n == 7 else 6, max_indegree=3)
        for k in (1, 2, 3):
            if k + 1 >= n:
                continue
            opt = best_bounded_by_enumeration(cache, k)
            best = run("kmax", cache, k, 300)[-1].score
            best_kg = run("kg", cache, k, 300)[-1].score
            assert best <= opt + 1e-9 and best_kg <= opt + 1e-9
            total += 1
            hits += math.isclose(best, opt, abs_tol=1e-9)
            kg_hits += math.isclose(best_kg, opt, abs_tol=1e-9)
    # k-MAX's greedy insertion cannot reach every bounded DAG, but on tiny caches it
    # almost always does (on this sample: all of them)
    assert total >= 25
    assert hits >= total - 1, (hits, total)
    assert kg_hits >= total - 3, (kg_hits, total)


@pytest.mark.parametrize(("name", "kw"), ALGOS)
def test_k_at_least_n_minus_1_is_exact(name, kw):
    rng = np.random.default_rng(77)
    for n in (1, 2, 4, 6, 7):
        cache = random_cache(n, rng, max_sets_per_var=7, max_indegree=3)
        opt, _ = brute_force_best(cache)
        # a bound past memory (2**62) or int64 (10**20) was a ValueError / OverflowError
        # from the kernels: `bnsl-dist learn -k 99999999999999999999`
        for k in {max(1, n - 1), n + 2, 2**62, 10**20}:
            incs = run(name, cache, k, 50, **kw)
            assert len(incs) == 1 and incs[0].iterations == 1  # a proven optimum stops
            assert incs[0].score == pytest.approx(opt, abs=1e-9)
            assert incs[0].bound == incs[0].score
            check_bounds(incs[0], k)
        if n >= 3:
            below = run(name, cache, n - 2, 50, **kw)[-1]
            assert below.score <= opt + 1e-9
            check_bounds(below, n - 2)


@pytest.mark.parametrize(("name", "kw"), ALGOS)
def test_a_binding_max_parents_claims_no_bound(name, kw):
    """With k >= n - 1 but a max_parents below a cached set's size, the single DP is
    optimal among the capped DAGs only: its score is no bound on the cache's optimum
    (x2 <- {x0, x1} has treewidth 2 and scores -21 > -26)."""
    cache = ParentSetCache.from_lists([[((), -10.0)], [((), -10.0)],
                                       [((0, 1), -1.0), ((0,), -6.0), ((), -10.0)]])
    opt, _ = brute_force_best(cache)
    assert opt == pytest.approx(-21.0)
    for k, cap in ((2, 1), (5, 1), (2, 0)):
        incs = run(name, cache, k, 20, max_parents=cap, **kw)
        assert incs[-1].score < opt
        for inc in incs:
            assert inc.bound is None or inc.bound >= opt - 1e-9, (k, cap, inc.bound)
            check_bounds(inc, k)
    # a cap that excludes no cached set does not bind: the DP's optimum is proven
    incs = run(name, cache, 2, 20, max_parents=2, **kw)
    assert len(incs) == 1 and incs[0].score == pytest.approx(opt) and incs[0].bound == incs[0].score


def test_clique_dp_matches_exact_dp():
    from bnsl_dist.search.exact import dp

    rng = np.random.default_rng(3)
    for _ in range(10):
        cache = random_cache(12, rng, max_sets_per_var=12, max_indegree=3)
        members = rng.choice(12, size=int(rng.integers(1, 8)), replace=False).astype(np.int64)
        a = CacheArrays.of(cache, 12, None)
        chosen = np.full(12, -1, dtype=np.int64)
        pos = np.full(12, -1, dtype=np.int64)
        got = K.clique_dp(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, a.max_size,
                          members, pos, chosen)
        want, _ = dp.exact_dp(cache, [int(v) for v in members])
        assert got == pytest.approx(want, abs=1e-9)
        assert (pos == -1).all()
        assert sum(cache.scores[chosen[members]]) == pytest.approx(want, abs=1e-9)
        assert naive_is_acyclic([[list(members).index(p) for p in cache.parents_at(chosen[v])]
                                 for v in members])


def test_iterations_do_not_depend_on_batching():
    cache = random_cache(30, 4, max_sets_per_var=8, max_indegree=3)
    a = CacheArrays.of(cache, 3, None)
    n = cache.n_vars
    bufs = [np.empty(n, dtype=np.int64) for _ in range(3)]
    whole = np.empty(12)
    assert K.kg_batch(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, 3, a.max_size,
                      np.zeros(0), False, np.uint64(11), 0, np.inf, whole, *bufs) == -1
    parts = []
    for it0 in range(0, 12, 5):
        out = np.empty(min(5, 12 - it0))
        K.kg_batch(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, 3, a.max_size,
                   np.zeros(0), False, np.uint64(11), it0, np.inf, out, *bufs)
        parts.append(out)
    assert np.array_equal(np.concatenate(parts), whole)
    assert len(set(whole.tolist())) > 1  # iterations differ from one another
    # a batch stops at its first iteration above the threshold
    thr = float(np.median(whole))
    first = int(np.flatnonzero(whole > thr)[0])
    out = np.full(12, np.nan)
    assert K.kg_batch(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, 3, a.max_size,
                      np.zeros(0), False, np.uint64(11), 0, thr, out, *bufs) == first
    assert np.array_equal(out[:first + 1], whole[:first + 1]) and np.isnan(out[first + 1:]).all()
    assert sum(cache.scores[bufs[0]]) == pytest.approx(whole[first], abs=1e-9)


def running_maxima(scores):
    """(iteration index from 1, score) of every strict improvement of the running max."""
    out, best = [], -np.inf
    for i, s in enumerate(scores):
        if s > best:
            best = float(s)
            out.append((i + 1, best))
    return out


@pytest.mark.parametrize(("name", "kw"), ALGOS)
def test_incumbents_are_the_running_maxima_whatever_the_batching(name, kw, monkeypatch):
    """Every improvement is reported with its exact iteration index, so iteration
    checkpoints do not depend on the clock-sized batches; the run returns the count."""
    from bnsl_dist.search import AnytimeTrace
    from bnsl_dist.search.treewidth import _driver

    cache = random_cache(60, 8, max_sets_per_var=20, max_indegree=3)
    opt = make_optimizer(name, k=3, **kw)
    budget = Budget(max_iterations=300)
    scores, _ = opt.iteration_scores(cache, budget, 5)
    assert len(scores) == 300
    want = running_maxima(scores)
    assert len(want) >= 3
    traces = []
    for batch_seconds in (1e-12, 10.0):  # batches of one iteration / growing x4 per call
        monkeypatch.setattr(_driver, "BATCH_SECONDS", batch_seconds)
        traces.append(AnytimeTrace.collect(opt.run(cache, budget, 5)))
    for tr in traces:
        assert tr.total_iterations == 300
        got = [(i.iterations, i.score) for i in tr.incumbents]
        assert [g[0] for g in got] == [w[0] for w in want]
        assert [g[1] for g in got] == pytest.approx([w[1] for w in want], abs=1e-9)
        for it, s in want:
            assert cache.score_dag(tr.best_at_iteration(it).dag) == pytest.approx(s, abs=1e-9)
    assert [i.dag for i in traces[0].incumbents] == [i.dag for i in traces[1].incumbents]


def test_kg_ent_default_direction_is_early():
    """With one variable of overwhelming entropy, "early" (the default) puts it in the
    initial clique of every order and "late" inserts it last."""
    cache = random_cache(12, 2, max_sets_per_var=6, max_indegree=2)
    h = [1.0] * 12
    h[7] = 1e12
    for direction, where in ((None, "first"), ("early", "first"), ("late", "last")):
        kw = {} if direction is None else {"direction": direction}
        opt = KGreedyEnt(k=2, entropies=h, **kw)
        for seed in range(5):
            inc = list(opt.run(cache, Budget(max_iterations=1), seed))[-1]
            ins = inc.info["insertion_order"]
            assert (7 in ins[:3]) if where == "first" else ins[-1] == 7


def test_weighted_order_sampler_probabilities():
    w = np.array([1.0, 2.0, 5.0, 2.0])
    order = np.empty(4, dtype=np.int64)
    state = np.zeros(1, dtype=np.uint64)
    first = np.zeros(4)
    second_given_2_first = np.zeros(4)
    last_late = np.zeros(4)
    draws = 20000
    for it in range(draws):
        K.seed_state(np.uint64(9), it, state)
        K.weighted_order(state, w, False, order)
        first[order[0]] += 1
        if order[0] == 2:
            second_given_2_first[order[1]] += 1
        K.seed_state(np.uint64(9), it, state)
        K.weighted_order(state, w, True, order)
        last_late[order[-1]] += 1
    assert np.allclose(first / draws, w / w.sum(), atol=0.015)
    rest = np.array([1.0, 2.0, 0.0, 2.0])
    assert np.allclose(second_given_2_first / second_given_2_first.sum(), rest / rest.sum(),
                       atol=0.02)
    assert np.array_equal(first, last_late)  # "late" is the reversed "early" order


def test_entropy_sources():
    cache = random_cache(6, 1)
    proxy, late = entropy_weights(cache, high_entropy="late")
    assert late and np.allclose(proxy, [-cache.score_of(v, ()) for v in range(6)])
    h = [0.5, 0.0, 1.0, 2.0, 0.1, 0.3]
    w, early = entropy_weights(cache, h, "early")
    assert not early
    assert w[1] > 0 and np.allclose(w[[0, 2, 3, 4, 5]], np.asarray(h)[[0, 2, 3, 4, 5]])
    cache.entropies = np.ones(6)
    assert np.allclose(entropy_weights(cache)[0], 1.0)
    assert np.allclose(entropy_weights(cache, h)[0][2:4], [1.0, 2.0])  # explicit wins
    with pytest.raises(InvalidConfigError):
        entropy_weights(cache, [1.0, 2.0])
    with pytest.raises(InvalidConfigError):
        list(KGreedyEnt(k=2, direction="middle").run(cache, Budget(max_iterations=1), 0))


@pytest.mark.parametrize("params", [{"k": 0}, {"k": True}, {"k": 2.5}, {"k": 2, "max_parents": -1},
                                    {"k": 40}])
def test_bad_parameters(params):
    cache = random_cache(25, 1)
    for name in ("kg", "kg-ent", "kmax", "s2"):
        with pytest.raises(InvalidConfigError):
            list(make_optimizer(name, **params).run(cache, Budget(max_iterations=1), 0))


@pytest.mark.parametrize("cap", [1, 2, 3])
def test_cache_views_match_a_naive_scan(cap):
    """k-MAX's candidate pools and inverted index against a plain scan of the sets."""
    cache = random_cache(40, 3, max_sets_per_var=12, max_indegree=3)
    a = CacheArrays.of(cache, 3, cap)
    n, f = cache.n_vars, cache.flat
    members = [f.par_flat[f.par_offsets[g]:f.par_offsets[g + 1]].tolist()
               for g in range(cache.n_sets)]
    usable = [g for g in range(cache.n_sets) if len(members[g]) <= cap]
    cand_offsets, cand_flat = a.candidates()
    inv_offsets, inv_sets = a.inverted_index()
    for v in range(n):
        want = sorted({p for g in usable if f.owner[g] == v for p in members[g]})
        assert cand_flat[cand_offsets[v]:cand_offsets[v + 1]].tolist() == want
        assert inv_sets[inv_offsets[v]:inv_offsets[v + 1]].tolist() == \
            [g for g in usable if v in members[g]]


class _Clock:
    """A ``time`` module for :mod:`bnsl_dist.search.base` whose perf_counter moves
    ``step`` seconds per call, plus what :meth:`jump` adds."""

    def __init__(self, step: float) -> None:
        self.now, self.step, self.jumped = 0.0, step, 0.0

    def perf_counter(self) -> float:
        self.now += self.step
        return self.now

    def jump(self, seconds: float) -> None:
        self.now += seconds
        self.jumped += seconds


def _patch_clock(monkeypatch, clock: _Clock) -> None:
    import types

    from bnsl_dist.search import base
    from bnsl_dist.search.treewidth import _driver

    fake = types.SimpleNamespace(perf_counter=clock.perf_counter)
    monkeypatch.setattr(base, "time", fake)
    monkeypatch.setattr(_driver, "time", fake)


@pytest.mark.parametrize(("name", "kw"), ALGOS)
def test_time_up_after_the_first_check_runs_one_iteration(name, kw, monkeypatch):
    """A stopwatch that reports the time up after its first check: one iteration (the
    first batch is a single iteration, whatever the batch sizing)."""
    from bnsl_dist.search import AnytimeTrace
    from bnsl_dist.search.base import Stopwatch

    checks = []

    def done(self):
        checks.append(self.iterations)
        return len(checks) > 1

    monkeypatch.setattr(Stopwatch, "done", done)
    cache = random_cache(30, 2, max_sets_per_var=8, max_indegree=3)
    opt = make_optimizer(name, k=3, **kw)
    tr = AnytimeTrace.collect(opt.run(cache, Budget(seconds=60.0), 4))
    assert tr.total_iterations == 1 and checks == [0, 1]
    assert [i.iterations for i in tr.incumbents] == [1]
    checks.clear()
    scores, _ = opt.iteration_scores(cache, Budget(seconds=60.0), 4)
    assert len(scores) == 1 and scores[0] == pytest.approx(tr.incumbents[0].score, abs=1e-9)


@pytest.mark.parametrize(("name", "kw"), ALGOS)
def test_setup_time_counts_against_the_budget(name, kw, monkeypatch):
    """The cache views (seconds on caches of 10^5 sets) are built on the budget's clock:
    when they use it all up, no iteration runs (issue 18: k-MAX ran 60-70% over its
    budget, the views' time uncounted)."""
    from bnsl_dist.search import AnytimeTrace

    clock = _Clock(0.01)  # 10 ms a clock read: several iterations in a 0.1 s budget
    _patch_clock(monkeypatch, clock)
    for view in ("of", "candidates", "inverted_index", "score_range"):
        orig = getattr(CacheArrays, view)

        def slow(*args, _orig=orig, **kwargs):
            clock.jump(5.0)
            return _orig(*args, **kwargs)

        monkeypatch.setattr(CacheArrays, view, staticmethod(slow) if view == "of" else slow)
    cache = random_cache(30, 2, max_sets_per_var=8, max_indegree=3)
    opt = make_optimizer(name, k=3, **kw)
    tr = AnytimeTrace.collect(opt.run(cache, Budget(seconds=0.1), 4))
    assert clock.jumped >= 5.0
    assert tr.total_iterations == 0 and tr.incumbents == []
    # the same clock without the setup's jumps runs more than one iteration
    monkeypatch.undo()
    _patch_clock(monkeypatch, _Clock(0.01))
    assert AnytimeTrace.collect(opt.run(cache, Budget(seconds=0.1), 4)).total_iterations > 1
