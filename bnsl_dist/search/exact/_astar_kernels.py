"""Numba kernels of the order-graph search (inputs validated by the drivers in astar.py).

One *subproblem* has ``m <= 63`` local variables; a node of its order graph is a uint64
bitmask ``U`` of the variables already placed. Arrays describing a subproblem:

``set_off`` (m+1), ``set_mask``, ``set_cost``
    Per local variable x, rows ``set_off[x]:set_off[x+1]`` are its parent sets as local
    bitmasks (members outside the subproblem are always available and dropped), with
    *reduced* costs (best cost of x subtracted, so >= 0), sorted by cost ascending.
    BestScore(x, U) is the first row whose mask lies inside U.
``par`` / ``chi`` (m)
    Local parent-relation graph: bitmask of x's potential parents / children.
``var_group``, ``var_bit``, ``goff``, ``pdb``
    Additive pattern databases: variable x is bit ``var_bit[x]`` of group
    ``var_group[x]``; the heuristic of the remaining set R is
    ``sum_k pdb[goff[k] + index_k(R)]``. The simple heuristic is one singleton group per
    variable.

Search state: an open-addressing hash table (``keys``, ``gval``, ``last``, ``flag``)
keyed by node bitmask, a binary heap of (primary, secondary, key, g) entries with lazy
deletion, a list of suspended (frozen) nodes for AWA*, and ``ctr``, an int64 counter
array (layout ``C_*`` below) updated in place.
"""

from __future__ import annotations

import numba as nb
import numpy as np

EMPTY_KEY = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_K1 = np.uint64(0x5555555555555555)
_K2 = np.uint64(0x3333333333333333)
_K4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_KF = np.uint64(0x0101010101010101)
_H0 = np.uint64(0x9E3779B97F4A7C15)
_H1 = np.uint64(0xBF58476D1CE4E5B9)
_H2 = np.uint64(0x94D049BB133111EB)

# node flags
OPEN = 0
CLOSED = 1
SUSPENDED = 2

# kernel status
ST_GOAL = 0
ST_CHUNK = 1
ST_GROW = 2
ST_EMPTY = 3

# search modes: priority (f, -depth) for A*/AWA*, (depth, f) for BFBnB
MODE_BEST_FIRST = 0
MODE_BREADTH_FIRST = 1

# counter layout
C_ENTRIES = 0
C_HEAP = 1
C_SUSP = 2
C_EXPANDED = 3
C_GENERATED = 4
C_LEVEL = 5
C_GOAL_SLOT = 6
C_FROZEN = 7
N_COUNTERS = 8


@nb.njit(cache=True, nogil=True, inline="always")
def popcount(x):
    x = x - ((x >> _ONE) & _K1)
    x = (x & _K2) + ((x >> np.uint64(2)) & _K2)
    x = (x + (x >> np.uint64(4))) & _K4
    return np.int64((x * _KF) >> np.uint64(56))


@nb.njit(cache=True, nogil=True, inline="always")
def ctz(x):
    """Index of the lowest set bit of a non-zero uint64."""
    return popcount((x & (~x + _ONE)) - _ONE)


@nb.njit(cache=True, nogil=True, inline="always")
def _hash(key):
    z = key + _H0
    z = (z ^ (z >> np.uint64(30))) * _H1
    z = (z ^ (z >> np.uint64(27))) * _H2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True)
def tab_find(keys, key):
    """Slot of ``key`` in the table, -1 if absent."""
    mask = np.uint64(len(keys) - 1)
    i = np.int64(_hash(key) & mask)
    while True:
        k = keys[i]
        if k == key:
            return i
        if k == EMPTY_KEY:
            return -1
        i = (i + 1) & (len(keys) - 1)


@nb.njit(cache=True, nogil=True, inline="always")
def _tab_slot(keys, key):
    """(slot, found): the slot holding ``key`` or the empty slot where it goes."""
    mask = np.uint64(len(keys) - 1)
    i = np.int64(_hash(key) & mask)
    while True:
        k = keys[i]
        if k == key:
            return i, True
        if k == EMPTY_KEY:
            return i, False
        i = (i + 1) & (len(keys) - 1)


