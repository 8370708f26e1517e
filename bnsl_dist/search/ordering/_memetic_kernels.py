"""Numba kernels of the memetic search over orders: the recombination and mutation of
orders (:mod:`~bnsl_dist.search.ordering.memetic` is the driver).

Every random number is drawn by the driver's numpy generator and passed in, so that a
seed fixes the result (numba's own generator is seeded apart).
"""

from __future__ import annotations

import numba as nb
import numpy as np


@nb.njit(cache=True, nogil=True)
def order_crossover(a, b, lo, hi, mark, out):
    """Order crossover: ``out`` keeps ``a[lo:hi]`` at the same positions and fills the
    other positions, left to right, with the remaining variables in the relative order
    they have in ``b``. ``mark`` (n, bool) is a workspace. The segment of ``a`` is kept
    whole (a run of locally good placements), and every variable outside it keeps its
    order relative to the others outside it as in ``b``."""
    n = a.shape[0]
    for v in range(n):
        mark[v] = False
    for k in range(lo, hi):
        out[k] = a[k]
        mark[a[k]] = True
    k = 0
    for j in range(n):
        v = b[j]
        if mark[v]:
            continue
        if k == lo:
            k = hi
        out[k] = v
        k += 1


@nb.njit(cache=True, nogil=True)
def move_variables(order, src, dst, out):
    """``out`` = ``order`` with, in turn for each i, the variable at position ``src[i]``
    taken out and put back at position ``dst[i]`` (positions in the order as it stands
    after the previous moves; both in [0, n))."""
    n = order.shape[0]
    for k in range(n):
        out[k] = order[k]
    for i in range(src.shape[0]):
        s = src[i]
        d = dst[i]
        v = out[s]
        if s < d:
            for k in range(s, d):
                out[k] = out[k + 1]
        else:
            for k in range(s, d, -1):
                out[k] = out[k - 1]
        out[d] = v


@nb.njit(cache=True, nogil=True)
def shuffle_neighbourhood(order, chosen, par_offsets, par_flat, u, k, keys, out):
    """``out`` = ``order`` with up to ``k`` variables, those nearest a start in the
    skeleton of the DAG ``chosen`` stands for (breadth first, the start first, each
    variable's neighbours as the arcs are listed: its parents, variable by variable),
    put back in the positions they hold, sorted by ``keys`` (n floats: the order they
    get among themselves). ``chosen[v]`` is ``v``'s set (an index into
    ``par_offsets``). The start is drawn by ``u`` in [0, 1) in proportion to the
    variables' degrees (an end of the arc number ``u``·2·arcs; ``u``·n without arcs):
    an isolated variable, which would leave the order as it is, is never the start. A
    cluster of tightly linked variables is reoriented at once, which no move of a few
    variables does. Returns how many variables were taken."""
    n = order.shape[0]
    deg = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        j = chosen[v]
        for q in range(par_offsets[j], par_offsets[j + 1]):
            deg[v + 1] += 1
            deg[par_flat[q] + 1] += 1
    for v in range(n):
        deg[v + 1] += deg[v]
    adj = np.empty(deg[n], dtype=np.int64)
    fill = deg[:n].copy()
    for v in range(n):
        j = chosen[v]
        for q in range(par_offsets[j], par_offsets[j + 1]):
            p = par_flat[q]
            adj[fill[v]] = p
            fill[v] += 1
            adj[fill[p]] = v
            fill[p] += 1
    seen = np.zeros(n, dtype=np.bool_)
    taken = np.empty(min(k, n), dtype=np.int64)
    m = 0
    start = int(u * n) if deg[n] == 0 else adj[int(u * deg[n])]
    taken[m] = start
    seen[start] = True
    m += 1
    head = 0
    while head < m and m < taken.shape[0]:
        v = taken[head]
        head += 1
        for q in range(deg[v], deg[v + 1]):
            u = adj[q]
            if not seen[u] and m < taken.shape[0]:
                seen[u] = True
                taken[m] = u
                m += 1
    pos = np.empty(n, dtype=np.int64)
    for i in range(n):
        out[i] = order[i]
        pos[order[i]] = i
    slots = np.empty(m, dtype=np.int64)
    vals = np.empty(m, dtype=np.float64)
    for i in range(m):
        slots[i] = pos[taken[i]]
        vals[i] = keys[taken[i]]
    slots.sort()
    by_key = np.argsort(vals, kind="mergesort")
    for i in range(m):
        out[slots[i]] = taken[by_key[i]]
    return m
