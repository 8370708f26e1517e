"""Numba kernels of the window local search over orders (Win-ASOBS style).

A block of w consecutive variables of the order is moved one step at a time, all the
way right and all the way left; each step moves one variable x across the block and
changes only the families of x and of the block's members, so the score is updated
incrementally. The best position found (if it improves by more than EPS) is applied.
The search cycles over pivots in a given order; a gain resets the window to 1; when n
pivots in a row bring nothing the window grows; it ends after ``max_window``.

A walk is evaluated without moving anything (:func:`_eval_right`, :func:`_eval_left`).
Every ``chosen`` set is the first (best) of its variable's sets that fits the order, so
a step changes a family only where a set better than the chosen one holds the other
variable, or the chosen one does; the other steps add exactly 0. Only the steps whose x
is so related to a block member are scored: read off bitsets of the relations
(``better``, ``better_of``, ``children``, kept in step with ``chosen`` by :func:`_sync`),
with the positions the moved block and the passed variables would have derived, not
written. A variable gaining a predecessor takes a new set only if one of its better sets
holds it, so only the rows listed for that candidate are scanned
(:func:`_first_fit_holding`). Gains, walks and the moves applied are those of walking
the block step by step (:func:`_walk`, which applies the best move).

The search is resumable: ``state`` = [cursor into todo, window, pivots without gain]
(IN/OUT), and each call stops after about ``max_steps`` block steps (counted as if
walked), so that the driver can check its clock between calls (numba cannot read one).

Inputs validated by callers; see ``_kernels.py`` for the cache layout. ``cand`` (n, W)
holds, per variable, the bitset of variables appearing in any of its cached sets.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

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


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(bits, a, x):
    return (bits[a, x >> 6] >> np.uint64(x & 63)) & _ONE


@nb.njit(cache=True, nogil=True)
def _sync(v, chosen, offsets, par_offsets, par_flat, better, better_of, children, built,
          row):
    """Bring v's relations in line with ``chosen[v]`` (``built[v]``: the set they were
    built from, -1 for none): ``better[v]`` holds the members of v's sets better than
    its chosen one, ``better_of`` is its transpose, ``children[p]`` holds the variables
    whose chosen set holds p."""
    c = chosen[v]
    old = built[v]
    if old == c:
        return
    word = v >> 6
    bit = _ONE << np.uint64(v & 63)
    if old >= 0:
        for t in range(par_offsets[old], par_offsets[old + 1]):
            children[par_flat[t], word] &= ~bit
    for t in range(par_offsets[c], par_offsets[c + 1]):
        children[par_flat[t], word] |= bit
    row[:] = 0
    for t in range(par_offsets[offsets[v]], par_offsets[c]):
        p = par_flat[t]
        row[p >> 6] |= _ONE << np.uint64(p & 63)
    for k in range(row.shape[0]):
        diff = row[k] ^ better[v, k]
        while diff:
            p = (k << 6) + trailing_zeros(diff)
            better_of[p, word] ^= bit
            diff &= diff - _ONE
        better[v, k] = row[k]
    built[v] = c


@nb.njit(cache=True, nogil=True, inline="always")
def _fits(par_offsets, par_flat, t, pos, inb, plim, jlim):
    """Set t fits where the block's members stand before the member of index ``jlim``
    (``inb``: index + 1 of a block member, 0 elsewhere) and every other variable stands
    where it is, counted before ``plim``."""
    for q in range(par_offsets[t], par_offsets[t + 1]):
        u = par_flat[q]
        j = inb[u]
        if j > 0:
            if j > jlim:
                return False
        elif pos[u] >= plim:
            return False
    return True


@nb.njit(cache=True, nogil=True)
def _first_fit_block(par_offsets, par_flat, start, stop, pos, inb, plim, jlim):
    """First row in [start, stop) that fits as :func:`_fits` says; -1 if none."""
    for t in range(start, stop):
        if _fits(par_offsets, par_flat, t, pos, inb, plim, jlim):
            return t
    return -1


@nb.njit(cache=True, nogil=True, inline="always")
def _entry(cand_off, cand_var, a, x):
    """The entry of candidate x of a (cand_var[cand_off[a]:cand_off[a+1]] is sorted)."""
    lo = cand_off[a]
    hi = cand_off[a + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if cand_var[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@nb.njit(cache=True, nogil=True)
def _first_fit_holding(par_offsets, par_flat, row_off, rows, e, stop, pos, inb, plim,
                       jlim):
    """:func:`_first_fit_block` over the sets of entry e (the rows holding that
    candidate, ascending) below ``stop``: where a variable gains a predecessor, the
    first set that fits anew holds it."""
    for q in range(row_off[e], row_off[e + 1]):
        t = rows[q]
        if t >= stop:
            return -1
        if _fits(par_offsets, par_flat, t, pos, inb, plim, jlim):
            return t
    return -1


@nb.njit(cache=True, nogil=True)
def _positions(rows, rows2, block, pos, lo, hi, words, buf):
    """The positions in [lo, hi) of the variables in the union of rows[b] and rows2[b]
    over the block, sorted into ``buf``; their count."""
    words[:] = 0
    for b in block:
        for k in range(words.shape[0]):
            words[k] |= rows[b, k] | rows2[b, k]
    m = 0
    for k in range(words.shape[0]):
        wd = words[k]
        while wd:
            p = pos[(k << 6) + trailing_zeros(wd)]
            if lo <= p < hi:
                buf[m] = p
                m += 1
            wd &= wd - _ONE
    buf[:m].sort()
    return m


@nb.njit(cache=True, nogil=True, inline="always")
def _insert(buf, m, p):
    """Insert p into the sorted buf[:m] unless there; the new count."""
    k = m
    while k > 0 and buf[k - 1] > p:
        k -= 1
    if k > 0 and buf[k - 1] == p:
        return m
    for t in range(m, k, -1):
        buf[t] = buf[t - 1]
    buf[k] = p
    return m + 1


@nb.njit(cache=True, nogil=True)
def _eval_right(start, w, steps, order, pos, chosen, cand, cand_off, cand_var, row_off,
                rows, offsets, par_offsets, par_flat, scores, better, children, inb, bch,
                words, buf):
    """(best gain, its steps) of walking the block at [start, start+w) right by up to
    ``steps`` steps, as :func:`_walk` finds them, nothing moved (``bch``: the members'
    chosen sets, IN/scratch). A step changes a family only where x's chosen set holds a
    block member, or a set better than a member's holds x."""
    block = order[start:start + w]
    lo = start + w
    # a walk of few steps (those of reach 8) tests each step, a long one reads the
    # union of the block's rows (2 steps per word: a guess, either way exact)
    if steps <= 2 * words.shape[0]:
        m = 0
        for p in range(lo, lo + steps):
            x = order[p]
            for b in block:
                if _bit(better, b, x) or _bit(children, b, x):
                    buf[m] = p
                    m += 1
                    break
    else:
        m = _positions(better, children, block, pos, lo, lo + steps, words, buf)
    best_gain = 0.0
    best_k = 0
    gain = 0.0
    for i in range(m):
        p = buf[i]
        x = order[p]
        delta = 0.0
        cx = chosen[x]
        lost = False
        for q in range(par_offsets[cx], par_offsets[cx + 1]):
            if inb[par_flat[q]] > 0:
                lost = True
                break
        if lost:  # x, now ahead of the block, loses the members
            nx = _first_fit_block(par_offsets, par_flat, cx + 1, offsets[x + 1], pos, inb,
                                  p, 0)
            delta += scores[nx] - scores[cx]
        for j in range(w):  # the members gain x
            a = block[j]
            if _cand(cand, a, x):
                ca = bch[j]
                na = _first_fit_holding(par_offsets, par_flat, row_off, rows,
                                        _entry(cand_off, cand_var, a, x), ca, pos, inb,
                                        p + 1, j)
                if na >= 0:
                    delta += scores[na] - scores[ca]
                    bch[j] = na
        gain += delta
        if gain > best_gain + EPS:
            best_gain = gain
            best_k = p - lo + 1
    return best_gain, best_k


