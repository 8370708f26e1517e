"""The SCIP-based exact solvers (ILP, TWILP) stop at their budget's deadline and when
their stream is closed, by their own callbacks: OR-Tools' SolveInterrupter does not
reach GSCIP, and SCIP's own time limit is taken away here, so a solve that ignored the
deadline or the close would run until the test's timeout fails it."""

from __future__ import annotations

import threading

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
                             defaults={"known": 1e-5})
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


def test_attempt_runs_a_step_only_when_it_fits():
    costs = common.StepCosts(default_rate=1e-3, factor=1.0, defaults={})
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
    monkeypatch.setattr(common, "STEP_COSTS", common.StepCosts(default_rate=1e3,
                                                               defaults={}))
    mod = ilp_mod if name == "ilp" else twilp_mod

    def boom(*args, **kwargs):
        raise AssertionError("a node step ran")

    monkeypatch.setattr(mod, "fractional_clusters", boom)
    monkeypatch.setattr(mod, "_lp_repairs" if name == "ilp" else "_lp_heuristic", boom)
    incs = list(make_optimizer(name, **kw).run(knotted_cache(n), Budget(seconds=2.0),
                                               np.random.default_rng(0)))
    assert incs[-1].score >= incs[0].score
    assert naive_is_acyclic(incs[-1].dag.parents)
