"""Numba kernels of S2: uniformly sampled k-trees, their informative score, and the DAG
learned inside the best-scoring one (:mod:`bnsl_dist.search.treewidth.s2`).

k-tree and cache layouts, clique numbering and per-iteration randomness are those of
:mod:`bnsl_dist.search.treewidth._kernels`, whose k-tree helpers these kernels reuse.

**Uniform k-trees.** A k-tree on n nodes that contains a given k-clique R (a *Rényi*
k-tree rooted at R) is one-to-one with a labelled tree on the n - k + 1 nodes
{R} ∪ (the others), rooted at R, whose edges not at R carry a label in 1..k (its
*characteristic tree*): a node whose parent is R joins R; a node whose parent is p
joins p's (k+1)-clique minus the member of the clique p joined that the label names.
There are (k(n-k)+1)^(n-k-1) of them. Drawing the tree's Prüfer sequence with entry R
at probability 1/(1 + k(n-k)) and each other node at k/(1 + k(n-k)) gives every tree
probability proportional to the product, over nodes, of k^(children not at R); uniform
labels on top make every (tree, labels) pair equally likely. Every k-tree has
k(n-k)+1 k-cliques, so a uniform k-subset R followed by a uniform Rényi k-tree at R is a
uniform labelled k-tree: the distribution of Caminiti et al.'s Dandelion-code decoding
(the sampler of Nie et al.), drawn without the code.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from bnsl_dist.search.treewidth._kernels import (
    _randint,
    build_ktree,
    clear_ktree,
    clique_dp,
    ktree_arrays,
    seed_state,
    uniform_order,
)


@nb.njit(cache=True, nogil=True)
def sampler_workspace(n):
    """The workspace of :func:`uniform_ktree` for n nodes, in its argument order:
    ``perm``, ``seq``, ``deg``, ``nbr_off``, ``nbr``, ``parent``, ``queue``, ``pos``."""
    return (np.empty(n, dtype=np.int64), np.empty(n + 1, dtype=np.int64),
            np.empty(n + 1, dtype=np.int64), np.empty(n + 2, dtype=np.int64),
            np.empty(2 * n + 2, dtype=np.int64), np.empty(n + 1, dtype=np.int64),
            np.empty(n + 1, dtype=np.int64), np.empty(n + 1, dtype=np.int64))


@nb.njit(cache=True, nogil=True)
def uniform_ktree(state, n, k, perm, seq, deg, nbr_off, nbr, parent, queue, pos, ins, attach):
    """Fill ``ins`` (OUT, n: insertion order) and ``attach`` (OUT, n: per inserted node
    the id of the k-clique it joined, -1 for the initial k+1) with a uniformly random
    labelled k-tree over 0..n-1 (for n <= k + 1, one clique in a uniform order).

    Workspace: :func:`sampler_workspace`. Tree node 0 is the root k-clique R, node
    i >= 1 is the vertex ``perm[k + i - 1]``."""
    if n <= k + 1:
        uniform_order(state, ins)
        attach[:] = -1
        return
    for i in range(n):
        perm[i] = i
    for i in range(k):  # R = perm[:k], a uniform k-subset
        j = i + _randint(state, n - i)
        t = perm[i]
        perm[i] = perm[j]
        perm[j] = t
    m = n - k  # nodes 1..m besides the root 0
    big = 1 + k * m
    for j in range(m - 1):  # Prüfer entries: the root with weight 1, the others with k
        r = _randint(state, big)
        seq[j] = 0 if r == 0 else 1 + (r - 1) // k
    # decode (the linear-time Prüfer decoding); edges go to nbr as a CSR adjacency
    nn = m + 1
    for i in range(nn):
        deg[i] = 1
    for j in range(m - 1):
        deg[seq[j]] += 1
    nbr_off[0] = 0
    for i in range(nn):
        nbr_off[i + 1] = nbr_off[i] + deg[i]
    for i in range(nn):  # reuse parent as the fill cursor
        parent[i] = nbr_off[i]
    ptr = 0
    while deg[ptr] != 1:
        ptr += 1
    leaf = ptr
    for j in range(m):
        x = seq[j] if j < m - 1 else nn - 1
        nbr[parent[leaf]] = x
        parent[leaf] += 1
        nbr[parent[x]] = leaf
        parent[x] += 1
        if j == m - 1:
            break
        deg[x] -= 1
        if deg[x] == 1 and x < ptr:
            leaf = x
        else:
            ptr += 1
            while deg[ptr] != 1:
                ptr += 1
            leaf = ptr
    # breadth first from the root: parents come before their children
    for i in range(nn):
        parent[i] = -2
    parent[0] = -1
    queue[0] = 0
    head = 0
    tail = 1
    while head < tail:
        u = queue[head]
        head += 1
        for e in range(nbr_off[u], nbr_off[u + 1]):
            w = nbr[e]
            if parent[w] == -2:
                parent[w] = u
                queue[tail] = w
                tail += 1
    first = queue[1]  # R plus the root's first child is the initial (k+1)-clique
    for i in range(k):
        ins[i] = perm[i]
        attach[i] = -1
    ins[k] = perm[k + first - 1]
    attach[k] = -1
    pos[first] = k
    for t in range(2, nn):
        w = queue[t]
        p = parent[w]
        at = k + t - 1
        pos[w] = at
        ins[at] = perm[k + w - 1]
        if p == 0:  # joins R: the initial clique without its member k
            attach[at] = k
        elif p == first:  # the initial clique without one member of R
            attach[at] = _randint(state, k)
        else:  # p's (k+1)-clique without one member of the clique p joined
            attach[at] = (k + 1) + (pos[p] - (k + 1)) * k + _randint(state, k)


@nb.njit(cache=True, nogil=True)
def _is_clique_with(g, v, par_offsets, par_flat, adj):
    """The members of set g are adjacent to v and to each other."""
    a = par_offsets[g]
    b = par_offsets[g + 1]
    for t in range(a, b):
        p = par_flat[t]
        if not (adj[v, p >> 6] >> np.uint64(p & 63)) & np.uint64(1):
            return False
        for t2 in range(t + 1, b):
            q = par_flat[t2]
            if not (adj[p, q >> 6] >> np.uint64(q & 63)) & np.uint64(1):
                return False
    return True


@nb.njit(cache=True, nogil=True)
def informative_score(offsets, scores, par_offsets, par_flat, sizes, max_size, pair_offsets,
                      pair_other, pair_gain, adj):
    """The informative score of the k-tree whose adjacency is ``adj``: the information
    on its edges (the sum, over each node v and each neighbour u, of ``pair_gain``,
    v's cached gain of the parent set {u} over {}) over the absolute value of the score
    bound (the sum, over the nodes, of each one's best usable cached set that forms a
    clique with it, acyclicity ignored)."""
    n = offsets.shape[0] - 1
    info = 0.0
    for v in range(n):
        for e in range(pair_offsets[v], pair_offsets[v + 1]):
            u = pair_other[e]
            if (adj[v, u >> 6] >> np.uint64(u & 63)) & np.uint64(1):
                info += pair_gain[e]
    bound = 0.0
    for v in range(n):
        best = -np.inf
        for g in range(offsets[v], offsets[v + 1]):
            if sizes[g] <= max_size and _is_clique_with(g, v, par_offsets, par_flat, adj):
                best = scores[g]
                break
        bound += best
    return info / max(abs(bound), 1e-300)


@nb.njit(cache=True, nogil=True)
def dag_in_ktree(offsets, scores, par_offsets, par_flat, sizes, k, max_size, ins, attach, cl,
                 pos, mark, chosen):
    """The best DAG along the k-tree's insertion order: the initial (k+1)-clique exactly
    (:func:`clique_dp`), then each later node's best usable cached set inside the
    k-clique it joined (its neighbours when it was inserted). ``chosen`` (OUT) gets the
    set index per node; ``mark`` (int64[n], all -1) is workspace, restored. Returns the
    DAG's score."""
    n = ins.shape[0]
    m = min(k + 1, n)
    total = clique_dp(offsets, scores, par_offsets, par_flat, sizes, max_size, ins[:m], pos,
                      chosen)
    for t in range(m, n):
        x = ins[t]
        c = attach[t]
        for q in range(k):
            mark[cl[c, q]] = x
        g = offsets[x + 1] - 1
        for h in range(offsets[x], offsets[x + 1]):
            if sizes[h] > max_size:
                continue
            ok = True
            for e in range(par_offsets[h], par_offsets[h + 1]):
                if mark[par_flat[e]] != x:
                    ok = False
                    break
            if ok:
                g = h
                break
        chosen[x] = g
        total += scores[g]
        for q in range(k):
            mark[cl[c, q]] = -1
    return total


@nb.njit(cache=True, nogil=True)
def s2_batch(offsets, scores, par_offsets, par_flat, sizes, k, max_size, pair_offsets,
             pair_other, pair_gain, best_info, seed, it0, threshold, out_scores, best_chosen,
             best_ins, best_attach):
    """Run iterations ``it0, it0+1, ..`` of S2 until one scores above ``threshold`` or
    ``len(out_scores)`` have run (outputs and stopping rule as
    :func:`~bnsl_dist.search.treewidth._kernels.kg_batch`).

    An iteration samples a uniform k-tree and computes its informative score; only a
    k-tree whose score beats ``best_info[0]`` (IN/OUT: the best so far, carried from
    batch to batch) gets its DAG learned, and ``out_scores`` holds that DAG's score,
    -inf for the other iterations."""
    n = offsets.shape[0] - 1
    cl, head, nxt, cnt, in_tree, adj = ktree_arrays(n, k, True)
    ws = sampler_workspace(n)
    pos = np.full(n, -1, dtype=np.int64)
    mark = np.full(n, -1, dtype=np.int64)
    ins = np.empty(n, dtype=np.int64)
    attach = np.empty(n, dtype=np.int64)
    chosen = np.empty(n, dtype=np.int64)
    state = np.zeros(1, dtype=np.uint64)
    for it in range(out_scores.shape[0]):
        seed_state(seed, it0 + it, state)
        uniform_ktree(state, n, k, ws[0], ws[1], ws[2], ws[3], ws[4], ws[5], ws[6], ws[7],
                      ins, attach)
        info = np.inf  # fewer than k + 1 nodes: one clique, no k-tree to rank
        if n > k:
            build_ktree(ins, attach, k, cl, head, nxt, cnt, in_tree, adj, True)
            info = informative_score(offsets, scores, par_offsets, par_flat, sizes,
                                     max_size, pair_offsets, pair_other, pair_gain, adj)
        total = -np.inf
        if info > best_info[0]:
            best_info[0] = info
            total = dag_in_ktree(offsets, scores, par_offsets, par_flat, sizes, k, max_size,
                                 ins, attach, cl, pos, mark, chosen)
        if n > k:
            clear_ktree(ins, n, k, cl, head, nxt, cnt, in_tree, adj, True)
        out_scores[it] = total
        if total > threshold:
            best_chosen[:] = chosen
            best_ins[:] = ins
            best_attach[:] = attach
            return it
    return -1
