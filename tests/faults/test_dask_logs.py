"""Dask's own log records stay off the terminal: a cell that raises is one line on
stderr (its worker's "Compute Failed" record, 9 lines with the traceback, went to the
terminal, and the failure was printed twice); the records go to dask.log in the
results folder, and to stderr as well with --debug. The real command, with real worker
processes (their stderr is the command's)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]

BAD = {"name": "bad", "datasets": [{"name": "nltcs", "splits": ["test"]}],
       "cache": {"method": "sequential", "max_indegree": 1},
       "algorithms": [{"name": "dp", "params": {"max_vars": 4}},  # raises: 16 > 4
                      {"name": "kg", "k": [2]}],
       "seeds": [0, 1], "budget": {"iterations": 5}}


def _grid_run(tmp_path, *pre: str) -> subprocess.CompletedProcess[str]:
    g = tmp_path / "grid.yaml"
    g.write_text(json.dumps(BAD))
    return subprocess.run([sys.executable, "-c", "from bnsl_dist.cli import main; main()",
                           *pre, "grid", "run", str(g), "--results", str(tmp_path / "res"),
                           "--workers", "2", "--no-report"],
                          capture_output=True, text=True, timeout=240)


def test_a_cell_that_raises_is_one_line_and_dask_logs_go_to_the_results_folder(tmp_path):
    r = _grid_run(tmp_path)
    assert r.returncode == 1, r.stderr
    failed = [ln for ln in r.stderr.splitlines() if "failed" in ln]
    assert len(failed) == 2, r.stderr  # seeds 0 and 1 of dp: one line each
    for line in failed:
        assert line.startswith("failed nltcs/test dp seed=")
        assert line.endswith("exact_dp: 16 variables exceed the limit of 4 (2^n subsets); "
                             "use an ILP or A* solver"), line  # never wrapped off a TTY
    for noise in ("Compute Failed", "Traceback", "distributed.", "Key:"):
        assert noise not in r.stderr, r.stderr
    assert "2 computed, 2 failed" in r.stdout
    log = (tmp_path / "res" / "dask.log").read_text()
    assert log.count("Compute Failed") == 2 and "exceed the limit of 4" in log


def test_debug_shows_dask_logs_on_the_terminal_too(tmp_path):
    r = _grid_run(tmp_path, "--debug")
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("Compute Failed") == 2, r.stderr
    assert (tmp_path / "res" / "dask.log").read_text().count("Compute Failed") == 2


def test_importing_the_package_leaves_dask_logging_alone():
    code = ("import logging, distributed; before = logging.getLogger('distributed').handlers[:]"
            "\nimport bnsl_dist.cli, bnsl_dist.orchestrate.grid\n"
            "assert logging.getLogger('distributed').handlers == before\n"
            "assert logging.getLogger('distributed').level <= logging.WARNING")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_no_dask_logger_keeps_a_terminal_handler(tmp_path):
    """dask gives distributed.client, tornado.application ... stderr handlers of their own
    (not propagating): a lost scheduler's tornado traceback reached the terminal."""
    code = (
        "import logging, sys\n"
        "from bnsl_dist.cli import _logging\n"
        "_logging.configure(False)\n"
        f"_logging.log_to({str(tmp_path / 'd.log')!r})\n"
        "bad = [n for n, lg in logging.root.manager.loggerDict.items()\n"
        "       if isinstance(lg, logging.Logger) and n.split('.')[0] in\n"
        "       ('distributed', 'tornado', 'bokeh', 'asyncio')\n"
        "       and any(type(h) is logging.StreamHandler for h in lg.handlers)]\n"
        "assert not bad, bad\n"
        "logging.getLogger('tornado.application').error('boom')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "tornado.application ERROR: boom" in (tmp_path / "d.log").read_text()