@nb.njit(cache=True, nogil=True)
def _eval_left(start, w, steps, order, pos, chosen, cand, cand_off, cand_var, row_off,
               rows, offsets, par_offsets, par_flat, scores, better_of, inb, bch, words,
               buf):
    """:func:`_eval_right` walking left: x, passed, gains the members where one of its
    better sets holds one; a member loses x where its chosen set holds x, and the
    parents it takes instead join the steps to score."""
    block = order[start:start + w]
    lo = start - steps
    direct = steps <= 2 * words.shape[0]
    m = 0
    if not direct:
        m = _positions(better_of, better_of, block, pos, lo, start, words, buf)
        for j in range(w):
            c = bch[j]
            for q in range(par_offsets[c], par_offsets[c + 1]):
                pp = pos[par_flat[q]]
                if lo <= pp < start:
                    m = _insert(buf, m, pp)
    best_gain = 0.0
    best_k = 0
    gain = 0.0
    p = start
    while True:
        if direct:
            p -= 1
            if p < lo:
                break
            x = order[p]
            hit = False
            for j in range(w):
                if _bit(better_of, block[j], x) or _contains(par_offsets, par_flat,
                                                             bch[j], x):
                    hit = True
                    break
            if not hit:
                continue
        else:
            if m == 0:
                break
            m -= 1
            p = buf[m]
            x = order[p]
        delta = 0.0
        cx = chosen[x]
        nx = cx
        for b in block:  # x, now behind the block, gains the members
            if _cand(cand, x, b):
                t = _first_fit_holding(par_offsets, par_flat, row_off, rows,
                                       _entry(cand_off, cand_var, x, b), nx, pos, inb, p,
                                       w)
                if t >= 0:
                    nx = t
        if nx < cx:
            delta += scores[nx] - scores[cx]
        for j in range(w):  # the members lose x
            a = block[j]
            ca = bch[j]
            if _contains(par_offsets, par_flat, ca, x):
                na = _first_fit_block(par_offsets, par_flat, ca + 1, offsets[a + 1], pos,
                                      inb, p, j)
                delta += scores[na] - scores[ca]
                bch[j] = na
                if not direct:
                    for q in range(par_offsets[na], par_offsets[na + 1]):
                        pp = pos[par_flat[q]]
                        if lo <= pp < p:
                            m = _insert(buf, m, pp)
        gain += delta
        if gain > best_gain + EPS:
            best_gain = gain
            best_k = start - p
    return best_gain, best_k


