"""OBS, ASOBS, ASOBS-ENT, swaps and the window search against naive oracles."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from bnsl_dist.cache import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import Budget, get_optimizer, make_optimizer
from bnsl_dist.search.base import AnytimeTrace
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering import _window_kernels as WK
from bnsl_dist.search.ordering import asobs as asobs_module
from bnsl_dist.search.ordering.obs import (
    _RECHECK,
    _ClosurePick,
    batch_size,
    cache_masks,
    candidate_masks,
    obs_masks,
    search_orders,
)
from bnsl_dist.search.ordering.samplers import (
    entropy_orders,
    entropy_weights,
    uniform_orders,
    weighted_orders,
)
from tests.naive import (
    _topological_near,
    load_jkl,
    naive_asobs,
    naive_asobs_search,
    naive_best_for_order,
    naive_is_acyclic,
    random_cache,
)

caches = st.builds(lambda n, seed, m, d: random_cache(n, seed, max_sets_per_var=m,
                                                      max_indegree=d),
                   st.integers(2, 12), st.integers(0, 10**6), st.integers(1, 14),
                   st.integers(1, 4))


def _asobs(cache, order):
    fc = cache.flat
    n = fc.n
    nw = max(1, (n + 63) // 64)
    chosen = np.empty(n, dtype=np.int64)
    s = K.asobs_pass(np.asarray(order, dtype=np.int64), fc.offsets, fc.par_offsets,
                     fc.par_flat, cache_masks(fc), *candidate_masks(fc), fc.scores,
                     np.empty((n, nw), np.uint64),
                     np.empty((n, nw), np.uint64), np.empty(nw, np.uint64),
                     np.empty(nw, np.uint64), chosen)
    return s, chosen


def _asobs_dfs(cache, order):
    fc = cache.flat
    n = fc.n
    m = int(np.diff(fc.par_offsets).max()) * n + 1
    chosen = np.empty(n, dtype=np.int64)
    s = K.asobs_pass_dfs(np.asarray(order, dtype=np.int64), fc.offsets, fc.par_offsets,
                         fc.par_flat, fc.scores, np.empty(n, np.int64), np.empty(m, np.int64),
                         np.empty(m, np.int64), np.empty(n, np.int64),
                         np.empty(n + 1, np.int64), chosen)
    return s, chosen


def _asobs_up(cache, order):
    fc = cache.flat
    n = fc.n
    m = int(np.diff(fc.par_offsets).max()) * n + 1
    chosen = np.empty(n, dtype=np.int64)
    s = K.asobs_pass_up(np.asarray(order, dtype=np.int64), fc.offsets, fc.par_offsets,
                        fc.par_flat, *candidate_masks(fc), fc.scores,
                        *(np.empty(n, np.int64) for _ in range(3)),
                        np.empty(m, np.int64), np.empty(n, np.bool_),
                        *(np.empty(n + 1, np.int64) for _ in range(3)), chosen)
    return s, chosen


def _asobs_blocks(cache, order, words=1):
    # blocks of 64 * words positions: one word makes several blocks from 65 variables
    fc = cache.flat
    chosen = np.empty(fc.n, dtype=np.int64)
    ws = K.blocks_workspace(fc.n, int(np.diff(fc.par_offsets).max()), words)
    s = K.asobs_pass_blocks(np.asarray(order, dtype=np.int64), fc.offsets, fc.par_offsets,
                            fc.par_flat, *candidate_masks(fc), fc.scores, *ws, chosen)
    return s, chosen


def _local_cache(n, seed, width, max_sets, max_indegree):
    """Random sets drawn among the ``width`` variables on either side of each variable
    (cyclically): deep chains of descendants, the shape the ancestor search is for."""
    rng = np.random.default_rng(seed)
    lists = []
    for v in range(n):
        near = sorted({(v + d) % n for d in range(-width, width + 1)} - {v})
        items = {(): -100.0 - float(rng.uniform(0, 20))}
        for _ in range(int(rng.integers(0, max_sets))):
            size = int(rng.integers(1, min(max_indegree, len(near)) + 1))
            ps = tuple(sorted(int(x) for x in rng.choice(near, size=size, replace=False)))
            items.setdefault(ps, items[()] + float(rng.uniform(1, 50)))
        lists.append(list(items.items()))
    return ParentSetCache.from_lists(lists)


def _obs(cache, order):
    fc = cache.flat
    pos = np.empty(fc.n, dtype=np.int64)
    chosen = np.empty(fc.n, dtype=np.int64)
    order = np.array(order, dtype=np.int64)
    s = K.obs_assign(order, fc.offsets, fc.par_offsets, fc.par_flat, *obs_masks(fc),
                     fc.scores, pos, chosen)
    return s, order, pos, chosen


@settings(max_examples=80, deadline=None)
@given(caches, st.randoms(use_true_random=False))
def test_asobs_and_obs_kernels_equal_naive_and_asobs_beats_obs(cache, rnd):
    order = list(range(cache.n_vars))
    rnd.shuffle(order)
    s_a, chosen = _asobs(cache, order)
    want_a, parents_a = naive_asobs(cache, order)
    assert s_a == pytest.approx(want_a, abs=1e-9)
    assert [cache.parents_at(int(i)) for i in chosen] == parents_a
    assert naive_is_acyclic(parents_a)
    s_d, chosen_d = _asobs_dfs(cache, order)
    assert s_d == s_a and list(chosen_d) == list(chosen)
    s_o, *_ = _obs(cache, order)
    want_o, _ = naive_best_for_order(cache, order)
    assert s_o == pytest.approx(want_o, abs=1e-9)
    assert s_a >= s_o - 1e-9  # ASOBS >= OBS on the same order


def test_asobs_closure_on_more_than_64_variables():
    # several bitset words: compare with the naive ASOBS on a 150-variable cache
    cache = random_cache(150, 5, max_sets_per_var=6, max_indegree=3)
    rng = np.random.default_rng(3)
    for _ in range(3):
        order = rng.permutation(150)
        s, chosen = _asobs(cache, order)
        want, parents = naive_asobs(cache, order)
        assert s == pytest.approx(want, abs=1e-9)
        assert [cache.parents_at(int(i)) for i in chosen] == parents
        assert list(_asobs_dfs(cache, order)[1]) == list(chosen)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 200), st.integers(0, 10**6), st.integers(1, 12), st.integers(1, 5),
       st.booleans(), st.integers(1, 12), st.integers(0, 10**6))
def test_search_and_block_passes_equal_the_naive_asobs_and_the_other_kernels(n, seed, m, d,
                                                                            local, width,
                                                                            oseed):
    # random sets (members anywhere: both ways in the order) or sets of near variables
    # (deep chains: labels go stale and are recomputed; descendants across blocks);
    # blocks of 64 positions, so up to 4 blocks; several orders per cache
    cache = (_local_cache(n, seed, width, m, d) if local
             else random_cache(n, seed, max_sets_per_var=m, max_indegree=d))
    rng = np.random.default_rng(oseed)
    for _ in range(3):
        order = rng.permutation(n)
        s, chosen = _asobs_blocks(cache, order)
        want, parents = naive_asobs(cache, order)
        assert [cache.parents_at(int(i)) for i in chosen] == parents
        assert s == pytest.approx(want, abs=1e-9)
        assert list(_asobs(cache, order)[1]) == list(chosen)
        assert list(_asobs_dfs(cache, order)[1]) == list(chosen)
        assert list(_asobs_up(cache, order)[1]) == list(chosen)


def _naive_candidate_masks(cache):
    """Per variable: its first 63 distinct members in set order, and per set its bits
    (bit 63: a member beyond them)."""
    cands, masks = [], []
    for v in range(cache.n_vars):
        slots: dict[int, int] = {}
        for i in range(int(cache.flat.offsets[v]), int(cache.flat.offsets[v + 1])):
            m = 0
            for p in cache.parents_at(i):
                if p not in slots and len(slots) < 63:
                    slots[p] = len(slots)
                m |= 1 << slots[p] if p in slots else 1 << 63
            masks.append(m)
        cands.append(list(slots))
    return cands, masks


def _wide_cache(n, seed, n_sets, max_indegree):
    """Sets drawn among all variables, many per variable: over 63 distinct members for
    most variables (the candidate masks' overflow bit)."""
    rng = np.random.default_rng(seed)
    lists = []
    for v in range(n):
        others = [u for u in range(n) if u != v]
        items = {(): -100.0 - float(rng.uniform(0, 20))}
        for _ in range(n_sets):
            size = int(rng.integers(1, min(max_indegree, n - 1) + 1))
            ps = tuple(sorted(int(x) for x in rng.choice(others, size=size, replace=False)))
            items.setdefault(ps, items[()] + float(rng.uniform(1, 50)))
        lists.append(list(items.items()))
    return ParentSetCache.from_lists(lists)


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 150), st.integers(0, 10**6), st.integers(1, 60), st.integers(1, 4))
def test_candidate_masks_equal_a_naive_construction(n, seed, n_sets, d):
    cache = _wide_cache(n, seed, n_sets, d)
    cand_off, cand, cmask = candidate_masks(cache.flat)
    cands, masks = _naive_candidate_masks(cache)
    assert [list(cand[cand_off[v]:cand_off[v + 1]]) for v in range(n)] == cands
    assert [int(x) for x in cmask] == masks


