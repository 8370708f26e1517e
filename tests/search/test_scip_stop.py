"""The SCIP-based exact solvers (ILP, TWILP) stop at their budget's deadline and when
their stream is closed, by their own callbacks: OR-Tools' SolveInterrupter does not
reach GSCIP, and SCIP's own time limit is taken away here, so a solve that ignored the
deadline or the close would run until the test's timeout fails it."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import bnsl_dist.search.exact._ilp_common as common
import bnsl_dist.search.exact.ilp as ilp_mod
import bnsl_dist.search.exact.twilp as twilp_mod
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.search.base import Budget, make_optimizer
from tests.naive import naive_is_acyclic


def knotted_cache(n: int = 30, m: int = 30, seed: int = 0) -> ParentSetCache:
    """Random parent sets whose gain grows with their size: the LP relaxation wants
    every cycle, and SCIP's root cutting loop takes tens of seconds at n = 30."""
    rng = np.random.default_rng(seed)
    lists = []
    for v in range(n):
        others = [u for u in range(n) if u != v]
        sets: dict[tuple[int, ...], float] = {(): -100.0}
        while len(sets) < m:
            k = int(rng.integers(1, 4))
            ps = tuple(sorted(int(u) for u in rng.choice(others, k, replace=False)))
            sets[ps] = -100.0 + float(rng.uniform(0, 10)) * k
        lists.append(list(sets.items()))
    return ParentSetCache.from_lists(lists)


@pytest.fixture
def no_scip_time_limit(monkeypatch):
    """SCIP without its own time limit; records whether a callback saw the stop."""
    seen = threading.Event()
    real_due, real_params = common.ScipStop.due, common.scip_parameters

    def due(self):
        out = real_due(self)
        if out:
            seen.set()
        return out

    def params(seed, seconds, nodes):
        return real_params(seed, None, nodes)

    monkeypatch.setattr(common.ScipStop, "due", due)
    monkeypatch.setattr(common, "scip_parameters", params)
    return seen


