"""Numba kernels of greedy hill climbing with a tabu list, on a parent-set cache.

Moves change one arc: add u->v, remove u->v, reverse u->v. A move is a move only when
every family it produces is a cached set (the cache is the search space); acyclicity
is read from descendant bitsets (restarts' perturbations use a depth-first search).
Inputs validated by the driver; see ``_kernels.py`` for the cache layout.

Move scores are incremental: they are stored per cache row (row j of variable v is the
move that makes j v's set, if one arc separates them), so a step rescans only the rows
of the variables it changed (and the reversal entries of their children), not the
whole cache; a per-variable upper bound of its rows' score changes lets the pick of a
step skip the variables that cannot hold the best move.

``state`` (int64, IN/OUT) = [tabu head, tabu count, steps without a new best];
``fstate`` (float64, IN/OUT) = [current score, best score of this climb];
``tabu`` (L, 2) holds the unordered variable pairs of the last L moves.
"""

from __future__ import annotations

from typing import Any

import numba as nb
import numpy as np
from numpy.typing import NDArray

from bnsl_dist.scores._entropy_kernels import popcount64
from bnsl_dist.search.ordering._kernels import EPS

NONE, ADD, REMOVE, REVERSE = -1, 0, 1, 2


@nb.njit(cache=True, nogil=True)
def _children(chosen, par_offsets, par_flat, kid_off, kids):
    """CSR children lists of the DAG ``chosen`` into kid_off (n+1) / kids (OUT)."""
    n = chosen.shape[0]
    kid_off[:] = 0
    for v in range(n):
        i = chosen[v]
        for t in range(par_offsets[i], par_offsets[i + 1]):
            kid_off[par_flat[t] + 1] += 1
    for v in range(n):
        kid_off[v + 1] += kid_off[v]
    fill = kid_off[:n].copy()
    for v in range(n):
        i = chosen[v]
        for t in range(par_offsets[i], par_offsets[i + 1]):
            p = par_flat[t]
            kids[fill[p]] = v
            fill[p] += 1


@nb.njit(cache=True, nogil=True)
def _reaches(src, dst, kid_off, kids, seen, stack):
    """Is dst reachable from src along children arcs?"""
    seen[:] = False
    top = 0
    stack[top] = src
    top += 1
    seen[src] = True
    while top > 0:
        top -= 1
        x = stack[top]
        for t in range(kid_off[x], kid_off[x + 1]):
            c = kids[t]
            if c == dst:
                return True
            if not seen[c]:
                seen[c] = True
                stack[top] = c
                top += 1
    return False


@nb.njit(cache=True, nogil=True, inline="always")
def _is_tabu(tabu, count, a, b):
    for k in range(count):
        if (tabu[k, 0] == a and tabu[k, 1] == b) or (tabu[k, 0] == b and tabu[k, 1] == a):
            return True
    return False


@nb.njit(cache=True, nogil=True)
def _var_moves(v, chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u, m_delta):
    """Moves of variable v from its current set: row j of v is an ADD (or REMOVE) of
    m_u[j] when its set is chosen[v] plus (minus) that one member, with score change
    m_delta[j]; any other row is NONE. ``mark`` (n,) all zero on entry and exit."""
    cur = chosen[v]
    size = par_offsets[cur + 1] - par_offsets[cur]
    psum = 0
    for t in range(par_offsets[cur], par_offsets[cur + 1]):
        mark[par_flat[t]] = 1
        psum += par_flat[t]
    for j in range(offsets[v], offsets[v + 1]):
        m_type[j] = NONE
        sj = par_offsets[j + 1] - par_offsets[j]
        if sj == size + 1:
            inside = 0
            u = -1
            for t in range(par_offsets[j], par_offsets[j + 1]):
                if mark[par_flat[t]] == 1:
                    inside += 1
                else:
                    u = par_flat[t]
            if inside == size:
                m_type[j] = ADD
                m_u[j] = u
                m_delta[j] = scores[j] - scores[cur]
        elif sj == size - 1 and size > 0:
            ok = True
            jsum = 0
            for t in range(par_offsets[j], par_offsets[j + 1]):
                if mark[par_flat[t]] != 1:
                    ok = False
                    break
                jsum += par_flat[t]
            if ok:
                m_type[j] = REMOVE
                m_u[j] = psum - jsum
                m_delta[j] = scores[j] - scores[cur]
    for t in range(par_offsets[cur], par_offsets[cur + 1]):
        mark[par_flat[t]] = 0


