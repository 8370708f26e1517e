"""Numba kernels of parent-set exploration (inputs validated by the drivers).

Independence selection keeps its state in caller-allocated arrays:

* the **closed store**: every exactly scored set, as a chain ``(gen, add)`` (the set is
  closed set ``gen`` plus variable ``add``; id 0 is ∅, ids 1..n-1 the singletons),
  with its size, 64-bit Zobrist hash, q (product of arities), exact score and BIC,
  and a hash map from set hash to closed id;
* the **open list**, kept lazily: the children P ∪ {Y} of a closed set P are not pushed
  one by one. Their priority BIC*(P,{Y}) = [BIC(P) + pen (q(P) − 1) − BIC(∅)] + BIC(Y)
  − pen r_Y (q(P) − 1) (pen = (ln N/2)(r_X − 1)) is, among candidates Y of one arity
  r_Y, increasing in BIC(Y). So each arity class of candidates is sorted once by
  BIC(Y), each closed P keeps one pointer per class, and a binary heap holds one
  entry per P: its best unexpanded child. Pops cost O(log #closed), not O(C log #open).

This is the eager algorithm of docs/ALGORITHMS.md §3 exactly: a child reaches the heap in
the order (priority desc, then push order) that eager pushing would give it, and a
popped child is scored only if its *owner* is the current generator — the generator
that would have pushed it first (lowest (generator rank, candidate position); a
generator G' of S = G' ∪ {u} pushes S unless the BIC bound proves S dominated). So a
set is scored once, with the priority of the first generator that pushed it. (Sets
are identified by Zobrist hashes; a collision, about 2^-64 per pair of sets, could only
change the search order. Dominance pruning verifies members, so it is exact.)

References
----------
Scanagatta, de Campos, Corani, Zaffalon. Learning Bayesian networks with thousands of
variables. NIPS 2015, §3 (independence selection, BIC*).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from bnsl_dist.scores._kernels import (
    PAIR_CELLS,
    config_ids,
    pair_table,
    score_from_ids,
    score_from_table,
)

# Status codes returned by is_search.
ST_CHUNK = 0  # scored max_pops sets
ST_EMPTY = 1  # the open list is empty
ST_GROW = 2  # the closed store is full

# Indices of the int64 ``state`` array shared with the driver.
S_CLOSED = 0
S_HEAP = 1
S_POPS = 2
S_TRIMS = 3
S_REUSED = 4
S_SKIPPED = 5
S_DOMINATED = 6
N_STATE = 7

_RADIX_LIMIT = 1 << 40
_GOLDEN = 0x9E3779B97F4A7C15


@nb.njit(cache=True, nogil=True)
def zobrist_keys(n, seed):
    """n pseudo-random non-zero uint64 keys (splitmix64), the same on every machine."""
    out = np.empty(n, dtype=np.uint64)
    x = np.uint64(seed)
    for i in range(n):
        x += np.uint64(_GOLDEN)
        z = x
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        if z == np.uint64(0):
            z = np.uint64(1)
        out[i] = z
    return out


# ---------------------------------------------------------------------- closed map
@nb.njit(cache=True, nogil=True, inline="always")
def _slot(key, mask):
    return np.int64((key * np.uint64(_GOLDEN)) >> np.uint64(20)) & mask


@nb.njit(cache=True, nogil=True)
def map_put(table, c_hash, cid):
    """Insert closed id ``cid`` under its hash (table: int64, -1 = empty). IN/OUT table."""
    mask = table.shape[0] - 1
    i = _slot(c_hash[cid], mask)
    while table[i] >= 0:
        i = (i + 1) & mask
    table[i] = cid


@nb.njit(cache=True, nogil=True)
def map_get(table, c_hash, key):
    """Closed id of the set with hash ``key``, or -1."""
    mask = table.shape[0] - 1
    i = _slot(key, mask)
    while True:
        c = table[i]
        if c < 0:
            return np.int64(-1)
        if c_hash[c] == key:
            return c
        i = (i + 1) & mask


@nb.njit(cache=True, nogil=True)
def map_rebuild(table, c_hash, n_closed):
    for i in range(table.shape[0]):
        table[i] = -1
    for c in range(n_closed):
        map_put(table, c_hash, c)


# ---------------------------------------------------------------------- heap
@nb.njit(cache=True, nogil=True, inline="always")
def _better(pa, ra, qa, pb, rb, qb):
    """Order of the open list: priority desc, then generator rank, then candidate pos."""
    if pa != pb:
        return pa > pb
    if ra != rb:
        return ra < rb
    return qa < qb


@nb.njit(cache=True, nogil=True)
def _sift_down(h_prio, h_rank, h_pos, h_gen, size, i):
    p, r, q, g = h_prio[i], h_rank[i], h_pos[i], h_gen[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _better(h_prio[c + 1], h_rank[c + 1], h_pos[c + 1],
                                    h_prio[c], h_rank[c], h_pos[c]):
            c += 1
        if not _better(h_prio[c], h_rank[c], h_pos[c], p, r, q):
            break
        h_prio[i], h_rank[i], h_pos[i], h_gen[i] = h_prio[c], h_rank[c], h_pos[c], h_gen[c]
        i = c
    h_prio[i], h_rank[i], h_pos[i], h_gen[i] = p, r, q, g


@nb.njit(cache=True, nogil=True)
def heap_push(h_prio, h_rank, h_pos, h_gen, size, p, r, q, g):
    """Push an entry (capacity checked by the caller); returns the new size."""
    i = size
    while i > 0:
        par = (i - 1) >> 1
        if not _better(p, r, q, h_prio[par], h_rank[par], h_pos[par]):
            break
        h_prio[i], h_rank[i], h_pos[i], h_gen[i] = (h_prio[par], h_rank[par], h_pos[par],
                                                    h_gen[par])
        i = par
    h_prio[i], h_rank[i], h_pos[i], h_gen[i] = p, r, q, g
    return size + 1


@nb.njit(cache=True, nogil=True)
def heap_pop(h_prio, h_rank, h_pos, h_gen, size):
    """Remove the top entry (read it first); returns the new size."""
    size -= 1
    if size > 0:
        h_prio[0], h_rank[0], h_pos[0], h_gen[0] = (h_prio[size], h_rank[size], h_pos[size],
                                                    h_gen[size])
        _sift_down(h_prio, h_rank, h_pos, h_gen, size, 0)
    return size


@nb.njit(cache=True, nogil=True)
def heap_trim(h_prio, h_rank, h_pos, h_gen, size, keep, c_dead):
    """Keep the ``keep`` best entries; their dropped generators are marked dead."""
    if size <= keep:
        return size
    order = np.argsort(h_pos[:size], kind="mergesort")
    order = order[np.argsort(h_rank[:size][order], kind="mergesort")]
    neg = -h_prio[:size]
    order = order[np.argsort(neg[order], kind="mergesort")]
    for t in range(keep, size):
        c_dead[h_gen[order[t]]] = True
    kp = h_prio[order[:keep]].copy()
    kr = h_rank[order[:keep]].copy()
    kq = h_pos[order[:keep]].copy()
    kg = h_gen[order[:keep]].copy()
    for t in range(keep):  # sorted best first: already a heap
        h_prio[t], h_rank[t], h_pos[t], h_gen[t] = kp[t], kr[t], kq[t], kg[t]
    return keep


# ---------------------------------------------------------------------- scoring
@nb.njit(cache=True, nogil=True)
def members_of(c_gen, c_add, cid, out):
    """Write the members of closed set ``cid`` into ``out``; return their number."""
    k = 0
    while cid > 0:
        out[k] = c_add[cid]
        k += 1
        cid = c_gen[cid]
    return k


@nb.njit(cache=True, nogil=True)
def score_closed_basics(codes, arities, child, kind, ess, log_n, nlogn, others, z,
                        c_gen, c_add, c_size, c_hash, c_q, c_score, c_bic, ids, tmp, counts,
                        bits, offs, sizes):
    """Score the empty set (closed id 0) and every singleton of ``others`` (ids 1..).

    A singleton whose table has at most
    :data:`~bnsl_dist.scores._kernels.PAIR_CELLS` inner cells, both variables
    having state bitsets (``bits``, ``offs``, ``sizes`` of
    :func:`~bnsl_dist.scores._kernels.state_bitsets`; ``offs`` -1 where not), is counted
    by :func:`~bnsl_dist.scores._kernels.pair_table`: the same table, ~(r_x - 1)(r_y - 1)
    N / 64 word operations instead of N row visits; either way it is scored by the same
    :func:`~bnsl_dist.scores._kernels.score_from_table`, so the scores are identical."""
    x = codes[:, child]
    r = arities[child]
    pen = 0.5 * log_n * (r - 1)
    for t in range(codes.shape[0]):
        ids[t] = 0
    s, ll = score_from_ids(x, r, ids, 1, kind, ess, 1.0, log_n, nlogn, tmp, counts)
    c_gen[0] = -1
    c_add[0] = -1
    c_size[0] = 0
    c_hash[0] = np.uint64(0x5555555555555555)  # the empty set's key: any fixed non-zero
    c_q[0] = 1.0
    c_score[0] = s
    c_bic[0] = ll - pen
    ox = offs[child]
    for i in range(others.shape[0]):
        y = others[i]
        qf = float(arities[y])
        ry = arities[y]
        if ox >= 0 and offs[y] >= 0 and (r - 1) * (ry - 1) <= PAIR_CELLS:
            pair_table(bits, sizes, ox, r, offs[y], ry, counts)
            s, ll = score_from_table(counts, ry, r, kind, ess, qf, log_n, nlogn)
        else:
            col = codes[:, y]
            for t in range(codes.shape[0]):
                ids[t] = np.int64(col[t])
            s, ll = score_from_ids(x, r, ids, ry, kind, ess, qf, log_n, nlogn, tmp, counts)
        c = i + 1
        c_gen[c] = 0
        c_add[c] = y
        c_size[c] = 1
        c_hash[c] = c_hash[0] ^ z[y]
        c_q[c] = qf
        c_score[c] = s
        c_bic[c] = ll - pen * qf
    return others.shape[0] + 1


# ---------------------------------------------------------------------- lazy search
@nb.njit(cache=True, nogil=True)
def _rank(c_size, c_add, pos_of, g):
    """Push order of generator g: singletons by candidate position, then pop order."""
    if c_size[g] == 1:
        return pos_of[c_add[g]]
    return g


@nb.njit(cache=True, nogil=True)
def _head(g, c_size, c_add, c_q, c_score, c_bic, ptr, cls_off, cls_list, cls_r, cand,
          cand_cid, pos_of, mark, pen, bic0, use_bound):
    """Advance g's class pointers past invalid children; return (priority, pos) of its
    best child, pos = -1 when none is left. The members of g must be marked."""
    single = c_size[g] == 1
    own = pos_of[c_add[g]] if single else np.int64(-1)
    qg = c_q[g]
    sg = c_score[g]
    bg = c_bic[g]
    best_p = -np.inf
    best_pos = np.int64(-1)
    for c in range(cls_r.shape[0]):
        lo = cls_off[c]
        end = cls_off[c + 1] - lo
        p = np.int64(ptr[g, c])
        rc = float(cls_r[c])
        qn = qg * rc
        bound = -pen * qn
        if use_bound and bound <= sg:
            ptr[g, c] = end
            continue
        pos = np.int64(-1)
        while p < end:
            pos = cls_list[lo + p]
            if mark[cand[pos]] or (single and pos <= own) or \
                    (use_bound and bound <= c_score[cand_cid[pos]]):
                p += 1
                continue
            break
        ptr[g, c] = p
        if p >= end:
            continue
        prio = bg + c_bic[cand_cid[pos]] + pen * (qg + rc - qn - 1.0) - bic0
        if not math.isfinite(prio):
            ptr[g, c] = end
            continue
        if prio > best_p or (prio == best_p and pos < best_pos):
            best_p = prio
            best_pos = pos
    return best_p, best_pos


@nb.njit(cache=True, nogil=True)
def _owned(g, y, pos_y, hs, qs, buf, k, table, c_hash, c_size, c_add, c_score, c_dead,
           cand_cid, pos_of, z, pen, use_bound):
    """True if g is the generator that pushes S = g ∪ {y} first (eager order).

    ``buf[:k]`` holds the members of g. Another generator S \\ {u} of S pushes it if it
    is closed and alive, u is a candidate (for a singleton {w}: after w), and the
    bound does not prove S dominated by it or {u}; the first in push order wins.
    """
    if map_get(table, c_hash, hs) >= 0:
        return False  # scored already (from its owner)
    r_g = _rank(c_size, c_add, pos_of, g)
    for t in range(k):
        u = buf[t]
        pu = pos_of[u]
        if pu < 0:
            continue
        g2 = map_get(table, c_hash, hs ^ z[u])
        if g2 < 0 or c_dead[g2]:
            continue
        if c_size[g2] == 1:
            pw = pos_of[c_add[g2]]
            if pw < 0 or pu <= pw:
                continue
            r2 = pw
        else:
            r2 = g2
        if use_bound and -pen * qs <= max(c_score[g2], c_score[cand_cid[pu]]):
            continue
        if r2 < r_g or (r2 == r_g and pu < pos_y):
            return False
    return True


@nb.njit(cache=True, nogil=True)
def _open_generator(g, c_size, c_add, c_gen, c_q, c_score, c_bic, ptr, cls_off, cls_list,
                    cls_r, cand, cand_cid, pos_of, mark, buf, pen, bic0, use_bound,
                    h_prio, h_rank, h_pos, h_gen, size):
    """Start g's child iterator and push its best child; returns the new heap size."""
    for c in range(cls_r.shape[0]):
        ptr[g, c] = 0
    k = members_of(c_gen, c_add, g, buf)
    for t in range(k):
        mark[buf[t]] = True
    prio, pos = _head(g, c_size, c_add, c_q, c_score, c_bic, ptr, cls_off, cls_list, cls_r,
                      cand, cand_cid, pos_of, mark, pen, bic0, use_bound)
    for t in range(k):
        mark[buf[t]] = False
    if pos >= 0:
        size = heap_push(h_prio, h_rank, h_pos, h_gen, size, prio,
                         _rank(c_size, c_add, pos_of, g), pos, g)
    return size