@pytest.mark.parametrize(("n", "n_sets", "seed"), [(90, 60, 0), (150, 80, 1), (200, 40, 2)])
def test_passes_with_over_63_candidates_per_variable_equal_the_naive_asobs(n, n_sets, seed):
    # sets past a variable's 63rd candidate carry the overflow bit and are tested by
    # their members; every kernel against the naive ASOBS, blocks of 64 positions
    cache = _wide_cache(n, seed, n_sets, 4)
    cand_off, _, cmask = candidate_masks(cache.flat)
    assert np.diff(cand_off).max() == 63 and (cmask >> np.uint64(63)).any()
    rng = np.random.default_rng(seed)
    for _ in range(4):
        order = rng.permutation(n)
        want, parents = naive_asobs(cache, order)
        for kernel in (_asobs, _asobs_blocks, _asobs_up):
            s, chosen = kernel(cache, order)
            assert [cache.parents_at(int(i)) for i in chosen] == parents
            assert s == pytest.approx(want, abs=1e-9)
        # OBS and the swaps test sets by the same masks: each choice the naive best for
        # the order it ends with, and no adjacent swap improves
        s0, final, pos, chosen = _obs(cache, order)
        assert [cache.parents_at(int(i)) for i in chosen] == naive_best_for_order(cache,
                                                                                  order)[1]
        fc = cache.flat
        K.swap_search(final, pos, chosen, fc.offsets, fc.par_offsets, fc.par_flat,
                      cache_masks(fc), fc.scores, 10**6)
        want_s, parents_s = naive_best_for_order(cache, list(final))
        assert [cache.parents_at(int(i)) for i in chosen] == parents_s
        for k in range(0, n - 1, 7):
            sw = list(final[:k]) + [final[k + 1], final[k]] + list(final[k + 2:])
            assert naive_best_for_order(cache, sw)[0] <= want_s + 1e-7