@nb.njit(cache=True, nogil=True)
def _var_reversals(v, offsets, m_type, m_u, m_delta, r_row, r_delta):
    """For each REMOVE row j of v (arc u -> v): the row of u's set plus v, if cached
    (r_row[j], else -1), and the reversal's score change r_delta[j]. Needs the current
    moves of v and of its parents."""
    for j in range(offsets[v], offsets[v + 1]):
        r_row[j] = -1
        if m_type[j] != REMOVE:
            continue
        u = m_u[j]
        for k in range(offsets[u], offsets[u + 1]):
            if m_type[k] == ADD and m_u[k] == v:
                r_row[j] = k
                r_delta[j] = m_delta[j] + m_delta[k]
                break


@nb.njit(cache=True, nogil=True)
def _var_bound(v, chosen, offsets, par_offsets, par_flat, m_type, m_u, m_delta, r_row,
               r_delta, bound):
    """``bound[v]``: the highest score change of v's moves and reversals (-inf when
    none), but for the adds of a child of v (u -> v while v -> u: always a cycle), which
    :func:`_pick` uses to skip v. Needs v's current moves and reversals, and the sets of
    v's children: it is recomputed when either changes."""
    b = -np.inf
    for j in range(offsets[v], offsets[v + 1]):
        t = m_type[j]
        if t == NONE:
            continue
        if t == ADD:
            cu = chosen[m_u[j]]
            child = False
            for q in range(par_offsets[cu], par_offsets[cu + 1]):
                if par_flat[q] == v:
                    child = True
                    break
            if child:
                continue
        b = max(b, m_delta[j])
        if t == REMOVE and r_row[j] >= 0:
            b = max(b, r_delta[j])
    bound[v] = b


@nb.njit(cache=True, nogil=True)
def init_moves(chosen, offsets, par_offsets, par_flat, scores, m_type, m_u, m_delta, r_row,
               r_delta, bound):
    """The moves of every variable (OUT arrays indexed by cache row; ``bound`` by
    variable)."""
    n = chosen.shape[0]
    mark = np.zeros(n, dtype=np.int64)
    for v in range(n):
        _var_moves(v, chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u,
                   m_delta)
    for v in range(n):
        _var_reversals(v, offsets, m_type, m_u, m_delta, r_row, r_delta)
    for v in range(n):
        _var_bound(v, chosen, offsets, par_offsets, par_flat, m_type, m_u, m_delta, r_row,
                   r_delta, bound)


@nb.njit(cache=True, nogil=True)
def refresh_moves(chosen, changed, offsets, par_offsets, par_flat, scores, m_type, m_u,
                  m_delta, r_row, r_delta, bound):
    """Bring the move arrays (IN/OUT) up to date after the sets of the variables
    ``changed`` were replaced: their moves, and the reversals of them and their children."""
    n = chosen.shape[0]
    mark = np.zeros(n, dtype=np.int64)
    kid_off = np.empty(n + 1, dtype=np.int64)
    kids = np.empty(par_flat.shape[0] + 1, dtype=np.int64)
    _children(chosen, par_offsets, par_flat, kid_off, kids)
    for w in changed:
        _var_moves(w, chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u,
                   m_delta)
    for w in changed:
        _var_reversals(w, offsets, m_type, m_u, m_delta, r_row, r_delta)
        for t in range(kid_off[w], kid_off[w + 1]):
            _var_reversals(kids[t], offsets, m_type, m_u, m_delta, r_row, r_delta)
    for v in range(n):  # the old parents of those changed lost children: all of them
        _var_bound(v, chosen, offsets, par_offsets, par_flat, m_type, m_u, m_delta, r_row,
                   r_delta, bound)


