"""S2 against independent oracles (its DAG step and certificates are checked with the
other k-tree learners in test_treewidth_learners.py).

- the k-tree sampler hits every labelled k-tree, found by brute force over all graphs
  with k·n − k(k+1)/2 edges (a graph test: peel simplicial nodes of degree k), equally
  often (a chi-square bound), and their number is Beineke & Pippert's
  C(n, k)·(k(n−k)+1)^(n−k−2);
- the informative score equals a plain Python computation from the k-tree's edges and
  cliques;
- a run learns DAGs exactly at the iterations whose k-tree beats every earlier
  informative score, as re-derived in Python from the same sampled k-trees.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
import pytest

from bnsl_dist._rng import as_rng
from bnsl_dist.graph import KTree
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.treewidth import _s2_kernels as S
from bnsl_dist.search.treewidth._driver import CacheArrays
from bnsl_dist.search.treewidth._kernels import seed_state
from bnsl_dist.search.treewidth.s2 import pair_gains
from tests.naive import random_cache


def sample_ktree(n, k, seed, it):
    """One k-tree of the sampler, as (insertion order, attach ids)."""
    state = np.zeros(1, dtype=np.uint64)
    seed_state(np.uint64(seed), it, state)
    ins, attach = np.empty(n, np.int64), np.empty(n, np.int64)
    S.uniform_ktree(state, n, k, *S.sampler_workspace(n), ins, attach)
    return ins, attach


def edges_of(tree: KTree) -> frozenset[tuple[int, int]]:
    return frozenset((min(u, v), max(u, v)) for u, nb in tree.adjacency().items() for v in nb)


def is_ktree(nodes: frozenset[int], edges: frozenset[tuple[int, int]], k: int) -> bool:
    """A (k+1)-clique, or a node of degree k whose neighbours form a clique, whose
    removal leaves a k-tree."""
    adj = {v: {u for e in edges for u in e if v in e and u != v} for v in nodes}
    if len(nodes) == k + 1:
        return len(edges) == k * (k + 1) // 2
    for v in nodes:
        nb = adj[v]
        if len(nb) == k and all((min(a, b), max(a, b)) in edges
                                for a, b in itertools.combinations(nb, 2)):
            rest = frozenset(e for e in edges if v not in e)
            return is_ktree(nodes - {v}, rest, k)  # any simplicial node of degree k will do
    return False


def brute_force_ktrees(n, k):
    pairs = list(itertools.combinations(range(n), 2))
    m = k * n - k * (k + 1) // 2
    return {frozenset(es) for es in itertools.combinations(pairs, m)
            if is_ktree(frozenset(range(n)), frozenset(es), k)}


@pytest.mark.parametrize(("n", "k", "draws"), [(5, 2, 14_000), (6, 2, 24_000), (5, 1, 12_500),
                                               (6, 3, 10_000), (4, 3, 200)])
def test_the_sampler_is_uniform_over_all_labelled_ktrees(n, k, draws):
    every = brute_force_ktrees(n, k)
    cliques = k * (n - k) + 1  # k-cliques per k-tree
    assert len(every) == math.comb(n, k) * cliques ** (n - k - 1) // cliques
    counts = Counter()
    for it in range(draws):
        ins, attach = sample_ktree(n, k, 7, it)
        counts[edges_of(KTree.replay(k, ins.tolist(), attach.tolist()))] += 1
    assert set(counts) == every
    expect = draws / len(every)
    chi2 = sum((c - expect) ** 2 / expect for c in counts.values())
    df = len(every) - 1
    if df:  # a chi-square with df degrees of freedom: mean df, sd sqrt(2 df)
        assert chi2 < df + 4 * math.sqrt(2 * df), (chi2, df)


def test_pair_gains_match_a_naive_scan():
    cache = random_cache(25, 3, max_sets_per_var=12, max_indegree=3)
    off, other, gain = pair_gains(cache)
    for v in range(cache.n_vars):
        empty = cache.score_of(v, ())
        want = {ps[0]: s - empty for ps, s in cache.sets_of(v) if len(ps) == 1 and s > empty}
        got = dict(zip(other[off[v]:off[v + 1]].tolist(), gain[off[v]:off[v + 1]].tolist(),
                       strict=True))
        assert got.keys() == want.keys()
        assert all(got[u] == pytest.approx(want[u]) for u in want)


def naive_informative_score(cache, tree: KTree, cap):
    es = edges_of(tree)
    empty = [cache.score_of(v, ()) for v in range(cache.n_vars)]

    def gain(v, u):
        return max(0.0, cache.score_of(v, (u,)) - empty[v]) if cache.has_set(v, (u,)) else 0.0

    info = sum(gain(u, v) + gain(v, u) for u, v in es)
    bound = 0.0
    for v in range(cache.n_vars):  # the best set forming a clique with v, by the edges
        bound += max(s for ps, s in cache.sets_of(v) if len(ps) <= cap and all(
            (min(a, b), max(a, b)) in es for a, b in itertools.combinations((v, *ps), 2)))
    return info / abs(bound)


def ktree_adjacency(n, k, ins, attach):
    """The kernels' adjacency bitsets of a sampled tree (as s2_batch builds them)."""
    from bnsl_dist.search.treewidth import _kernels as K

    cl, head, nxt, cnt, in_tree, adj = K.ktree_arrays(n, k, True)
    K.build_ktree(ins, attach, k, cl, head, nxt, cnt, in_tree, adj, True)
    return adj