@pytest.mark.parametrize(("n", "width", "words"),
                         [(300, 6, 1), (450, 15, 2), (600, 30, 1), (1300, 30, K.BLOCK_WORDS)])
def test_search_and_block_passes_equal_the_descendant_search_on_hundreds_of_variables(
        n, width, words):
    # the descendant-DFS kernel (the oracle here: the naive ASOBS is too slow) on caches
    # of 300-1,300 variables with sets of near variables, where descendant sets reach
    # hundreds of variables, over 3-10 blocks; same sets, same score, several orders
    cache = _local_cache(n, n + width, width, 12, 4)
    rng = np.random.default_rng(width)
    for _ in range(6):
        order = rng.permutation(n)
        s, chosen = _asobs_blocks(cache, order, words)
        s_d, chosen_d = _asobs_dfs(cache, order)
        assert list(chosen) == list(chosen_d)
        assert s == s_d
        assert list(_asobs_up(cache, order)[1]) == list(chosen)


@pytest.mark.parametrize("name", ["dna", "plants"])
def test_search_and_block_passes_equal_the_descendant_search_on_blip_caches(name,
                                                                           shared_data):
    # BLIP's caches of dna (180 variables, 3 blocks of 64) and plants (69, 2), learned
    # from data
    cache = load_jkl(shared_data / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz")
    rng = np.random.default_rng(0)
    for _ in range(10):
        order = rng.permutation(cache.n_vars)
        s, chosen = _asobs_blocks(cache, order)
        s_d, chosen_d = _asobs_dfs(cache, order)
        assert list(chosen) == list(chosen_d)
        assert s == s_d
        assert list(_asobs_up(cache, order)[1]) == list(chosen)


@pytest.mark.parametrize("name", ["asobs", "asobs-ent", "winasobs"])
def test_closure_choice_does_not_change_results(name):
    cache = random_cache(40, 8, max_sets_per_var=10)
    runs = [[(i.score, i.dag.parents, i.iterations) for i in
             make_optimizer(name, closure=c).run(cache, Budget(max_iterations=30),
                                                 np.random.default_rng(2))]
            for c in ("bitsets", "dfs", "blocks", "auto")]
    assert runs[0] == runs[1] == runs[2] == runs[3]


def test_auto_closure_above_search_from_gives_the_results_of_each_kernel():
    # above SEARCH_FROM "auto" times the search and the blocks on its first batches and
    # keeps the faster: whichever it keeps, the incumbents are those of either kernel
    cache = _local_cache(700, 7, 20, 10, 4)
    runs = [[(i.score, i.dag.parents, i.iterations) for i in
             make_optimizer("asobs", closure=c).run(cache, Budget(max_iterations=20),
                                                    np.random.default_rng(5))]
            for c in ("dfs", "blocks", "auto")]
    assert runs[0] == runs[1] == runs[2]
    assert len(runs[0]) >= 1


def test_closure_pick_warms_up_then_alternates_then_keeps_the_least_time_per_order():
    s, b = K.CLOSURE_SEARCH, K.CLOSURE_BLOCKS
    pick = _ClosurePick((s, b))
    seen = []
    # per order: the search 2 s, the blocks 1 s until batch 500, then the reverse; the
    # warm-up batch (search) 100 s
    for step in range(_RECHECK + 20):
        c = pick.next()
        seen.append(c)
        orders = 1 + step % 3
        per = {s: 2.0, b: 1.0} if step < 500 else {s: 1.0, b: 2.0}
        pick.record(c, 100.0 if step == 0 else per[c] * orders, orders)
    assert seen[:7] == [s, s, b, s, b, s, b]
    assert seen[7:7 + _RECHECK] == [b] * _RECHECK  # kept until the re-check
    assert seen[7 + _RECHECK:13 + _RECHECK] == [s, b, s, b, s, b]  # timed again
    assert seen[13 + _RECHECK:] == [s] * (_RECHECK + 20 - 13 - _RECHECK)
    # one candidate: no trial, no timing
    one = _ClosurePick(K.CLOSURE_BITSETS)
    for _ in range(3):
        assert one.next() == K.CLOSURE_BITSETS
        one.record(K.CLOSURE_BITSETS, 1.0, 1)


@pytest.mark.parametrize(("cache", "iters"), [
    (random_cache(9, 1, max_sets_per_var=10, max_indegree=3), 40),
    (random_cache(40, 8, max_sets_per_var=10), 12),
    (random_cache(150, 5, max_sets_per_var=6, max_indegree=3), 3),
    (load_jkl("wine.BIC.3.jkl.gz", bundled=True), 30),
    (load_jkl("child-5000.blip.jkl.gz", bundled=True), 20)])
@pytest.mark.parametrize("closure", ["bitsets", "dfs", "blocks"])
def test_asobs_with_swaps_equals_the_naive_search_seed_for_seed(cache, iters, closure):
    # same seed and iteration budget -> the same incumbents as the naive ASOBS loop fed
    # the same sampled batches (the orders the optimizer draws, batch by batch)
    n = cache.n_vars
    b = batch_size(n)
    rng = np.random.default_rng(3)
    batches = [uniform_orders(rng, min(b, iters - i), n) for i in range(0, iters, b)]
    want = naive_asobs_search(cache, batches)
    got = [(inc.iterations, [tuple(p) for p in inc.dag.parents]) for inc in
           make_optimizer("asobs", closure=closure).run(cache, Budget(max_iterations=iters),
                                                        np.random.default_rng(3))]
    assert want == got


@settings(max_examples=60, deadline=None)
@given(caches, st.integers(0, 10**6))
def test_obs_on_a_topological_order_of_an_asobs_dag_returns_that_dag(cache, seed):
    # why the batch kernel starts the swaps from the ASOBS DAG without OBS: every set
    # better than a variable's ASOBS set holds one of its descendants, which any
    # topological order of the DAG puts after it (naive ASOBS and OBS, no kernel)
    order = [int(v) for v in np.random.default_rng(seed).permutation(cache.n_vars)]
    _, dag = naive_asobs(cache, order)
    assert naive_best_for_order(cache, _topological_near(dag, order))[1] == dag


def test_a_refinement_after_bare_passes_gets_an_order_consistent_with_the_dag():
    # bare ASOBS passes leave no order (the kernel does not compute one); the anytime
    # loop takes a topological order of the batch's best DAG for the refinement
    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    fc = cache.flat
    n = cache.n_vars
    seen = []

    def refine(fc_, order, chosen, watch, g):
        pos = {int(v): k for k, v in enumerate(order)}
        assert sorted(pos) == list(range(n))
        seen.append(all(pos[p] < pos[v] for v in range(n)
                        for p in cache.parents_at(int(chosen[v]))))
        yield float(np.sum(fc.scores[chosen])), chosen

    incs = list(search_orders(cache, Budget(max_iterations=6), np.random.default_rng(0),
                              draw=lambda g, m: uniform_orders(g, m, n), use_asobs=True,
                              use_swaps=False, refine=refine))
    assert len(seen) == 6 and all(seen) and incs


def test_timed_auto_closure_equals_the_naive_search_seed_for_seed(monkeypatch):
    # "auto" with SEARCH_FROM at 0 on 150 variables: 10 batches, the first a warm-up, the
    # next 6 alternating the search and the blocks, then the kept one; the incumbents are
    # still those of the naive ASOBS loop fed the same batches
    monkeypatch.setattr(asobs_module, "SEARCH_FROM", 0)
    cache = random_cache(150, 5, max_sets_per_var=6, max_indegree=3)
    n = cache.n_vars
    b = batch_size(n)
    iters = 10 * b
    rng = np.random.default_rng(3)
    batches = [uniform_orders(rng, b, n) for _ in range(10)]
    want = naive_asobs_search(cache, batches)
    got = [(inc.iterations, [tuple(p) for p in inc.dag.parents]) for inc in
           make_optimizer("asobs").run(cache, Budget(max_iterations=iters),
                                       np.random.default_rng(3))]
    assert want == got
    assert len(want) >= 2


def _masked_batch_equals_naive(n, seed, m, d, oseed, words):
    cache = random_cache(n, seed, max_sets_per_var=m, max_indegree=d)
    fc = cache.flat
    orders = uniform_orders(np.random.default_rng(oseed), 3, n)
    want = naive_asobs_search(cache, [orders])
    chosen = np.empty(n, np.int64)
    best_order = np.empty(n, np.int64)
    masks = cache_masks(fc, words)
    cand = candidate_masks(fc)
    out = np.empty(3)
    K.run_orders_masked(orders, True, True, 10**6, fc.offsets, fc.par_offsets, fc.par_flat,
                        masks, *cand, int(fc.sizes.max()), fc.scores, out, chosen, best_order,
                        K.CLOSURE_BITSETS)
    assert want[-1][1] == [cache.parents_at(int(i)) for i in chosen]  # the batch's best
    again = np.empty(n, np.int64)  # run_orders: its own masks, mask_words(n) words
    K.run_orders(orders, True, True, 10**6, fc.offsets, fc.par_offsets, fc.par_flat,
                 fc.scores, np.empty(3), again, best_order, K.CLOSURE_BITSETS)
    assert list(again) == list(chosen)
    # OBS + swaps alone too (the masked first-fit from a sampled order)
    want_obs = []
    for o in orders:
        order = o.copy()
        pos = np.empty(n, np.int64)
        ch = np.empty(n, np.int64)
        K.obs_assign(order, fc.offsets, fc.par_offsets, fc.par_flat, masks, *cand, fc.scores,
                     pos, ch)
        assert [cache.parents_at(int(i)) for i in ch] == naive_best_for_order(cache, order)[1]
        K.swap_search(order, pos, ch, fc.offsets, fc.par_offsets, fc.par_flat, masks,
                      fc.scores, 10**6)
        assert [cache.parents_at(int(i)) for i in ch] == naive_best_for_order(cache, order)[1]
        want_obs.append(sum(float(fc.scores[i]) for i in ch))  # the kernel sums in this order
    K.run_orders_masked(orders, False, True, 10**6, fc.offsets, fc.par_offsets, fc.par_flat,
                        masks, *cand, int(fc.sizes.max()), fc.scores, out, chosen, best_order,
                        K.CLOSURE_BITSETS)
    assert list(out) == want_obs
    for i in range(fc.par_offsets.size - 1):  # the folded words of each set
        want_mask = [0] * words
        for p in cache.parents_at(i):
            want_mask[(p // 64) % words] |= 1 << (p % 64)
        assert [int(x) for x in np.atleast_1d(masks[i])] == want_mask


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 100), st.integers(0, 10**6), st.integers(1, 8), st.integers(1, 4),
       st.integers(0, 10**6))
def test_batch_kernel_with_set_masks_equals_the_naive_search(n, seed, m, d, oseed):
    # the word tests on folded members (exact up to 128 variables, a filter above) in
    # the ASOBS pass, OBS and the swaps: same DAGs as the naive ASOBS loop
    _masked_batch_equals_naive(n, seed, m, d, oseed, K.mask_words(n))


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.integers(60, 70), st.integers(120, 135)), st.integers(0, 10**6),
       st.integers(1, 8), st.integers(1, 4), st.integers(0, 10**6), st.sampled_from([1, 2]))
