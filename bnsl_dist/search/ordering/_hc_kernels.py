"""Numba kernels of greedy hill climbing with a tabu list, on a parent-set cache.

Moves change one arc: add u->v, remove u->v, reverse u->v. A move is a move only when
every family it produces is a cached set (the cache is the search space); acyclicity
is checked by depth-first search over the current children lists, lazily, for the
best-scoring candidates first. Inputs validated by the driver; see ``_kernels.py`` for
the cache layout.

``state`` (int64, IN/OUT) = [tabu head, tabu count, steps without a new best];
``fstate`` (float64, IN/OUT) = [current score, best score of this climb];
``tabu`` (L, 2) holds the unordered variable pairs of the last L moves.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bnsl_dist.search.ordering._kernels import EPS

ADD, REMOVE, REVERSE = 0, 1, 2


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
def _reaches(src, dst, skip_u, skip_v, kid_off, kids, seen, stack):
    """Is dst reachable from src along children arcs, not using the arc skip_u->skip_v?"""
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
            if x == skip_u and c == skip_v:
                continue
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
def _moves(chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u, m_v, m_row,
           m_row2, m_delta, add_lo, add_hi):
    """All cached single-arc moves (acyclicity unchecked); returns their number."""
    n = chosen.shape[0]
    m = 0
    for v in range(n):
        cur = chosen[v]
        size = par_offsets[cur + 1] - par_offsets[cur]
        for t in range(par_offsets[cur], par_offsets[cur + 1]):
            mark[par_flat[t]] = v + 1
        add_lo[v] = m
        for j in range(offsets[v], offsets[v + 1]):
            sj = par_offsets[j + 1] - par_offsets[j]
            if sj == size + 1:
                inside = 0
                u = -1
                for t in range(par_offsets[j], par_offsets[j + 1]):
                    if mark[par_flat[t]] == v + 1:
                        inside += 1
                    else:
                        u = par_flat[t]
                if inside == size:
                    m_type[m] = ADD
                    m_u[m] = u
                    m_v[m] = v
                    m_row[m] = j
                    m_delta[m] = scores[j] - scores[cur]
                    m += 1
        add_hi[v] = m
        for t in range(par_offsets[cur], par_offsets[cur + 1]):
            mark[par_flat[t]] = 0
    # removals (need all marks again) and reversals (need the add lists)
    for v in range(n):
        cur = chosen[v]
        size = par_offsets[cur + 1] - par_offsets[cur]
        if size == 0:
            continue
        psum = 0
        for t in range(par_offsets[cur], par_offsets[cur + 1]):
            mark[par_flat[t]] = v + 1
            psum += par_flat[t]
        for j in range(offsets[v], offsets[v + 1]):
            sj = par_offsets[j + 1] - par_offsets[j]
            if sj == size - 1:
                ok = True
                jsum = 0
                for t in range(par_offsets[j], par_offsets[j + 1]):
                    if mark[par_flat[t]] != v + 1:
                        ok = False
                        break
                    jsum += par_flat[t]
                if ok:
                    u = psum - jsum
                    d = scores[j] - scores[cur]
                    m_type[m] = REMOVE
                    m_u[m] = u
                    m_v[m] = v
                    m_row[m] = j
                    m_delta[m] = d
                    m += 1
                    # reverse: u gains v, if that set is cached
                    for k in range(add_lo[u], add_hi[u]):
                        if m_u[k] == v:
                            m_type[m] = REVERSE
                            m_u[m] = u
                            m_v[m] = v
                            m_row[m] = j
                            m_row2[m] = m_row[k]
                            m_delta[m] = d + m_delta[k]
                            m += 1
                            break
        for t in range(par_offsets[cur], par_offsets[cur + 1]):
            mark[par_flat[t]] = 0
    return m


@nb.njit(cache=True, nogil=True)
def hc_steps(chosen, best_chosen, offsets, par_offsets, par_flat, scores, tabu, state, fstate,
             max_no_improve, max_steps):
    """Up to ``max_steps`` tabu hill-climbing steps; returns 1 when the climb is over
    (no admissible move, or ``max_no_improve`` steps without a new best), else 0."""
    n = chosen.shape[0]
    n_rows = offsets[n]
    cap = 2 * n_rows + 1
    m_type = np.empty(cap, dtype=np.int64)
    m_u = np.empty(cap, dtype=np.int64)
    m_v = np.empty(cap, dtype=np.int64)
    m_row = np.empty(cap, dtype=np.int64)
    m_row2 = np.empty(cap, dtype=np.int64)
    m_delta = np.empty(cap, dtype=np.float64)
    add_lo = np.zeros(n, dtype=np.int64)
    add_hi = np.zeros(n, dtype=np.int64)
    mark = np.zeros(n, dtype=np.int64)
    kid_off = np.empty(n + 1, dtype=np.int64)
    kids = np.empty(par_flat.shape[0] + 1, dtype=np.int64)
    seen = np.empty(n, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    tabu_len = tabu.shape[0]
    for _ in range(max_steps):
        m = _moves(chosen, offsets, par_offsets, par_flat, scores, mark, m_type, m_u, m_v,
                   m_row, m_row2, m_delta, add_lo, add_hi)
        _children(chosen, par_offsets, par_flat, kid_off, kids)
        idx = np.argsort(-m_delta[:m], kind="mergesort")
        pick = -1
        for r in range(m):
            k = idx[r]
            u = m_u[k]
            v = m_v[k]
            if _is_tabu(tabu, state[1], u, v):
                continue
            t = m_type[k]
            if t == ADD:
                if _reaches(v, u, -1, -1, kid_off, kids, seen, stack):
                    continue
            elif t == REVERSE:
                if _reaches(u, v, u, v, kid_off, kids, seen, stack):
                    continue
            pick = k
            break
        if pick < 0:
            return 1
        t = m_type[pick]
        u = m_u[pick]
        v = m_v[pick]
        chosen[v] = m_row[pick]
        if t == REVERSE:
            chosen[u] = m_row2[pick]
        fstate[0] += m_delta[pick]
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
            if _reaches(v, par_flat[t], -1, -1, kid_off, kids, seen, stack):
                ok = False
                break
        if ok:
            chosen[v] = j
