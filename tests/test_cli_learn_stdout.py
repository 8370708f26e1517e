"""`learn -o -` writes the result JSON on stdout (nothing else goes there), as `score`,
`infer` and `impute` do; off a terminal its table never wraps. The real command, as a
script would run it (a subprocess: stdout and stderr are pipes)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from bnsl_dist.data import bundled_path
from bnsl_dist.search.base import DEFAULT_ALGORITHM
from tests.naive import load_jkl
from tests.test_cli_learn import WINE_OPT, _rescore

WINE = str(bundled_path("jkl/wine.BIC.3.jkl.gz"))
CLI = [sys.executable, "-c", "from bnsl_dist.cli import main; main()"]


def _learn(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "learn", *args], capture_output=True, text=True,
                          timeout=300)


def test_dash_writes_the_result_json_on_stdout(tmp_path):
    # a long path: the table's title and result row wrapped at 80 columns in a log file
    long = tmp_path / ("a-cache-whose-name-is-far-longer-than-eighty-columns-" * 2 + ".jkl.gz")
    shutil.copy(WINE, long)
    args = [str(long), "--iterations", "300", "--serial", "--seeds", "2"]
    r = _learn(*args, "-o", "-")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)  # the whole of stdout is the JSON
    assert got["score"] == pytest.approx(_rescore(load_jkl(WINE), got["dag"]), abs=1e-6)
    assert got["score"] == pytest.approx(WINE_OPT, abs=1e-3)
    f = tmp_path / "r.json"
    assert _learn(*args, "-o", str(f), "-q").returncode == 0
    want = json.loads(f.read_text())
    assert got["dag"] == want["dag"] and got["score"] == want["score"]  # same run
    title = f"bnsl-dist learn: {DEFAULT_ALGORITHM} on {long}"
    assert title in r.stderr.splitlines(), r.stderr  # one line: never wrapped off a TTY
    assert any("│ stdout" in ln for ln in r.stderr.splitlines())


def test_dash_with_time_limit_and_quiet(tmp_path):
    r = _learn("nltcs", "--time-limit", "2", "-o", "-", "-q")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    got = json.loads(r.stdout)
    assert got["time_limit"] == 2.0 and len(got["dag"]["nodes"]) == 16


def test_dash_refuses_export(tmp_path):
    r = _learn(WINE, "--serial", "-o", "-", "--export", "graphml")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "error: --export writes beside the result file: give -o a file, " \
                       "not -\n"
