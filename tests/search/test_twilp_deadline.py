"""TWILP's start (a greedy DAG cut down to treewidth k, :func:`fit_treewidth`) within the
cell's deadline: the work counted is elimination steps of the min-fill / min-degree
orders, against a clock injected here that advances one second per step, so no
assertion reads the wall clock. Treewidth is checked by networkx's min-fill heuristic
(an upper bound: <= k proves it) and by eliminating the returned order naively here."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.approximation import treewidth_min_fill_in

import bnsl_dist.graph.treewidth as tw_mod
import bnsl_dist.search.exact._twilp_heuristics as heur_mod
import bnsl_dist.search.exact.twilp as twilp_mod
from bnsl_dist.search.base import Budget
from bnsl_dist.search.exact._ilp_common import ScipStop, StepCosts
from bnsl_dist.search.exact._ilp_families import Families, greedy_dag
from bnsl_dist.search.exact._twilp_heuristics import chordal_cut, fit_treewidth, start_dag
from bnsl_dist.search.exact.twilp import TWILP
from tests.naive import naive_is_acyclic, random_cache

pytestmark = pytest.mark.ilp

K = 2


@pytest.fixture
def steps(monkeypatch):
    """Counts the eliminations of every min-fill / min-degree order (each asks its
    ``due`` once before it, and runs when not due)."""
    count = [0]
    real = tw_mod._greedy_order

    def greedy_order(adj, cost, two_hop, due=None):
        def counted():
            late = due is not None and due()
            count[0] += not late
            return late

        return real(adj, cost, two_hop, counted)

    monkeypatch.setattr(tw_mod, "_greedy_order", greedy_order)
    return count


def moral_nx(parents):
    g = nx.Graph()
    g.add_nodes_from(range(len(parents)))
    for v, ps in enumerate(parents):
        g.add_edges_from((p, v) for p in ps)
        g.add_edges_from((a, b) for i, a in enumerate(ps) for b in ps[i + 1:])
    return g


def naive_width(g, order):
    """The width of eliminating ``order`` from the networkx graph ``g``."""
    h = nx.Graph(g)
    width = 0
    for v in order:
        nb = list(h.neighbors(v))
        width = max(width, len(nb))
        h.add_edges_from((a, b) for i, a in enumerate(nb) for b in nb[i + 1:])
        h.remove_node(v)
    return width


def assert_bounded(cache, fam, chosen, order, k):
    parents = fam.parents(chosen)
    assert naive_is_acyclic(parents)
    assert all(cache.has_set(v, ps) for v, ps in enumerate(parents))
    g = moral_nx(parents)
    assert treewidth_min_fill_in(g)[0] <= k
    assert sorted(order) == list(range(fam.n)) and naive_width(g, order) <= k


def test_fit_treewidth_stops_at_the_deadline_with_a_bounded_dag(steps):
    """A budget of 40 steps, far below the 1,590 of the whole cut: the fit gives up at
    the deadline and finishes in one pass, a DAG of treewidth <= k all the same."""
    cache = random_cache(30, 7, max_sets_per_var=30, max_indegree=5)
    fam = Families(cache)
    start = greedy_dag(fam, np.random.default_rng(0))
    assert treewidth_min_fill_in(moral_nx(fam.parents(start)))[0] > 3 * K
    full, full_order = fit_treewidth(fam, start, K)
    whole = steps[0]
    assert whole > 1_000
    assert_bounded(cache, fam, full, full_order, K)

    steps[0] = 0
    budget = 40
    stop = ScipStop(lambda: budget - steps[0], StepCosts(defaults={"twilp.cut": 0.0}))
    chosen, order = fit_treewidth(fam, start, K, stop)
    assert steps[0] <= budget
    assert_bounded(cache, fam, chosen, order, K)
    assert chosen != full  # the deadline cut it short: the one-pass finish


def test_the_one_pass_cut_is_bounded_and_keeps_what_fits():
    """chordal_cut against naive checks: treewidth <= k for every k, each variable's set
    among the cached ones whose members precede it, and at least as good as each
    variable's best single parent from the DAG it cuts (a forest, width 1)."""
    cache = random_cache(25, 11, max_sets_per_var=20, max_indegree=4)
    fam = Families(cache)
    start = greedy_dag(fam, np.random.default_rng(1))
    for k in (1, 2, 3, 5):
        chosen, order = chordal_cut(fam, start, k)
        assert_bounded(cache, fam, chosen, order, k)
        assert all(len(ps) <= k for ps in fam.parents(chosen))
    forest = []
    for v, i in enumerate(start):
        keep = [j for j in fam.sets_of(v)
                if fam.masks[j].bit_count() <= 1 and not fam.masks[j] & ~fam.masks[i]]
        forest.append(keep[0])  # best first
    assert fam.score(chordal_cut(fam, start, 1)[0]) >= fam.score(forest) - 1e-9


def chosen_of(fam, parents):
    """The set index of each variable's parents."""
    out = []
    for v, ps in enumerate(parents):
        mask = sum(1 << p for p in ps)
        out.append(next(i for i in fam.sets_of(v) if fam.masks[i] == mask))
    return out


