"""Numba kernels of ordering-based search: OBS, ASOBS, adjacent swaps, topological orders.

Inputs are validated by the drivers. The cache is flattened (see
``bnsl_dist/cache/_kernels.py``): sets of variable v are global rows
``offsets[v] .. offsets[v+1]-1``, best first, the empty set present; members of row i
are ``par_flat[par_offsets[i]:par_offsets[i+1]]``. ``chosen[v]`` is the global row of
v's current set. ``pos[v]`` is v's position in the current order. Variable sets are
bitsets of uint64 words, one row of an (n, W) array per variable.

``pmask[i]`` (:func:`set_masks`) folds row i's members into M = :func:`mask_words` (n)
words, 1 or 2 (``pmask`` of shape (rows,) or (rows, 2)): member p sets bit p mod 64 of
word (p // 64) mod M. A set of forbidden variables folded the same way (``f0``, ``f1``:
words 0 and 1; ``f1`` stays 0 when M = 1) that misses ``pmask[i]`` contains no member
of row i. With n <= 64·M the fold is exact (``exact``), so the word test alone decides
and the members are never read; above, a hit is confirmed by reading the members.
Exact up to 128 variables instead of 64: on plants (69 variables) the 1-word fold made
the ASOBS pass, OBS and the swaps read members on most rows, and ASOBS + OBS + swaps
ran 2.2-2.5 times slower (part ``masks`` of workflows/benchmarks/search.py).

Above that, OBS and the ASOBS passes test the sets of a variable with many sets by
their candidate masks instead (:func:`candidate_masks`: per variable, one bit for each
of its first 63 distinct members): a scan rejects most sets for the same few members
(an ASOBS pass on the 10,000-variable synthetic cache scans ~15 sets per variable and
tests ~17 members but only ~3.3 distinct ones), so the candidate scan tests each
candidate once and skips every later set holding a known forbidden one by one AND,
reading no members.
"""

from __future__ import annotations

import numba as nb
import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros
from numba.extending import overload

_ONE = np.uint64(1)
EPS = 1e-9  # an improvement must exceed this (absolute, log-score units)


@nb.njit(cache=True, nogil=True, inline="always")
def _bit(words, p):
    return (words[p >> 6] >> np.uint64(p & 63)) & _ONE


@nb.njit(cache=True, nogil=True, inline="always")
def _fits_before(par_offsets, par_flat, i, pos, limit):
    """All members of row i have pos < limit."""
    for t in range(par_offsets[i], par_offsets[i + 1]):
        if pos[par_flat[t]] >= limit:
            return False
    return True


@nb.njit(cache=True, nogil=True, inline="always")
def first_fit(par_offsets, par_flat, start, stop, pos, limit):
    """First row in [start, stop) whose members all have pos < limit; -1 if none. (The
    window search's rescans, over a few sets better or worse than the current one: by
    candidate masks they ran 0.7-0.8 times as fast on a learned 2,000-variable cache and
    on dna, 1.7 times on plants.)"""
    for i in range(start, stop):
        if _fits_before(par_offsets, par_flat, i, pos, limit):
            return i
    return -1


#: Mask words above 128 variables, where the fold is only a filter: 2 words (p mod 128)
#: measured no faster than 1 on dna, book and cwebkb (180-839 variables, ratios
#: 0.9-1.04, part ``masks`` of workflows/benchmarks/search.py), so 1.
FOLD_WORDS = 1


@nb.njit(cache=True, nogil=True)
def mask_words(n):
    """M, the words of ``pmask`` for n variables: exact up to 128 (1 word up to 64, 2 up
    to 128), FOLD_WORDS above."""
    if n <= 64:
        return 1
    if n <= 128:
        return 2
    return FOLD_WORDS


@nb.njit(cache=True, nogil=True)
def set_masks(par_offsets, par_flat, words):
    """(rows, ``words``): per row, member p sets bit p mod 64 of word (p // 64) mod
    ``words`` (``words`` in {1, 2}). ``pmask`` is this, or its column for one word."""
    m = par_offsets.shape[0] - 1
    out = np.zeros((m, words), dtype=np.uint64)
    for i in range(m):
        for t in range(par_offsets[i], par_offsets[i + 1]):
            p = par_flat[t]
            out[i, (p >> 6) & (words - 1)] |= _ONE << np.uint64(p & 63)
    return out


def _fold(pmask, f0, f1, v):
    """(f0, f1) with v folded in."""


def _misses(pmask, i, f0, f1):
    """Row i's folded members miss the folded forbidden set (f0, f1)."""


def _words(pmask):
    """M, the words of pmask."""


# One word (M = 1) is a 1-D pmask, two a 2-D one: each compiles to its own code, with
# no test of M in the loops (a run-time test measured ~20% slower on nltcs).
@overload(_fold, inline="always")
def _fold_impl(pmask, f0, f1, v):
    if pmask.ndim == 1:
        return lambda pmask, f0, f1, v: (f0 | (_ONE << np.uint64(v & 63)), f1)

    def fold2(pmask, f0, f1, v):
        b = _ONE << np.uint64(v & 63)
        if (v >> 6) & 1 == 0:
            return f0 | b, f1
        return f0, f1 | b
    return fold2


@overload(_misses, inline="always")
def _misses_impl(pmask, i, f0, f1):
    if pmask.ndim == 1:
        return lambda pmask, i, f0, f1: pmask[i] & f0 == 0
    return lambda pmask, i, f0, f1: (pmask[i, 0] & f0) | (pmask[i, 1] & f1) == 0


@overload(_words, inline="always")
def _words_impl(pmask):
    m = pmask.ndim
    return lambda pmask: m


@nb.njit(cache=True, nogil=True, inline="always")
def _exact(pmask, n):
    return n <= 64 * _words(pmask)


