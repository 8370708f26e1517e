"""Numba kernels of the memetic search over orders: the recombination and mutation of
orders (:mod:`~bnsl_dist.search.ordering.memetic` is the driver).

Every random number is drawn by the driver's numpy generator and passed in, so that a
seed fixes the result (numba's own generator is seeded apart).
"""

from __future__ import annotations

import numba as nb


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