@pytest.fixture()
def in_start(steps, monkeypatch):
    """The eliminations of each fit_treewidth call, in order: the start's first (SCIP's
    LP heuristics may fit later ones)."""
    counts: list[int] = []
    real_fit = heur_mod.fit_treewidth

    def fit(*args, **kwargs):
        before = steps[0]
        out = real_fit(*args, **kwargs)
        counts.append(steps[0] - before)
        return out

    monkeypatch.setattr(heur_mod, "fit_treewidth", fit)
    return counts


def test_a_twilp_cell_far_below_the_cut_cost_keeps_its_budget(in_start, monkeypatch):
    """A seconds budget whose deadline leaves no time for one elimination order (the
    one-pass cut's estimated cost above it): no order is started, the start is the
    one-pass cut, and every incumbent has treewidth <= k."""
    cache = random_cache(30, 7, max_sets_per_var=30, max_indegree=5)
    fam = Families(cache)
    costly = StepCosts(defaults={"twilp.cut": 1e6})  # the cut "needs" more than the budget
    monkeypatch.setattr(twilp_mod, "ScipStop", lambda remaining: ScipStop(remaining, costly))
    incs = list(TWILP(k=K, start="fit").run(cache, Budget(seconds=2.0), np.random.default_rng(0)))
    assert in_start and in_start[0] == 0 and incs
    for inc in incs:
        chosen = chosen_of(fam, inc.dag.parents)
        assert_bounded(cache, fam, chosen, list(inc.info["certificate"].order), K)


class _Seen(Exception):
    pass


def test_the_budget_reaches_the_start(monkeypatch):
    """An iteration budget bounds the start's arc removal by n eliminations per node and
    sets no deadline (the same DAG on every machine); a seconds budget the cell's
    deadline and no count."""
    seen = []

    def start(fam, greedy, k, how, stop, max_eliminations):
        seen.append((how, stop, max_eliminations))
        raise _Seen

    monkeypatch.setattr(twilp_mod, "start_dag", start)
    cache = random_cache(12, 3, max_sets_per_var=8, max_indegree=3)
    for budget in (Budget(max_iterations=7), Budget(seconds=60.0)):
        with pytest.raises(_Seen):
            next(TWILP(k=K, n_greedy=1).run(cache, budget, np.random.default_rng(0)))
    assert seen[0] == ("best", None, 7 * 12)
    assert seen[1][0] == "best" and seen[1][2] is None
    assert 59.0 < seen[1][1].remaining() <= 60.0


@pytest.mark.parametrize("limit", [0, 1, 29, 300])
def test_fit_treewidth_stops_after_its_eliminations(steps, limit):
    """``max_eliminations``: the orders make at most that many eliminations (counted in
    the orders themselves), the DAG is bounded all the same, and none at all gives the
    one-pass cut of the start exactly."""
    cache = random_cache(30, 7, max_sets_per_var=30, max_indegree=5)
    fam = Families(cache)
    start = greedy_dag(fam, np.random.default_rng(0))
    chosen, order = fit_treewidth(fam, start, K, max_eliminations=limit)
    assert steps[0] <= limit
    assert_bounded(cache, fam, chosen, order, K)
    if limit == 0:
        assert (chosen, order) == chordal_cut(fam, start, K)
    steps[0] = 0
    assert fit_treewidth(fam, start, K, max_eliminations=limit) == (chosen, order)


def test_an_iteration_budget_bounds_the_start_and_repeats_it(in_start):
    """TWILP with an iteration budget: the start's eliminations are at most n per node
    (the whole cut of this DAG takes over 1,000), and the same seed gives the same
    incumbents."""
    cache = random_cache(30, 7, max_sets_per_var=30, max_indegree=5)
    runs = []
    for _ in range(2):
        in_start.clear()
        incs = list(TWILP(k=K, start="fit", node_cuts=False).run(
            cache, Budget(max_iterations=1), np.random.default_rng(0)))
        assert 0 < in_start[0] <= 30
        runs.append([(i.score, i.dag.parents, i.iterations) for i in incs])
    assert runs[0] == runs[1]


@pytest.mark.parametrize("seed,k,cut_wins", [(0, 2, True), (0, 3, False), (3, 2, False),
                                             (4, 2, True)])
def test_the_best_start_is_the_better_cut(seed, k, cut_wins):
    """``start_dag``: "best" is whichever of "cut" and "fit" scores higher (the cut on a
    tie), each of treewidth <= k by networkx's min-fill and a naive elimination; the
    cases cover both winners."""
    cache = random_cache(12, seed, max_sets_per_var=12, max_indegree=3)
    fam = Families(cache)
    greedy = greedy_dag(fam, np.random.default_rng(seed))
    got = {how: start_dag(fam, greedy, k, how) for how in ("best", "fit", "cut")}
    for chosen, order in got.values():
        assert_bounded(cache, fam, chosen, order, k)
    assert got["cut"] == chordal_cut(fam, greedy, k)
    assert got["fit"] == fit_treewidth(fam, greedy, k)
    cut, fit = fam.score(got["cut"][0]), fam.score(got["fit"][0])
    assert (cut > fit) == cut_wins
    assert got["best"] == (got["cut"] if cut >= fit else got["fit"])
    with pytest.raises(ValueError, match="unknown start"):
        start_dag(fam, greedy, k, "both")