def test_one_and_two_word_masks_around_64_and_128_variables_equal_the_naive_search(
        n, seed, m, d, oseed, words):
    # 1 word: exact up to 64, a filter above; 2 words: exact up to 128, a filter above
    # (members p and p + 128 share a bit); the kernels' rule and both forced
    _masked_batch_equals_naive(n, seed, m, d, oseed, words)
    assert K.mask_words(n) == (1 if n <= 64 else 2 if n <= 128 else K.FOLD_WORDS)


@settings(max_examples=60, deadline=None)
@given(caches, st.randoms(use_true_random=False))
def test_swap_search_reaches_a_swap_local_optimum(cache, rnd):
    order = list(range(cache.n_vars))
    rnd.shuffle(order)
    s0, order_a, pos, chosen = _obs(cache, order)
    fc = cache.flat
    gain = K.swap_search(order_a, pos, chosen, fc.offsets, fc.par_offsets, fc.par_flat,
                         cache_masks(fc), fc.scores, 10**6)
    final = list(order_a)
    want, parents = naive_best_for_order(cache, final)
    assert [cache.parents_at(int(i)) for i in chosen] == parents
    assert want == pytest.approx(s0 + gain, abs=1e-7)
    for k in range(len(final) - 1):  # no adjacent swap improves
        sw = final[:k] + [final[k + 1], final[k]] + final[k + 2:]
        assert naive_best_for_order(cache, sw)[0] <= want + 1e-7


