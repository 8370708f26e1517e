"""Numba kernels of parent-set exploration (inputs validated by the drivers).

Independence selection keeps three structures in caller-allocated arrays:

* the **closed store**: every exactly scored set, as a chain ``(gen, add)`` (the set is
  the closed set ``gen`` plus variable ``add``; id 0 is the empty set), with its size,
  64-bit Zobrist hash, q (product of arities), exact score and BIC;
* the **open list**: a binary max-heap of entries ``(priority, seq, gen, add, hash)``
  ordered by priority, then by push order ``seq`` (deterministic ties);
* a **hash set** (open addressing, 0 = empty) of the hashes of the sets that are
  open or closed, so that a set is pushed once.

Sets are identified by their Zobrist hash (XOR of one random 64-bit key per member):
a collision, about 2^-64 per pair of sets, could only skip a candidate of this
approximate search. Dominance pruning verifies members, so it is exact.

References
----------
Scanagatta, de Campos, Corani, Zaffalon. Learning Bayesian networks with thousands of
variables. NIPS 2015, §3 (independence selection, BIC*).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from bnsl_dist.scores._kernels import KIND_BDEU, KIND_BIC, config_ids

# Status codes returned by is_search.
ST_CHUNK = 0  # popped max_pops sets
ST_EMPTY = 1  # the open list is empty
ST_GROW_CLOSED = 2  # the closed store is full
ST_GROW_HEAP = 3  # the heap arrays are full and below their maximum size

# Indices of the int64 ``state`` array shared with the driver.
S_CLOSED = 0
S_HEAP = 1
S_SEQ = 2
S_POPS = 3
S_TRIMS = 4
S_REUSED = 5

_RADIX_LIMIT = 1 << 40


@nb.njit(cache=True, nogil=True)
def zobrist_keys(n, seed):
    """n pseudo-random non-zero uint64 keys (splitmix64), the same on every machine."""
    out = np.empty(n, dtype=np.uint64)
    x = np.uint64(seed)
    for i in range(n):
        x += np.uint64(0x9E3779B97F4A7C15)
        z = x
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
        if z == np.uint64(0):
            z = np.uint64(1)
        out[i] = z
    return out


# ---------------------------------------------------------------------- hash set
@nb.njit(cache=True, nogil=True, inline="always")
def _slot(key, mask):
    return np.int64((key * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(20)) & mask


@nb.njit(cache=True, nogil=True)
def hset_add(table, key):
    """Insert ``key`` (non-zero); False if it was already there. IN/OUT table."""
    mask = table.shape[0] - 1
    i = _slot(key, mask)
    while True:
        k = table[i]
        if k == np.uint64(0):
            table[i] = key
            return True
        if k == key:
            return False
        i = (i + 1) & mask


@nb.njit(cache=True, nogil=True)
def hset_has(table, key):
    mask = table.shape[0] - 1
    i = _slot(key, mask)
    while True:
        k = table[i]
        if k == np.uint64(0):
            return False
        if k == key:
            return True
        i = (i + 1) & mask


@nb.njit(cache=True, nogil=True)
def hset_rebuild(table, c_hash, n_closed, h_hash, h_size):
    """Clear ``table`` and insert the hashes of the closed sets and open entries."""
    for i in range(table.shape[0]):
        table[i] = np.uint64(0)
    for i in range(n_closed):
        hset_add(table, c_hash[i])
    for i in range(h_size):
        hset_add(table, h_hash[i])


# ---------------------------------------------------------------------- heap
@nb.njit(cache=True, nogil=True, inline="always")
def _better(pa, sa, pb, sb):
    return pa > pb or (pa == pb and sa < sb)


@nb.njit(cache=True, nogil=True)
def _sift_down(h_prio, h_seq, h_gen, h_add, h_hash, size, i):
    p, s, g, a, h = h_prio[i], h_seq[i], h_gen[i], h_add[i], h_hash[i]
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and _better(h_prio[c + 1], h_seq[c + 1], h_prio[c], h_seq[c]):
            c += 1
        if not _better(h_prio[c], h_seq[c], p, s):
            break
        h_prio[i], h_seq[i], h_gen[i], h_add[i], h_hash[i] = (h_prio[c], h_seq[c], h_gen[c],
                                                              h_add[c], h_hash[c])
        i = c
    h_prio[i], h_seq[i], h_gen[i], h_add[i], h_hash[i] = p, s, g, a, h


@nb.njit(cache=True, nogil=True)
def heap_push(h_prio, h_seq, h_gen, h_add, h_hash, size, p, s, g, a, h):
    """Push an entry; returns the new size (capacity checked by the caller)."""
    i = size
    while i > 0:
        par = (i - 1) >> 1
        if not _better(p, s, h_prio[par], h_seq[par]):
            break
        h_prio[i], h_seq[i], h_gen[i], h_add[i], h_hash[i] = (h_prio[par], h_seq[par],
                                                              h_gen[par], h_add[par],
                                                              h_hash[par])
        i = par
    h_prio[i], h_seq[i], h_gen[i], h_add[i], h_hash[i] = p, s, g, a, h
    return size + 1


@nb.njit(cache=True, nogil=True)
def heap_trim(h_prio, h_seq, h_gen, h_add, h_hash, size, keep):
    """Keep the ``keep`` best entries (priority, then seq) and re-heapify; new size."""
    if size <= keep:
        return size
    neg = np.empty(size, dtype=np.float64)
    for i in range(size):
        neg[i] = -h_prio[i]
    thr = -np.partition(neg, keep - 1)[keep - 1]  # the keep-th best priority
    n_above = 0
    for i in range(size):
        if h_prio[i] > thr:
            n_above += 1
    # Among entries at the threshold, keep the earliest pushed.
    ties = np.empty(size - n_above, dtype=np.int64)
    nt = 0
    for i in range(size):
        if h_prio[i] == thr:
            ties[nt] = h_seq[i]
            nt += 1
    need = keep - n_above
    seq_cut = np.int64(-1)
    if need > 0:
        srt = np.sort(ties[:nt])
        seq_cut = srt[need - 1]
    w = 0
    for i in range(size):
        p = h_prio[i]
        if p > thr or (p == thr and h_seq[i] <= seq_cut):
            h_prio[w], h_seq[w], h_gen[w], h_add[w], h_hash[w] = (h_prio[i], h_seq[i], h_gen[i],
                                                                  h_add[i], h_hash[i])
            w += 1
    for i in range(w // 2 - 1, -1, -1):
        _sift_down(h_prio, h_seq, h_gen, h_add, h_hash, w, i)
    return w


# ---------------------------------------------------------------------- scoring
@nb.njit(cache=True, nogil=True)
def score_from_ids(x, r, ids, radix, kind, ess, qf, log_n, nlogn, tmp, counts):
    """(score, log-likelihood) of a family from its per-row parent configuration ids.

    ``ids`` < ``radix``; ``qf`` = q(P) as float; kind KIND_BIC / KIND_BDEU / KIND_LL.
    Dense counting when ``radix * r`` is small against ``counts``, else a sort.
    """
    n = x.shape[0]
    size = radix * r
    ll = 0.0
    bd = 0.0
    a_j = 0.0
    a_jk = 0.0
    lg_aj = 0.0
    lg_ajk = 0.0
    if kind == KIND_BDEU:
        a_j = ess / qf
        a_jk = ess / (qf * r)
        lg_aj = math.lgamma(a_j)
        lg_ajk = math.lgamma(a_jk)
    if 2 * size <= counts.shape[0]:
        for t in range(2 * size):
            counts[t] = 0
        n2 = n - n % 2
        for t in range(0, n2, 2):
            counts[ids[t] * r + x[t]] += 1
            counts[size + ids[t + 1] * r + x[t + 1]] += 1
        for t in range(n2, n):
            counts[ids[t] * r + x[t]] += 1
        for j in range(radix):
            nj = 0
            base = j * r
            for k in range(r):
                c = counts[base + k] + counts[size + base + k]
                if c > 0:
                    nj += c
                    ll += nlogn[c]
                    if kind == KIND_BDEU:
                        bd += math.lgamma(a_jk + c) - lg_ajk
            if nj > 0:
                ll -= nlogn[nj]
                if kind == KIND_BDEU:
                    bd += lg_aj - math.lgamma(a_j + nj)
    else:
        for t in range(n):
            tmp[t] = ids[t] * r + x[t]
        keys = np.sort(tmp)
        t = 0
        while t < n:
            j = keys[t] // r
            nj = 0
            while t < n and keys[t] // r == j:
                key = keys[t]
                c = 0
                while t < n and keys[t] == key:
                    c += 1
                    t += 1
                nj += c
                ll += nlogn[c]
                if kind == KIND_BDEU:
                    bd += math.lgamma(a_jk + c) - lg_ajk
            ll -= nlogn[nj]
            if kind == KIND_BDEU:
                bd += lg_aj - math.lgamma(a_j + nj)
    if kind == KIND_BIC:
        return ll - 0.5 * log_n * (r - 1) * qf, ll
    if kind == KIND_BDEU:
        return bd, ll
    return ll, ll


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
                        c_gen, c_add, c_size, c_hash, c_q, c_score, c_bic, ids, tmp, counts):
    """Score the empty set (closed id 0) and every singleton of ``others`` (ids 1..)."""
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
    for i in range(others.shape[0]):
        y = others[i]
        col = codes[:, y]
        for t in range(codes.shape[0]):
            ids[t] = np.int64(col[t])
        qf = float(arities[y])
        s, ll = score_from_ids(x, r, ids, arities[y], kind, ess, qf, log_n, nlogn, tmp, counts)
        c = i + 1
        c_gen[c] = 0
        c_add[c] = y
        c_size[c] = 1
        c_hash[c] = c_hash[0] ^ z[y]
        c_q[c] = qf
        c_score[c] = s
        c_bic[c] = ll - pen * qf
    return others.shape[0] + 1


@nb.njit(cache=True, nogil=True)
def push_pairs(cand, cand_cid, arities, child, log_n, use_bound, max_size, z,
               c_hash, c_bic, c_score, h_prio, h_seq, h_gen, h_add, h_hash, table, state):
    """Push every pair of candidates with priority BIC*({Y},{Z}); IN/OUT heap, table."""
    if max_size < 2:
        return
    pen = 0.5 * log_n * (arities[child] - 1)
    bic0 = c_bic[0]
    size = state[S_HEAP]
    seq = state[S_SEQ]
    for i in range(cand.shape[0]):
        gy = cand_cid[i]
        qy = float(arities[cand[i]])
        for j in range(i + 1, cand.shape[0]):
            zz = cand[j]
            qz = float(arities[zz])
            qn = qy * qz
            if use_bound and -pen * qn <= max(c_score[gy], c_score[cand_cid[j]]):
                continue
            h = c_hash[gy] ^ z[zz]
            if not hset_add(table, h):
                continue
            prio = c_bic[gy] + c_bic[cand_cid[j]] + pen * (qy + qz - qn - 1.0) - bic0
            if not math.isfinite(prio):
                continue
            size = heap_push(h_prio, h_seq, h_gen, h_add, h_hash, size, prio, seq, gy, zz, h)
            seq += 1
    state[S_HEAP] = size
    state[S_SEQ] = seq


@nb.njit(cache=True, nogil=True)
def is_search(codes, arities, child, kind, ess, log_n, nlogn, cand, cand_cid, z, use_bound,
              max_size, open_keep, heap_max,
              c_gen, c_add, c_size, c_hash, c_q, c_score, c_bic, c_slot,
              h_prio, h_seq, h_gen, h_add, h_hash, table,
              ring, ring_radix, ring_owner,
              ids, tmp, counts, buf, mark, max_pops, state):
    """Pop, score and expand up to ``max_pops`` open sets (ALGORITHMS.md §3, step 3).

    ``cand_cid[i]`` is the closed id of singleton ``{cand[i]}``. ``state`` (IN/OUT) holds
    the counters S_*. Returns a status ST_*; on ST_GROW_* nothing was popped yet.
    """
    x = codes[:, child]
    r = arities[child]
    n_rows = codes.shape[0]
    pen = 0.5 * log_n * (r - 1)
    bic0 = c_bic[0]
    n_cand = cand.shape[0]
    k_ring = ring.shape[0]
    n_closed = state[S_CLOSED]
    size = state[S_HEAP]
    seq = state[S_SEQ]
    pops = 0
    status = ST_CHUNK
    while pops < max_pops:
        if size == 0:
            status = ST_EMPTY
            break
        if n_closed >= c_gen.shape[0]:
            status = ST_GROW_CLOSED
            break
        if size + n_cand > h_prio.shape[0]:
            if h_prio.shape[0] < heap_max:
                status = ST_GROW_HEAP
                break
            size = heap_trim(h_prio, h_seq, h_gen, h_add, h_hash, size, open_keep)
            hset_rebuild(table, c_hash, n_closed, h_hash, size)
            state[S_TRIMS] += 1
        # Pop the best open set P = gen ∪ {add}.
        g = h_gen[0]
        a = h_add[0]
        hp = h_hash[0]
        size -= 1
        if size > 0:
            h_prio[0], h_seq[0], h_gen[0], h_add[0], h_hash[0] = (h_prio[size], h_seq[size],
                                                                  h_gen[size], h_add[size],
                                                                  h_hash[size])
            _sift_down(h_prio, h_seq, h_gen, h_add, h_hash, size, 0)
        qf = c_q[g] * arities[a]
        # Configuration ids: from the generator's cached ids when possible.
        slot = c_slot[g]
        ra = arities[a]
        if slot >= 0 and ring_owner[slot] == g and ring_radix[slot] * ra <= _RADIX_LIMIT:
            rg = ring_radix[slot]
            col = codes[:, a]
            src = ring[slot]
            for t in range(n_rows):
                ids[t] = src[t] + np.int64(col[t]) * rg
            radix = rg * ra
            state[S_REUSED] += 1
        else:
            k = members_of(c_gen, c_add, g, buf)
            buf[k] = a
            radix = config_ids(codes, buf[:k + 1], arities, ids, tmp)
        s, ll = score_from_ids(x, r, ids, radix, kind, ess, qf, log_n, nlogn, tmp, counts)
        cid = n_closed
        n_closed += 1
        c_gen[cid] = g
        c_add[cid] = a
        c_size[cid] = c_size[g] + 1
        c_hash[cid] = hp
        c_q[cid] = qf
        c_score[cid] = s
        bic = ll - pen * qf
        c_bic[cid] = bic
        pops += 1
        if c_size[cid] >= max_size:
            continue
        # Keep its ids for its children.
        rs = cid % k_ring
        dst = ring[rs]
        for t in range(n_rows):
            dst[t] = ids[t]
        ring_radix[rs] = radix
        ring_owner[rs] = cid
        c_slot[cid] = rs
        # Push P ∪ {Y} for every candidate Y not in P.
        k = members_of(c_gen, c_add, cid, buf)
        for t in range(k):
            mark[buf[t]] = True
        for i in range(n_cand):
            y = cand[i]
            if mark[y]:
                continue
            qy = float(arities[y])
            qn = qf * qy
            gy = cand_cid[i]
            if use_bound and -pen * qn <= max(s, c_score[gy]):
                continue  # BIC(P ∪ {Y}) <= -pen q: dominated by P or {Y}, as are its supersets
            prio = bic + c_bic[gy] + pen * (qf + qy - qn - 1.0) - bic0
            if not math.isfinite(prio):
                continue
            h = hp ^ z[y]
            if not hset_add(table, h):
                continue
            size = heap_push(h_prio, h_seq, h_gen, h_add, h_hash, size, prio, seq, cid, y, h)
            seq += 1
        for t in range(k):
            mark[buf[t]] = False
    state[S_CLOSED] = n_closed
    state[S_HEAP] = size
    state[S_SEQ] = seq
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
    (ALGORITHMS.md §3). Returns the number kept. Exact (members are verified).
    """
    order_key = np.empty(n_closed, dtype=np.float64)
    for i in range(n_closed):
        order_key[i] = -c_score[i]
    # best first; among equal scores smaller sets first, then lower id
    order = np.argsort(c_size[:n_closed], kind="mergesort")
    order = order[np.argsort(order_key[order], kind="mergesort")]
    cap = 1
    while cap < 2 * n_closed + 2:
        cap *= 2
    table = np.full(cap, -1, dtype=np.int64)  # closed ids of kept sets, keyed by hash
    mask = cap - 1
    kept_ids = np.empty(n_closed, dtype=np.int64)
    n_kept = 0
    buf = np.empty(n_vars + 1, dtype=np.int64)
    mark = np.zeros(n_vars, dtype=np.bool_)
    sub = np.zeros(n_vars, dtype=np.bool_)
    for i in range(n_closed):
        keep_out[i] = False
    for oi in range(n_closed):
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