@nb.njit(cache=True, nogil=True)
def is_init(cand, cand_cid, pos_of, cls_off, cls_list, cls_r, arities, child, log_n,
            use_bound, max_size, c_gen, c_add, c_size, c_q, c_score, c_bic, ptr,
            h_prio, h_rank, h_pos, h_gen, buf, mark, state):
    """Open every candidate singleton (its children are the pairs, docs/ALGORITHMS.md §3,
    step 2)."""
    if max_size < 2:
        return
    pen = 0.5 * log_n * (arities[child] - 1)
    size = state[S_HEAP]
    for i in range(cand.shape[0]):
        size = _open_generator(cand_cid[i], c_size, c_add, c_gen, c_q, c_score, c_bic, ptr,
                               cls_off, cls_list, cls_r, cand, cand_cid, pos_of, mark, buf, pen,
                               c_bic[0], use_bound, h_prio, h_rank, h_pos, h_gen, size)
    state[S_HEAP] = size


@nb.njit(cache=True, nogil=True)
def is_search(codes, arities, child, kind, ess, log_n, nlogn, cand, cand_cid, pos_of,
              cls_off, cls_list, cls_r, z, use_bound, max_size, open_keep,
              c_gen, c_add, c_size, c_hash, c_q, c_score, c_bic, c_slot, c_dead, ptr, table,
              h_prio, h_rank, h_pos, h_gen, ring, ring_radix, ring_owner,
              ids, tmp, counts, buf, mark, expand_dominated, max_pops, state):
    """Pop, score and expand up to ``max_pops`` open sets (docs/ALGORITHMS.md §3, step 3).

    With ``expand_dominated`` False, a scored set that a scored subset one member
    smaller scores at least as well is closed without pushing its children (and counts
    as no generator in :func:`_owned`). ``state`` (IN/OUT) holds the counters S_*.
    Returns a status ST_*; on ST_GROW the driver enlarges the closed store (and heap,
    ptr, table) and calls again.
    """
    x = codes[:, child]
    r = arities[child]
    n_rows = codes.shape[0]
    pen = 0.5 * log_n * (r - 1)
    bic0 = c_bic[0]
    k_ring = ring.shape[0]
    n_closed = state[S_CLOSED]
    size = state[S_HEAP]
    pops = 0
    status = ST_CHUNK
    while pops < max_pops:
        if size == 0:
            status = ST_EMPTY
            break
        if n_closed >= c_gen.shape[0] or size >= h_prio.shape[0]:
            status = ST_GROW
            break
        if size >= 2 * open_keep:
            size = heap_trim(h_prio, h_rank, h_pos, h_gen, size, open_keep, c_dead)
            state[S_TRIMS] += 1
        rank_g = h_rank[0]
        pos = h_pos[0]
        g = h_gen[0]
        size = heap_pop(h_prio, h_rank, h_pos, h_gen, size)
        y = cand[pos]
        # Move g's iterator past this child and put g back with its next child.
        k = members_of(c_gen, c_add, g, buf)
        for t in range(k):
            mark[buf[t]] = True
        c_y = 0
        ry = arities[y]
        while cls_r[c_y] != ry:
            c_y += 1
        ptr[g, c_y] += 1
        if not c_dead[g]:
            p2, pos2 = _head(g, c_size, c_add, c_q, c_score, c_bic, ptr, cls_off, cls_list,
                             cls_r, cand, cand_cid, pos_of, mark, pen, bic0, use_bound)
            if pos2 >= 0:
                size = heap_push(h_prio, h_rank, h_pos, h_gen, size, p2, rank_g, pos2, g)
        for t in range(k):
            mark[buf[t]] = False
        hs = c_hash[g] ^ z[y]
        qf = c_q[g] * ry
        if not _owned(g, y, pos, hs, qf, buf, k, table, c_hash, c_size, c_add, c_score,
                      c_dead, cand_cid, pos_of, z, pen, use_bound):
            state[S_SKIPPED] += 1
            continue
        # Score S = g ∪ {y}: configuration ids from g's cached ids when possible.
        slot = c_slot[g]
        if slot >= 0 and ring_owner[slot] == g and ring_radix[slot] * ry <= _RADIX_LIMIT:
            rg = ring_radix[slot]
            col = codes[:, y]
            src = ring[slot]
            for t in range(n_rows):
                ids[t] = src[t] + np.int64(col[t]) * rg
            radix = rg * ry
            state[S_REUSED] += 1
        else:
            buf[k] = y
            radix = config_ids(codes, buf[:k + 1], arities, ids, tmp)
        s, ll = score_from_ids(x, r, ids, radix, kind, ess, qf, log_n, nlogn, tmp, counts)
        cid = n_closed
        n_closed += 1
        c_gen[cid] = g
        c_add[cid] = y
        c_size[cid] = c_size[g] + 1
        c_hash[cid] = hs
        c_q[cid] = qf
        c_score[cid] = s
        c_bic[cid] = ll - pen * qf
        c_dead[cid] = False
        c_slot[cid] = -1
        map_put(table, c_hash, cid)
        pops += 1
        if c_size[cid] >= max_size:
            continue
        if not expand_dominated:
            dominated = c_score[g] >= s
            for t in range(k):
                if dominated:
                    break
                g2 = map_get(table, c_hash, hs ^ z[buf[t]])
                dominated = g2 >= 0 and c_score[g2] >= s
            if dominated:
                c_dead[cid] = True
                state[S_DOMINATED] += 1
                continue
        rs = cid % k_ring
        dst = ring[rs]
        for t in range(n_rows):
            dst[t] = ids[t]
        ring_radix[rs] = radix
        ring_owner[rs] = cid
        c_slot[cid] = rs
        size = _open_generator(cid, c_size, c_add, c_gen, c_q, c_score, c_bic, ptr, cls_off,
                               cls_list, cls_r, cand, cand_cid, pos_of, mark, buf, pen, bic0,
                               use_bound, h_prio, h_rank, h_pos, h_gen, size)
    state[S_CLOSED] = n_closed
    state[S_HEAP] = size
    state[S_POPS] += pops
    return status