@nb.njit(cache=True, nogil=True)
def tab_insert(keys, key):
    """Slot of ``key``, inserted if absent (the caller keeps the load below one half)."""
    i, _ = _tab_slot(keys, key)
    keys[i] = key
    return i


@nb.njit(cache=True, nogil=True)
def rehash(keys, gval, last, flag, nkeys, ngval, nlast, nflag):  # IN old table; OUT new one
    for i in range(len(keys)):
        k = keys[i]
        if k != EMPTY_KEY:
            j, _ = _tab_slot(nkeys, k)
            nkeys[j] = k
            ngval[j] = gval[i]
            nlast[j] = last[i]
            nflag[j] = flag[i]


@nb.njit(cache=True, nogil=True, inline="always")
def _f2i(f):
    """Bits of a float >= 0 as an int64: the same order as the floats."""
    if f <= 0.0:
        f = 0.0  # also turns -0.0 into +0.0
    return np.int64(np.float64(f).view(np.int64))


@nb.njit(cache=True, nogil=True, inline="always")
def _i2f(i):
    return np.int64(i).view(np.float64)


@nb.njit(cache=True, nogil=True, inline="always")
def _less(heap, i, j):
    if heap[i, 0] != heap[j, 0]:
        return heap[i, 0] < heap[j, 0]
    if heap[i, 1] != heap[j, 1]:
        return heap[i, 1] < heap[j, 1]
    return heap[i, 2] < heap[j, 2]


@nb.njit(cache=True, nogil=True, inline="always")
def _swap(heap, i, j):
    for c in range(4):
        t = heap[i, c]
        heap[i, c] = heap[j, c]
        heap[j, c] = t


@nb.njit(cache=True, nogil=True)
def heap_push(heap, ctr, prim, sec, key, g):
    """Push an entry (prim, sec: int64 sort keys; key: node; g: its cost then)."""
    i = ctr[C_HEAP]
    ctr[C_HEAP] = i + 1
    heap[i, 0] = prim
    heap[i, 1] = sec
    heap[i, 2] = np.int64(key)
    heap[i, 3] = np.float64(g).view(np.int64)
    while i > 0:
        parent = (i - 1) >> 1
        if _less(heap, i, parent):
            _swap(heap, i, parent)
            i = parent
        else:
            break


@nb.njit(cache=True, nogil=True)
def heap_pop(heap, ctr):
    """Remove the top entry; returns (key, g)."""
    key = np.uint64(heap[0, 2])
    g = _i2f(heap[0, 3])
    n = ctr[C_HEAP] - 1
    ctr[C_HEAP] = n
    if n > 0:
        for c in range(4):
            heap[0, c] = heap[n, c]
        i = 0
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            c = left
            if left + 1 < n and _less(heap, left + 1, left):
                c = left + 1
            if _less(heap, c, i):
                _swap(heap, c, i)
                i = c
            else:
                break
    return key, g


@nb.njit(cache=True, nogil=True, inline="always")
def push_node(heap, ctr, mode, m, depth, f, key, g):
    """Best-first: order (f, deeper first, key); breadth-first: (depth, f, key)."""
    if mode == MODE_BEST_FIRST:
        heap_push(heap, ctr, _f2i(f), np.int64(m - depth), key, g)
    else:
        heap_push(heap, ctr, np.int64(depth), _f2i(f), key, g)


@nb.njit(cache=True, nogil=True, inline="always")
def _entry_f(heap, i, mode):
    return _i2f(heap[i, 0]) if mode == MODE_BEST_FIRST else _i2f(heap[i, 1])


@nb.njit(cache=True, nogil=True)
def _valid(heap, i, keys, gval, flag):
    slot = tab_find(keys, np.uint64(heap[i, 2]))
    return flag[slot] == OPEN and _i2f(heap[i, 3]) <= gval[slot]


@nb.njit(cache=True, nogil=True)
def drop_stale(heap, keys, gval, flag, ctr):
    """Pop stale entries off the top; the top is then the best open node (if any)."""
    while ctr[C_HEAP] > 0 and not _valid(heap, 0, keys, gval, flag):
        heap_pop(heap, ctr)


