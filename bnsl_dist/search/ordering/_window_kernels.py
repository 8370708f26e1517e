"""Numba kernels of the window local search over orders (Win-ASOBS style).

A block of w consecutive variables of the order is moved one step at a time, all the
way right and all the way left; each step moves one variable x across the block and
changes only the families of x and of the block's members, so the score is updated
incrementally. The best position found (if it improves by more than EPS) is applied.
The search cycles over pivots in a given order; a gain resets the window to 1; when n
pivots in a row bring nothing the window grows; it ends after ``max_window``.

The search is resumable: ``state`` = [cursor into todo, window, pivots without gain]
(IN/OUT), and each call stops after about ``max_steps`` block steps, so that the
driver can check its clock between calls (numba cannot read one).

Inputs validated by callers; see ``_kernels.py`` for the cache layout. ``cand`` (n, W)
holds, per variable, the bitset of variables appearing in any of its cached sets.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bnsl_dist.search.ordering._kernels import EPS, _contains, first_fit

_ONE = np.uint64(1)


@nb.njit(cache=True, nogil=True, inline="always")
def _cand(cand, a, x):
    return (cand[a, x >> 6] >> np.uint64(x & 63)) & _ONE


@nb.njit(cache=True, nogil=True)
def _step_right(i, w, order, pos, chosen, cand, offsets, par_offsets, par_flat, scores):
    """Move the block at [i, i+w) one step right: x = order[i+w] goes to position i.
    Returns the score change."""
    x = order[i + w]
    delta = 0.0
    # shift the block, x in front
    for k in range(i + w, i, -1):
        order[k] = order[k - 1]
        pos[order[k]] = k
    order[i] = x
    pos[x] = i
    # x loses the block members: rescan below its current set if it had one
    cx = chosen[x]
    lost = False
    for k in range(i + 1, i + w + 1):
        if _contains(par_offsets, par_flat, cx, order[k]):
            lost = True
            break
    if lost:
        nx = first_fit(par_offsets, par_flat, cx + 1, offsets[x + 1], pos, i)
        delta += scores[nx] - scores[cx]
        chosen[x] = nx
    # block members gain x: look above their current set
    for k in range(i + 1, i + w + 1):
        a = order[k]
        if _cand(cand, a, x):
            ca = chosen[a]
            na = first_fit(par_offsets, par_flat, offsets[a], ca, pos, k)
            if na >= 0:
                delta += scores[na] - scores[ca]
                chosen[a] = na
    return delta


@nb.njit(cache=True, nogil=True)
def _step_left(i, w, order, pos, chosen, cand, offsets, par_offsets, par_flat, scores):
    """Move the block at [i, i+w) one step left: x = order[i-1] goes to i+w-1."""
    x = order[i - 1]
    delta = 0.0
    for k in range(i - 1, i + w - 1):
        order[k] = order[k + 1]
        pos[order[k]] = k
    order[i + w - 1] = x
    pos[x] = i + w - 1
    # x gains the block members
    gain = False
    for k in range(i - 1, i + w - 1):
        if _cand(cand, x, order[k]):
            gain = True
            break
    if gain:
        cx = chosen[x]
        nx = first_fit(par_offsets, par_flat, offsets[x], cx, pos, i + w - 1)
        if nx >= 0:
            delta += scores[nx] - scores[cx]
            chosen[x] = nx
    # block members lose x
    for k in range(i - 1, i + w - 1):
        a = order[k]
        ca = chosen[a]
        if _contains(par_offsets, par_flat, ca, x):
            na = first_fit(par_offsets, par_flat, ca + 1, offsets[a + 1], pos, k)
            delta += scores[na] - scores[ca]
            chosen[a] = na
    return delta


@nb.njit(cache=True, nogil=True)
def _walk(start, w, steps, right, order, pos, chosen, cand, offsets, par_offsets, par_flat,
          scores):
    """Move the block starting at ``start`` by ``steps`` steps; returns the best
    cumulative gain seen and after how many steps (0 if never positive)."""
    best_gain = 0.0
    best_k = 0
    gain = 0.0
    i = start
    for k in range(1, steps + 1):
        if right:
            gain += _step_right(i, w, order, pos, chosen, cand, offsets, par_offsets,
                                par_flat, scores)
            i += 1
        else:
            gain += _step_left(i, w, order, pos, chosen, cand, offsets, par_offsets,
                               par_flat, scores)
            i -= 1
        if gain > best_gain + EPS:
            best_gain = gain
            best_k = k
    return best_gain, best_k


@nb.njit(cache=True, nogil=True)
def window_search(order, pos, chosen, cand, offsets, par_offsets, par_flat, scores, todo,
                  max_window, state, max_steps, reach):
    """Run the window search from the current (order, chosen) for about ``max_steps``
    block steps, each block walked at most ``reach`` steps each way (``reach`` >= n:
    to both ends of the order). Returns (total gain, converged)."""
    n = order.shape[0]
    w_order = np.empty(n, dtype=np.int64)
    w_pos = np.empty(n, dtype=np.int64)
    w_chosen = np.empty(n, dtype=np.int64)
    cursor = state[0]
    window = state[1]
    idle = state[2]
    total = 0.0
    steps_done = 0
    converged = False
    while steps_done < max_steps:
        if window > max_window or window >= n:
            converged = True
            break
        w = window
        start = min(todo[cursor], n - w)
        cursor = (cursor + 1) % n
        best_gain = 0.0
        best_k = 0
        best_right = True
        for d in range(2):
            right = d == 0
            steps = min((n - w - start) if right else start, reach)
            if steps <= 0:
                continue
            w_order[:] = order
            w_pos[:] = pos
            w_chosen[:] = chosen
            g, k = _walk(start, w, steps, right, w_order, w_pos, w_chosen, cand, offsets,
                         par_offsets, par_flat, scores)
            steps_done += steps
            if g > best_gain + EPS:
                best_gain = g
                best_k = k
                best_right = right
        if best_k > 0:
            _walk(start, w, best_k, best_right, order, pos, chosen, cand, offsets,
                  par_offsets, par_flat, scores)
            total += best_gain
            window = 1
            idle = 0
        else:
            idle += 1
            if idle >= n:
                window += 1
                idle = 0
    state[0] = cursor
    state[1] = window
    state[2] = idle
    return total, converged