@nb.njit(cache=True, nogil=True, inline="always")
def first_fit_masked(par_offsets, par_flat, pmask, start, stop, pos, limit, f0, f1, exact):
    """:func:`first_fit`, where (f0, f1) fold the variables with pos >= limit."""
    for i in range(start, stop):
        if _misses(pmask, i, f0, f1):
            return i
        if not exact and _fits_before(par_offsets, par_flat, i, pos, limit):
            return i
    return -1


@nb.njit(cache=True, nogil=True, inline="always")
def _contains(par_offsets, par_flat, i, x):
    for t in range(par_offsets[i], par_offsets[i + 1]):
        if par_flat[t] == x:
            return True
    return False


# ------------------------------------------------------------------ candidate masks
#: OBS and the bitsets pass scan a variable with more sets than this by its candidate
#: masks, one with fewer by the members of its sets (the search and block passes always
#: use the masks: no loss measured on learned caches). On caches learned by independence
#: selection (~7 sets per variable) the masks ran OBS 0.7 and the bitsets pass 0.9 times
#: as fast; on BLIP's caches (230-610 sets per variable) 1.2-2.4 times; neutral on dna
#: (35). The swaps, whose scans are short, read members.
CAND_FROM = 32
#: Bit 63 of a candidate mask: the set has a member beyond its variable's first 63
#: candidates (read its members to test it).
OVERFLOW = np.uint64(1) << np.uint64(63)


@nb.njit(cache=True, nogil=True)
def candidate_masks(offsets, par_offsets, par_flat):
    """Per variable v, its candidates: the distinct members of its sets in order of
    first appearance, best set first, ``cand[cand_off[v]:cand_off[v + 1]]`` (at most
    63); ``cmask[i]`` has bit j when set i of v holds candidate j, and bit 63
    (``OVERFLOW``) when it holds a member beyond the first 63. Returns (cand_off, cand,
    cmask). Exact per variable, unlike the folded ``pmask``.

    The candidate scan (in :func:`obs_assign` and the ASOBS passes, written out in each:
    a generic scan taking the test as a function, or the test's arrays as a tuple, ran
    1.3-2.4 times slower): over the sets of v, best first, keep ``bad`` (candidates found
    forbidden) and ``fine`` (found allowed, with the OVERFLOW bit); a set meeting ``bad``
    is skipped by one AND; its other unknown candidates are tested once each; a set with
    the OVERFLOW bit has its members tested too; the first set with no forbidden member
    is taken.
    """
    n = offsets.shape[0] - 1
    cmask = np.zeros(par_offsets.shape[0] - 1, dtype=np.uint64)
    cand_off = np.zeros(n + 1, dtype=np.int64)
    cand = np.empty(min(par_flat.shape[0], 63 * n), dtype=np.int64)
    slot = np.full(n, -1, dtype=np.int64)
    nc = 0
    for v in range(n):
        cand_off[v] = nc
        c = 0
        for i in range(offsets[v], offsets[v + 1]):
            m = np.uint64(0)
            for t in range(par_offsets[i], par_offsets[i + 1]):
                p = par_flat[t]
                if slot[p] < 0 and c < 63:
                    slot[p] = c
                    cand[nc + c] = p
                    c += 1
                m |= _ONE << np.uint64(slot[p]) if slot[p] >= 0 else OVERFLOW
            cmask[i] = m
        for j in range(c):
            slot[cand[nc + j]] = -1
        nc += c
    cand_off[n] = nc
    return cand_off, cand[:nc].copy(), cmask


# ---------------------------------------------------------------------------- OBS
@nb.njit(cache=True, nogil=True)
def obs_assign(order, offsets, par_offsets, par_flat, pmask, cand_off, cand, cmask, scores,
               pos, chosen):
    """Best consistent set per variable for ``order``; fills pos and chosen (OUT).

    Returns the total score (summed in variable order). Above 128 variables, on caches
    of more than ``CAND_FROM`` sets per variable on average, :func:`_obs_assign_cand`.
    """
    n = order.shape[0]
    exact = _exact(pmask, n)
    if not exact and offsets[n] > CAND_FROM * n:
        return _obs_assign_cand(order, offsets, par_offsets, par_flat, pmask, cand_off, cand,
                                cmask, scores, pos, chosen)
    for k in range(n):
        pos[order[k]] = k
    f0 = np.uint64(0)  # (f0, f1) fold the variables at positions >= k
    f1 = np.uint64(0)
    for k in range(n - 1, -1, -1):
        v = order[k]
        f0, f1 = _fold(pmask, f0, f1, v)
        chosen[v] = first_fit_masked(par_offsets, par_flat, pmask, offsets[v],
                                     offsets[v + 1], pos, k, f0, f1, exact)
    total = 0.0
    for v in range(n):
        total += scores[chosen[v]]
    return total


@nb.njit(cache=True, nogil=True)
def _obs_assign_cand(order, offsets, par_offsets, par_flat, pmask, cand_off, cand, cmask,
                     scores, pos, chosen):
    """:func:`obs_assign` scanning the variables of more than ``CAND_FROM`` sets by their
    candidate masks (a function of its own: with both scans in one loop, the member
    scan ran 0.83 times as fast on caches where no variable has that many sets)."""
    n = order.shape[0]
    for k in range(n):
        pos[order[k]] = k
    f0 = np.uint64(0)
    f1 = np.uint64(0)
    for k in range(n - 1, -1, -1):
        v = order[k]
        f0, f1 = _fold(pmask, f0, f1, v)
        if offsets[v + 1] - offsets[v] <= CAND_FROM:
            chosen[v] = first_fit_masked(par_offsets, par_flat, pmask, offsets[v],
                                         offsets[v + 1], pos, k, f0, f1, False)
            continue
        bad = np.uint64(0)  # the candidate scan (see candidate_masks)
        fine = OVERFLOW
        c0 = cand_off[v]
        for i in range(offsets[v], offsets[v + 1]):
            m = cmask[i]
            if m & bad:
                continue
            u = m & ~fine
            ok = True
            while u:
                j = trailing_zeros(u)
                b = _ONE << np.uint64(j)
                u &= u - _ONE
                if pos[cand[c0 + j]] >= k:
                    bad |= b
                    ok = False
                    break
                fine |= b
            if ok and m & OVERFLOW:
                ok = _fits_before(par_offsets, par_flat, i, pos, k)
            if ok:
                chosen[v] = i
                break
    total = 0.0
    for v in range(n):
        total += scores[chosen[v]]
    return total