@nb.njit(cache=True, nogil=True)
def best_cost(x, u, set_off, set_mask, set_cost):
    """(reduced cost, row) of BestScore(x, U): x's best set inside U."""
    for j in range(set_off[x], set_off[x + 1]):
        if set_mask[j] & ~u == _ZERO:
            return set_cost[j], j
    return np.inf, -1


@nb.njit(cache=True, nogil=True)
def _closure(v, r, adj):
    """Vertices of R reachable from v (v included) following ``adj`` masks."""
    reach = _ONE << np.uint64(v)
    front = reach
    while front != _ZERO:
        x = ctz(front)
        front &= front - _ONE
        new = adj[x] & r & ~reach
        reach |= new
        front |= new
    return reach


@nb.njit(cache=True, nogil=True)
def source_scc(r, par, chi):
    """A source strongly connected component of the parent relation graph induced on R.

    Starts at R's lowest variable and walks to ancestors outside its component until
    the component of the current variable contains all of its ancestors.
    """
    v = ctz(r)
    while True:
        anc = _closure(v, r, par)
        desc = _closure(v, r, chi)
        out = anc & ~desc
        if out == _ZERO:
            return anc
        v = ctz(out)


@nb.njit(cache=True, nogil=True)
def heuristic_value(r, var_group, var_bit, goff, pdb, idx):  # OUT idx: group indices of R
    """h(R) = sum over groups of the pattern cost of R's members in that group."""
    for k in range(len(idx)):
        idx[k] = 0
    rr = r
    while rr != _ZERO:
        x = ctz(rr)
        rr &= rr - _ONE
        idx[var_group[x]] |= np.int64(1) << var_bit[x]
    h = 0.0
    for k in range(len(idx)):
        h += pdb[goff[k] + idx[k]]
    return h


@nb.njit(cache=True, nogil=True)
def build_pdb(members, set_off, set_mask, set_cost, out):  # OUT out (2**len(members))
    """Static pattern database of one group (Yuan & Malone 2012).

    ``out[S]`` = least cost of placing the group members in S (a subset, as a bit index
    over ``members``) when every variable outside S may be a parent:
    out[S] = min over X in S of out[S - X] + BestScore(X, V - S).
    BestScore(X, V - S) only depends on which group members a set contains, so each
    member's sets are first projected onto the group and projected-dominated ones
    dropped (a better set with a subset projection always fits first).
    """
    s = len(members)
    pos = np.full(len(set_off) - 1, -1, dtype=np.int64)
    for j in range(s):
        pos[members[j]] = j
    n_rows = 0
    for j in range(s):
        n_rows += set_off[members[j] + 1] - set_off[members[j]]
    proj = np.empty(n_rows, dtype=np.int64)
    pcost = np.empty(n_rows, dtype=np.float64)
    poff = np.zeros(s + 1, dtype=np.int64)
    for j in range(s):
        x = members[j]
        start = poff[j]
        n = 0
        for r in range(set_off[x], set_off[x + 1]):
            pm = np.int64(0)
            mk = set_mask[r]
            while mk != _ZERO:
                b = ctz(mk)
                mk &= mk - _ONE
                if pos[b] >= 0:
                    pm |= np.int64(1) << pos[b]
            dominated = False
            for t in range(start, start + n):
                if proj[t] & ~pm == 0:
                    dominated = True
                    break
            if not dominated:
                proj[start + n] = pm
                pcost[start + n] = set_cost[r]
                n += 1
                if pm == 0:
                    break  # fits everywhere: nothing after it is ever chosen
        poff[j + 1] = start + n
    out[0] = 0.0
    for sub in range(1, 1 << s):
        best = np.inf
        for j in range(s):
            if (sub >> j) & 1:
                c = np.inf
                for t in range(poff[j], poff[j + 1]):
                    if proj[t] & sub == 0:
                        c = pcost[t]
                        break
                val = out[sub ^ (1 << j)] + c
                if val < best:
                    best = val
        out[sub] = best