@pytest.mark.parametrize(("k", "cap"), [(1, 1), (2, 2), (3, 3), (3, 1)])
def test_informative_score_matches_a_naive_computation(k, cap):
    cache = random_cache(12, 10 + k, max_sets_per_var=14, max_indegree=3)
    a = CacheArrays.of(cache, k, cap)
    off, other, gain = pair_gains(cache)
    for it in range(15):
        ins, attach = sample_ktree(cache.n_vars, k, 3, it)
        tree = KTree.replay(k, ins.tolist(), attach.tolist())
        adj = ktree_adjacency(cache.n_vars, k, ins, attach)
        got = S.informative_score(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes,
                                  a.max_size, off, other, gain, adj)
        assert got == pytest.approx(naive_informative_score(cache, tree, cap), rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_dags_are_learned_at_the_informative_score_records(k):
    """iteration_scores is finite exactly where a k-tree's informative score beats all
    before it, and there equals the insertion-order DAG of that k-tree (re-derived in
    Python); run's incumbents are the running maxima of those DAGs."""
    cache = random_cache(14, 40 + k, max_sets_per_var=12, max_indegree=3)
    opt = make_optimizer("s2", k=k)
    iters = 60
    scores, _ = opt.iteration_scores(cache, Budget(max_iterations=iters), 9)
    seed = int(as_rng(9).integers(0, 2**63 - 1))  # as the driver derives the kernel's seed
    best = -np.inf
    want = []
    for it in range(iters):
        ins, attach = sample_ktree(cache.n_vars, k, seed, it)
        tree = KTree.replay(k, ins.tolist(), attach.tolist())
        info = naive_informative_score(cache, tree, k)
        if info > best:
            best = info
            want.append((it, insertion_order_dag_score(cache, tree, ins, attach, k)))
    assert np.flatnonzero(np.isfinite(scores)).tolist() == [w[0] for w in want]
    assert scores[[w[0] for w in want]] == pytest.approx([w[1] for w in want], abs=1e-9)
    incs = list(opt.run(cache, Budget(max_iterations=iters), 9))
    running = []
    top = -np.inf
    for it, s in want:
        if s > top:
            top = s
            running.append((it + 1, s))
    assert [(i.iterations, pytest.approx(i.score, abs=1e-9)) for i in incs] == running


def insertion_order_dag_score(cache, tree, ins, attach, k):
    """The initial clique's best DAG (brute force over its orders), then each later node's
    best set inside the clique it joined."""
    first = [int(v) for v in ins[:k + 1]]
    best_first = max(
        sum(max(s for ps, s in cache.sets_of(v) if len(ps) <= k
                and set(ps) <= set(order[:i])) for i, v in enumerate(order))
        for order in itertools.permutations(first))
    rest = sum(max(s for ps, s in cache.sets_of(int(v)) if len(ps) <= k
                   and set(ps) <= set(tree.clique(int(c))))
               for v, c in zip(ins[k + 1:], attach[k + 1:], strict=True))
    return best_first + rest
