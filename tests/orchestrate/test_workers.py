"""The worker warm-up: every kernel a job names is run once per process, problems are
reported (never raised), data-scored optimizers are warmed through their data path."""

from __future__ import annotations

import bnsl_dist.search.warmup as warmup


def test_warm_up_runs_each_named_kernel_once(monkeypatch):
    monkeypatch.setattr(warmup, "_WARMED", set())
    specs = [warmup.algorithm_spec("tabu-data", {"start": "asobs", "start_iterations": 2}),
             warmup.algorithm_spec("kg", {}, 2), warmup.algorithm_spec("asobs-ent")]
    assert warmup.warm_up(["independence"], specs) == {}
    assert warmup._WARMED == {("method", "independence"), *(("algorithm", s) for s in specs)}
    assert warmup.warm_up(["independence"], specs) == {}  # nothing left to do


def test_warm_up_reports_problems(monkeypatch):
    monkeypatch.setattr(warmup, "_WARMED", set())
    bad = warmup.algorithm_spec("asobs", {"no_such_parameter": 1})
    problems = warmup.warm_up(["no-such-method"], [bad])
    assert set(problems) == {"cache:no-such-method", "asobs"}
    assert "no_such_parameter" in problems["asobs"]
    assert warmup._WARMED == set()


def test_busy_seconds_count_only_this_runs_compute():
    """Utilisation's numerator: compute of our task prefixes that started since the run
    began (a task of an earlier run still computing on a shared cluster is not ours)."""
    from bnsl_dist.orchestrate.grid import _compute_spans

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

    assert sorted(_compute_spans(FakeClient(), 100.0, ("cell-", "cache-"))) == [
        (100.0, 101.0), (101.0, 103.5)]

    class Lost:
        def get_task_stream(self, start):
            raise OSError("scheduler gone")

    assert _compute_spans(Lost(), 100.0, ("cell-",)) is None


def test_utilisation_counts_threads_and_the_workers_span():
    """Busy seconds over (wall × task slots); the wall is the longer of the client's
    clock and the tasks' span on the workers' clocks, so two workers busy all along
    read 1.00, never above, even when the workers' clocks run ahead of the client's."""
    from bnsl_dist.orchestrate.grid import GridSummary

    s = GridSummary(total=2, skipped=0, seconds=1.0, busy_seconds=2.04, workers=2)
    assert s.utilisation == 1.02  # the client's clock alone: the failure this guards
    s.task_span_seconds = 1.02
    assert s.utilisation == 1.0 and "utilisation 1.00" in str(s)
    s.threads = 4  # two workers of two threads: half the slots idle
    assert s.utilisation == 0.5 and s.to_dict()["threads"] == 4
    assert GridSummary(total=0, skipped=0).utilisation is None