# TWILP's LP is larger: at n = 30 its root LP alone runs a minute between callbacks
SOLVERS = [("ilp", {}, 30), ("twilp", {"k": 2}, 12)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,kw,n", SOLVERS)
def test_deadline_stops_the_solve(name, kw, n, no_scip_time_limit):
    cache = knotted_cache(n)
    incs = list(make_optimizer(name, **kw).run(cache, Budget(seconds=5.0),
                                               np.random.default_rng(0)))
    assert no_scip_time_limit.is_set()  # the solve was still running at the deadline
    last = incs[-1]
    assert not last.info["optimal"] and last.bound > last.score
    assert naive_is_acyclic(last.dag.parents)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,kw,n", SOLVERS)
def test_closing_the_stream_stops_the_solve(name, kw, n, no_scip_time_limit):
    cache = knotted_cache(n)
    gen = make_optimizer(name, **kw).run(cache, Budget(seconds=3_600),
                                         np.random.default_rng(0))
    first = next(gen)  # the greedy start, before SCIP runs
    assert naive_is_acyclic(first.dag.parents)
    solver = [t for t in threading.enumerate() if t.name == "bnsl-ilp-solver"]
    assert len(solver) == 1
    gen.close()  # waits for the solver thread
    assert not solver[0].is_alive()
    assert no_scip_time_limit.is_set()


def test_step_costs_estimates_from_observations():
    costs = common.StepCosts(default_rate=2e-4, factor=1.5, decay=0.5,
                             defaults={"known": 1e-5}, min_size=0)
    assert costs.estimate("unseen", 1_000) == pytest.approx(1.5 * 2e-4 * 1_000)
    assert costs.estimate("known", 1_000) == pytest.approx(1.5 * 1e-5 * 1_000)
    costs.record("known", 1_000, 0.4)  # first observation replaces the default
    assert costs.rate("known") == pytest.approx(0.4 / 1_000)
    costs.record("known", 2_000, 0.1)  # faster: the old rate fades by half
    assert costs.rate("known") == pytest.approx(max(0.1 / 2_000, 0.5 * 0.4 / 1_000))
    costs.record("known", 2_000, 0.1)
    assert costs.rate("known") == pytest.approx(max(0.1 / 2_000, 0.25 * 0.4 / 1_000))
    costs.record("known", 100, 0.5)  # slower: taken at once
    assert costs.rate("known") == pytest.approx(0.5 / 100)
    assert costs.estimate("known", 10) == pytest.approx(1.5 * 0.5 / 100 * 10)


def test_step_costs_leave_out_runs_too_small_to_be_a_rate():
    """A run on fewer than ``min_size`` units is mostly a fixed cost (a warm-up's tiny
    model): as a rate it would make every large step look too slow to start, and such a
    step is never timed again."""
    costs = common.StepCosts(default_rate=2e-5, factor=1.0, defaults={}, min_size=10_000)
    costs.record("load", 60, 0.1)  # 1.7e-3 s per unit if it counted
    assert costs.rate("load") == 2e-5
    stop = common.ScipStop(lambda: 30.0, costs)
    assert stop.attempt("load", 318_000, lambda: "ran") == "ran"  # 6.4 s estimated
    costs.record("load", 300_000, 6.0)
    assert costs.rate("load") == pytest.approx(2e-5)
    costs.record("load", 300_000, 3.0)  # faster: fades by half at most
    assert costs.rate("load") == pytest.approx(1e-5)


def test_attempt_runs_a_step_only_when_it_fits():
    costs = common.StepCosts(default_rate=1e-3, factor=1.0, defaults={}, min_size=0)
    left = [0.5]
    stop = common.ScipStop(lambda: left[0], costs)
    ran = []
    # estimated 1e-3 * 1000 = 1 s > 0.5 s left: not run, nothing recorded
    assert stop.attempt("s", 1_000, lambda: ran.append(1) or "x") is None
    assert ran == [] and costs.rate("s") == 1e-3
    # 1e-3 * 100 = 0.1 s fits: run and timed (a near-instant step: rate far below 1e-3)
    assert stop.attempt("s", 100, lambda: ran.append(2) or "y") == "y"
    assert ran == [2] and costs.rate("s") < 1e-4
    # now the 1,000-unit run is estimated cheap and fits
    assert stop.attempt("s", 1_000, lambda: "z") == "z"
    stop.stop()  # once stopped, nothing runs
    assert stop.attempt("s", 1, lambda: ran.append(3)) is None and ran == [2]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,kw,n", SOLVERS)
def test_node_steps_too_slow_for_the_budget_are_skipped(name, kw, n, monkeypatch):
    """With every callback step estimated at hours, a timed run never starts one (they
    would raise here) and still returns a valid DAG at least as good as the greedy."""
    cheap = dict.fromkeys(("ilp.model", "twilp.model", "scip.load"), 1e-9)  # these run
    monkeypatch.setattr(common, "STEP_COSTS", common.StepCosts(default_rate=1e3,
                                                               defaults=cheap))
    mod = ilp_mod if name == "ilp" else twilp_mod

    def boom(*args, **kwargs):
        raise AssertionError("a node step ran")

    monkeypatch.setattr(mod, "fractional_clusters", boom)
    monkeypatch.setattr(mod, "_lp_repairs" if name == "ilp" else "_lp_heuristic", boom)
    incs = list(make_optimizer(name, **kw).run(knotted_cache(n), Budget(seconds=2.0),
                                               np.random.default_rng(0)))
    assert incs[-1].score >= incs[0].score
    assert naive_is_acyclic(incs[-1].dag.parents)


def _rescored(cache, parents):
    """The score of a DAG summed from the cache's own entries (independent of the
    solvers' set indices)."""
    return sum(cache.score_of(v, ps) for v, ps in enumerate(parents))


def _no_model(name, monkeypatch):
    """Make building the solver's model fail the test."""
    def boom(*args, **kwargs):
        raise AssertionError("the model was built")

    if name == "ilp":
        monkeypatch.setattr(ilp_mod, "_family_model", boom)
    else:
        monkeypatch.setattr(twilp_mod, "_Model", boom)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,kw,n", SOLVERS)
def test_budget_spent_by_the_start_builds_no_model(name, kw, n, monkeypatch):
    """A budget already over when the greedy start is done: the start DAG is returned
    as it is, no model built (building and loading it cannot be interrupted: on cr52's
    cache of 317,115 sets they took 5-26 s, all past the deadline)."""
    mod = ilp_mod if name == "ilp" else twilp_mod
    real, starts = mod.greedy_dag, []

    def slow_greedy(*args, **kwargs):
        out = real(*args, **kwargs)
        starts.append(list(out))
        time.sleep(0.2)  # past the 0.05 s budget, whatever this machine's speed
        return out

    monkeypatch.setattr(mod, "greedy_dag", slow_greedy)
    _no_model(name, monkeypatch)
    cache = knotted_cache(n)
    incs = list(make_optimizer(name, **kw).run(cache, Budget(seconds=0.05),
                                               np.random.default_rng(0)))
    assert len(starts) == 1 and len(incs) == 1
    inc = incs[0]
    assert naive_is_acyclic(inc.dag.parents)
    assert inc.score == pytest.approx(_rescored(cache, inc.dag.parents), abs=1e-9)
    assert not inc.info["optimal"] and inc.bound > inc.score
    if name == "ilp":  # TWILP cuts the start down to treewidth k first
        assert tuple(inc.dag.parents) == tuple(cache.dag_from_indices(starts[0]).parents)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name,kw,n", SOLVERS)
@pytest.mark.parametrize("slow", ["model", "load"])
def test_model_or_load_estimated_past_the_deadline_is_not_started(name, kw, n, slow,
                                                                  monkeypatch):
    """Building the model, or loading it into SCIP, estimated at hours: neither starts
    (each would raise here) and the run returns its valid start within its budget."""
    from ortools.math_opt.python import mathopt

    rates = {"ilp.model": 1e-9, "twilp.model": 1e-9, "scip.load": 1e-9}
    rates.update(dict.fromkeys(("ilp.model", "twilp.model") if slow == "model"
                               else ("scip.load",), 1e3))
    monkeypatch.setattr(common, "STEP_COSTS", common.StepCosts(defaults=rates))
    if slow == "model":
        _no_model(name, monkeypatch)

    def boom(*args, **kwargs):
        raise AssertionError("the model was loaded into SCIP")

    monkeypatch.setattr(mathopt, "IncrementalSolver", boom)
    cache = knotted_cache(n)
    incs = list(make_optimizer(name, **kw).run(cache, Budget(seconds=60.0),
                                               np.random.default_rng(0)))
    assert len(incs) == 1
    assert naive_is_acyclic(incs[0].dag.parents)
    assert incs[0].score == pytest.approx(_rescored(cache, incs[0].dag.parents), abs=1e-9)