@nb.njit(cache=True, nogil=True)
def try_swap(k, order, pos, chosen, offsets, par_offsets, par_flat, pmask, suf, scores,
             apply):
    """Gain of swapping the variables at positions k and k+1 (applied if ``apply`` and
    the gain exceeds EPS; 0 when a keeps its set, whatever b loses: the swap cannot
    gain then). Only the two families change. ``suf[j]`` (n + 1, 2) folds
    the variables at positions >= j (``suf[n]`` = 0); the caller updates ``suf[k + 1]``
    when the swap is applied."""
    exact = _exact(pmask, order.shape[0])
    a = order[k]
    b = order[k + 1]
    ca = chosen[a]
    cb = chosen[b]
    # a moves to k+1: it may now take b; only sets better than its current one matter
    pos[a] = k + 1
    pos[b] = k
    f0, f1 = _fold(pmask, suf[k + 2, 0], suf[k + 2, 1], a)
    na = first_fit_masked(par_offsets, par_flat, pmask, offsets[a], ca, pos, k + 1, f0, f1,
                          exact)
    if na < 0:
        # a keeps its set and b can only lose a: no gain. b's rescan is skipped (from a
        # topological order half the pairs tried are parent and child, and their
        # rescans took half of the swaps' time on 10,000 variables)
        pos[a] = k
        pos[b] = k + 1
        return 0.0
    # b moves to k: it loses a
    nb_ = cb
    if _contains(par_offsets, par_flat, cb, a):
        f0, f1 = _fold(pmask, f0, f1, b)
        nb_ = first_fit_masked(par_offsets, par_flat, pmask, cb + 1, offsets[b + 1], pos, k,
                               f0, f1, exact)
    gain = (scores[na] + scores[nb_]) - (scores[ca] + scores[cb])
    if apply and gain > EPS:
        order[k] = b
        order[k + 1] = a
        chosen[a] = na
        chosen[b] = nb_
    else:
        pos[a] = k
        pos[b] = k + 1
    return gain


@nb.njit(cache=True, nogil=True)
def swap_search(order, pos, chosen, offsets, par_offsets, par_flat, pmask, scores,
                max_sweeps):
    """Adjacent swaps that improve, sweep after sweep, until none does (or
    ``max_sweeps``). Returns the total gain.

    The gain of the swap at k depends only on the SET of variables before k and on the
    two variables at k and k+1, so it changes only when a swap is applied at k-1, k or
    k+1: a position whose swap did not improve is skipped until then (``clean``). The
    swaps applied, and their sequence, are those of plain sweeps.
    """
    n = order.shape[0]
    total = 0.0
    clean = np.zeros(max(n - 1, 0), dtype=np.bool_)
    suf = np.zeros((n + 1, 2), dtype=np.uint64)
    for k in range(n - 1, -1, -1):
        suf[k, 0], suf[k, 1] = _fold(pmask, suf[k + 1, 0], suf[k + 1, 1], order[k])
    for _ in range(max_sweeps):
        improved = False
        for k in range(n - 1):
            if clean[k]:
                continue
            g = try_swap(k, order, pos, chosen, offsets, par_offsets, par_flat, pmask, suf,
                         scores, True)
            if g > EPS:
                suf[k + 1, 0], suf[k + 1, 1] = _fold(pmask, suf[k + 2, 0], suf[k + 2, 1],
                                                     order[k + 1])
                total += g
                improved = True
                if k > 0:
                    clean[k - 1] = False
                if k + 2 < n:
                    clean[k + 1] = False
            else:
                clean[k] = True
        if not improved:
            break
    return total


