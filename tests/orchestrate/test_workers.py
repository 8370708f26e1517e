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


def test_busy_seconds_count_only_this_runs_compute():
    """Utilisation's numerator: compute of our task prefixes that started since the run
    began (a task of an earlier run still computing on a shared cluster is not ours)."""
    from bnsl_dist.orchestrate.grid import _busy_seconds

    def rec(key, *spans, action="compute"):
        return {"key": key, "startstops": [{"action": action, "start": a, "stop": b}
                                           for a, b in spans]}

    class FakeClient:
        def get_task_stream(self, start):
            assert start == 100.0
            return [rec("cell-a", (101.0, 103.5)), rec("cache-b", (100.0, 101.0)),
                    rec("cache-part-c", (99.0, 102.0)),  # started before: not this run's
                    rec("other-d", (101.0, 109.0)),
                    rec("cell-e", (101.0, 102.0), action="transfer")]

    assert _busy_seconds(FakeClient(), 100.0, ("cell-", "cache-")) == 3.5

    class Lost:
        def get_task_stream(self, start):
            raise OSError("scheduler gone")

    assert _busy_seconds(Lost(), 100.0, ("cell-",)) is None
