"""Hill climbing with tabu against a naive re-implementation of the same rules."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import Budget, make_optimizer
from tests.naive import naive_is_acyclic, random_cache


def _naive_moves(cache, parents):
    """(delta, pair, new parents) of every cached, acyclic single-arc change."""
    sets = [dict(cache.sets_of(v)) for v in range(cache.n_vars)]
    out = []
    n = cache.n_vars
    for v in range(n):
        cur = parents[v]
        for u in range(n):
            if u == v:
                continue
            cand = []
            if u in cur:
                rm = tuple(sorted(set(cur) - {u}))
                if rm in sets[v]:
                    cand.append({v: rm})
                    up = tuple(sorted(set(parents[u]) | {v}))
                    if up in sets[u]:
                        cand.append({v: rm, u: up})
            else:
                add = tuple(sorted(set(cur) | {u}))
                if add in sets[v]:
                    cand.append({v: add})
            for change in cand:
                new = list(parents)
                for x, ps in change.items():
                    new[x] = ps
                if naive_is_acyclic(new):
                    delta = sum(sets[x][ps] - sets[x][parents[x]] for x, ps in change.items())
                    out.append((delta, frozenset((u, v)), new))
    return out


def naive_tabu_climb(cache, tabu_length=10, max_no_improve=10, start=None):
    parents = [()] * cache.n_vars if start is None else list(start)
    score = sum(cache.score_of(v, parents[v]) for v in range(cache.n_vars))
    best, best_parents = score, parents
    tabu: list[frozenset[int]] = []
    idle = 0
    while True:
        moves = [m for m in _naive_moves(cache, parents) if m[1] not in tabu]
        if not moves:
            break
        delta, pair, parents = max(moves, key=lambda m: m[0])
        score += delta
        tabu = (tabu + [pair])[-tabu_length:]
        if score > best + 1e-9:
            best, best_parents, idle = score, parents, 0
        else:
            idle += 1
            if idle >= max_no_improve:
                break
    return best, best_parents


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("tabu_length", "max_no_improve"), [(10, 10), (1, 1), (3, 5)])
def test_one_climb_equals_the_naive_climb(seed, tabu_length, max_no_improve):
    # dense caches (many supersets present) so that many arc moves exist
    cache = random_cache(7, seed, max_sets_per_var=40, max_indegree=3)
    want, want_parents = naive_tabu_climb(cache, tabu_length, max_no_improve)
    incs = list(make_optimizer("hc-tabu", restarts=0, tabu_length=tabu_length,
                               max_no_improve=max_no_improve)
                .run(cache, Budget(max_iterations=5), np.random.default_rng(0)))
    assert incs[-1].score == pytest.approx(want, abs=1e-7)
    assert [tuple(p) for p in incs[-1].dag.parents] == [tuple(p) for p in want_parents]


def test_restarts_count_as_iterations_and_never_lose_the_best():
    cache = random_cache(12, 4, max_sets_per_var=30, max_indegree=3)
    first = list(make_optimizer("hc-tabu", restarts=0).run(cache, Budget(max_iterations=50),
                                                            np.random.default_rng(1)))
    more = list(make_optimizer("hc-tabu", restarts=6).run(cache, Budget(max_iterations=50),
                                                           np.random.default_rng(1)))
    assert more[-1].score >= first[-1].score
    assert max(i.iterations for i in more) <= 7
    assert first[-1].iterations == 1


def test_bad_parameters():
    cache = random_cache(4, 0)
    for bad in ({"tabu_length": 0}, {"restarts": -1}, {"max_no_improve": 0}):
        with pytest.raises(InvalidConfigError):
            list(make_optimizer("hc-tabu", **bad).run(cache, Budget(max_iterations=1),
                                                       np.random.default_rng(0)))


def _empty_rows(fc):
    """Each variable's row of the empty parent set: the empty DAG as cache rows."""
    sizes = np.diff(fc.par_offsets)
    return np.array([fc.offsets[v] + int(np.flatnonzero(sizes[fc.offsets[v]:fc.offsets[v + 1]]
                                                        == 0)[0])
                     for v in range(len(fc.offsets) - 1)], dtype=np.int64)


def _naive_bounds(fc, chosen, kind, u, delta, rrow, rdelta, bound=None):
    """Per variable v, the highest score change of its rows' moves and reversals (-inf
    when none), but for the adds of a child of v, from move arrays of a full rescan."""
    parents = [set(fc.par_flat[fc.par_offsets[j]:fc.par_offsets[j + 1]].tolist())
               for j in chosen]
    out = []
    for v in range(len(chosen)):
        rows = range(fc.offsets[v], fc.offsets[v + 1])
        ds = [delta[j] for j in rows if kind[j] >= 0
              and not (kind[j] == 0 and v in parents[u[j]])]  # ADD of a child: a cycle
        ds += [rdelta[j] for j in rows if kind[j] == 1 and rrow[j] >= 0]  # REMOVE
        out.append(max(ds, default=-np.inf))
    return np.array(out)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 8), steps=st.integers(1, 15))
