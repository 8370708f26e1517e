"""Cluster connection faults fail fast with one line and exit code 2, before any work:
a missing, stale or malformed scheduler file, a malformed or unreachable address, a
scheduler without workers, a bad --workers value."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main

pytestmark = [pytest.mark.dask, pytest.mark.timeout(120)]

GRID = {"name": "conn", "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0],
        "budget": {"iterations": 5}}


@pytest.fixture
def grid_file(tmp_path):
    f = tmp_path / "grid.yaml"
    f.write_text(json.dumps(GRID))
    return f


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(grid_file, tmp_path, *extra: str):
    r = CliRunner().invoke(main, ["grid", "run", str(grid_file), "--results",
                                  str(tmp_path / "res"), "--no-progress", "--no-report",
                                  "--connect-timeout", "2", *extra])
    return r


def _one_line_error(r, *needles: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.output.count("\n") == 1 and r.output.startswith("error: "), r.output
    for n in needles:
        assert n in r.output, r.output
    assert "Traceback" not in r.output


def test_missing_scheduler_file(grid_file, tmp_path):
    r = _run(grid_file, tmp_path, "--scheduler-file", str(tmp_path / "nope.json"))
    _one_line_error(r, "nope.json", "no such file")


def test_malformed_scheduler_file(grid_file, tmp_path):
    bad = tmp_path / "s.json"
    bad.write_text("{not json")
    _one_line_error(_run(grid_file, tmp_path, "--scheduler-file", str(bad)),
                    "s.json", "not a scheduler file")
    bad.write_text(json.dumps({"address": "nowhere"}))
    _one_line_error(_run(grid_file, tmp_path, "--scheduler-file", str(bad)), "nowhere")


def test_stale_scheduler_file(grid_file, tmp_path):
    stale = tmp_path / "s.json"  # a scheduler that has gone: nothing listens there
    stale.write_text(json.dumps({"address": f"tcp://127.0.0.1:{_free_port()}"}))
    r = _run(grid_file, tmp_path, "--scheduler-file", str(stale))
    _one_line_error(r, "cannot reach", "within 2 s", "s.json")


@pytest.mark.parametrize("address,needle", [("notanaddress", "not a scheduler address"),
                                            ("tcp://127.0.0.1", "missing port"),
                                            ("foo://a:1", "unknown address scheme")])
def test_malformed_address(grid_file, tmp_path, address, needle):
    _one_line_error(_run(grid_file, tmp_path, "--scheduler", address), address, needle)


def test_unreachable_address(grid_file, tmp_path):
    r = _run(grid_file, tmp_path, "--scheduler", f"tcp://127.0.0.1:{_free_port()}")
    _one_line_error(r, "cannot reach")


def test_bad_workers_and_several_clusters(grid_file, tmp_path):
    _one_line_error(_run(grid_file, tmp_path, "--workers", "0"), "Invalid value for '--workers'")
    _one_line_error(_run(grid_file, tmp_path, "--workers", "2", "--scheduler",
                         "tcp://127.0.0.1:1"), "at most one")
    _one_line_error(_run(grid_file, tmp_path, "--connect-timeout", "0"), "positive")


@pytest.mark.parametrize("value", ["inf", "nan"])
def test_connect_timeout_must_be_finite(grid_file, tmp_path, value):
    # inf reached dask as "infs": a KeyError traceback (exit 1)
    r = _run(grid_file, tmp_path, "--scheduler", f"tcp://127.0.0.1:{_free_port()}",
             "--connect-timeout", value)
    _one_line_error(r, f"connect timeout must be positive and finite, got {value}")


@pytest.mark.parametrize("value", ["-1", "nan", "inf"])
def test_cluster_start_timeout_checked_before_anything_starts(tmp_path, value):
    d = tmp_path / "c"
    r = CliRunner().invoke(main, ["cluster", "start", "--dir", str(d), "--workers", "1",
                                  "--timeout", value])
    _one_line_error(r, f"timeout must be positive and finite, got {value}")
    assert not d.exists()  # no scheduler was spawned (its log would be there)


def test_scheduler_without_workers(grid_file, tmp_path):
    from tests.faults.conftest import dask_scheduler

    sf = tmp_path / "scheduler.json"
    with dask_scheduler(sf):
        r = _run(grid_file, tmp_path, "--scheduler-file", str(sf))
        _one_line_error(r, "has no worker after 2 s")
    assert not (tmp_path / "res" / "failures").exists()


# ------------------------------------------------ something that is not a Dask scheduler
@pytest.fixture
def not_a_scheduler(request):
    """A TCP listener on 127.0.0.1 that accepts and never answers ("silent") or answers
    any bytes with an HTTP reply ("http", as a scheduler's dashboard port does)."""
    import socketserver
    import threading

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            if request.param == "http":
                self.request.recv(65536)
                self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                                     b"Connection: close\r\n\r\n")
            else:
                stop.wait(60)  # holds the connection open, says nothing

    stop = threading.Event()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield request.param, f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()
        server.shutdown()
        server.server_close()


_NOT_DASK = {"silent": "did not answer within 2 s", "http": "not dask's protocol"}


@pytest.mark.timeout(60)  # the silent listener hung `grid run` for 10 min before
@pytest.mark.parametrize("not_a_scheduler", ["silent", "http"], indirect=True)
def test_grid_run_at_a_service_that_is_not_a_scheduler(grid_file, tmp_path,
                                                      not_a_scheduler):
    kind, address = not_a_scheduler  # http: a MemoryError traceback (3.07 EiB) before
    r = _run(grid_file, tmp_path, "--scheduler", address)
    _one_line_error(r, address, "is not a Dask scheduler", _NOT_DASK[kind])
    assert not (tmp_path / "res" / "failures").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("not_a_scheduler", ["silent", "http"], indirect=True)
def test_learn_at_a_service_that_is_not_a_scheduler(tmp_path, not_a_scheduler):
    kind, address = not_a_scheduler
    out = tmp_path / "net.json"
    r = subprocess.run([sys.executable, "-c", "from bnsl_dist.cli import main; main()",
                        "learn", "nltcs", "-o",
                        str(out), "--scheduler", address, "--connect-timeout", "2"],
                       capture_output=True, text=True, timeout=50)
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("error: "), r.stderr
    assert address in r.stderr and "is not a Dask scheduler" in r.stderr, r.stderr
    assert _NOT_DASK[kind] in r.stderr, r.stderr
    assert not out.exists()


def test_a_worker_address_is_not_a_scheduler(tmp_path):
    from distributed import LocalCluster

    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate._probe import probe_scheduler

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as lc:
        probe_scheduler(lc.scheduler_address, "s", 5)  # the scheduler: passes
        worker = next(iter(lc.scheduler.workers))
        with pytest.raises(InvalidConfigError, match=r"not a Dask scheduler .*Worker"):
            probe_scheduler(worker, worker, 5)
