"""Numba kernels for contingency counts and local scores (inputs validated by callers).

Codes arrive as a 2-D Fortran-ordered uint8/uint16 array, so ``codes[:, j]`` is a
contiguous column. A family (child, parents) is counted by building a mixed-radix
configuration id per row (docs/ALGORITHMS.md §1), then either a dense count table (when
``q * r`` is small against N) or a sort of the row keys (otherwise). Ids are re-ranked
when their radix would overflow, so any number of parents is handled.
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

KIND_LL = 0
KIND_BIC = 1
KIND_BDEU = 2

_RADIX_LIMIT = 1 << 40


@nb.njit(cache=True, nogil=True)
def _rerank(ids, tmp):  # IN/OUT ids (N,) int64; tmp (N,) int64 scratch. Returns #distinct.
    n = ids.shape[0]
    order = np.argsort(ids, kind="mergesort")
    rank = -1
    prev = -1
    for t in range(n):
        v = ids[order[t]]
        if t == 0 or v != prev:
            rank += 1
            prev = v
        tmp[order[t]] = rank
    for t in range(n):
        ids[t] = tmp[t]
    return rank + 1


@nb.njit(cache=True, nogil=True)
def config_ids(codes, parents, arities, ids, tmp):
    """Fill ``ids`` (OUT, int64 (N,)) with each row's parent configuration id.

    Returns the radix (an upper bound on id + 1). Ids are the mixed-radix index of
    docs/ALGORITHMS.md §1 unless the radix exceeded 2^40, in which case they were re-ranked
    (dense ranks, order preserved).
    """
    n = codes.shape[0]
    for t in range(n):
        ids[t] = 0
    radix = 1
    for m in range(parents.shape[0]):
        p = parents[m]
        rp = arities[p]
        if radix * rp > _RADIX_LIMIT:
            radix = _rerank(ids, tmp)
        col = codes[:, p]
        for t in range(n):
            ids[t] += np.int64(col[t]) * radix
        radix *= rp
    return radix


@nb.njit(cache=True, nogil=True, inline="always")
def _bdeu_priors(kind, ess, qf, r):
    """BDeu's alpha_j = ess / q, alpha_jk = ess / (q r) and their log-gammas (zeros for
    the other scores)."""
    if kind == KIND_BDEU:
        a_j = ess / qf
        a_jk = ess / (qf * r)
        return a_j, a_jk, math.lgamma(a_j), math.lgamma(a_jk)
    return 0.0, 0.0, 0.0, 0.0


@nb.njit(cache=True, nogil=True, inline="always")
def _family_result(kind, ll, bd, log_n, r, qf):
    """(score, log-likelihood) of a family from its log-likelihood and BDeu sum."""
    if kind == KIND_BIC:
        return ll - 0.5 * log_n * (r - 1) * qf, ll
    if kind == KIND_BDEU:
        return bd, ll
    return ll, ll


@nb.njit(cache=True, nogil=True)
def score_from_table(counts, radix, r, kind, ess, qf, log_n, nlogn):
    """(score, log-likelihood) of a family from its dense count table: ``counts[j * r +
    k]`` rows with parent configuration ``j`` < ``radix`` and child state ``k`` < ``r``
    (``qf`` = q(P) as float, ``nlogn[c] = c ln c``)."""
    ll = 0.0
    bd = 0.0
    a_j, a_jk, lg_aj, lg_ajk = _bdeu_priors(kind, ess, qf, r)
    for j in range(radix):
        nj = 0
        base = j * r
        for k in range(r):
            c = counts[base + k]
            if c > 0:
                nj += c
                ll += nlogn[c]
                if kind == KIND_BDEU:
                    bd += math.lgamma(a_jk + c) - lg_ajk
        if nj > 0:
            ll -= nlogn[nj]
            if kind == KIND_BDEU:
                bd += lg_aj - math.lgamma(a_j + nj)
    return _family_result(kind, ll, bd, log_n, r, qf)


@nb.njit(cache=True, nogil=True)
def score_from_ids(x, r, ids, radix, kind, ess, qf, log_n, nlogn, tmp, counts):
    """(score, log-likelihood) of a family from its rows' parent configuration ids.

    ``x``: the child's column; ``ids`` < ``radix`` (IN, int64 (N,)); ``qf`` = q(P) as
    float; ``tmp`` int64 (N,) scratch; ``counts`` int64 scratch of any size >= 1.
    Counting is dense when the ``radix * r`` table fits ``counts`` (four interleaved
    tables when four fit, which breaks the store-to-load dependency of consecutive rows
    hitting the same cell), else by sorting the row keys.
    """
    n = x.shape[0]
    size = radix * r
    if size <= counts.shape[0]:
        lanes = 4 if 4 * size <= counts.shape[0] else 1
        for t in range(lanes * size):
            counts[t] = 0
        if lanes == 4:
            n4 = n - n % 4
            for t in range(0, n4, 4):
                counts[ids[t] * r + x[t]] += 1
                counts[size + ids[t + 1] * r + x[t + 1]] += 1
                counts[2 * size + ids[t + 2] * r + x[t + 2]] += 1
                counts[3 * size + ids[t + 3] * r + x[t + 3]] += 1
            for t in range(n4, n):
                counts[ids[t] * r + x[t]] += 1
            for t in range(size):
                counts[t] += counts[size + t] + counts[2 * size + t] + counts[3 * size + t]
        else:
            for t in range(n):
                counts[ids[t] * r + x[t]] += 1
        return score_from_table(counts, radix, r, kind, ess, qf, log_n, nlogn)
    ll = 0.0
    bd = 0.0
    a_j, a_jk, lg_aj, lg_ajk = _bdeu_priors(kind, ess, qf, r)
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
    return _family_result(kind, ll, bd, log_n, r, qf)


@nb.njit(cache=True, nogil=True)
def family_score(codes, arities, child, parents, kind, ess, qf, nlogn, ids, tmp, counts):
    """Local score of ``child`` given ``parents``.

    kind: KIND_LL (log-likelihood), KIND_BIC, KIND_BDEU. ``qf`` is the true number of
    parent configurations as float (product of arities). ``nlogn[c] = c ln c``.
    ``ids``, ``tmp``: int64 (N,) scratch; ``counts``: int64 scratch of any size >= 1.
    Returns (score, log_likelihood).
    """
    radix = config_ids(codes, parents, arities, ids, tmp)
    return score_from_ids(codes[:, child], arities[child], ids, radix, kind, ess, qf,
                          math.log(codes.shape[0]), nlogn, tmp, counts)


@nb.njit(cache=True, nogil=True)
def marginal_counts(col, r, out):  # IN col (N,), OUT out (r,) int64
    for k in range(r):
        out[k] = 0
    for t in range(col.shape[0]):
        out[col[t]] += 1


@nb.njit(cache=True, nogil=True)
def nlogn_table(n_max):
    out = np.zeros(n_max + 1, dtype=np.float64)
    for c in range(2, n_max + 1):
        out[c] = c * math.log(c)
    return out


# ---------------------------------------------------------------------- state bitsets
#: Largest (r_x - 1)(r_y - 1) of a single-parent table counted from state bitsets
#: (:func:`pair_table`): each inner cell costs N / 64 word ANDs and popcounts, against N
#: row visits for the whole table.
PAIR_CELLS = 24


@nb.njit(cache=True, nogil=True)
def state_bitsets(codes, arities, max_arity):
    """Each state of each variable of at most ``max_arity`` states as a bitset over the
    rows. Returns ``bits`` (uint64, one row of ceil(N / 64) words per (variable, state)),
    ``offs`` (int64 (n,): the row of variable v's state 0, -1 for a variable with more
    states) and ``sizes`` (int64: the rows holding each state)."""
    n_rows, n = codes.shape
    w = (n_rows + 63) >> 6
    offs = np.full(n, -1, dtype=np.int64)
    total = 0
    for v in range(n):
        if arities[v] <= max_arity:
            offs[v] = total
            total += arities[v]
    bits = np.zeros((total, w), dtype=np.uint64)
    sizes = np.zeros(total, dtype=np.int64)
    one = np.uint64(1)
    for v in range(n):
        o = offs[v]
        if o < 0:
            continue
        col = codes[:, v]
        for t in range(n_rows):
            row = o + np.int64(col[t])
            bits[row, t >> 6] |= one << np.uint64(t & 63)
            sizes[row] += 1
    return bits, offs, sizes


@nb.njit(cache=True, nogil=True, inline="always")
def _popcount(x):
    # the SWAR count; LLVM turns it into one popcnt instruction where the CPU has it
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2))
                                               & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@nb.njit(cache=True, nogil=True)
def pair_table(bits, sizes, ox, rx, oy, ry, counts):
    """The dense count table of child x given the single parent y from their state
    bitsets (``ox``, ``oy``: their rows in ``bits``): ``counts[j * rx + k]`` = rows with
    y = j and x = k, as :func:`score_from_ids` counts them. The (rx - 1)(ry - 1) inner
    cells are popcounts of ANDed rows; the last state's row and column are the states'
    sizes less the rest."""
    w = bits.shape[1]
    for j in range(ry - 1):
        by = bits[oy + j]
        rest = 0
        for k in range(rx - 1):
            bx = bits[ox + k]
            c = 0
            for i in range(w):
                c += _popcount(by[i] & bx[i])
            counts[j * rx + k] = c
            rest += c
        counts[j * rx + rx - 1] = sizes[oy + j] - rest
    last = (ry - 1) * rx
    for k in range(rx):
        rest = 0
        for j in range(ry - 1):
            rest += counts[j * rx + k]
        counts[last + k] = sizes[ox + k] - rest
