"""Numba kernels of tabu local search over DAGs scored from the data (inputs validated by
the driver).

The state of a climb:

* ``adj`` (n, n) bool: ``adj[u, v]`` when u is a parent of v;
* ``fam`` (n,) float64: the local score of every family;
* ``delta`` (n, n) float64, the **move scores**: for ``adj[u, v]`` the change of v's
  score when u is removed from its parents, otherwise the change when u is added
  (``-inf`` when the addition is not allowed: u = v, u not a candidate parent of v, or
  v already has ``max_indegree`` parents). Column v depends on v's parents only, so a
  move rescores only the columns of the families it changes; a reversal u -> v scores
  ``delta[u, v] + delta[v, u]``;
* ``memo``: a typed dict from a family's 64-bit Zobrist key (child key XOR the parents'
  keys) to its score, so a family is counted from the data once.

Counting reuses the parent configuration ids of v's current parents for every added
candidate (one pass over the rows per candidate).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bnsl_dist.scores._kernels import config_ids, score_from_ids
from bnsl_dist.search.ordering._hc_kernels import _below, _is_tabu

ADD, REMOVE, REVERSE = 0, 1, 2
_RADIX_LIMIT = 1 << 40
_EPS = 1e-9


@nb.njit(cache=True, nogil=True)
def _parents(adj, v, out):
    k = 0
    for u in range(adj.shape[0]):
        if adj[u, v]:
            out[k] = u
            k += 1
    return k


@nb.njit(cache=True, nogil=True)
def family_score(codes, arities, v, par, k, kind, ess, log_n, nlogn, memo, key, ids, tmp,
                 counts):
    """Score of v with parents par[:k] (memoised under ``key``)."""
    if key in memo:
        return memo[key]
    qf = 1.0
    for t in range(k):
        qf *= arities[par[t]]
    radix = config_ids(codes, par[:k], arities, ids, tmp)
    s, _ = score_from_ids(codes[:, v], arities[v], ids, radix, kind, ess, qf, log_n, nlogn,
                          tmp, counts)
    memo[key] = s
    return s


@nb.njit(cache=True, nogil=True)
def rescore_column(codes, arities, v, adj, allowed, max_indegree, kind, ess, log_n, nlogn,
                   zc, zp, memo, fam, delta, par, ids, ids2, tmp, counts):
    """Recompute ``fam[v]`` and column v of ``delta`` (OUT) from v's parents in ``adj``."""
    n = adj.shape[0]
    k = _parents(adj, v, par)
    key = zc[v]
    qf = 1.0
    for t in range(k):
        key ^= zp[par[t]]
        qf *= arities[par[t]]
    radix = config_ids(codes, par[:k], arities, ids, tmp)
    if key in memo:
        fv = memo[key]
    else:
        fv, _ = score_from_ids(codes[:, v], arities[v], ids, radix, kind, ess, qf, log_n, nlogn,
                               tmp, counts)
        memo[key] = fv
    fam[v] = fv
    x = codes[:, v]
    r = arities[v]
    n_rows = codes.shape[0]
    for u in range(n):
        if u == v:
            delta[u, v] = -np.inf
        elif adj[u, v]:  # removal: par without u
            j = 0
            for t in range(k):
                if par[t] != u:
                    par[n + j] = par[t]  # the upper half of par is scratch
                    j += 1
            delta[u, v] = family_score(codes, arities, v, par[n:], j, kind, ess, log_n,
                                       nlogn, memo, key ^ zp[u], ids2, tmp, counts) - fv
        elif not allowed[u, v] or k >= max_indegree:
            delta[u, v] = -np.inf
        else:
            ku = key ^ zp[u]
            if ku in memo:
                delta[u, v] = memo[ku] - fv
                continue
            ru = arities[u]
            if radix * ru <= _RADIX_LIMIT:
                col = codes[:, u]
                for t in range(n_rows):
                    ids2[t] = ids[t] + np.int64(col[t]) * radix
                s, _ = score_from_ids(x, r, ids2, radix * ru, kind, ess, qf * ru, log_n, nlogn,
                                      tmp, counts)
                memo[ku] = s
            else:
                for t in range(k):
                    par[n + t] = par[t]
                par[n + k] = u
                s = family_score(codes, arities, v, par[n:], k + 1, kind, ess, log_n, nlogn,
                                 memo, ku, ids2, tmp, counts)
            delta[u, v] = s - fv


