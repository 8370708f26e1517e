"""Numba kernels of the Silander–Myllymäki dynamic programme (inputs validated by callers).

Variables are renumbered 0..m-1 (m <= 30); a variable set is an int64 bit mask. The
sets of local variable i are rows ``starts[i] .. starts[i+1]-1`` of ``masks`` / ``scores``
(best first, the empty set present).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True, inline="always")
def _squeeze(mask, i):
    """Drop bit i from ``mask`` (the bits above i move down by one)."""
    low = mask & ((np.int64(1) << i) - 1)
    return low | ((mask >> (i + 1)) << i)


@nb.njit(cache=True, nogil=True)
def best_set_tables(starts, masks, scores, m):
    """tab[i, S] = row of i's best set inside S (S over the other m-1 variables, squeezed).

    Returns an (m, 2**(m-1)) int32 array (row numbers into ``masks``).
    """
    size = np.int64(1) << (m - 1)
    tab = np.empty((m, size), dtype=np.int32)
    best = np.empty(size, dtype=np.float64)
    for i in range(m):
        for s in range(size):
            best[s] = -np.inf
            tab[i, s] = -1
        # exact sets; rows are best first, so keep the first seen per mask
        for r in range(starts[i], starts[i + 1]):
            sq = _squeeze(masks[r], i)
            if tab[i, sq] < 0:
                tab[i, sq] = r
                best[sq] = scores[r]
        # max over subsets, one bit at a time
        for b in range(m - 1):
            bit = np.int64(1) << b
            for hi in range(0, size, 2 * bit):
                for t in range(hi, hi + bit):
                    s = t + bit
                    if best[t] > best[s]:
                        best[s] = best[t]
                        tab[i, s] = tab[i, t]
    return tab


@nb.njit(cache=True, nogil=True)
def order_dp_table(tab, scores, m, f, last):
    """f[S] = best score of a DAG over S (each variable's set inside S); last[S] = sink.

    ``f`` (float64, 2**m) and ``last`` (int8, 2**m) are OUT buffers.
    """
    full = np.int64(1) << m
    f[0] = 0.0
    last[0] = -1
    for s in range(1, full):
        bv = -np.inf
        bi = -1
        for i in range(m):
            bit = np.int64(1) << i
            if s & bit:
                rest = s ^ bit
                val = f[rest] + scores[tab[i, _squeeze(rest, i)]]
                if val > bv:
                    bv = val
                    bi = i
        f[s] = bv
        last[s] = bi


@nb.njit(cache=True, nogil=True, inline="always")
def _first_within(starts, masks, i, allowed):
    for r in range(starts[i], starts[i + 1]):
        if (masks[r] & ~allowed) == 0:
            return r
    return -1


@nb.njit(cache=True, nogil=True)
def order_dp_scan(starts, masks, scores, m, f, last):
    """As :func:`order_dp_table`, finding each best set by scanning (no tables)."""
    full = np.int64(1) << m
    f[0] = 0.0
    last[0] = -1
    for s in range(1, full):
        bv = -np.inf
        bi = -1
        for i in range(m):
            bit = np.int64(1) << i
            if s & bit:
                rest = s ^ bit
                val = f[rest] + scores[_first_within(starts, masks, i, rest)]
                if val > bv:
                    bv = val
                    bi = i
        f[s] = bv
        last[s] = bi


@nb.njit(cache=True, nogil=True)
def backtrack(starts, masks, last, m, out_rows):
    """Fill ``out_rows[i]`` (OUT) with the row of the set variable i takes."""
    s = (np.int64(1) << m) - 1
    while s != 0:
        i = last[s]
        rest = s ^ (np.int64(1) << i)
        out_rows[i] = _first_within(starts, masks, i, rest)
        s = rest