# ---------------------------------------------------------------------------- ASOBS
@nb.njit(cache=True, nogil=True)
def asobs_pass(order, offsets, par_offsets, par_flat, pmask, cand_off, cand, cmask, scores,
               anc, desc, tmp_a, tmp_d, chosen):
    """ASOBS for one order; fills chosen (OUT); returns the total score.

    The order is walked from its LAST variable to its first (Scanagatta et al. 2018,
    §3.1: "for each X_j in the order, with j = n, ..., 1"); each variable takes its
    best set with no member among its current descendants. Its predecessors in the
    order are never its descendants, so its OBS choice is always allowed: ASOBS >= OBS
    for the same order. ``anc`` / ``desc`` (n, W) are kept transitively closed: after v takes
    P, every a in A = ∪_{p∈P} {p} ∪ anc(p) gets D = {v} ∪ desc(v) added to desc(a),
    and every d in D gets A added to anc(d). anc, desc, tmp_a, tmp_d are workspaces.
    """
    n = order.shape[0]
    nw = anc.shape[1]
    exact = _exact(pmask, n)
    odd = _words(pmask) - 1  # the mask word of bitset word w is w & odd
    anc[:, :] = 0
    desc[:, :] = 0
    has_child = np.zeros(n, dtype=np.bool_)
    total = 0.0
    for k in range(n - 1, -1, -1):
        v = order[k]
        if exact:  # desc(v) folded: one word test per set
            f0 = np.uint64(0)
            f1 = np.uint64(0)
            for w in range(nw):
                if w & odd:
                    f1 |= desc[v, w]
                else:
                    f0 |= desc[v, w]
            best = offsets[v + 1] - 1
            for i in range(offsets[v], offsets[v + 1]):
                if _misses(pmask, i, f0, f1):
                    best = i
                    break
        elif not has_child[v]:  # nothing descends from v while it has no children
            best = offsets[v]
        elif offsets[v + 1] - offsets[v] > CAND_FROM:  # the candidate scan
            dv = desc[v]
            best = offsets[v + 1] - 1
            bad = np.uint64(0)
            fine = OVERFLOW
            c0 = cand_off[v]
            for i in range(offsets[v], offsets[v + 1]):
                m = cmask[i]
                if m & bad:
                    continue
                u = m & ~fine
                ok = True
                while u:
                    j = trailing_zeros(u)
                    b = _ONE << np.uint64(j)
                    u &= u - _ONE
                    if _bit(dv, cand[c0 + j]):
                        bad |= b
                        ok = False
                        break
                    fine |= b
                if ok and m & OVERFLOW:
                    for t in range(par_offsets[i], par_offsets[i + 1]):
                        if _bit(dv, par_flat[t]):
                            ok = False
                            break
                if ok:
                    best = i
                    break
        else:
            dv = desc[v]
            best = offsets[v + 1] - 1
            for i in range(offsets[v], offsets[v + 1]):
                ok = True
                for t in range(par_offsets[i], par_offsets[i + 1]):
                    if _bit(dv, par_flat[t]):
                        ok = False
                        break
                if ok:
                    best = i
                    break
        chosen[v] = best
        total += scores[best]
        if par_offsets[best] == par_offsets[best + 1]:
            continue  # no parents: nothing becomes an ancestor of anything
        for w in range(nw):
            tmp_a[w] = 0
            tmp_d[w] = desc[v, w]
        for t in range(par_offsets[best], par_offsets[best + 1]):
            p = par_flat[t]
            has_child[p] = True
            tmp_a[p >> 6] |= _ONE << np.uint64(p & 63)
            for w in range(nw):
                tmp_a[w] |= anc[p, w]
        tmp_d[v >> 6] |= _ONE << np.uint64(v & 63)
        for w in range(nw):
            _or_into_rows(desc, w, tmp_a[w], tmp_d)
        for w in range(nw):
            _or_into_rows(anc, w, tmp_d[w], tmp_a)
    return total


@nb.njit(cache=True, nogil=True, inline="always")
def _or_into_rows(rows, w, x, src):
    """``rows[i] |= src`` for each bit of x, word w of a bitset: i = 64·w + the bit."""
    while x:
        i = (w << 6) + np.int64(trailing_zeros(x))
        x &= x - _ONE
        for u in range(src.shape[0]):
            rows[i, u] |= src[u]


@nb.njit(cache=True, nogil=True)
def asobs_pass_dfs(order, offsets, par_offsets, par_flat, scores, head, nxt, kid, stamp,
                   stack, chosen):
    """ASOBS for one order, as :func:`asobs_pass`, finding each variable's current
    descendants by a depth-first search over the children lists instead of keeping
    closed bitsets: O(|desc(v)|) per variable instead of O((|anc|+|desc|)·n/64), the
    better choice for thousands of variables. Same choices, same result.

    head (n), stamp (n), stack (n) and nxt / kid (at least the total size of the chosen
    sets) are workspaces.
    """
    n = order.shape[0]
    head[:] = -1
    stamp[:] = -1
    ne = 0
    total = 0.0
    for k in range(n - 1, -1, -1):
        v = order[k]
        if head[v] >= 0:  # v has children: mark its descendants with stamp k
            stack[0] = v
            top = 1
            while top > 0:
                top -= 1
                x = stack[top]
                e = head[x]
                while e >= 0:
                    c = kid[e]
                    if stamp[c] != k:
                        stamp[c] = k
                        stack[top] = c
                        top += 1
                    e = nxt[e]
        best = offsets[v + 1] - 1
        for i in range(offsets[v], offsets[v + 1]):
            ok = True
            for t in range(par_offsets[i], par_offsets[i + 1]):
                if stamp[par_flat[t]] == k:
                    ok = False
                    break
            if ok:
                best = i
                break
        chosen[v] = best
        total += scores[best]
        for t in range(par_offsets[best], par_offsets[best + 1]):
            p = par_flat[t]
            kid[ne] = v
            nxt[ne] = head[p]
            head[p] = ne
            ne += 1
    return total


