"""Fault tolerance with real processes on 127.0.0.1: `dask scheduler` and `dask worker`
subprocesses run a small grid (iteration budgets); a worker killed mid-grid changes no
result; a client killed mid-grid leaves only finished cells, and the rerun computes
exactly the missing ones."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.results.store import ResultStore
from tests.orchestrate.test_grid import comparable, small_grid, write_nltcs_caches

pytestmark = [pytest.mark.dask, pytest.mark.timeout(180)]

SLOW = [{"name": "kg", "k": [2]}, {"name": "kmax", "k": [2]}]


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    fh = open(log, "wb")  # noqa: SIM115 - closed with the process group
    return subprocess.Popen(args, stdout=fh, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)


def _kill(p: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, sig)
    with contextlib.suppress(subprocess.TimeoutExpired):
        p.wait(timeout=15)


class LocalProcesses:
    """A scheduler and workers started as separate processes (each in its own process
    group, so that a kill takes the nanny and its worker together)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.scheduler_file = str(folder / "scheduler.json")
        self.procs: list[subprocess.Popen] = []
        self.workers: list[subprocess.Popen] = []

    def start_scheduler(self) -> None:
        p = _spawn([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1",
                    "--port", "0", "--dashboard-address", "127.0.0.1:0",
                    "--scheduler-file", self.scheduler_file], self.folder / "scheduler.log")
        self.procs.append(p)
        deadline = time.monotonic() + 60
        while not (Path(self.scheduler_file).is_file()
                   and Path(self.scheduler_file).stat().st_size > 0):
            if p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.folder / "scheduler.log").read_text())
            time.sleep(0.1)
        addr = json.loads(Path(self.scheduler_file).read_text())["address"]
        assert addr.startswith("tcp://127.0.0.1:")

    def start_worker(self, name: str) -> subprocess.Popen:
        p = _spawn([sys.executable, "-m", "dask", "worker", "--scheduler-file",
                    self.scheduler_file, "--host", "127.0.0.1", "--nthreads", "1",
                    "--nworkers", "1", "--no-dashboard", "--name", name,
                    "--local-directory", str(self.folder / name)],
                   self.folder / f"{name}.log")
        self.procs.append(p)
        self.workers.append(p)
        return p

    def close(self) -> None:
        for p in reversed(self.procs):
            _kill(p, signal.SIGTERM)
            _kill(p)


@pytest.fixture
def cluster(tmp_path):
    lp = LocalProcesses(tmp_path)
    try:
        lp.start_scheduler()
        lp.start_worker("w0")
        lp.start_worker("w1")
        yield lp
    finally:
        lp.close()


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    return write_nltcs_caches(tmp_path_factory.mktemp("caches"))


def _client(lp: LocalProcesses, n_workers: int):
    from distributed import Client

    c = Client(scheduler_file=lp.scheduler_file, timeout="60s")
    c.wait_for_workers(n_workers, timeout=90)
    return c


def test_worker_killed_mid_grid(cluster, caches, tmp_path):
    from bnsl_dist.orchestrate.grid import run_grid

    grid = small_grid(caches, name="kill-worker", iterations=1500, algorithms=SLOW,
                      seeds=(0, 1, 2))
    cells = expand_grid(grid)
    killed: list[int] = []

    def kill_first_worker(rec) -> None:
        if not killed:
            killed.append(len(ResultStore(tmp_path / "res").done_keys()))
            _kill(cluster.workers[0])
            cluster.start_worker("w2")  # a replacement joins (and is warmed up)

    with _client(cluster, 2) as client:
        summary = run_grid(client, grid, tmp_path / "res", progress=False, report=False,
                           on_result=kill_first_worker)
    assert killed and killed[0] < len(cells), "the worker died after the grid had ended"
    assert cluster.workers[0].poll() is not None
    assert not summary.failed and len(summary.computed) == len(cells)
    got = {r.key: comparable(r) for r in ResultStore(tmp_path / "res").read_results()}
    undisturbed = {c.key: comparable(run_cell(c)) for c in cells}
    assert got == undisturbed


def test_utilisation_after_a_lost_worker_is_at_most_one(cluster, caches, tmp_path):
    """A worker killed and not replaced mid-grid: the busy worker-seconds over the
    worker-seconds available stay at most 1 (the survivors as the denominator read
    1.39), and the busy seconds hold every stored cell's own time."""
    from bnsl_dist.orchestrate.grid import run_grid

    grid = small_grid(caches, name="lose-worker", iterations=1500, algorithms=SLOW,
                      seeds=(0, 1, 2))
    killed: list[bool] = []

    def kill_first_worker(rec) -> None:
        if not killed:
            killed.append(True)
            _kill(cluster.workers[0])

    with _client(cluster, 2) as client:
        summary = run_grid(client, grid, tmp_path / "res", progress=False, report=False,
                           on_result=kill_first_worker)
    assert killed and not summary.failed
    assert summary.busy_seconds is not None
    assert summary.busy_seconds >= sum(r.elapsed for r in
                                       ResultStore(tmp_path / "res").read_results())
    assert summary.utilisation is not None and 0 < summary.utilisation <= 1


def test_client_killed_mid_grid_rerun_computes_only_missing(cluster, caches, tmp_path):
    from bnsl_dist.orchestrate.grid import run_grid

    grid = small_grid(caches, name="kill-client", iterations=1500, algorithms=SLOW,
                      seeds=(0, 1, 2, 3))
    cells = expand_grid(grid)
    gfile = tmp_path / "grid.yaml"
    gfile.write_text(json.dumps(grid.model_dump(mode="json")))
    res = tmp_path / "res"
    store = ResultStore(res)
    with _client(cluster, 2):
        pass  # both workers are up before the client starts
    client_proc = _spawn([sys.executable, "-c", "from bnsl_dist.cli import main; main()",
                          "grid", "run", str(gfile), "--results", str(res),
                          "--scheduler-file", cluster.scheduler_file, "--no-progress",
                          "--no-report"], tmp_path / "client.log")
    try:
        deadline = time.monotonic() + 120
        while len(store.done_keys()) < 3:
            if client_proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((tmp_path / "client.log").read_text())
            time.sleep(0.05)
    finally:
        _kill(client_proc)
    first = store.done_keys()
    assert 3 <= len(first) < len(cells), "the client finished before it was killed"
    mtimes = {k: store.result_path(k).stat().st_mtime_ns for k in first}
    with _client(cluster, 2) as client:
        summary = run_grid(client, grid, res, progress=False, report=False)
    assert summary.skipped == len(first)
    assert set(summary.computed) == {c.key for c in cells} - first
    assert not summary.failed
    assert store.done_keys() == {c.key for c in cells}
    assert {k: store.result_path(k).stat().st_mtime_ns for k in first} == mtimes
    got = {r.key: comparable(r) for r in store.read_results()}
    assert got == {c.key: comparable(run_cell(c)) for c in cells}