@nb.njit(cache=True, nogil=True)
def search_chunk(full, set_off, set_mask, set_cost, par, chi, recursive,
                 var_group, var_bit, goff, pdb,
                 keys, gval, last, flag, heap, susp, ctr,
                 mode, window, ub, tol, max_exp, max_load):
    """Expand up to ``max_exp`` nodes of the order graph.

    Best-first on (f, -depth) or breadth-first on (depth, f) by ``mode``; with a finite
    ``window`` (AWA*), a node whose depth is at most the deepest expanded layer minus
    the window is suspended instead; nodes with f >= ub - tol are pruned. Returns a
    status ST_*: the goal was popped (its slot in ``ctr[C_GOAL_SLOT]``), the chunk is
    done, the table/heap/suspend list needs to grow, or the heap is empty.
    """
    m = len(par)
    n_groups = len(goff)
    idx = np.empty(n_groups, dtype=np.int64)
    hcap = heap.shape[0]
    scap = len(susp)
    limit = ub - tol
    n_done = 0
    while True:
        if ctr[C_HEAP] == 0:
            return ST_EMPTY
        if n_done >= max_exp:
            return ST_CHUNK
        if ctr[C_ENTRIES] + m > max_load or ctr[C_HEAP] + m > hcap or ctr[C_SUSP] + 1 > scap:
            return ST_GROW
        key, gk = heap_pop(heap, ctr)
        slot = tab_find(keys, key)
        if flag[slot] != OPEN or gk > gval[slot]:
            continue  # stale entry
        g = gval[slot]
        if key == full:
            flag[slot] = CLOSED
            ctr[C_GOAL_SLOT] = slot
            return ST_GOAL
        depth = popcount(key)
        if depth <= ctr[C_LEVEL] - window:
            flag[slot] = SUSPENDED
            susp[ctr[C_SUSP]] = key
            ctr[C_SUSP] += 1
            ctr[C_FROZEN] += 1
            continue
        r = full & ~key
        h = heuristic_value(r, var_group, var_bit, goff, pdb, idx)
        flag[slot] = CLOSED
        if g + h >= limit:
            continue  # pruned by the upper bound found since it was pushed
        ctr[C_EXPANDED] += 1
        n_done += 1
        if depth > ctr[C_LEVEL]:
            ctr[C_LEVEL] = depth
        succ = source_scc(r, par, chi) if recursive else r
        while succ != _ZERO:
            x = ctz(succ)
            succ &= succ - _ONE
            c, _ = best_cost(x, key, set_off, set_mask, set_cost)
            ng = g + c
            k = var_group[x]
            b = np.int64(1) << var_bit[x]
            nh = h - pdb[goff[k] + idx[k]] + pdb[goff[k] + (idx[k] ^ b)]
            nf = ng + nh
            ctr[C_GENERATED] += 1
            if nf >= limit:
                continue
            nkey = key | (_ONE << np.uint64(x))
            s2, found = _tab_slot(keys, nkey)
            if not found:
                keys[s2] = nkey
                ctr[C_ENTRIES] += 1
            elif not ng < gval[s2] - tol:
                continue
            gval[s2] = ng
            last[s2] = x
            flag[s2] = OPEN
            push_node(heap, ctr, mode, m, depth + 1, nf, nkey, ng)


@nb.njit(cache=True, nogil=True)
def restore_suspended(full, var_group, var_bit, goff, pdb, keys, gval, flag,
                      heap, susp, ctr, mode):
    """Put every still-suspended node back on the heap (start of an AWA* iteration)."""
    idx = np.empty(len(goff), dtype=np.int64)
    for i in range(ctr[C_SUSP]):
        key = susp[i]
        slot = tab_find(keys, key)
        if flag[slot] != SUSPENDED:
            continue
        flag[slot] = OPEN
        g = gval[slot]
        f = g + heuristic_value(full & ~key, var_group, var_bit, goff, pdb, idx)
        push_node(heap, ctr, mode, len(var_group), popcount(key), f, key, g)
    ctr[C_SUSP] = 0