@nb.njit(cache=True, nogil=True)
def asobs_pass_up(order, offsets, par_offsets, par_flat, cand_off, cand, cmask, scores, lab,
                  pbeg, pend, pflat, has_child, stk, nxt_par, run_max, chosen):
    """ASOBS for one order, as :func:`asobs_pass` and :func:`asobs_pass_dfs` (same
    choices), asking "is p a descendant of v?" only for the members p of the sets it
    scans, by a search from p UP its parents, pruned by a label; for thousands of
    variables most answers cost O(1) and no descendant set is enumerated.

    When v = order[k] is processed, the unprocessed variables are order[0..k] and v has
    the largest position among them; v has no parents yet, so p is a descendant of v iff
    v is an ancestor of p, iff M(p) == k, where M(x) is the largest position in ``order``
    of an unprocessed ancestor of x, or of x itself if unprocessed (-1 if none). ``lab[x]``
    records M(x) as last computed (an unprocessed x: its own position, exact), and M(x)
    only decreases; the label obeys, at step k:

    * ``lab[x] < k``: exact (x is not a descendant of v). A value computed from exact
      inputs stays exact until the step equal to it, since only the variable at that
      step can remove its maximum;
    * ``lab[x] == k``: exact, x is v or a descendant of v;
    * ``lab[x] > k``: stale (its recorded ancestor has been processed since).

    One array for both kinds of variable makes each test one load (two arrays, a
    position and a label, ran 1.2-1.4 times slower on the 10,000-variable synthetic
    cache). A set is rejected at once if a member's label says it descends from v;
    otherwise, unless v has no children (``has_child``; then nothing descends from it),
    each stale member p is resolved by a depth-first search over the parents of stale
    variables (exact ones answer at once), which recomputes the label (the max over the
    parents) of every variable it completes; when it meets a label k, every variable on
    its path is a descendant (label k). Each variable's chosen parents are copied to
    ``pflat[pbeg[x]:pend[x]]`` (compact, cache-friendly).

    lab, pbeg, pend, has_child (n; has_child boolean), stk, nxt_par, run_max (n + 1) and
    pflat (at least the total size of the chosen sets) are workspaces.
    """
    n = order.shape[0]
    for k in range(n):
        lab[order[k]] = k
    has_child[:] = False
    npf = 0
    total = 0.0
    for k in range(n - 1, -1, -1):
        v = order[k]
        best = offsets[v]  # nothing descends from v while it has no children
        if has_child[v]:  # the candidate scan, exact labels before any search
            bad = np.uint64(0)
            fine = OVERFLOW
            c0 = cand_off[v]
            for i in range(offsets[v], offsets[v + 1]):
                m = cmask[i]
                if m & bad:
                    continue
                u = m & ~fine
                stale = np.uint64(0)
                ok = True
                while u:
                    j = trailing_zeros(u)
                    b = _ONE << np.uint64(j)
                    u &= u - _ONE
                    a = lab[cand[c0 + j]]
                    if a == k:  # a descendant of v
                        bad |= b
                        ok = False
                        break
                    if a < k:
                        fine |= b
                    else:
                        stale |= b
                while ok and stale:
                    j = trailing_zeros(stale)
                    b = _ONE << np.uint64(j)
                    stale &= stale - _ONE
                    p = cand[c0 + j]
                    if lab[p] == k or (lab[p] > k and _resolve_up(p, k, lab, pbeg, pend, pflat,
                                                                  stk, nxt_par, run_max)):
                        bad |= b
                        ok = False
                    else:
                        fine |= b
                if ok and m & OVERFLOW:
                    for t in range(par_offsets[i], par_offsets[i + 1]):
                        p = par_flat[t]
                        if lab[p] == k or (lab[p] > k and _resolve_up(
                                p, k, lab, pbeg, pend, pflat, stk, nxt_par, run_max)):
                            ok = False
                            break
                if ok:
                    best = i
                    break
        chosen[v] = best
        total += scores[best]
        mx = -1
        pbeg[v] = npf
        for t in range(par_offsets[best], par_offsets[best + 1]):
            q = par_flat[t]
            pflat[npf] = q
            npf += 1
            has_child[q] = True
            mx = max(mx, lab[q])
        pend[v] = npf
        lab[v] = mx
    return total


@nb.njit(cache=True, nogil=True)
def _resolve_up(p, k, lab, pbeg, pend, pflat, stk, nxt_par, run_max):
    """Is the stale p a descendant of order[k]? (see :func:`asobs_pass_up`)."""
    stk[0] = p
    nxt_par[0] = pbeg[p]
    run_max[0] = -1
    top = 1
    while top > 0:
        j = top - 1
        x = stk[j]
        u = nxt_par[j]
        stop = pend[x]
        rm = run_max[j]
        pushed = False
        while u < stop:
            q = pflat[u]
            u += 1
            mq = lab[q]
            if mq > k:  # stale: resolve q first
                nxt_par[j] = u
                run_max[j] = rm
                stk[top] = q
                nxt_par[top] = pbeg[q]
                run_max[top] = -1
                top += 1
                pushed = True
                break
            if mq == k:  # the path found: descendants of v
                for i in range(top):
                    lab[stk[i]] = k
                return True
            rm = max(rm, mq)
        if not pushed:  # all parents of x exact and < k: so is x
            lab[x] = rm
            top = j
            if j > 0 and rm > run_max[j - 1]:
                run_max[j - 1] = rm
    return False


#: ``closure`` of :func:`run_orders`: how an ASOBS pass tracks descendants.
CLOSURE_BITSETS = 0
CLOSURE_SEARCH = 1
CLOSURE_BLOCKS = 2

#: Words of the slot bitsets of :func:`asobs_pass_blocks`: blocks of 64 * BLOCK_WORDS
#: positions. 2, 4, 8 and 16 ran within 15% of each other on the synthetic caches of
#: 3,000-10,000 variables (fewer blocks, wider rows), none ahead in every run; 8 the
#: most often (part ``kernels`` of workflows/benchmarks/asobs_large.py).
BLOCK_WORDS = 8


