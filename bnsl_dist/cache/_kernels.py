"""Numba kernels for the cache's hot queries (inputs validated by callers).

A cache is flattened: sets of variable v are rows ``offsets[v] .. offsets[v+1]-1``
(best first, the empty set last); the members of set i are
``par_flat[par_offsets[i]:par_offsets[i+1]]``. Variable sets (forbidden / allowed) are
bitsets of uint64 words, bit ``p & 63`` of word ``p >> 6``.
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True, inline="always")
def has_bit(words, p):
    return (words[p >> 6] >> np.uint64(p & 63)) & np.uint64(1)


@nb.njit(cache=True, nogil=True)
def best_avoiding(offsets, par_offsets, par_flat, v, forbidden):
    """Index of the best set of v with no member in ``forbidden``; -1 if none."""
    for i in range(offsets[v], offsets[v + 1]):
        ok = True
        for t in range(par_offsets[i], par_offsets[i + 1]):
            if has_bit(forbidden, par_flat[t]):
                ok = False
                break
        if ok:
            return i
    return -1


@nb.njit(cache=True, nogil=True)
def best_within(offsets, par_offsets, par_flat, v, allowed):
    """Index of the best set of v whose members are all in ``allowed``; -1 if none."""
    for i in range(offsets[v], offsets[v + 1]):
        ok = True
        for t in range(par_offsets[i], par_offsets[i + 1]):
            if not has_bit(allowed, par_flat[t]):
                ok = False
                break
        if ok:
            return i
    return -1


@nb.njit(cache=True, nogil=True)
def set_bit(words, p):
    words[p >> 6] |= np.uint64(1) << np.uint64(p & 63)