# ---------------------------------------------------------------------- pruning
@nb.njit(cache=True, nogil=True)
def _same_set(c_gen, c_add, a, mark, size_b):
    """True if closed set ``a`` has exactly the ``size_b`` members marked in ``mark``."""
    k = 0
    while a > 0:
        if not mark[c_add[a]]:
            return False
        k += 1
        a = c_gen[a]
    return k == size_b


@nb.njit(cache=True, nogil=True)
def prune_dominated(c_gen, c_add, c_size, c_hash, c_score, n_closed, z, n_vars, keep_out):
    """Mark in ``keep_out`` (OUT bool) the closed sets no scored proper subset dominates.

    A set is dominated when a scored proper subset scores at least as well
    (docs/ALGORITHMS.md §3). Returns the number kept. Exact (members are verified).

    Closed id 0 is the empty set, a proper subset of every other: a set scoring no
    better than it is dominated without a look at its subsets, and only the rest are
    sorted and checked (on 10,000 variables nearly every singleton scores below ∅).
    """
    for i in range(n_closed):
        keep_out[i] = False
    base = c_score[0] if n_closed > 0 and c_size[0] == 0 else -np.inf
    live = np.empty(n_closed, dtype=np.int64)
    n_live = 0
    for i in range(n_closed):
        if i == 0 or c_score[i] > base:
            live[n_live] = i
            n_live += 1
    live = live[:n_live]
    # best first; among equal scores smaller sets first, then lower id
    order = live[np.argsort(c_size[live], kind="mergesort")]
    order_key = np.empty(n_live, dtype=np.float64)
    for i in range(n_live):
        order_key[i] = -c_score[order[i]]
    order = order[np.argsort(order_key, kind="mergesort")]
    cap = 1
    while cap < 2 * n_live + 2:
        cap *= 2
    table = np.full(cap, -1, dtype=np.int64)  # closed ids of kept sets, keyed by hash
    mask = cap - 1
    kept_ids = np.empty(n_closed, dtype=np.int64)
    n_kept = 0
    buf = np.empty(n_vars + 1, dtype=np.int64)
    mark = np.zeros(n_vars, dtype=np.bool_)
    sub = np.zeros(n_vars, dtype=np.bool_)
    for oi in range(n_live):
        cid = order[oi]
        k = members_of(c_gen, c_add, cid, buf)
        dominated = False
        if k > 0:
            if k <= 20 and (np.int64(1) << k) <= 4 * (n_kept + 1):
                # enumerate the proper subsets by bitmask, look them up by hash
                for m in range((np.int64(1) << k) - 1):
                    h = c_hash[0]
                    cnt = 0
                    for t in range(k):
                        if (m >> t) & 1:
                            h ^= z[buf[t]]
                            cnt += 1
                    i0 = np.int64((h * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & mask
                    while table[i0] >= 0:
                        other = table[i0]
                        if c_hash[other] == h and c_size[other] == cnt:
                            for t in range(k):
                                sub[buf[t]] = (m >> t) & 1 == 1
                            same = _same_set(c_gen, c_add, other, sub, cnt)
                            for t in range(k):
                                sub[buf[t]] = False
                            if same:
                                dominated = True
                                break
                        i0 = (i0 + 1) & mask
                    if dominated:
                        break
            else:
                for t in range(k):
                    mark[buf[t]] = True
                for j in range(n_kept):
                    other = kept_ids[j]
                    if c_size[other] >= k:
                        continue
                    o = other
                    inside = True
                    while o > 0:
                        if not mark[c_add[o]]:
                            inside = False
                            break
                        o = c_gen[o]
                    if inside:
                        dominated = True
                        break
                for t in range(k):
                    mark[buf[t]] = False
        if not dominated:
            keep_out[cid] = True
            kept_ids[n_kept] = cid
            n_kept += 1
            i0 = np.int64((c_hash[cid] * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & mask
            while table[i0] >= 0:
                i0 = (i0 + 1) & mask
            table[i0] = cid
    return n_kept


@nb.njit(cache=True, nogil=True)
def flatten_sets(c_gen, c_add, ids_in, sizes_out, flat_out):
    """Members (sorted ascending) of the closed sets ``ids_in`` into a flat array."""
    pos = 0
    for i in range(ids_in.shape[0]):
        k = members_of(c_gen, c_add, ids_in[i], flat_out[pos:])
        flat_out[pos:pos + k].sort()
        sizes_out[i] = k
        pos += k
    return pos