@nb.njit(cache=True, nogil=True)
def asobs_pass_blocks(order, offsets, par_offsets, par_flat, cand_off, cand, cmask, scores,
                      rec, bits, pflat, has_child, stk, nxt, anc, desc, tmp, chosen):
    """ASOBS for one order, as :func:`asobs_pass` and :func:`asobs_pass_dfs` (same
    choices), for thousands of variables: closed bitsets over a block of positions
    only, and per variable the block members among its ancestors.

    The order is walked from its last position to its first in blocks of B = 64·W
    positions (W = ``bits.shape[1]``). When v = order[k] is processed it has no parents
    yet, so p is a descendant of v iff some path v → p exists among the chosen sets. At
    the start of a block, every variable processed before it (position above the block)
    gets ``bits[x]``: the block positions among its ancestors at that time, computed on
    demand by a depth-first search up its chosen parents, memoised per block (a block
    variable counts as its own bit: it has no parents yet). Inside the block, closed
    ancestor and descendant bitsets ``anc`` / ``desc`` (B, W), indexed by slot (position
    − block start), follow the sets chosen since the block began. Then p, processed,
    descends from v iff ``bits[p]`` meets D = {v} ∪ desc(v): take the last block
    variable u on a path v → p; the path after u only enters variables processed before
    the block (the edges chosen inside it all end at block variables), so u is in
    ``bits[p]``, and u = v or u descends from v. A member processed inside the block
    is tested against D directly; unprocessed members (position < k) have no parents
    and never descend from v. After v takes P, A = the slots of the members of P and
    their ancestors (``bits`` of each, closed with ``anc`` over the processed slots)
    gains D in ``desc`` (of its unprocessed slots: ``desc`` is read for those only),
    and every d in D gains A in ``anc``.

    The ancestor searches cost O(processed variables + their parents) per block, n / B
    times per order, instead of searches from the stale members of every scanned set
    (:func:`asobs_pass_up`: 1.3-1.7 times slower on the synthetic caches of 3,000-10,000
    variables, 2.2-2.6 times faster on caches learned from data, whose chains of
    descendants are short).

    rec (n, 4): per variable its chosen parents ``pflat[rec[x, 0]:rec[x, 1]]``, its
    position and the block its ``bits`` are for; bits (n, W); pflat (at least the total
    size of the chosen sets); has_child (n, boolean); stk, nxt (n + 1); anc, desc
    (B, W); tmp (2, W): workspaces.
    """
    n = order.shape[0]
    nw = bits.shape[1]
    nb_ = 64 * nw
    a_set = tmp[0]
    d_set = tmp[1]
    for k in range(n):
        rec[order[k], 2] = k
        rec[order[k], 3] = -1
    has_child[:] = False
    npf = 0
    total = 0.0
    for k in range(n - 1, -1, -1):
        v = order[k]
        blk = k // nb_
        base = blk * nb_
        top = min(base + nb_ - 1, n - 1)
        if k == top:
            anc[:, :] = 0
            desc[:, :] = 0
        sv = k - base
        search = has_child[v]
        w_lo = sv >> 6  # D = {v} ∪ desc(v), in words w_lo .. w_hi - 1
        w_hi = w_lo + 1
        for w in range(nw):
            d_set[w] = desc[sv, w]
            if d_set[w]:
                w_lo = min(w_lo, w)
                w_hi = max(w_hi, w + 1)
        d_set[sv >> 6] |= _ONE << np.uint64(sv & 63)
        best = offsets[v]  # nothing descends from v while it has no children
        if search:  # the candidate scan, block members before block searches
            bad = np.uint64(0)
            fine = OVERFLOW
            c0 = cand_off[v]
            for i in range(offsets[v], offsets[v + 1]):
                m = cmask[i]
                if m & bad:
                    continue
                u = m & ~fine
                before = np.uint64(0)
                ok = True
                while u:
                    j = trailing_zeros(u)
                    b = _ONE << np.uint64(j)
                    u &= u - _ONE
                    pp = rec[cand[c0 + j], 2]
                    if pp > top:  # processed before the block
                        before |= b
                    elif pp >= k and _bit(d_set, pp - base):  # in D
                        bad |= b
                        ok = False
                        break
                    else:  # unprocessed (no parents) or processed in the block, not in D
                        fine |= b
                while ok and before:
                    j = trailing_zeros(before)
                    b = _ONE << np.uint64(j)
                    before &= before - _ONE
                    if _descends_blocks(cand[c0 + j], k, top, base, blk, rec, bits, pflat,
                                        stk, nxt, d_set, w_lo, w_hi):
                        bad |= b
                        ok = False
                    else:
                        fine |= b
                if ok and m & OVERFLOW:
                    for t in range(par_offsets[i], par_offsets[i + 1]):
                        if _descends_blocks(par_flat[t], k, top, base, blk, rec, bits,
                                            pflat, stk, nxt, d_set, w_lo, w_hi):
                            ok = False
                            break
                if ok:
                    best = i
                    break
        chosen[v] = best
        total += scores[best]
        rec[v, 0] = npf
        for w in range(nw):
            a_set[w] = 0
        for t in range(par_offsets[best], par_offsets[best + 1]):
            q = par_flat[t]
            pflat[npf] = q
            npf += 1
            has_child[q] = True
            _block_bits(q, blk, top, base, rec, bits, pflat, stk, nxt)
            for w in range(nw):
                a_set[w] |= bits[q, w]
        rec[v, 1] = npf
        if npf == rec[v, 0]:
            continue  # no parents: nothing becomes an ancestor of anything
        # close A with the ancestors of its processed block members (slots above sv;
        # anc is read for processed slots only, desc for unprocessed ones only)
        for w in range(nw):
            x = a_set[w] & _above(sv, w)
            while x:
                s = (w << 6) + np.int64(trailing_zeros(x))
                x &= x - _ONE
                for u in range(nw):
                    a_set[u] |= anc[s, u]
        for w in range(sv >> 6, -1, -1):  # unprocessed ancestors gain D
            _or_into_rows(desc, w, a_set[w] & ~_above(sv, w), d_set)
        for w in range(nw):  # D, processed now, gains A
            _or_into_rows(anc, w, d_set[w], a_set)
    return total


@nb.njit(cache=True, nogil=True, inline="always")
def _descends_blocks(p, k, top, base, blk, rec, bits, pflat, stk, nxt, d_set, w_lo, w_hi):
    """Does p descend from v = order[k]? (see :func:`asobs_pass_blocks`): never if
    unprocessed, iff in D if processed in the block, iff its block bits meet D if
    processed before it."""
    pp = rec[p, 2]
    if pp < k:
        return False
    if pp <= top:
        return _bit(d_set, pp - base) != 0
    _block_bits(p, blk, top, base, rec, bits, pflat, stk, nxt)
    for w in range(w_lo, w_hi):
        if bits[p, w] & d_set[w]:
            return True
    return False