@nb.njit(cache=True, nogil=True)
def _reaches(adj, src, dst, seen, stack):
    """Is dst reachable from src along arcs of ``adj``?"""
    n = adj.shape[0]
    seen[:] = False
    top = 1
    stack[0] = src
    seen[src] = True
    while top > 0:
        top -= 1
        x = stack[top]
        for c in range(n):
            if not adj[x, c]:
                continue
            if c == dst:
                return True
            if not seen[c]:
                seen[c] = True
                stack[top] = c
                top += 1
    return False


@nb.njit(cache=True, nogil=True)
def descendants(adj, desc, indeg, queue):
    """Fill ``desc`` (OUT, (n, words) uint64 bitsets) with the proper descendants of
    every node of the DAG ``adj`` (Kahn's order, then children before parents)."""
    n = adj.shape[0]
    for v in range(n):
        indeg[v] = 0
    for u in range(n):
        for v in range(n):
            if adj[u, v]:
                indeg[v] += 1
    head = 0
    tail = 0
    for v in range(n):
        if indeg[v] == 0:
            queue[tail] = v
            tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        for v in range(n):
            if adj[u, v]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    queue[tail] = v
                    tail += 1
    for i in range(n - 1, -1, -1):
        x = queue[i]
        desc[x, :] = 0
        for c in range(n):
            if adj[x, c]:
                desc[x, c >> 6] |= np.uint64(1) << np.uint64(c & 63)
                for w in range(desc.shape[1]):
                    desc[x, w] |= desc[c, w]


@nb.njit(cache=True, nogil=True)
def _reversal_cyclic(adj, desc, u, v):
    """Would reversing the arc u -> v close a cycle, i.e. is there another path u ~> v?"""
    for c in range(adj.shape[0]):
        if c != v and adj[u, c] and _below(desc, c, v):
            return True
    return False


@nb.njit(cache=True, nogil=True)
def best_move(adj, delta, desc, tabu, n_tabu, current, best, out):
    """The best admissible move: acyclic, and not tabu unless it beats ``best``.

    ``desc`` holds the current DAG's descendant bitsets. Writes (type, u, v) into
    ``out`` and returns its score change; returns -inf (and type -1) when no move is
    admissible. Ties: the first in (u, v, type) order.
    """
    n = adj.shape[0]
    bd = -np.inf
    out[0] = -1
    out[1] = -1
    out[2] = -1
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            if adj[u, v]:
                d = delta[u, v]
                if d > bd and (current + d > best + _EPS or not _is_tabu(tabu, n_tabu, u, v)):
                    bd = d
                    out[0], out[1], out[2] = REMOVE, u, v
                d = delta[u, v] + delta[v, u]
                if d > bd and (current + d > best + _EPS or not _is_tabu(tabu, n_tabu, u, v)) \
                        and not _reversal_cyclic(adj, desc, u, v):
                    bd = d
                    out[0], out[1], out[2] = REVERSE, u, v
            elif not adj[v, u]:
                d = delta[u, v]
                if d > bd and (current + d > best + _EPS or not _is_tabu(tabu, n_tabu, u, v)) \
                        and not _below(desc, v, u):
                    bd = d
                    out[0], out[1], out[2] = ADD, u, v
    return bd