@settings(max_examples=60, deadline=None)
@given(caches, st.randoms(use_true_random=False), st.sampled_from([1, 2, None]))
def test_window_search_reaches_a_block_move_local_optimum(cache, rnd, reach):
    # reach None: blocks walked to the ends of the order; else at most reach steps
    n = cache.n_vars
    reach = n if reach is None else reach
    order = list(range(n))
    rnd.shuffle(order)
    s0, order_a, pos, chosen = _obs(cache, order)
    fc = cache.flat
    todo = np.array(rnd.sample(range(n), n), dtype=np.int64)
    state = np.array([0, 1, 0], dtype=np.int64)
    max_window = 3
    converged = False
    total = 0.0
    index = asobs_module.window_index(fc)
    cand = index.cand
    rel = asobs_module.window_relations(n, cand.shape[1])
    while not converged:
        g, converged = WK.window_search(order_a, pos, chosen, *index, fc.offsets,
                                        fc.par_offsets, fc.par_flat, fc.scores, todo,
                                        max_window, state, 7, reach, *rel)
        total += g
    final = list(order_a)
    assert sorted(final) == list(range(n))
    assert all(pos[v] == k for k, v in enumerate(final))
    want, parents = naive_best_for_order(cache, final)
    assert [cache.parents_at(int(i)) for i in chosen] == parents
    assert want == pytest.approx(s0 + total, abs=1e-7)
    assert want >= s0 - 1e-9
    # no move of a block of w <= max_window consecutive variables by at most reach
    # positions improves
    _assert_no_block_move_improves(cache, final, want, max_window, reach)


def _assert_no_block_move_improves(cache, final, want, max_window, reach):
    n = len(final)
    for w in range(1, min(max_window, n - 1) + 1):
        for i in range(n - w + 1):
            block, rest = final[i:i + w], final[:i] + final[i + w:]
            for j in range(max(0, i - reach), min(len(rest), i + reach) + 1):
                moved = rest[:j] + block + rest[j:]
                assert naive_best_for_order(cache, moved)[0] <= want + 1e-7


def _window_search_walking(order, pos, chosen, cand, fc, todo, max_window, state,
                           max_steps, reach):
    """The window search as first written: each walk evaluated by moving a copy of the
    block step by step (WK._walk), every step scored."""
    n = len(order)
    cursor, window, idle = (int(v) for v in state)
    total, steps_done, converged = 0.0, 0, False
    args = (cand, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores)
    while steps_done < max_steps:
        if window > max_window or window >= n:
            converged = True
            break
        w = window
        start = min(int(todo[cursor]), n - w)
        cursor = (cursor + 1) % n
        best_gain, best_k, best_right = 0.0, 0, True
        for right in (True, False):
            steps = min((n - w - start) if right else start, reach)
            if steps <= 0:
                continue
            g, k = WK._walk(start, w, steps, right, order.copy(), pos.copy(),
                            chosen.copy(), *args)
            steps_done += steps
            if g > best_gain + K.EPS:
                best_gain, best_k, best_right = g, k, right
        if best_k > 0:
            WK._walk(start, w, best_k, best_right, order, pos, chosen, *args)
            total += best_gain
            window, idle = 1, 0
        else:
            idle += 1
            if idle >= n:
                window, idle = window + 1, 0
    state[:] = (cursor, window, idle)
    return total, converged