@nb.njit(cache=True, nogil=True, inline="always")
def _above(sv, w):
    """The bits of word w for slots above sv."""
    lo = w << 6
    if sv < lo:
        return ~np.uint64(0)
    if sv >= lo + 63:
        return np.uint64(0)
    return ~((_ONE << np.uint64(sv - lo + 1)) - _ONE)


@nb.njit(cache=True, nogil=True, inline="always")
def _block_bits(p, blk, top, base, rec, bits, pflat, stk, nxt):
    """Fill ``bits[p]`` for block ``blk`` if not yet (see :func:`asobs_pass_blocks`):
    a variable of position <= top its own slot bit (or none, below the block), one
    processed before the block the union over its parents, by an iterative depth-first
    search memoised in ``rec[:, 3]``."""
    if rec[p, 3] == blk:
        return
    nw = bits.shape[1]
    rec[p, 3] = blk
    if rec[p, 2] <= top:
        _own_bit(p, rec[p, 2], base, bits)
        return
    stk[0] = p
    nxt[0] = rec[p, 0]
    d = 1
    while d > 0:
        x = stk[d - 1]
        u = nxt[d - 1]
        stop = rec[x, 1]
        pushed = False
        while u < stop:
            q = pflat[u]
            u += 1
            if rec[q, 3] != blk:
                rec[q, 3] = blk
                pq = rec[q, 2]
                if pq > top:  # processed before the block: its parents first
                    nxt[d - 1] = u
                    stk[d] = q
                    nxt[d] = rec[q, 0]
                    d += 1
                    pushed = True
                    break
                _own_bit(q, pq, base, bits)
        if not pushed:
            # every parent of x done: bits[x] = the union of theirs, a parent's row at a
            # time (a word at a time over all the parents ran 1.1x slower)
            b0 = rec[x, 0]
            b1 = rec[x, 1]
            for w in range(nw):
                bits[x, w] = 0
            for t in range(b0, b1):
                q = pflat[t]
                for w in range(nw):
                    bits[x, w] |= bits[q, w]
            d -= 1


@nb.njit(cache=True, nogil=True, inline="always")
def _own_bit(q, pq, base, bits):
    """``bits[q]`` of a variable not processed before the block (position pq): its own
    slot's bit in the block, none below it (it has no parents yet)."""
    for w in range(bits.shape[1]):
        bits[q, w] = 0
    if pq >= base:
        s = pq - base
        bits[q, s >> 6] = _ONE << np.uint64(s & 63)


@nb.njit(cache=True, nogil=True)
def blocks_workspace(n, max_size, words):
    """The workspaces of :func:`asobs_pass_blocks` for n variables, sets of at most
    ``max_size`` members and slot rows of ``words`` words, in its argument order: rec,
    bits, pflat, has_child, stk, nxt, anc, desc, tmp."""
    b = 64 * words
    return (np.empty((n, 4), dtype=np.int64), np.empty((n, words), dtype=np.uint64),
            np.empty(n * max_size + 1, dtype=np.int64), np.empty(n, dtype=np.bool_),
            np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64),
            np.empty((b, words), dtype=np.uint64), np.empty((b, words), dtype=np.uint64),
            np.empty((2, words), dtype=np.uint64))


# ---------------------------------------------------------------------------- orders
@nb.njit(cache=True, nogil=True)
def topological_order_near(order, chosen, par_offsets, par_flat, out):
    """A topological order of the DAG ``chosen`` that follows ``order`` where it can
    (Kahn's algorithm, ready variables taken by their position in ``order``)."""
    n = order.shape[0]
    rank = np.empty(n, dtype=np.int64)
    for k in range(n):
        rank[order[k]] = k
    indeg = np.zeros(n, dtype=np.int64)
    n_children = np.zeros(n + 1, dtype=np.int64)
    for v in range(n):
        i = chosen[v]
        indeg[v] = par_offsets[i + 1] - par_offsets[i]
        for t in range(par_offsets[i], par_offsets[i + 1]):
            n_children[par_flat[t] + 1] += 1
    for v in range(n):
        n_children[v + 1] += n_children[v]
    fill = n_children[:n].copy()
    kids = np.empty(n_children[n], dtype=np.int64)
    for v in range(n):
        i = chosen[v]
        for t in range(par_offsets[i], par_offsets[i + 1]):
            p = par_flat[t]
            kids[fill[p]] = v
            fill[p] += 1
    heap = np.empty(n, dtype=np.int64)  # min-heap of ranks
    size = 0
    for v in range(n):
        if indeg[v] == 0:
            size = _heap_push(heap, size, rank[v])
    m = 0
    while size > 0:
        r = heap[0]
        size = _heap_pop(heap, size)
        v = order[r]
        out[m] = v
        m += 1
        for t in range(n_children[v], n_children[v + 1]):
            c = kids[t]
            indeg[c] -= 1
            if indeg[c] == 0:
                size = _heap_push(heap, size, rank[c])
    return m  # == n for a DAG


@nb.njit(cache=True, nogil=True, inline="always")
def _heap_push(heap, size, x):
    i = size
    heap[i] = x
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= heap[i]:
            break
        heap[parent], heap[i] = heap[i], heap[parent]
        i = parent
    return size + 1