@nb.njit(cache=True, nogil=True)
def tabu_steps(codes, arities, adj, best_adj, allowed, max_indegree, kind, ess, log_n, nlogn,
               zc, zp, memo, fam, delta, tabu, state, fstate, max_no_improve, max_steps):
    """Up to ``max_steps`` tabu steps; returns 1 when the climb is over (no admissible
    move, or ``max_no_improve`` steps in a row without a new best), else 0.

    ``state`` (int64, IN/OUT) = [tabu head, tabu count, steps without a new best, steps];
    ``fstate`` (float64, IN/OUT) = [current score, best score of this climb]; ``tabu``
    (L, 2) holds the variable pairs of the last L moves; ``best_adj`` (OUT) the best DAG.
    """
    n = adj.shape[0]
    n_rows = codes.shape[0]
    par = np.empty(2 * n + 2, dtype=np.int64)
    ids = np.empty(n_rows, dtype=np.int64)
    ids2 = np.empty(n_rows, dtype=np.int64)
    tmp = np.empty(n_rows, dtype=np.int64)
    counts = np.empty(max(8 * n_rows, 1 << 14), dtype=np.int64)
    desc = np.zeros((n, (n + 63) >> 6), dtype=np.uint64)
    indeg = np.empty(n, dtype=np.int64)
    queue = np.empty(n, dtype=np.int64)
    mv = np.empty(3, dtype=np.int64)
    tabu_len = tabu.shape[0]
    descendants(adj, desc, indeg, queue)
    for _ in range(max_steps):
        d = best_move(adj, delta, desc, tabu, state[1], fstate[0], fstate[1], mv)
        if mv[0] < 0:
            return 1
        t, u, v = mv[0], mv[1], mv[2]
        if t == ADD:
            adj[u, v] = True
        elif t == REMOVE:
            adj[u, v] = False
        else:
            adj[u, v] = False
            adj[v, u] = True
        descendants(adj, desc, indeg, queue)
        rescore_column(codes, arities, v, adj, allowed, max_indegree, kind, ess, log_n, nlogn,
                       zc, zp, memo, fam, delta, par, ids, ids2, tmp, counts)
        if t == REVERSE:
            rescore_column(codes, arities, u, adj, allowed, max_indegree, kind, ess, log_n,
                           nlogn, zc, zp, memo, fam, delta, par, ids, ids2, tmp, counts)
        fstate[0] += d
        state[3] += 1
        h = state[0]
        tabu[h, 0] = u
        tabu[h, 1] = v
        state[0] = (h + 1) % tabu_len
        state[1] = min(state[1] + 1, tabu_len)
        if fstate[0] > fstate[1] + _EPS * max(1.0, abs(fstate[1])):
            fstate[1] = fstate[0]
            best_adj[:, :] = adj
            state[2] = 0
        else:
            state[2] += 1
            if state[2] >= max_no_improve:
                return 1
    return 0


@nb.njit(cache=True, nogil=True)
def perturb(adj, allowed, max_indegree, pairs, changed):
    """Random restart: toggle the arc u -> v for each row (u, v) of ``pairs`` (remove it
    when present, else add it when allowed and acyclic). ``changed`` (OUT bool) marks the
    children whose parents changed."""
    n = adj.shape[0]
    seen = np.empty(n, dtype=np.bool_)
    stack = np.empty(n + 1, dtype=np.int64)
    for i in range(pairs.shape[0]):
        u, v = pairs[i, 0], pairs[i, 1]
        if u == v:
            continue
        if adj[u, v]:
            adj[u, v] = False
            changed[v] = True
            continue
        if adj[v, u] or not allowed[u, v]:
            continue
        k = 0
        for w in range(n):
            if adj[w, v]:
                k += 1
        if k >= max_indegree or _reaches(adj, v, u, seen, stack):
            continue
        adj[u, v] = True
        changed[v] = True


@nb.njit(cache=True)
def new_memo():
    """An empty family memo (Zobrist key -> score)."""
    return nb.typed.Dict.empty(key_type=nb.types.uint64, value_type=nb.types.float64)


# The memo is touched from Python only through these kernels: a typed Dict's own Python
# methods (len, clear, in, []) compile afresh in every process (numba caches no such
# helper), about a second of each run's start and of every Dask worker's.
@nb.njit(cache=True)
def memo_trim(memo, cap):
    """Empty ``memo`` once it holds more than ``cap`` entries."""
    if len(memo) > cap:
        memo.clear()


@nb.njit(cache=True, nogil=True)
def dag_family_scores(codes, arities, adj, kind, ess, log_n, nlogn, zc, zp, memo, par, ids,
                      tmp, counts):
    """Each variable's family score in the DAG ``adj``: from ``memo``, or scored (and
    memoised) when it does not hold the family."""
    n = adj.shape[0]
    out = np.empty(n, dtype=np.float64)
    for v in range(n):
        k = _parents(adj, v, par)
        key = zc[v]
        for t in range(k):
            key ^= zp[par[t]]
        out[v] = family_score(codes, arities, v, par, k, kind, ess, log_n, nlogn, memo, key,
                              ids, tmp, counts)
    return out