def test_incremental_move_scores_equal_a_full_rescan(seed, n, steps):
    from bnsl_dist.search.ordering import _hc_kernels as HK
    fc = random_cache(n, seed, max_sets_per_var=30, max_indegree=3).flat
    rows = int(fc.offsets[-1])
    chosen = _empty_rows(fc)

    def fresh(ch):
        m = (np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows),
             np.empty(rows, np.int64), np.empty(rows), np.empty(n))
        HK.init_moves(ch, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores, *m)
        return m

    moves = fresh(chosen)
    HK.hc_steps(chosen, chosen.copy(), fc.offsets, fc.par_offsets, fc.par_flat, fc.scores,
                *moves, np.full((3, 2), -1, dtype=np.int64), np.zeros(3, dtype=np.int64),
                np.zeros(2), 1000, steps, HK.workspace(n, fc.par_flat.shape[0]), True)
    want = fresh(chosen)
    kind, u, delta, rrow, rdelta, bound = moves
    wkind, wu, wdelta, wrrow, wrdelta, _ = want
    np.testing.assert_allclose(bound, _naive_bounds(fc, chosen, *want), rtol=0, atol=1e-9)
    assert (kind == wkind).all()
    live = kind >= 0
    assert (u[live] == wu[live]).all()
    np.testing.assert_allclose(delta[live], wdelta[live], rtol=0, atol=1e-9)
    rem = kind == HK.REMOVE
    assert (rrow[rem] == wrrow[rem]).all()
    rev = rem & (wrrow >= 0)
    np.testing.assert_allclose(rdelta[rev], wrdelta[rev], rtol=0, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 8), k=st.integers(1, 4))
def test_refreshed_move_scores_equal_a_full_rescan(seed, n, k):
    from bnsl_dist.search.ordering import _hc_kernels as HK
    fc = random_cache(n, seed, max_sets_per_var=30, max_indegree=3).flat
    rows = int(fc.offsets[-1])
    rng = np.random.default_rng(seed)

    def fresh(ch):
        m = (np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows),
             np.empty(rows, np.int64), np.empty(rows), np.empty(n))
        HK.init_moves(ch, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores, *m)
        return m

    chosen = np.array([rng.integers(fc.offsets[v], fc.offsets[v + 1]) for v in range(n)])
    moves = fresh(chosen)
    changed = rng.choice(n, size=min(k, n), replace=False).astype(np.int64)
    for v in changed:
        chosen[v] = rng.integers(fc.offsets[v], fc.offsets[v + 1])
    HK.refresh_moves(chosen, changed, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores,
                     *moves)
    want = fresh(chosen)
    assert (moves[0] == want[0]).all()
    live = want[0] >= 0
    assert (moves[1][live] == want[1][live]).all()
    np.testing.assert_allclose(moves[2][live], want[2][live], rtol=0, atol=1e-9)
    rem = want[0] == HK.REMOVE
    assert (moves[3][rem] == want[3][rem]).all()
    rev = rem & (want[3] >= 0)
    np.testing.assert_allclose(moves[4][rev], want[4][rev], rtol=0, atol=1e-9)
    np.testing.assert_allclose(moves[5], _naive_bounds(fc, chosen, *want), rtol=0, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 9), steps=st.integers(0, 20),
       n_tabu=st.integers(0, 6), grain=st.sampled_from([0.0, 2.0, 10.0]))