@nb.njit(cache=True, nogil=True, inline="always")
def _heap_pop(heap, size):
    size -= 1
    heap[0] = heap[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        c = left
        if left + 1 < size and heap[left + 1] < heap[left]:
            c = left + 1
        if heap[i] <= heap[c]:
            break
        heap[i], heap[c] = heap[c], heap[i]
        i = c
    return size


# ---------------------------------------------------------------------------- batches
@nb.njit(cache=True, nogil=True)
def run_orders(orders, use_asobs, use_swaps, max_sweeps, offsets, par_offsets, par_flat,
               scores, out_scores, best_chosen, best_order, closure):
    """Process a batch of sampled orders (rows of ``orders``); returns the index of the
    best one (first among equals) and fills best_chosen (OUT) with its DAG and, when it
    comes from OBS (``use_swaps`` or not ``use_asobs``), best_order (OUT) with the order
    the DAG is consistent with (a bare ASOBS DAG need not be consistent with its sampled
    order: :func:`topological_order_near` gives one; not computed here, as nothing
    reads it in the anytime loop and it cost ~6% of a pass on 10,000 variables).

    Per order: ASOBS (``use_asobs``; ``closure``: CLOSURE_BITSETS, closed bitsets,
    :func:`asobs_pass`; CLOSURE_SEARCH, the labelled search of :func:`asobs_pass_up`;
    CLOSURE_BLOCKS, the block bitsets of :func:`asobs_pass_blocks`) or OBS; then, if
    ``use_swaps``, adjacent swaps from a topological order of the result (after ASOBS:
    OBS on that order would return the ASOBS DAG itself, see :func:`run_orders_masked`).
    :func:`run_orders_masked` with the masks of :func:`set_masks` computed here (drivers
    that call it repeatedly compute them once).
    """
    words = mask_words(orders.shape[1])
    masks = set_masks(par_offsets, par_flat, words)
    cand_off, cand, cmask = candidate_masks(offsets, par_offsets, par_flat)
    max_size = 0
    for i in range(par_offsets.shape[0] - 1):
        max_size = max(max_size, par_offsets[i + 1] - par_offsets[i])
    if words == 1:
        return run_orders_masked(orders, use_asobs, use_swaps, max_sweeps, offsets,
                                 par_offsets, par_flat, masks[:, 0].copy(), cand_off, cand,
                                 cmask, max_size, scores, out_scores, best_chosen, best_order,
                                 closure)
    return run_orders_masked(orders, use_asobs, use_swaps, max_sweeps, offsets, par_offsets,
                             par_flat, masks, cand_off, cand, cmask, max_size, scores,
                             out_scores, best_chosen, best_order, closure)


@nb.njit(cache=True, nogil=True)
def run_orders_masked(orders, use_asobs, use_swaps, max_sweeps, offsets, par_offsets,
                      par_flat, pmask, cand_off, cand, cmask, max_size, scores, out_scores,
                      best_chosen, best_order, closure):
    """:func:`run_orders` given the set masks ``pmask``, the candidate masks (cand_off,
    cand, cmask) of :func:`candidate_masks` and the largest set size ``max_size``
    (computed once by drivers that call it repeatedly: a loop over every set)."""
    n_ord, n = orders.shape
    nw = max(1, (n + 63) // 64)
    pos = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    bits = use_asobs and closure == CLOSURE_BITSETS
    anc = np.empty((n if bits else 0, nw), dtype=np.uint64)
    desc = np.empty((n if bits else 0, nw), dtype=np.uint64)
    tmp_a = np.empty(nw, dtype=np.uint64)
    tmp_d = np.empty(nw, dtype=np.uint64)
    up = use_asobs and closure == CLOSURE_SEARCH
    n_up = n if up else 0
    lab = np.empty(n_up, dtype=np.int64)
    pbeg = np.empty(n_up, dtype=np.int64)
    pend = np.empty(n_up, dtype=np.int64)
    nxt_par = np.empty(n_up + 1, dtype=np.int64)
    run_max = np.empty(n_up + 1, dtype=np.int64)
    pflat = np.empty(n * max_size + 1 if up else 1, dtype=np.int64)
    has_child = np.empty(n_up, dtype=np.bool_)
    stk = np.empty(n_up + 1, dtype=np.int64)
    blocks = use_asobs and closure == CLOSURE_BLOCKS
    wsb = blocks_workspace(n if blocks else 0, max_size, BLOCK_WORDS if blocks else 0)
    best = -1
    best_score = -np.inf
    for r in range(n_ord):
        if use_asobs:
            if up:
                s = asobs_pass_up(orders[r], offsets, par_offsets, par_flat, cand_off, cand,
                                  cmask, scores, lab, pbeg, pend, pflat, has_child, stk,
                                  nxt_par, run_max, chosen)
            elif blocks:
                s = asobs_pass_blocks(orders[r], offsets, par_offsets, par_flat, cand_off,
                                      cand, cmask, scores, wsb[0], wsb[1], wsb[2], wsb[3],
                                      wsb[4], wsb[5], wsb[6], wsb[7], wsb[8], chosen)
            else:
                s = asobs_pass(orders[r], offsets, par_offsets, par_flat, pmask, cand_off,
                               cand, cmask, scores, anc, desc, tmp_a, tmp_d, chosen)
            if use_swaps:
                # the swaps start from the ASOBS DAG and a topological order of it. OBS on
                # that order would return the same DAG: each set better than a variable's
                # holds one of its descendants when it was processed, which stays its
                # descendant and so comes after it in the order (running OBS there took
                # 10% of an order's time on 10,000 variables and changed nothing)
                topological_order_near(orders[r], chosen, par_offsets, par_flat, order)
                for k in range(n):
                    pos[order[k]] = k
        else:
            for k in range(n):
                order[k] = orders[r, k]
            s = obs_assign(order, offsets, par_offsets, par_flat, pmask, cand_off, cand, cmask,
                           scores, pos, chosen)
        if use_swaps:
            swap_search(order, pos, chosen, offsets, par_offsets, par_flat, pmask, scores,
                        max_sweeps)
            s = 0.0
            for v in range(n):
                s += scores[chosen[v]]
        out_scores[r] = s
        if s > best_score:
            best_score = s
            best = r
            for v in range(n):
                best_chosen[v] = chosen[v]
            if use_swaps or not use_asobs:
                for k in range(n):
                    best_order[k] = order[k]
    return best
