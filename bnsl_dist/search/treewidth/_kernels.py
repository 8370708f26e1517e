"""Numba kernels of the bounded-treewidth learners k-G, k-G_ENT and k-MAX.

Inputs are validated by the drivers (:mod:`bnsl_dist.search.treewidth._driver`).

Cache layout (see :mod:`bnsl_dist.cache.parent_sets`): sets of variable v are rows
``offsets[v] .. offsets[v+1]-1``, best first; members of set g are
``par_flat[par_offsets[g]:par_offsets[g+1]]``; ``sizes[g]`` its size. Only sets with
``sizes[g] <= max_size`` (min(k, max_parents)) are ever used.

k-tree layout, same numbering as :class:`bnsl_dist.graph.KTree`: ``cl[c, 0:k]`` are the
members of k-clique ``c``; ids ``0..k`` are the initial clique without member
``0..k``; joining clique c with node x appends k ids, ``cl[c]`` with position p replaced
by x. Per node v the cliques containing it form a linked list over slots
``s = c*k + p``: ``head[v]`` (-1 = none), ``nxt[s]``; ``cnt[v]`` is its length.

Randomness: each iteration seeds its own splitmix64 stream from (seed, iteration), so
a run's DAGs do not depend on how iterations are batched.
"""

from __future__ import annotations

import numba as nb
import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# ---------------------------------------------------------------------- randomness
@nb.njit(cache=True, nogil=True)
def _next(state):
    z = state[0] + _GOLDEN
    state[0] = z
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