def _same_window_search(cache, order, rnd, max_window, chunk, reach):
    fc = cache.flat
    n = cache.n_vars
    _, order_a, pos_a, chosen_a = _obs(cache, order)
    order_b, pos_b, chosen_b = order_a.copy(), pos_a.copy(), chosen_a.copy()
    todo = np.array(rnd.sample(range(n), n), dtype=np.int64)
    index = asobs_module.window_index(fc)
    cand = index.cand
    rel = asobs_module.window_relations(n, cand.shape[1])
    state_a = np.array([0, 1, 0], dtype=np.int64)
    state_b = state_a.copy()
    converged = False
    while not converged:
        got = WK.window_search(order_a, pos_a, chosen_a, *index, fc.offsets, fc.par_offsets,
                               fc.par_flat, fc.scores, todo, max_window, state_a, chunk,
                               reach, *rel)
        want = _window_search_walking(order_b, pos_b, chosen_b, cand, fc, todo,
                                      max_window, state_b, chunk, reach)
        assert got == want
        converged = got[1]
        assert list(order_a) == list(order_b) and list(chosen_a) == list(chosen_b)
        assert list(pos_a) == list(pos_b) and list(state_a) == list(state_b)
    # the relations are those of the final sets
    better, better_of, children, _ = rel
    for v in range(n):
        c = int(chosen_a[v])
        above = set(fc.par_flat[fc.par_offsets[fc.offsets[v]]:fc.par_offsets[c]].tolist())
        assert {p for p in range(n) if better[v, p >> 6] >> np.uint64(p & 63) & 1} == above
        assert {u for u in range(n) if better_of[v, u >> 6] >> np.uint64(u & 63) & 1} == {
            u for u in range(n) if better[u, v >> 6] >> np.uint64(v & 63) & 1}
        assert {u for u in range(n) if children[v, u >> 6] >> np.uint64(u & 63) & 1} == {
            u for u in range(n) if v in cache.parents_at(int(chosen_a[u]))}


@settings(max_examples=40, deadline=None)
@given(caches)
def test_window_index_lists_each_candidate_and_the_rows_holding_it(cache):
    fc = cache.flat
    index = asobs_module.window_index(fc)
    for a in range(cache.n_vars):
        rows = range(fc.offsets[a], fc.offsets[a + 1])
        members = {t: set(cache.parents_at(t)) for t in rows}
        want = sorted(set().union(*members.values()))
        got = index.cand_var[index.cand_off[a]:index.cand_off[a + 1]].tolist()
        assert got == want
        assert [x for x in range(cache.n_vars)
                if index.cand[a, x >> 6] >> np.uint64(x & 63) & 1] == want
        for e, x in zip(range(index.cand_off[a], index.cand_off[a + 1]), want, strict=True):
            held = index.rows[index.row_off[e]:index.row_off[e + 1]].tolist()
            assert held == [t for t in rows if x in members[t]]


def _walk_evaluations(cache, order, rnd):
    """Every block walk of the order, as _eval_right/_eval_left score it and as
    walking a copy step by step does: (scored, walked) pairs of (best gain, steps)."""
    fc = cache.flat
    n = cache.n_vars
    _, order_a, pos, chosen = _obs(cache, order)
    index = asobs_module.window_index(fc)
    better, better_of, children, built = asobs_module.window_relations(n,
                                                                       index.cand.shape[1])
    words = np.empty(index.cand.shape[1], dtype=np.uint64)
    for v in range(n):
        WK._sync(v, chosen, fc.offsets, fc.par_offsets, fc.par_flat, better, better_of,
                 children, built, words)
    inb = np.zeros(n, dtype=np.int64)
    buf = np.empty(n + 1, dtype=np.int64)
    flat = (fc.offsets, fc.par_offsets, fc.par_flat, fc.scores)
    for w in range(1, min(5, n)):
        for start in range(n - w + 1):
            block = order_a[start:start + w]
            inb[block] = np.arange(1, w + 1)
            for right in (True, False):
                room = n - w - start if right else start
                for steps in sorted({room, rnd.randint(0, room)} - {0}):
                    bch = chosen[block].copy()
                    if right:
                        got = WK._eval_right(start, w, steps, order_a, pos, chosen, *index,
                                             *flat, better, children, inb, bch, words, buf)
                    else:
                        got = WK._eval_left(start, w, steps, order_a, pos, chosen, *index,
                                            *flat, better_of, inb, bch, words, buf)
                    want = WK._walk(start, w, steps, right, order_a.copy(), pos.copy(),
                                    chosen.copy(), index.cand, *flat)
                    yield got, want
            inb[block] = 0


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 90), st.integers(0, 10**6), st.integers(1, 24), st.integers(1, 5),
       st.randoms(use_true_random=False))
def test_each_walk_scored_on_related_steps_equals_walking_it(n, seed, m, d, rnd):
    # every block of up to 4, both ways, to the end and a random number of steps, from
    # an OBS order (chosen sets the first that fit): the same best gain and steps
    cache = random_cache(n, seed, max_sets_per_var=m, max_indegree=d)
    order = list(range(n))
    rnd.shuffle(order)
    for got, want in _walk_evaluations(cache, order, rnd):
        assert got == want


@settings(max_examples=60, deadline=None)
@given(caches, st.randoms(use_true_random=False), st.integers(1, 4), st.integers(1, 40),
       st.sampled_from([1, 2, 3, None]))
def test_window_search_scores_only_related_steps_and_walks_as_step_by_step(
        cache, rnd, max_window, chunk, reach):
    # the search that scores only the steps where a family can change makes the same
    # moves, gains and states, chunk by chunk, as the one walking every step
    n = cache.n_vars
    order = list(range(n))
    rnd.shuffle(order)
    _same_window_search(cache, order, rnd, max_window, chunk, n if reach is None else reach)