def test_pick_skipping_by_bounds_equals_a_full_scan(seed, n, steps, n_tabu, grain):
    """_pick skips the variables whose bound is below the best so far and visits the
    highest bound first: after random steps its move is the full scan's (the highest
    score change, ties by key: adds by row, then each removal and its reversal, by row),
    found here by trying every row's moves on the parent sets. Scores rounded to
    ``grain`` make ties."""
    from bnsl_dist.search.ordering import _hc_kernels as HK
    fc = random_cache(n, seed, max_sets_per_var=30, max_indegree=3).flat
    scores = np.round(fc.scores / grain) * grain if grain else fc.scores.copy()
    rows = int(fc.offsets[-1])
    rng = np.random.default_rng(seed)
    chosen = _empty_rows(fc)
    moves = (np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows),
             np.empty(rows, np.int64), np.empty(rows), np.empty(n))
    HK.init_moves(chosen, fc.offsets, fc.par_offsets, fc.par_flat, scores, *moves)
    HK.hc_steps(chosen, chosen.copy(), fc.offsets, fc.par_offsets, fc.par_flat, scores,
                *moves, np.full((3, 2), -1, dtype=np.int64), np.zeros(3, dtype=np.int64),
                np.zeros(2), 1000, steps, HK.workspace(n, fc.par_flat.shape[0]), True)
    tabu = rng.integers(0, n, size=(max(1, n_tabu), 2)).astype(np.int64)
    kid_off = np.empty(n + 1, dtype=np.int64)
    kids = np.empty(fc.par_flat.shape[0] + 1, dtype=np.int64)
    HK._children(chosen, fc.par_offsets, fc.par_flat, kid_off, kids)
    desc = np.zeros((n, 1), dtype=np.uint64)
    HK._descendants(chosen, fc.par_offsets, fc.par_flat, kid_off, kids, desc,
                    np.empty(n, np.int64), np.empty(n, np.int64))
    out = np.empty(3, dtype=np.int64)
    d = HK._pick(fc.offsets, *moves, desc, kid_off, kids, tabu, n_tabu, out)

    def members(j):
        return set(fc.par_flat[fc.par_offsets[j]:fc.par_offsets[j + 1]].tolist())

    parents = [members(chosen[v]) for v in range(n)]
    pairs = {frozenset(map(int, p)) for p in tabu[:n_tabu]}
    cands = []  # (delta, key, row, kind, v)
    for v in range(n):
        for j in range(fc.offsets[v], fc.offsets[v + 1]):
            new = members(j)
            diff = new ^ parents[v]
            if len(diff) != 1 or frozenset((v, *diff)) in pairs:
                continue
            (u,) = diff
            after = list(parents)
            after[v] = new
            dv = scores[j] - scores[chosen[v]]
            if u in new:  # an add
                if naive_is_acyclic(after):
                    cands.append((dv, 2 * j, j, HK.ADD, v))
                continue
            if naive_is_acyclic(after):
                cands.append((dv, 2 * rows + 2 * j, j, HK.REMOVE, v))
            for k in range(fc.offsets[u], fc.offsets[u + 1]):
                if members(k) == parents[u] | {v}:
                    after[u] = members(k)
                    if naive_is_acyclic(after):
                        cands.append((dv + (scores[k] - scores[chosen[u]]),
                                      2 * rows + 2 * j + 1, j, HK.REVERSE, v))
    if not cands:
        assert out[1] == -1
        return
    best = max(cands, key=lambda c: (c[0], -c[1]))
    assert d == pytest.approx(best[0], abs=1e-9)
    assert tuple(out) == best[2:]


def _naive_descendants(parents):
    """Proper descendants of each node by a search over children (the oracle)."""
    n = len(parents)
    kids = [[c for c in range(n) if p in parents[c]] for p in range(n)]
    out = []
    for x in range(n):
        seen, stack = set(), list(kids[x])
        while stack:
            c = stack.pop()
            if c not in seen:
                seen.add(c)
                stack.extend(kids[c])
        out.append(seen)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_descendants_updated_per_move_equal_a_search(seed):
    """hc_steps updates the descendant bitsets per move (ancestors of the arc's tail
    only) instead of recomputing all n of them per step (O(n³/64) per climb, 99 s for
    three climbs at 10,000 variables): after each of 300 random adds, removals and
    reversals on 70 variables (two words per bitset) they equal a plain search."""
    from bnsl_dist.search.ordering import _hc_kernels as HK

    rng = np.random.default_rng(seed)
    n = 70
    parents = [set() for _ in range(n)]

    def children():
        po = np.zeros(n + 1, dtype=np.int64)
        flat = []
        for v in range(n):
            flat += sorted(parents[v])
            po[v + 1] = len(flat)
        pf = np.array(flat + [0], dtype=np.int64)
        kid_off, kids = np.empty(n + 1, dtype=np.int64), np.empty(len(pf) + 1, dtype=np.int64)
        HK._children(np.arange(n, dtype=np.int64), po, pf, kid_off, kids)
        return kid_off, kids

    desc = np.zeros((n, 2), dtype=np.uint64)
    nodes, counts = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    kinds = []
    while len(kinds) < 300:
        reach = _naive_descendants(parents)
        arcs = [(u, v) for v in range(n) for u in parents[v]]
        kind = HK.ADD if not arcs or rng.random() < 0.5 else rng.choice([HK.REMOVE, HK.REVERSE])
        if kind == HK.ADD:
            u, v = (int(x) for x in rng.choice(n, 2, replace=False))
            if u in parents[v] or u in reach[v]:
                continue  # present, or v reaches u: a cycle
            parents[v].add(u)
        else:
            u, v = arcs[rng.integers(len(arcs))]
            parents[v].discard(u)
            if kind == HK.REVERSE:
                if v in _naive_descendants(parents)[u]:
                    parents[v].add(u)  # another path u ~> v: the reversal closes a cycle
                    continue
                parents[u].add(v)
        kid_off, kids = children()
        HK.update_descendants(kind, u, v, desc, kid_off, kids, nodes, counts)
        kinds.append(kind)
        want = _naive_descendants(parents)
        bits = np.unpackbits(desc.view(np.uint8), axis=1, bitorder="little")[:, :n]
        got = [set(np.flatnonzero(row).tolist()) for row in bits]
        assert got == want, (len(kinds), kind, u, v)
    assert set(kinds) == {HK.ADD, HK.REMOVE, HK.REVERSE}


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 9), steps=st.integers(2, 30),
       chunk=st.integers(1, 4))