@nb.njit(cache=True, nogil=True)
def _uniform(state):
    """A double in [0, 1)."""
    return np.float64(_next(state) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@nb.njit(cache=True, nogil=True)
def _randint(state, n):
    """An int in 0..n-1 (n >= 1)."""
    r = np.int64(_uniform(state) * n)
    return r if r < n else n - 1


@nb.njit(cache=True, nogil=True)
def seed_state(seed, iteration, state):
    """Seed ``state`` (OUT, uint64[1]) for one iteration."""
    state[0] = np.uint64(seed) ^ (np.uint64(iteration + 1) * _M2)
    _next(state)
    _next(state)


@nb.njit(cache=True, nogil=True)
def uniform_order(state, order):
    """Fill ``order`` (OUT) with a uniformly random permutation (Fisher-Yates)."""
    n = order.shape[0]
    for i in range(n):
        order[i] = i
    for i in range(n - 1, 0, -1):
        j = _randint(state, i + 1)
        t = order[i]
        order[i] = order[j]
        order[j] = t


@nb.njit(cache=True, nogil=True)
def weighted_order(state, weights, late, order):
    """Fill ``order`` (OUT): position 0, 1, ... takes each unplaced variable with
    probability proportional to its weight (sequential sampling on a Fenwick tree of
    the weights, O(n log n)); with ``late`` the permutation is reversed (heavy
    variables last)."""
    n = order.shape[0]
    tree = np.zeros(n + 1, dtype=np.float64)
    placed = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        j = i + 1
        while j <= n:
            tree[j] += weights[i]
            j += j & (-j)
    top = 1
    while top * 2 <= n:
        top *= 2
    total = 0.0
    for i in range(n):
        total += weights[i]
    for t in range(n):
        # the smallest index whose prefix sum exceeds u * total
        target = _uniform(state) * total
        idx = 0
        step = top
        while step > 0:
            nxt_i = idx + step
            if nxt_i <= n and tree[nxt_i] <= target:
                idx = nxt_i
                target -= tree[nxt_i]
            step //= 2
        if idx >= n or placed[idx]:  # float rounding: take the nearest unplaced one
            idx = min(idx, n - 1)
            while placed[idx] and idx > 0:
                idx -= 1
            while placed[idx]:
                idx += 1
        placed[idx] = True
        order[(n - 1 - t) if late else t] = idx
        w = weights[idx]
        j = idx + 1
        while j <= n:
            tree[j] -= w
            j += j & (-j)
        total -= w


# ---------------------------------------------------------------------- initial clique
@nb.njit(cache=True, nogil=True)
def clique_dp(offsets, scores, par_offsets, par_flat, sizes, max_size, members, pos, chosen):
    """Exact best DAG over ``members`` (m <= ~18) using cached sets inside them.

    ``pos`` (int64[n], all -1, restored on return) is workspace; ``chosen`` (OUT) gets
    the global set index of each member. Returns the optimum (sum of local scores).

    F(S) = max_{v in S} F(S minus v) + BestScore(v, S minus v) (Silander & Myllymaki).
    """
    m = members.shape[0]
    full = np.int64(1) << m
    for i in range(m):
        pos[members[i]] = i
    bs = np.full((m, full), -np.inf)
    bi = np.full((m, full), -1, dtype=np.int64)
    for i in range(m):
        v = members[i]
        for g in range(offsets[v], offsets[v + 1]):
            if sizes[g] > max_size:
                continue
            mask = np.int64(0)
            ok = True
            for t in range(par_offsets[g], par_offsets[g + 1]):
                j = pos[par_flat[t]]
                if j < 0:
                    ok = False
                    break
                mask |= np.int64(1) << j
            if ok and bi[i, mask] < 0:
                bs[i, mask] = scores[g]
                bi[i, mask] = g
        # best set inside U = max over the exact set U and the best inside U minus one bit
        for u in range(1, full):
            if (u >> i) & 1:
                continue
            rest = u
            while rest:
                low = rest & (-rest)
                rest ^= low
                w = u ^ low
                if bs[i, w] > bs[i, u]:
                    bs[i, u] = bs[i, w]
                    bi[i, u] = bi[i, w]
    f = np.empty(full, dtype=np.float64)
    sink = np.empty(full, dtype=np.int64)
    f[0] = 0.0
    sink[0] = -1
    for s in range(1, full):
        best = -np.inf
        arg = -1
        rest = s
        while rest:
            low = rest & (-rest)
            rest ^= low
            i = 0
            while (np.int64(1) << i) != low:
                i += 1
            val = f[s ^ low] + bs[i, s ^ low]
            if val > best:
                best = val
                arg = i
        f[s] = best
        sink[s] = arg
    s = full - 1
    while s:
        i = sink[s]
        u = s ^ (np.int64(1) << i)
        chosen[members[i]] = bi[i, u]
        s = u
    for i in range(m):
        pos[members[i]] = -1
    return f[full - 1]


# ---------------------------------------------------------------------- k-tree
@nb.njit(cache=True, nogil=True)
def _link(cl, c, k, head, nxt, cnt):
    for p in range(k):
        v = cl[c, p]
        s = c * k + p
        nxt[s] = head[v]
        head[v] = s
        cnt[v] += 1


@nb.njit(cache=True, nogil=True)
def _set_adj(adj, a, b):
    adj[a, b >> 6] |= np.uint64(1) << np.uint64(b & 63)
    adj[b, a >> 6] |= np.uint64(1) << np.uint64(a & 63)


@nb.njit(cache=True, nogil=True)
def init_ktree(members, k, cl, head, nxt, cnt, in_tree, adj, use_adj):
    """Start the k-tree from the (k+1)-clique ``members``; returns the clique count."""
    for j in range(k + 1):
        q = 0
        for i in range(k + 1):
            if i != j:
                cl[j, q] = members[i]
                q += 1
        _link(cl, j, k, head, nxt, cnt)
    for i in range(k + 1):
        in_tree[members[i]] = True
        if use_adj:
            for j in range(i + 1, k + 1):
                _set_adj(adj, members[i], members[j])
    return k + 1


@nb.njit(cache=True, nogil=True)
def join_clique(x, c, k, n_cl, cl, head, nxt, cnt, in_tree, adj, use_adj):
    """Join node x to k-clique c (k new cliques); returns the new clique count."""
    for p in range(k):
        for q in range(k):
            cl[n_cl, q] = cl[c, q]
        cl[n_cl, p] = x
        _link(cl, n_cl, k, head, nxt, cnt)
        n_cl += 1
        if use_adj:
            _set_adj(adj, x, cl[c, p])
    in_tree[x] = True
    return n_cl


@nb.njit(cache=True, nogil=True)
def ktree_arrays(n, k, use_adj):
    """Empty k-tree state for n nodes: ``cl``, ``head``, ``nxt``, ``cnt``, ``in_tree`` and
    the adjacency bitsets ``adj`` (a 1x1 dummy unless ``use_adj``)."""
    max_cl = max((k + 1) + max(0, n - k - 1) * k, 1)
    adj = (np.zeros((n, max(1, (n + 63) // 64)), dtype=np.uint64) if use_adj
           else np.zeros((1, 1), dtype=np.uint64))
    return (np.empty((max_cl, k), dtype=np.int64), np.full(n, -1, dtype=np.int64),
            np.empty(max_cl * k, dtype=np.int64), np.zeros(n, dtype=np.int64),
            np.zeros(n, dtype=np.bool_), adj)


@nb.njit(cache=True, nogil=True)
def build_ktree(ins, attach, k, cl, head, nxt, cnt, in_tree, adj, use_adj):
    """The whole k-tree of an insertion order and its joined-clique ids (the initial
    k + 1 nodes, then ``ins[t]`` joining ``attach[t]``); requires n > k. Returns the
    clique count."""
    n_cl = init_ktree(ins[:k + 1], k, cl, head, nxt, cnt, in_tree, adj, use_adj)
    for t in range(k + 1, ins.shape[0]):
        n_cl = join_clique(ins[t], attach[t], k, n_cl, cl, head, nxt, cnt, in_tree, adj,
                           use_adj)
    return n_cl


@nb.njit(cache=True, nogil=True)
def choose_fitting(g, par_offsets, par_flat, k, n_cl, cl, head, nxt, cnt, buf, state):
    """A uniformly random k-clique containing every member of set g (-1 if none).

    The cliques of the member with the fewest are scanned and intersected with the
    other members (per-node clique lists, as docs/ALGORITHMS.md §5 asks).
    """
    a = par_offsets[g]
    b = par_offsets[g + 1]
    if a == b:
        return _randint(state, n_cl)
    piv = par_flat[a]
    for t in range(a + 1, b):
        if cnt[par_flat[t]] < cnt[piv]:
            piv = par_flat[t]
    nbuf = 0
    s = head[piv]
    while s >= 0:
        c = s // k
        ok = True
        for t in range(a, b):
            p = par_flat[t]
            if p == piv:
                continue
            found = False
            for q in range(k):
                if cl[c, q] == p:
                    found = True
                    break
            if not found:
                ok = False
                break
        if ok:
            buf[nbuf] = c
            nbuf += 1
        s = nxt[s]
    if nbuf == 0:
        return -1
    return buf[_randint(state, nbuf)]


@nb.njit(cache=True, nogil=True)
def clear_ktree(ins, n_in, k, cl, head, nxt, cnt, in_tree, adj, use_adj):
    """Reset the per-node state of the nodes ``ins[:n_in]`` for the next iteration."""
    for i in range(n_in):
        v = ins[i]
        if use_adj and k == 1:  # an edge of a 1-tree lies in no 1-clique: clear the row
            for w in range(adj.shape[1]):
                adj[v, w] = np.uint64(0)
        elif use_adj:  # for k >= 2 every k-tree edge lies in some k-clique
            s = head[v]
            while s >= 0:
                c = s // k
                for q in range(k):
                    u = cl[c, q]
                    adj[v, u >> 6] &= ~(np.uint64(1) << np.uint64(u & 63))
                s = nxt[s]
    for i in range(n_in):
        v = ins[i]
        head[v] = -1
        cnt[v] = 0
        in_tree[v] = False


@nb.njit(cache=True, nogil=True)
def _feasible(g, par_offsets, par_flat, in_tree, adj):
    """Set g lies in a k-clique iff its members are in the tree and pairwise adjacent
    (every clique of a k-tree lies in a (k+1)-clique, all of whose k-subsets are
    k-cliques of the tree); the caller has checked |g| <= k."""
    a = par_offsets[g]
    b = par_offsets[g + 1]
    for t in range(a, b):
        if not in_tree[par_flat[t]]:
            return False
    for t in range(a, b):
        p = par_flat[t]
        for t2 in range(t + 1, b):
            q = par_flat[t2]
            if not (adj[p, q >> 6] >> np.uint64(q & 63)) & np.uint64(1):
                return False
    return True


# ---------------------------------------------------------------------- k-G
@nb.njit(cache=True, nogil=True)
def kg_batch(offsets, scores, par_offsets, par_flat, sizes, k, max_size, weights, late,
             seed, it0, threshold, out_scores, best_chosen, best_ins, best_attach):
    """Run iterations ``it0, it0+1, ..`` of k-G (k-G_ENT when ``weights`` is non-empty)
    until one scores above ``threshold`` or ``len(out_scores)`` have run.

    ``out_scores`` (OUT) gets each iteration's DAG score. On an improvement its chosen
    set indices, insertion order and attach clique ids go to ``best_*`` (OUT) and its
    offset in the batch is returned; else -1 (every iteration ran). Stopping at the
    first improvement makes the improving iterations those of the running maximum,
    whatever the batch sizes (``threshold=inf`` runs the whole batch)."""
    n = offsets.shape[0] - 1
    m = min(k + 1, n)
    cl, head, nxt, cnt, in_tree, adj = ktree_arrays(n, k, True)
    pos = np.full(n, -1, dtype=np.int64)
    buf = np.empty(cl.shape[0], dtype=np.int64)
    order = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    attach = np.full(n, -1, dtype=np.int64)
    state = np.zeros(1, dtype=np.uint64)
    for it in range(out_scores.shape[0]):
        seed_state(seed, it0 + it, state)
        if weights.shape[0] == 0:
            uniform_order(state, order)
        else:
            weighted_order(state, weights, late, order)
        total = clique_dp(offsets, scores, par_offsets, par_flat, sizes, max_size,
                          order[:m], pos, chosen)
        if n > k:
            n_cl = init_ktree(order[:m], k, cl, head, nxt, cnt, in_tree, adj, True)
            for t in range(m, n):
                x = order[t]
                g = offsets[x + 1] - 1
                for h in range(offsets[x], offsets[x + 1]):
                    if sizes[h] <= max_size and _feasible(h, par_offsets, par_flat, in_tree,
                                                          adj):
                        g = h
                        break
                chosen[x] = g
                total += scores[g]
                c = choose_fitting(g, par_offsets, par_flat, k, n_cl, cl, head, nxt, cnt,
                                   buf, state)
                attach[t] = c
                n_cl = join_clique(x, c, k, n_cl, cl, head, nxt, cnt, in_tree, adj, True)
            clear_ktree(order, n, k, cl, head, nxt, cnt, in_tree, adj, True)
        out_scores[it] = total
        if total > threshold:
            best_chosen[:] = chosen
            best_ins[:] = order
            best_attach[:] = attach
            return it
    return -1


# ---------------------------------------------------------------------- k-MAX
@nb.njit(cache=True, nogil=True)
def _h(g, v, scores, smin, smax):
    span = smax[v] - smin[v]
    if span <= 0.0:
        return 1.0
    return (scores[g] - smin[v]) / span


@nb.njit(cache=True, nogil=True)
def kmax_initial_clique(state, n, m, cand_offsets, cand_flat, members, mark, pool, pool_pos):
    """Fill ``members`` (OUT, m) as k-MAX's initial clique: a random variable, then
    random members of the pool of candidate parents of the chosen variables (a random
    new variable when the pool is empty). ``mark``/``pool_pos`` are clean on return."""
    n_pool = 0
    x = _randint(state, n)
    for i in range(m):
        if i > 0:
            if n_pool > 0:
                j = _randint(state, n_pool)
                x = pool[j]
                n_pool -= 1
                pool[j] = pool[n_pool]
                pool_pos[pool[j]] = j
                pool_pos[x] = -1
            else:
                x = _randint(state, n)
                while mark[x]:
                    x = _randint(state, n)
        members[i] = x
        mark[x] = True
        for t in range(cand_offsets[x], cand_offsets[x + 1]):
            y = cand_flat[t]
            if not mark[y] and pool_pos[y] < 0:
                pool[n_pool] = y
                pool_pos[y] = n_pool
                n_pool += 1
    for j in range(n_pool):
        pool_pos[pool[j]] = -1
    for i in range(m):
        mark[members[i]] = False


@nb.njit(cache=True, nogil=True)
def kmax_batch(offsets, scores, par_offsets, par_flat, sizes, k, max_size, owner,
               inv_offsets, inv_sets, cand_offsets, cand_flat, smin, smax, seed, it0,
               threshold, out_scores, best_chosen, best_ins, best_attach):
    """Run iterations ``it0 ..`` of k-MAX (stopping rule and outputs as :func:`kg_batch`).

    Each iteration: the initial clique (:func:`kmax_initial_clique`) solved exactly;
    then repeatedly the outside variable X of largest
    h(X) = (s_feas(X) - s_min(X)) / (s_max(X) - s_min(X)) (ties: a random rank) takes
    its best fitting set ``cur[X]`` and joins a random k-clique containing it. Only sets
    containing the new node and inside the new (k+1)-clique can become feasible, so
    ``cur`` is updated through the inverted index ``inv_sets`` (the sets containing a
    node, ascending) for those sets only.
    """
    n = offsets.shape[0] - 1
    m = min(k + 1, n)
    cl, head, nxt, cnt, in_tree, adj = ktree_arrays(n, k, False)
    pos = np.full(n, -1, dtype=np.int64)
    buf = np.empty(cl.shape[0], dtype=np.int64)
    mark = np.zeros(n, dtype=np.bool_)
    pool = np.empty(n, dtype=np.int64)
    pool_pos = np.full(n, -1, dtype=np.int64)
    members = np.empty(m, dtype=np.int64)
    ins = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    attach = np.full(n, -1, dtype=np.int64)
    cur = np.empty(n, dtype=np.int64)
    hv = np.empty(n, dtype=np.float64)
    rank = np.empty(n, dtype=np.float64)
    rem = np.empty(n, dtype=np.int64)
    state = np.zeros(1, dtype=np.uint64)
    for it in range(out_scores.shape[0]):
        seed_state(seed, it0 + it, state)
        kmax_initial_clique(state, n, m, cand_offsets, cand_flat, members, mark, pool,
                            pool_pos)
        total = clique_dp(offsets, scores, par_offsets, par_flat, sizes, max_size, members,
                          pos, chosen)
        for i in range(m):
            ins[i] = members[i]
        if n > k:
            n_cl = init_ktree(members, k, cl, head, nxt, cnt, in_tree, adj, False)
            n_rem = 0
            for v in range(n):
                rank[v] = _uniform(state)
                if in_tree[v]:
                    continue
                rem[n_rem] = v
                n_rem += 1
                g = offsets[v + 1] - 1
                for h in range(offsets[v], offsets[v + 1]):
                    if sizes[h] > max_size:
                        continue
                    ok = True
                    for t in range(par_offsets[h], par_offsets[h + 1]):
                        if not in_tree[par_flat[t]]:
                            ok = False
                            break
                    if ok:
                        g = h
                        break
                cur[v] = g
                hv[v] = _h(g, v, scores, smin, smax)
            for t in range(m, n):
                j = 0
                for r in range(1, n_rem):
                    a = rem[r]
                    b = rem[j]
                    if hv[a] > hv[b] or (hv[a] == hv[b] and rank[a] < rank[b]):
                        j = r
                x = rem[j]
                n_rem -= 1
                rem[j] = rem[n_rem]
                g = cur[x]
                chosen[x] = g
                total += scores[g]
                c = choose_fitting(g, par_offsets, par_flat, k, n_cl, cl, head, nxt, cnt,
                                   buf, state)
                ins[t] = x
                attach[t] = c
                # the new (k+1)-clique: cl[c] plus x
                for q in range(k):
                    mark[cl[c, q]] = True
                mark[x] = True
                n_cl = join_clique(x, c, k, n_cl, cl, head, nxt, cnt, in_tree, adj, False)
                for s in range(inv_offsets[x], inv_offsets[x + 1]):
                    h = inv_sets[s]
                    y = owner[h]
                    if in_tree[y] or h >= cur[y] or sizes[h] > max_size:
                        continue
                    ok = True
                    for u in range(par_offsets[h], par_offsets[h + 1]):
                        if not mark[par_flat[u]]:
                            ok = False
                            break
                    if ok:
                        cur[y] = h
                        hv[y] = _h(h, y, scores, smin, smax)
                for q in range(k):
                    mark[cl[c, q]] = False
                mark[x] = False
            clear_ktree(ins, n, k, cl, head, nxt, cnt, in_tree, adj, False)
        out_scores[it] = total
        if total > threshold:
            best_chosen[:] = chosen
            best_ins[:] = ins
            best_attach[:] = attach
            return it
    return -1
