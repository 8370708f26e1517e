"""TWILP (bounded-treewidth ILP) against a brute-force oracle written here: enumerate
every DAG made of cached sets, keep those whose moral graph has exact treewidth <= k
(Bodlaender et al.'s subset recursion), take the best."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph import DAG
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.exact._ilp_families import Families, greedy_dag
from bnsl_dist.search.exact.dp import exact_dp
from bnsl_dist.search.exact.twilp import fit_treewidth, root_graph_arcs
from tests.naive import naive_is_acyclic, random_cache

pytestmark = pytest.mark.ilp


# ---------------------------------------------------------------------------- oracles
def naive_moral_edges(parents):
    edges = set()
    for v, ps in enumerate(parents):
        for p in ps:
            edges.add(frozenset((p, v)))
        for a, b in itertools.combinations(ps, 2):
            edges.add(frozenset((a, b)))
    return frozenset(edges)


def exact_treewidth(n, edges):
    """TW(S) = min_{v in S} max(TW(S - v), |Q(S - v, v)|), Q(S, v) = vertices outside
    S ∪ {v} reachable from v through S (Bodlaender, Fomin, Koster, Kratsch, Thilikos,
    "On exact algorithms for treewidth", ESA 2006, §3)."""
    nb = [set() for _ in range(n)]
    for e in edges:
        a, b = tuple(e)
        nb[a].add(b)
        nb[b].add(a)

    def q(s, v):
        seen, stack, out = {v}, [v], set()
        while stack:
            u = stack.pop()
            for w in nb[u]:
                if w in seen:
                    continue
                seen.add(w)
                if (s >> w) & 1:
                    stack.append(w)
                else:
                    out.add(w)
        return len(out)

    tw = {0: -1}
    for s in sorted(range(1, 1 << n), key=lambda m: bin(m).count("1")):
        tw[s] = min(max(tw[s & ~(1 << v)], q(s & ~(1 << v), v))
                    for v in range(n) if (s >> v) & 1)
    return max(tw[(1 << n) - 1], 0)


def brute_force_twilp(cache, k):
    n = cache.n_vars
    memo = {}
    best, best_ps = -np.inf, None
    for combo in itertools.product(*[cache.sets_of(v) for v in range(n)]):
        parents = [ps for ps, _ in combo]
        s = sum(sc for _, sc in combo)
        if s <= best or not naive_is_acyclic(parents):
            continue
        edges = naive_moral_edges(parents)
        if edges not in memo:
            memo[edges] = exact_treewidth(n, edges)
        if memo[edges] <= k:
            best, best_ps = s, parents
    return best, best_ps


def _run(cache, k, seconds=60.0, seed=0, **params):
    return list(make_optimizer("twilp", k=k, **params).run(cache, Budget(seconds=seconds),
                                                           np.random.default_rng(seed)))


def _check(cache, incs, k, optimum):
    prev = -np.inf
    for inc in incs:
        parents = inc.dag.parents
        assert naive_is_acyclic(parents)
        assert all(cache.has_set(v, ps) for v, ps in enumerate(parents))
        assert inc.score == pytest.approx(sum(cache.score_of(v, ps)
                                              for v, ps in enumerate(parents)))
        assert inc.score > prev
        prev = inc.score
        cert = inc.info["certificate"]
        assert cert.width <= k and cert.check(inc.dag)
        assert exact_treewidth(cache.n_vars, naive_moral_edges(parents)) <= k
        assert inc.score <= optimum + 1e-9
        assert inc.bound >= optimum - 1e-6


# ---------------------------------------------------------------------------- tests
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("n,seed", [(5, 1), (6, 2), (6, 3), (7, 4)])
def test_twilp_matches_brute_force(n, seed, k):
    cache = random_cache(n, seed, max_sets_per_var=5 if n < 7 else 4, max_indegree=3)
    opt, _ = brute_force_twilp(cache, k)
    incs = _run(cache, k)
    _check(cache, incs, k, opt)
    assert incs[-1].score == pytest.approx(opt, abs=1e-9)
    assert incs[-1].info["optimal"]


@pytest.mark.parametrize("n,seed,k", [(6, 5, 1), (6, 6, 2)])
def test_paper_model_with_all_rows_upfront(n, seed, k):
    cache = random_cache(n, seed, max_sets_per_var=5)
    opt, _ = brute_force_twilp(cache, k)
    incs = _run(cache, k, lazy_triangles=False)
    _check(cache, incs, k, opt)
    assert incs[-1].score == pytest.approx(opt, abs=1e-9)


@pytest.mark.parametrize("n,seed,k", [(8, 11, 1), (9, 12, 2), (10, 13, 3)])
def test_twilp_never_beats_the_unbounded_optimum(n, seed, k):
    cache = random_cache(n, seed, max_sets_per_var=8)
    opt, _ = exact_dp(cache)
    incs = list(make_optimizer("twilp", k=k).run(cache, Budget(seconds=4),
                                                 np.random.default_rng(0)))
    for inc in incs:
        assert inc.score <= opt + 1e-9
        assert inc.info["certificate"].width <= k
        assert inc.info["certificate"].check(inc.dag)


@pytest.mark.parametrize("n,seed", [(4, 21), (6, 22), (7, 23)])
def test_k_n_minus_1_is_the_unbounded_optimum(n, seed):
    cache = random_cache(n, seed, max_sets_per_var=6)
    opt, _ = exact_dp(cache)
    for k in (n - 1, n + 3):  # a bound >= n - 1 never binds
        incs = _run(cache, k)
        assert incs[-1].score == pytest.approx(opt, abs=1e-9)
        assert incs[-1].info["optimal"]


def test_single_variable_and_iteration_budget_determinism():
    one = random_cache(1, 0)
    incs = _run(one, 2)
    assert len(incs) == 1 and incs[0].dag.parents == ((),) and incs[0].info["optimal"]
    cache = random_cache(9, 31, max_sets_per_var=8)
    runs = [list(make_optimizer("twilp", k=2).run(cache, Budget(max_iterations=4),
                                                  np.random.default_rng(3)))
            for _ in range(2)]
    sig = [[(i.score, i.dag.parents, i.iterations) for i in r] for r in runs]
    assert sig[0] == sig[1]


@pytest.mark.parametrize("seed,k", [(41, 1), (42, 2), (43, 3)])
def test_fit_treewidth_and_root_graph(seed, k):
    cache = random_cache(9, seed, max_sets_per_var=10, max_indegree=3)
    fam = Families(cache)
    chosen, order = fit_treewidth(fam, greedy_dag(fam, np.random.default_rng(seed)), k)
    parents = fam.parents(chosen)
    assert naive_is_acyclic(parents)
    assert all(cache.has_set(v, ps) for v, ps in enumerate(parents))
    edges = naive_moral_edges(parents)
    assert exact_treewidth(9, edges) <= k
    # The root graph of TWILP §3 built around it: conditions (1)-(4) and Lemma 5.
    n = 9
    adj = [set() for _ in range(n)]
    for e in edges:
        a, b = tuple(e)
        adj[a].add(b)
        adj[b].add(a)
    arcs = root_graph_arcs(adj, order, k)
    g = nx.DiGraph(arcs)
    g.add_nodes_from(range(n + k))
    assert nx.is_directed_acyclic_graph(g)
    for i in range(n):  # (2): k children forming a tournament
        kids = list(g.successors(i))
        assert len(kids) == k
        for a, b in itertools.combinations(kids, 2):
            assert g.has_edge(a, b) or g.has_edge(b, a)
    assert all(j >= n for r in range(n, n + k) for j in g.successors(r))  # (3)
    inside = sum(1 for a, b in arcs if a < n and b < n)
    assert inside == n * k - k * (k + 1) // 2  # (4)
    skel = nx.Graph((a, b) for a, b in arcs if a < n and b < n)
    assert all(skel.has_edge(*tuple(e)) for e in edges)  # moral graph inside the k-tree
    assert exact_treewidth(n, [frozenset(e) for e in skel.edges]) == k
    DAG.from_parents(parents)


def test_bad_parameters():
    with pytest.raises(InvalidConfigError):
        make_optimizer("twilp", k=0)
    with pytest.raises(InvalidConfigError):
        make_optimizer("twilp", k=1.5)
    with pytest.raises(InvalidConfigError):
        make_optimizer("twilp")
    with pytest.raises(InvalidConfigError, match="start"):
        make_optimizer("twilp", k=2, start="both")