@settings(max_examples=12, deadline=None)
@given(st.integers(60, 200), st.integers(0, 10**6), st.integers(2, 30), st.integers(1, 5),
       st.randoms(use_true_random=False), st.sampled_from([3, 8, None]))
def test_window_search_over_several_words_walks_as_step_by_step(n, seed, m, d, rnd, reach):
    # several bitset words, long walks read off the bitsets, short ones step by step
    cache = random_cache(n, seed, max_sets_per_var=m, max_indegree=d)
    order = list(range(n))
    rnd.shuffle(order)
    _same_window_search(cache, order, rnd, 5, 5_000, n if reach is None else reach)


@settings(max_examples=40, deadline=None)
@given(caches, st.randoms(use_true_random=False), st.integers(1, 3))
def test_window_walks_are_bounded_by_reach_and_refine_ends_at_a_full_optimum(
        cache, rnd, reach):
    n = cache.n_vars
    order = list(range(n))
    rnd.shuffle(order)
    s0, order_a, pos, chosen = _obs(cache, order)
    fc = cache.flat
    # one pivot at a time: an applied move shifts a block of 1 (the first window) by at
    # most reach positions, so the positions that change span at most 1 + reach
    before = list(order_a)
    state = np.array([0, 1, 0], dtype=np.int64)
    todo = np.array(rnd.sample(range(n), n), dtype=np.int64)
    index = asobs_module.window_index(fc)
    cand = index.cand
    rel = asobs_module.window_relations(n, cand.shape[1])
    for _ in range(n):
        if state[1] > 1:
            break
        WK.window_search(order_a, pos, chosen, *index, fc.offsets, fc.par_offsets,
                         fc.par_flat, fc.scores, todo, 3, state, 1, reach, *rel)
        changed = [k for k in range(n) if order_a[k] != before[k]]
        assert not changed or changed[-1] - changed[0] <= reach
        before = list(order_a)
    # window_refine with a reach walks short first, then to the ends: a full optimum
    s1, order_b, _, chosen_b = _obs(cache, order)
    out = list(asobs_module.window_refine(fc, order_b, chosen_b,
                                          Budget(max_iterations=1).stopwatch(),
                                          np.random.default_rng(rnd.randrange(99)),
                                          max_window=3, chunk=5, reach=reach))
    final = list(order_b)
    want, parents = naive_best_for_order(cache, final)
    assert [cache.parents_at(int(i)) for i in chosen_b] == parents
    assert want == pytest.approx(out[-1][0] if out else s1, abs=1e-7)
    _assert_no_block_move_improves(cache, final, want, 3, n)


def test_topological_order_near_keeps_a_consistent_order_and_sorts_a_dag():
    cache = random_cache(40, 9, max_sets_per_var=8)
    rng = np.random.default_rng(0)
    order = rng.permutation(40).astype(np.int64)
    _, chosen = _asobs(cache, order)
    fc = cache.flat
    out = np.empty(40, dtype=np.int64)
    assert K.topological_order_near(order, chosen, fc.par_offsets, fc.par_flat, out) == 40
    where = {v: k for k, v in enumerate(out)}
    for v in range(40):
        assert all(where[p] < where[v] for p in cache.parents_at(int(chosen[v])))
    # an order the DAG is already consistent with comes back unchanged
    again = np.empty(40, dtype=np.int64)
    K.topological_order_near(out, chosen, fc.par_offsets, fc.par_flat, again)
    assert list(again) == list(out)


def test_uniform_orders_are_permutations_and_uniform():
    rng = np.random.default_rng(1)
    orders = uniform_orders(rng, 6000, 3)
    assert all(sorted(r) == [0, 1, 2] for r in orders[:50])
    counts = {p: 0 for p in itertools.permutations(range(3))}
    for r in orders:
        counts[tuple(int(x) for x in r)] += 1
    assert stats.chisquare(list(counts.values())).pvalue > 1e-4


@pytest.mark.parametrize("n", [5, 300])
def test_samplers_do_not_depend_on_batch_sizes(n):
    w = np.linspace(0.1, 2.0, n)
    for draw in (lambda g, m: uniform_orders(g, m, n), lambda g, m: weighted_orders(g, m, w)):
        whole = draw(np.random.default_rng(3), 7)
        g = np.random.default_rng(3)
        parts = np.vstack([draw(g, 1), draw(g, 2), draw(g, 4)])
        assert np.array_equal(whole, parts)
        assert whole.flags.c_contiguous and whole.dtype == np.int64
        assert all(sorted(r) == list(range(n)) for r in whole)


def test_weighted_orders_follow_successive_sampling():
    w = np.array([1.0, 2.0, 7.0])
    rng = np.random.default_rng(2)
    orders = weighted_orders(rng, 20000, w)
    # positions filled front to back: P(order) = prod of w_j / (sum of the weights not
    # yet placed)
    exp, obs = [], []
    for p in itertools.permutations(range(3)):
        prob, left = 1.0, w.sum()
        for v in p:
            prob *= w[v] / left
            left -= w[v]
        exp.append(prob * len(orders))
        obs.append(int(np.sum(np.all(orders == np.array(p), axis=1))))
    assert stats.chisquare(obs, exp).pvalue > 1e-4


