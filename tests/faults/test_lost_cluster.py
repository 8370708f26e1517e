"""Losing the cluster mid-grid, with real `dask scheduler` / `dask worker` processes on
127.0.0.1: the run ends with one line saying how many cells were stored and that a rerun
resumes; no failure record for a cell the infrastructure cut off; the rerun computes
exactly the missing cells, equal to undisturbed runs. A cell's own exception is a
failure record, and `grid run` then exits 1 naming the failed cell."""

from __future__ import annotations

import json
import sys
import time

import pytest

from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.results.store import ResultStore
from tests.orchestrate.test_fault_tolerance import SLOW, LocalProcesses, _client, _kill, _spawn
from tests.orchestrate.test_grid import comparable, small_grid

pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]


def _wait_for_results(store: ResultStore, n: int, proc, log) -> None:
    deadline = time.monotonic() + 150
    while len(store.done_keys()) < n:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(log.read_text())
        time.sleep(0.05)


def test_scheduler_killed_mid_grid(cluster, caches, tmp_path):
    grid = small_grid(caches, name="kill-scheduler", iterations=1500, algorithms=SLOW,
                      seeds=(0, 1, 2, 3))
    cells = expand_grid(grid)
    gfile = tmp_path / "grid.yaml"
    gfile.write_text(json.dumps(grid.model_dump(mode="json")))
    res = tmp_path / "res"
    store = ResultStore(res)
    with _client(cluster, 2):
        pass
    log = tmp_path / "client.log"
    client_proc = _spawn([sys.executable, "-c", "from bnsl_dist.cli import main; main()",
                          "grid", "run", str(gfile), "--results", str(res),
                          "--scheduler-file", cluster.scheduler_file, "--no-progress"], log)
    try:
        _wait_for_results(store, 2, client_proc, log)
        _kill(cluster.procs[0])  # the scheduler
        rc = client_proc.wait(timeout=120)
    finally:
        _kill(client_proc)
    out = log.read_text()
    stored = store.done_keys()
    assert 2 <= len(stored) < len(cells), "the grid ended before the scheduler was killed"
    assert rc == 2, out
    assert "Traceback" not in out and "CommClosedError" not in out, out
    last = out.strip().splitlines()[-1]
    assert last.startswith("error: lost the scheduler"), out
    assert f"{len(stored)} of {len(cells)} pending cells stored" in last
    assert "rerun the same command to resume" in last
    assert store.read_failures() == []
    # a new cluster: the rerun computes exactly the missing cells
    cluster.close()
    lp = LocalProcesses(tmp_path / "second")
    (tmp_path / "second").mkdir()
    try:
        lp.start_scheduler()
        lp.start_worker("v0")
        lp.start_worker("v1")
        from bnsl_dist.orchestrate.grid import run_grid

        with _client(lp, 2) as client:
            summary = run_grid(client, grid, res, progress=False, report=False)
    finally:
        lp.close()
    assert summary.skipped == len(stored) and not summary.failed
    assert set(summary.computed) == {c.key for c in cells} - stored
    got = {r.key: comparable(r) for r in store.read_results()}
    assert got == {c.key: comparable(run_cell(c)) for c in cells}


def test_every_worker_killed_mid_grid(cluster, caches, tmp_path):
    from bnsl_dist.orchestrate.grid import GridInterrupted, run_grid

    grid = small_grid(caches, name="kill-workers", iterations=1500, algorithms=SLOW,
                      seeds=(0, 1, 2))
    cells = expand_grid(grid)
    res = tmp_path / "res"

    def kill_all(rec) -> None:
        for w in cluster.workers:
            _kill(w)

    with _client(cluster, 2) as client, pytest.raises(GridInterrupted) as info:
        run_grid(client, grid, res, progress=False, report=False, on_result=kill_all,
                 no_worker_timeout=3)
    store = ResultStore(res)
    n = len(store.done_keys())
    assert 1 <= n < len(cells)
    msg = str(info.value)
    assert msg.startswith("no worker left for 3 s") and "\n" not in msg
    assert f"{n} of {len(cells)} pending cells stored" in msg and "rerun" in msg
    assert store.read_failures() == []


def test_cell_exception_is_a_failure_and_exit_code_1(cluster, caches, tmp_path):
    # the valid split's cache is damaged (read on a worker, when its cell runs): that
    # cell raises, the test split's is stored
    import shutil

    shutil.copy(caches.format(split="test"), tmp_path / "nltcs-test.jkl.gz")
    (tmp_path / "nltcs-valid.jkl.gz").write_bytes(b"not a cache")
    grid = small_grid(str(tmp_path / "nltcs-{split}.jkl.gz"), name="bad-cell", seeds=(0,),
                      splits=("valid", "test"), algorithms=[{"name": "kg", "k": [2]}])
    gfile = tmp_path / "grid.yaml"
    gfile.write_text(json.dumps(grid.model_dump(mode="json")))
    res = tmp_path / "res"
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    r = CliRunner().invoke(main, ["grid", "run", str(gfile), "--results", str(res),
                                  "--scheduler-file", cluster.scheduler_file,
                                  "--no-progress", "--no-report"])
    assert r.exit_code == 1, r.output
    (fail,) = ResultStore(res).read_failures()
    assert fail.split == "valid" and f"({fail.key}): " in r.output
    assert r.output.count("failed nltcs/valid") == 1  # once (it was printed twice)
    assert "nltcs-valid.jkl.gz" in r.output
    assert "1 computed, 1 failed" in r.output