@nb.njit(cache=True, nogil=True)
def window_search(order, pos, chosen, cand, cand_off, cand_var, row_off, rows, offsets,
                  par_offsets, par_flat, scores, todo, max_window, state, max_steps, reach,
                  better, better_of, children, built):
    """Run the window search from the current (order, chosen) for about ``max_steps``
    block steps, each block walked at most ``reach`` steps each way (``reach`` >= n:
    to both ends of the order). (cand_off, cand_var, row_off, rows): each variable's
    candidates, sorted, and for each the rows of its sets holding it, ascending
    (:func:`~bnsl_dist.search.ordering.asobs.window_index`). (better, better_of,
    children, built): the relations
    of :func:`_sync`, from :func:`~bnsl_dist.search.ordering.asobs.window_relations` or an
    earlier call (IN/OUT; brought in
    line with ``chosen`` first). Returns (total gain, converged)."""
    n = order.shape[0]
    words = np.empty(cand.shape[1], dtype=np.uint64)
    inb = np.zeros(n, dtype=np.int64)
    buf = np.empty(n + 1, dtype=np.int64)
    bch = np.empty(max(1, max_window), dtype=np.int64)
    for v in range(n):
        _sync(v, chosen, offsets, par_offsets, par_flat, better, better_of, children,
              built, words)
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
        for j in range(w):
            inb[order[start + j]] = j + 1
        for d in range(2):
            right = d == 0
            steps = min((n - w - start) if right else start, reach)
            if steps <= 0:
                continue
            for j in range(w):
                bch[j] = chosen[order[start + j]]
            if right:
                g, k = _eval_right(start, w, steps, order, pos, chosen, cand, cand_off,
                                   cand_var, row_off, rows, offsets, par_offsets, par_flat,
                                   scores, better, children, inb, bch, words, buf)
            else:
                g, k = _eval_left(start, w, steps, order, pos, chosen, cand, cand_off,
                                  cand_var, row_off, rows, offsets, par_offsets, par_flat,
                                  scores, better_of, inb, bch, words, buf)
            steps_done += steps
            if g > best_gain + EPS:
                best_gain = g
                best_k = k
                best_right = right
        for j in range(w):
            inb[order[start + j]] = 0
        if best_k > 0:
            _walk(start, w, best_k, best_right, order, pos, chosen, cand, offsets,
                  par_offsets, par_flat, scores)
            lo = start if best_right else start - best_k
            hi = start + w + best_k if best_right else start + w
            for p in range(lo, hi):
                _sync(order[p], chosen, offsets, par_offsets, par_flat, better, better_of,
                      children, built, words)
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