def test_a_climb_in_calls_equals_one_call(seed, n, steps, chunk):
    """hc_steps keeps its children lists and descendant bitsets in the workspace between
    the calls of a climb (built only when ``fresh``): ``steps`` steps made ``chunk`` at a
    time leave the DAG, the move arrays and the climb's state that one call leaves."""
    from bnsl_dist.search.ordering import _hc_kernels as HK

    fc = random_cache(n, seed, max_sets_per_var=30, max_indegree=3).flat
    rows = int(fc.offsets[-1])
    start = _empty_rows(fc)

    def climb(per_call):
        chosen = start.copy()
        # zeros, not empty: the entries no move uses stay zero in both climbs, so the
        # arrays compare whole
        moves = (np.zeros(rows, np.int64), np.zeros(rows, np.int64), np.zeros(rows),
                 np.zeros(rows, np.int64), np.zeros(rows), np.zeros(n))
        HK.init_moves(chosen, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores, *moves)
        tabu = np.full((3, 2), -1, dtype=np.int64)
        state, fstate = np.zeros(3, dtype=np.int64), np.zeros(2)
        ws = HK.workspace(n, fc.par_flat.shape[0])
        done, over = 0, 0
        while done < steps and not over:
            k = min(per_call, steps - done)
            over = HK.hc_steps(chosen, chosen.copy(), fc.offsets, fc.par_offsets,
                               fc.par_flat, fc.scores, *moves, tabu, state, fstate, 1000, k,
                               ws, done == 0)
            done += k
        return chosen, moves, tabu, state, fstate

    one, parts = climb(steps), climb(chunk)
    for a, b in zip(one[:1] + one[1] + one[2:], parts[:1] + parts[1] + parts[2:],
                    strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("chunk", [1, 3, 50])
def test_a_climb_from_a_dag_in_calls_equals_the_naive_climb(seed, chunk):
    """A climb from a non-empty DAG (a restart's) made ``chunk`` steps per hc_steps call:
    the first call builds the children lists and descendant bitsets from the start DAG
    (``fresh``), the next ones carry them on; the best DAG and score are the naive
    climb's from that start."""
    from bnsl_dist.search.ordering import _hc_kernels as HK

    cache = random_cache(7, seed, max_sets_per_var=40, max_indegree=3)
    fc = cache.flat
    n, rows = cache.n_vars, int(fc.offsets[-1])
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    chosen = np.empty(n, dtype=np.int64)
    for i, v in enumerate(order):  # a random cached set of earlier variables: acyclic
        ok = [j for j in range(fc.offsets[v], fc.offsets[v + 1])
              if set(fc.par_flat[fc.par_offsets[j]:fc.par_offsets[j + 1]].tolist())
              <= set(order[:i].tolist())]
        chosen[v] = ok[rng.integers(len(ok))]
    start = [tuple(fc.par_flat[fc.par_offsets[j]:fc.par_offsets[j + 1]].tolist())
             for j in chosen]
    want, want_parents = naive_tabu_climb(cache, 4, 4, start=start)
    moves = (np.empty(rows, np.int64), np.empty(rows, np.int64), np.empty(rows),
             np.empty(rows, np.int64), np.empty(rows), np.empty(n))
    HK.init_moves(chosen, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores, *moves)
    total = sum(cache.score_of(v, start[v]) for v in range(n))
    best = chosen.copy()
    tabu = np.full((4, 2), -1, dtype=np.int64)
    state, fstate = np.zeros(3, dtype=np.int64), np.array([total, total])
    ws = HK.workspace(n, fc.par_flat.shape[0])
    fresh = True
    while not HK.hc_steps(chosen, best, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores,
                          *moves, tabu, state, fstate, 4, chunk, ws, fresh):
        fresh = False
    got = [tuple(fc.par_flat[fc.par_offsets[j]:fc.par_offsets[j + 1]].tolist()) for j in best]
    assert fstate[1] == pytest.approx(want, abs=1e-7)
    assert got == [tuple(p) for p in want_parents]
