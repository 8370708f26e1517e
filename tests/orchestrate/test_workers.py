"""The worker warm-up: every kernel a job names is run once per process, problems are
reported (never raised), data-scored optimizers are warmed through their data path."""

from __future__ import annotations

import bnsl_dist.orchestrate.workers as W


def test_warm_up_runs_each_named_kernel_once(monkeypatch):
    monkeypatch.setattr(W, "_WARMED", set())
    specs = [W.algorithm_spec("tabu-data", {"start": "asobs", "start_iterations": 2}),
             W.algorithm_spec("kg", {}, 2), W.algorithm_spec("asobs-ent")]
    assert W.warm_up(["independence"], specs) == {}
    assert W._WARMED == {("method", "independence"), *(("algorithm", s) for s in specs)}
    assert W.warm_up(["independence"], specs) == {}  # nothing left to do


def test_warm_up_reports_problems(monkeypatch):
    monkeypatch.setattr(W, "_WARMED", set())
    bad = W.algorithm_spec("asobs", {"no_such_parameter": 1})
    problems = W.warm_up(["no-such-method"], [bad])
    assert set(problems) == {"cache:no-such-method", "asobs"}
    assert "no_such_parameter" in problems["asobs"]
    assert W._WARMED == set()