@nb.njit(cache=True, nogil=True)
def frontier_min_f(full, var_group, var_bit, goff, pdb, keys, gval, flag, heap, susp, ctr,
                   mode):
    """Least f over the open and suspended nodes (+inf when there are none)."""
    best = np.inf
    if mode == MODE_BEST_FIRST:
        drop_stale(heap, keys, gval, flag, ctr)
        if ctr[C_HEAP] > 0:
            best = _entry_f(heap, 0, mode)
    else:
        for i in range(ctr[C_HEAP]):
            if _valid(heap, i, keys, gval, flag):
                f = _entry_f(heap, i, mode)
                if f < best:
                    best = f
    idx = np.empty(len(goff), dtype=np.int64)
    for i in range(ctr[C_SUSP]):
        slot = tab_find(keys, susp[i])
        if flag[slot] == SUSPENDED:
            f = gval[slot] + heuristic_value(full & ~susp[i], var_group, var_bit, goff, pdb, idx)
            if f < best:
                best = f
    return best


@nb.njit(cache=True, nogil=True)
def trace_order(keys, last, key, out):  # OUT out[:popcount(key)]: variables in order added
    """The order in which the stored path to node ``key`` added its variables."""
    d = popcount(key)
    while key != _ZERO:
        slot = tab_find(keys, key)
        x = last[slot]
        d -= 1
        out[d] = x
        key ^= _ONE << np.uint64(x)


@nb.njit(cache=True, nogil=True)
def greedy_complete(key, full, set_off, set_mask, set_cost, par, chi, recursive,
                    var_group, var_bit, goff, pdb, out, pos):  # OUT out[pos:]
    """Extend node ``key`` to the goal, each step adding the successor of least f.

    Returns the cost of the added arcs (the AWA* iteration with window 0 does the same).
    """
    idx = np.empty(len(goff), dtype=np.int64)
    total = 0.0
    while key != full:
        r = full & ~key
        h = heuristic_value(r, var_group, var_bit, goff, pdb, idx)
        succ = source_scc(r, par, chi) if recursive else r
        best_f = np.inf
        best_x = -1
        best_c = 0.0
        while succ != _ZERO:
            x = ctz(succ)
            succ &= succ - _ONE
            c, _ = best_cost(x, key, set_off, set_mask, set_cost)
            k = var_group[x]
            b = np.int64(1) << var_bit[x]
            f = c + h - pdb[goff[k] + idx[k]] + pdb[goff[k] + (idx[k] ^ b)]
            if f < best_f:
                best_f = f
                best_x = x
                best_c = c
        out[pos] = best_x
        pos += 1
        total += best_c
        key |= _ONE << np.uint64(best_x)
    return total


@nb.njit(cache=True, nogil=True)
def path_cost(order, set_off, set_mask, set_cost):
    """Cost of adding the local variables in ``order`` one after another."""
    key = _ZERO
    total = 0.0
    for x in order:
        c, _ = best_cost(x, key, set_off, set_mask, set_cost)
        total += c
        key |= _ONE << np.uint64(x)
    return total


@nb.njit(cache=True, nogil=True)
def local_masks(par_offsets, par_flat, lo, hi, local_pos, masks, valid):  # OUT masks, valid
    """Local bitmask of each global set lo..hi-1; ``local_pos[v]`` is v's bit, -1 when v is
    always available (placed before the subproblem), -2 when v is not available."""
    for i in range(lo, hi):
        mk = _ZERO
        ok = True
        for t in range(par_offsets[i], par_offsets[i + 1]):
            p = local_pos[par_flat[t]]
            if p >= 0:
                mk |= _ONE << np.uint64(p)
            elif p == -2:
                ok = False
        masks[i - lo] = mk
        valid[i - lo] = ok


@nb.njit(cache=True, nogil=True)
def undominated(masks, keep):  # IN masks in best-first order; OUT keep
    """keep[i] = no earlier kept mask is a subset of masks[i] (a better subset exists)."""
    kept = np.empty(len(masks), dtype=np.uint64)
    nk = 0
    for i in range(len(masks)):
        mk = masks[i]
        ok = True
        for j in range(nk):
            if kept[j] & ~mk == _ZERO:
                ok = False
                break
        keep[i] = ok
        if ok:
            kept[nk] = mk
            nk += 1
