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
    from bnsl_dist.orchestrate.cells import _compute_spans

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

    assert _compute_spans(FakeClient(), 100.0, ("cell-", "cache-")) == {
        "cache-b": [(100.0, 101.0)], "cell-a": [(101.0, 103.5)]}

    class Lost:
        def get_task_stream(self, start):
            raise OSError("scheduler gone")

    assert _compute_spans(Lost(), 100.0, ("cell-",)) is None


def test_utilisation_counts_threads_and_the_workers_span():
    """Busy seconds over (wall × task slots); the wall is the longer of the client's
    clock and the tasks' span on the workers' clocks, so two workers busy all along
    read 1.00, never above, even when the workers' clocks run ahead of the client's."""
    from bnsl_dist.orchestrate.outcomes import GridSummary

    s = GridSummary(total=2, skipped=0, seconds=1.0, busy_seconds=2.04, workers=2)
    assert s.utilisation == 1.02  # the client's clock alone: the failure this guards
    s.task_span_seconds = 1.02
    assert s.utilisation == 1.0 and "utilisation 1.00" in str(s)
    s.threads = 4  # two workers of two threads: half the slots idle
    assert s.utilisation == 0.5 and s.to_dict()["threads"] == 4
    assert GridSummary(total=0, skipped=0).utilisation is None


_KERNEL = """
import numba

@numba.njit(cache=True)
def kernel(x):
    return x * 3 + 1
"""

_MEASURE = """
import json, sys
sys.path.insert(0, sys.argv[1])
from bnsl_dist.search.warmup import compile_clock
with compile_clock() as clock:
    import cold_kernel
    cold_kernel.kernel(2)
print(json.dumps(clock.seconds))
"""


def test_compile_clock_counts_compiling_not_loading(tmp_path):
    """In a process with an empty numba cache the kernel compiles (seconds > 0); the next
    process loads it from the disk cache the first wrote: nothing to count."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    (tmp_path / "cold_kernel.py").write_text(_KERNEL)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": os.pathsep.join([str(Path(warmup.__file__).parents[2]),
                                          os.environ.get("PYTHONPATH", "")])}
    runs = [json.loads(subprocess.run([sys.executable, "-c", _MEASURE, str(tmp_path)],
                                      env=env, check=True, capture_output=True,
                                      text=True).stdout) for _ in range(2)]
    assert runs[0] > 0 and runs[1] == 0.0
    assert list((tmp_path / "numba").rglob("*.nbi"))  # the first run wrote the cache


def test_compiled_since_reports_the_slowest_workers_recent_compiling():
    """A warm-up's compiling (on each worker, with when it ended) is what a time limit
    leaves out: the most any worker spent, counting warm-ups that ended since ``since``."""
    import time

    from distributed import Client, LocalCluster

    from bnsl_dist.orchestrate.workers import compiled_since

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        now = time.time()
        workers = sorted(client.scheduler_info()["workers"])

        def mark(dask_worker, entries):
            dask_worker.bnsl_compiled = entries[dask_worker.address]

        client.run(mark, entries={workers[0]: [(now - 50, 9.0), (now, 1.5), (now + 1, 2.0)],
                                  workers[1]: [(now, 3.0)]})
        assert compiled_since(client, now - 10) == 3.5
        assert compiled_since(client, now + 0.5) == 2.0
        assert compiled_since(client, now + 5) == 0.0