@nb.njit(cache=True, nogil=True)
def _descendants(chosen, par_offsets, par_flat, kid_off, kids, desc, indeg, queue):
    """Proper descendants of every node as bitsets (OUT desc (n, words) uint64), from the
    children lists (Kahn's order, then children before parents)."""
    n = chosen.shape[0]
    for v in range(n):
        indeg[v] = par_offsets[chosen[v] + 1] - par_offsets[chosen[v]]
    tail = 0
    for v in range(n):
        if indeg[v] == 0:
            queue[tail] = v
            tail += 1
    head = 0
    while head < tail:
        x = queue[head]
        head += 1
        for t in range(kid_off[x], kid_off[x + 1]):
            c = kids[t]
            indeg[c] -= 1
            if indeg[c] == 0:
                queue[tail] = c
                tail += 1
    for i in range(n - 1, -1, -1):
        x = queue[i]
        desc[x, :] = 0
        for t in range(kid_off[x], kid_off[x + 1]):
            c = kids[t]
            desc[x, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
            for w in range(desc.shape[1]):
                desc[x, w] |= desc[c, w]


@nb.njit(cache=True, nogil=True)
def _desc_add(a, b, desc):
    """The arc a->b was added: a and every ancestor of a now reach b and b's
    descendants (b is no ancestor of a: the DAG stays acyclic, so desc[b] is final)."""
    n, words = desc.shape
    aw = a >> 6
    abit = np.uint64(1) << np.uint64(a & 63)
    bw = b >> 6
    bbit = np.uint64(1) << np.uint64(b & 63)
    for x in range(n):
        if x == a or (desc[x, aw] & abit) != np.uint64(0):
            desc[x, bw] |= bbit
            for w in range(words):
                desc[x, w] |= desc[b, w]


@nb.njit(cache=True, nogil=True)
def _desc_remove(a, desc, kid_off, kids, nodes, counts):
    """An arc out of ``a`` was removed (children lists ``kid_off``/``kids`` of the DAG
    after): only a and its ancestors can lose descendants; theirs are recomputed from
    their children, children first. A child of such a node in the DAG after was one
    before, so it had strictly fewer descendants before: ascending old counts is a
    children-first order."""
    n, words = desc.shape
    aw = a >> 6
    abit = np.uint64(1) << np.uint64(a & 63)
    m = 0
    for x in range(n):
        if x == a or (desc[x, aw] & abit) != np.uint64(0):
            c = np.uint64(0)
            for w in range(words):
                c += popcount64(desc[x, w])
            nodes[m] = x
            counts[m] = np.int64(c)
            m += 1
    order = np.argsort(counts[:m], kind="mergesort")
    for i in range(m):
        x = nodes[order[i]]
        desc[x, :] = 0
        for t in range(kid_off[x], kid_off[x + 1]):
            c = kids[t]
            desc[x, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
            for w in range(words):
                desc[x, w] |= desc[c, w]


@nb.njit(cache=True, nogil=True)
def update_descendants(kind, u, v, desc, kid_off, kids, nodes, counts):
    """``desc`` (bitsets of the DAG before the move) made those of the DAG after the move
    ``kind`` of the arc u->v (children lists ``kid_off``/``kids`` of the DAG after):
    ADD touches u and its ancestors, REMOVE recomputes them, REVERSE is the removal,
    then the addition of v->u. O(n) to find them, O(words) per arc of theirs: the full
    recompute (:func:`_descendants`) took O(n·words) per step, O(n³/64) per climb."""
    if kind == ADD:
        _desc_add(u, v, desc)
    else:
        _desc_remove(u, desc, kid_off, kids, nodes, counts)
        if kind == REVERSE:
            _desc_add(v, u, desc)


@nb.njit(cache=True, nogil=True, inline="always")
def _below(desc, x, y):
    """Is y a proper descendant of x?"""
    return (desc[x, y >> 6] >> np.uint64(y & 63)) & np.uint64(1) == np.uint64(1)


@nb.njit(cache=True, nogil=True)
def _cyclic(kind, u, v, desc, kid_off, kids):
    """Would the move close a cycle? ADD u->v: v reaches u; REVERSE u->v: another path
    u ~> v (through a child of u other than v)."""
    if kind == ADD:
        return _below(desc, v, u)
    if kind == REVERSE:
        for t in range(kid_off[u], kid_off[u + 1]):
            c = kids[t]
            if c != v and _below(desc, c, v):
                return True
    return False


@nb.njit(cache=True, nogil=True, inline="always")
def _pick_var(v, n_rows, offsets, m_type, m_u, m_delta, r_row, r_delta, desc, kid_off, kids,
              tabu, n_tabu, bd, bkey, out):
    """:func:`_pick` over the rows of v, from the best so far (bd, bkey); returns it."""
    for j in range(offsets[v], offsets[v + 1]):
        t = m_type[j]
        if t == NONE:
            continue
        for sub in range(2):
            if sub == 0:
                d = m_delta[j]
                kind = t
                key = (np.int64(0) if t == ADD else np.int64(2 * n_rows)) + 2 * j
            else:
                if t != REMOVE or r_row[j] < 0:
                    break
                d = r_delta[j]
                kind = REVERSE
                key = np.int64(2 * n_rows) + 2 * j + 1
            if d < bd or (d == bd and key > bkey):
                continue
            if _is_tabu(tabu, n_tabu, m_u[j], v):
                break  # both moves of this row share the pair
            if _cyclic(kind, m_u[j], v, desc, kid_off, kids):
                continue
            bd = d
            bkey = key
            out[0] = j
            out[1] = kind
            out[2] = v
    return bd, bkey


@nb.njit(cache=True, nogil=True)
def _pick(offsets, m_type, m_u, m_delta, r_row, r_delta, bound, desc, kid_off, kids, tabu,
          n_tabu, out):
    """Best admissible move (acyclic, not tabu): highest score change, ties by the order
    adds (by row), then removals each followed by its reversal (by row). Writes (row,
    kind, variable) into ``out``, kind -1 when none; returns the score change.

    The variable of the highest ``bound`` is scanned first, then every other whose bound
    is not below the best so far: a skipped one has no admissible move that could win
    (nor tie), and the order (score change, then key) is total, so the pick is the full
    scan's. (Bounds that counted the always-cyclic adds of a child skipped 85% of the
    variables at 10,000, not 99%.)"""
    n = offsets.shape[0] - 1
    n_rows = offsets[n]
    bd = -np.inf
    bkey = np.int64(-1)
    out[0] = -1
    out[1] = -1
    out[2] = -1
    if n == 0:
        return bd
    top = np.argmax(bound)
    bd, bkey = _pick_var(top, n_rows, offsets, m_type, m_u, m_delta, r_row, r_delta, desc,
                         kid_off, kids, tabu, n_tabu, bd, bkey, out)
    for v in range(n):
        if v == top or bound[v] < bd:
            continue
        bd, bkey = _pick_var(v, n_rows, offsets, m_type, m_u, m_delta, r_row, r_delta, desc,
                             kid_off, kids, tabu, n_tabu, bd, bkey, out)
    return bd


def workspace(n: int, n_flat: int) -> tuple[NDArray[Any], ...]:
    """The arrays :func:`hc_steps` keeps between the calls of one climb, for ``n``
    variables and a cache whose parent lists hold ``n_flat`` entries: descendant
    bitsets, children lists (offsets, entries), a zeroed mark and three scratch arrays."""
    return (np.zeros((n, (n + 63) >> 6), dtype=np.uint64), np.empty(n + 1, dtype=np.int64),
            np.empty(n_flat + 1, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64),
            np.empty(n, dtype=np.int64))


@nb.njit(cache=True, nogil=True)
def hc_steps(chosen, best_chosen, offsets, par_offsets, par_flat, scores, m_type, m_u, m_delta,
             r_row, r_delta, bound, tabu, state, fstate, max_no_improve, max_steps, ws, fresh):
    """Up to ``max_steps`` tabu hill-climbing steps; returns 1 when the climb is over
    (no admissible move, or ``max_no_improve`` steps without a new best), else 0.

    The move arrays (from :func:`init_moves`, IN/OUT) are kept current: a step rescans
    only the rows of the one or two variables it changed, the reversal entries (and
    bounds) of their children, and the bound of u (its children changed). Acyclicity is
    read from descendant bitsets, updated per step (:func:`update_descendants`).

    ``ws`` (:func:`workspace`, IN/OUT) keeps the children lists and the bitsets between
    the calls of one climb: ``fresh`` (the first call of a climb, or ``chosen`` changed
    outside) builds them from ``chosen``; otherwise they are those the last call left.
    (Built anew per call, they were most of a step's cost at 10,000 variables, a call
    being ~20 steps there.)"""
    desc, kid_off, kids, mark, indeg, queue, counts = ws
    pick = np.empty(3, dtype=np.int64)
    tabu_len = tabu.shape[0]
    if fresh:
        _children(chosen, par_offsets, par_flat, kid_off, kids)
        _descendants(chosen, par_offsets, par_flat, kid_off, kids, desc, indeg, queue)
    for _ in range(max_steps):
        d = _pick(offsets, m_type, m_u, m_delta, r_row, r_delta, bound, desc, kid_off, kids,
                  tabu, state[1], pick)
        j = pick[0]
        kind = pick[1]
        if kind < 0:
            return 1
        v = pick[2]
        u = m_u[j]
        chosen[v] = j
        if kind == REVERSE:
            chosen[u] = r_row[j]
        _children(chosen, par_offsets, par_flat, kid_off, kids)
        update_descendants(kind, u, v, desc, kid_off, kids, queue, counts)
        _var_moves(v, chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u,
                   m_delta)
        if kind == REVERSE:
            _var_moves(u, chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u,
                       m_delta)
        for w in (v, u):
            if w == u and kind != REVERSE:
                continue
            _var_reversals(w, offsets, m_type, m_u, m_delta, r_row, r_delta)
            for t in range(kid_off[w], kid_off[w + 1]):
                c = kids[t]
                _var_reversals(c, offsets, m_type, m_u, m_delta, r_row, r_delta)
                _var_bound(c, chosen, offsets, par_offsets, par_flat, m_type, m_u, m_delta,
                           r_row, r_delta, bound)
        for w in (v, u):  # u gained or lost the child v
            _var_bound(w, chosen, offsets, par_offsets, par_flat, m_type, m_u, m_delta,
                       r_row, r_delta, bound)
        fstate[0] += d
        h = state[0]
        tabu[h, 0] = u
        tabu[h, 1] = v
        state[0] = (h + 1) % tabu_len
        state[1] = min(state[1] + 1, tabu_len)
        if fstate[0] > fstate[1] + EPS:
            fstate[1] = fstate[0]
            best_chosen[:] = chosen
            state[2] = 0
        else:
            state[2] += 1
            if state[2] >= max_no_improve:
                return 1
    return 0


@nb.njit(cache=True, nogil=True)
def perturb(chosen, offsets, par_offsets, par_flat, uniforms):
    """Random restarts: for each pair of uniforms, give a random variable a random cached
    set that keeps the graph acyclic (skipped when it would not)."""
    n = chosen.shape[0]
    kid_off = np.empty(n + 1, dtype=np.int64)
    kids = np.empty(par_flat.shape[0] + 1, dtype=np.int64)
    seen = np.empty(n, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    for r in range(uniforms.shape[0] // 2):
        v = min(n - 1, int(uniforms[2 * r] * n))
        cnt = offsets[v + 1] - offsets[v]
        j = offsets[v] + min(cnt - 1, int(uniforms[2 * r + 1] * cnt))
        _children(chosen, par_offsets, par_flat, kid_off, kids)
        ok = True
        for t in range(par_offsets[j], par_offsets[j + 1]):
            if _reaches(v, par_flat[t], kid_off, kids, seen, stack):
                ok = False
                break
        if ok:
            chosen[v] = j