def test_entropy_weights_sources_and_zero_entropy():
    cache = random_cache(4, 0)
    w, last = entropy_weights(cache, [0.5, 0.0, 1.0, 2.0])
    assert not last and 0.0 < w[1] < 1e-6 and w[0] == 0.5  # default: processed first
    w, _ = entropy_weights(cache)  # the proxy: minus the empty set's score
    assert list(w) == [-cache.score_of(v, ()) for v in range(4)]
    cache.entropies = np.array([1.0, 2.0, 3.0, 4.0])
    assert entropy_weights(cache)[0].tolist() == [1.0, 2.0, 3.0, 4.0]
    assert entropy_weights(cache, [4.0, 3.0, 2.0, 1.0])[0].tolist() == [4.0, 3.0, 2.0, 1.0]
    # one parameter, both optimizers' values: ASOBS-ENT's last/first, k-G_ENT's late/early
    assert [entropy_weights(cache, high_entropy=d)[1]
            for d in ("last", "late", "first", "early")] == [True, True, False, False]
    with pytest.raises(InvalidConfigError, match="high_entropy"):
        entropy_weights(cache, high_entropy="middle")
    with pytest.raises(InvalidConfigError):
        entropy_weights(cache, [1.0, 2.0])
    # a zero-entropy variable is still placed, after the others
    w = entropy_weights(cache, [0.0, 1.0, 1.0, 1.0])[0]
    orders = weighted_orders(np.random.default_rng(0), 200, w)
    assert np.all(orders[:, -1] == 0)
    assert all(sorted(r) == [0, 1, 2, 3] for r in orders)
    # ASOBS walks orders from the end: "first" (the default) mirrors the orders, "last"
    # keeps them
    last = entropy_orders(np.random.default_rng(5), 10, w, "last")
    first = entropy_orders(np.random.default_rng(5), 10, w, "first")
    assert (last == weighted_orders(np.random.default_rng(5), 10, w)).all()
    assert (first == last[:, ::-1]).all()
    assert (entropy_orders(np.random.default_rng(5), 10, w) == first).all()
    with pytest.raises(InvalidConfigError):
        entropy_orders(np.random.default_rng(5), 1, w, "middle")


def test_named_variants_and_bad_parameters():
    assert get_optimizer("asobs")().sampler == "uniform"
    assert get_optimizer("asobs-ent")().sampler == "entropy"
    assert get_optimizer("winasobs")().local_search == "window"
    assert get_optimizer("winasobs-ent")().local_search == "window"
    for name, sampler, local, direction in [
            ("asobs-ent", "entropy", "swap", "first"),
            ("asobs-ent-last", "entropy", "swap", "last"),
            ("winasobs-ent", "entropy", "window", "first"),
            ("winasobs-ent-last", "entropy", "window", "last")]:
        opt = get_optimizer(name)()
        assert (opt.sampler, opt.local_search, opt.high_entropy) == (sampler, local, direction)
    cache = random_cache(5, 0)
    for bad in ({"sampler": "mi"}, {"local_search": "tabu"}, {"max_window": 0},
                {"closure": "matrix"}, {"high_entropy": "middle"}):
        with pytest.raises(InvalidConfigError):
            list(make_optimizer("asobs", **bad).run(cache, Budget(max_iterations=1),
                                                     np.random.default_rng(0)))
    with pytest.raises(InvalidConfigError):
        make_optimizer("asobs", window=3)


@pytest.mark.parametrize("local_search", ["none", "swap", "window"])
def test_every_local_search_is_at_least_the_asobs_pass(local_search):
    cache = random_cache(30, 11, max_sets_per_var=10)
    first = list(make_optimizer("asobs", local_search=local_search)
                 .run(cache, Budget(max_iterations=1), np.random.default_rng(4)))
    order = uniform_orders(np.random.default_rng(4), 1, 30)[0]
    bare, _ = _asobs(cache, order)
    assert first[-1].score >= bare - 1e-9


@pytest.mark.parametrize(("name", "params"), [
    ("obs", {}), ("obs", {"swaps": False}), ("asobs", {}), ("asobs", {"local_search": "none"}),
    ("asobs-ent", {})])
def test_best_at_an_iteration_checkpoint_is_the_best_of_a_run_with_that_budget(name, params):
    """Every order that beats the best so far is reported, at its own index: the best of
    a long run within c iterations is the best of a run with a budget of c iterations
    (the same orders are drawn). Before, only the best order of each batch (170 orders
    here) was reported, at the batch's end: nothing at 1, 10 or 100 iterations."""
    cache = random_cache(12, 4, max_sets_per_var=10, max_indegree=3)
    assert batch_size(12) == 170
    trace = AnytimeTrace.collect(make_optimizer(name, **params).run(
        cache, Budget(max_iterations=400), np.random.default_rng(2)))
    for c in (1, 2, 5, 10, 100, 169, 170, 171, 200, 340, 400):
        short = list(make_optimizer(name, **params).run(cache, Budget(max_iterations=c),
                                                        np.random.default_rng(2)))
        at = trace.best_at_iteration(c)
        assert at is not None, c
        assert (at.score, at.dag) == (short[-1].score, short[-1].dag), c
        assert at.iterations == short[-1].iterations, c


@pytest.mark.parametrize(("name", "optimum", "iters"),
                         [("wine.BIC.3.jkl.gz", -1258.4459086, 300),
                          ("child-5000.blip.jkl.gz", -71542.801, 20000)])
def test_asobs_ent_reaches_known_optima(name, optimum, iters):
    # An iteration budget (deterministic) that takes well under 10 s on one core:
    # about 0.05 s (wine) and 1 s (child) here; every seed 0..9 reaches the optimum.
    cache = load_jkl(name, bundled=True)
    incs = list(make_optimizer("asobs-ent").run(cache, Budget(max_iterations=iters),
                                                np.random.default_rng(0)))
    assert incs[-1].score == pytest.approx(optimum, abs=1e-3)
    assert incs[-1].iterations <= iters
