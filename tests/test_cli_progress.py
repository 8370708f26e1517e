"""Progress as promised, off a terminal (a log file, a pipe): learn, cache build, grid run
and impute say each phase in a line as it starts (the kernels, the cache, the search,
the best score so far where there is one); with -q they say nothing on stderr. The real
commands in subprocesses (stderr a pipe: not a terminal)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from bnsl_dist.data import bundled_path, write_csv
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.search.base import DEFAULT_ALGORITHM

CLI = [sys.executable, "-c", "from bnsl_dist.cli import main; main()"]
KERNELS = r"(loading the numba kernels|compiling the numba kernels: once per machine.*)"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r


def _phases(stderr: str) -> list[str]:
    """The phase lines: '  12.3 s  TEXT'."""
    return [m.group(1) for m in re.finditer(r"^ *\d+\.\d s  (.*)$", stderr, re.M)]


def test_learn_says_each_phase_and_nothing_with_q(tmp_path):
    out = tmp_path / "r.json"
    r = _cli("learn", "nltcs", "--iterations", "20", "--serial", "-o", str(out))
    got = _phases(r.stderr)
    assert len(got) == 3 and re.fullmatch(KERNELS, got[0]), r.stderr
    assert got[1:] == ["building the cache", f"searching: {DEFAULT_ALGORITHM}, 1 seed(s) x 20 iterations"]
    r = _cli("learn", "nltcs", "--time-limit", "6", "-o", str(out))
    got = _phases(r.stderr)
    assert re.fullmatch(KERNELS, got[1]) and got[2] == "building the cache", r.stderr
    best = json.loads(out.read_text())["score"]
    m = [re.fullmatch(r"(searching|polishing) \(best so far (-[\d,.]+)\)", g) for g in got[3:]]
    assert m and all(m), r.stderr  # each later stage with the best score so far
    # the line prints 2 decimals: a score equal to the final one may round up by 0.005
    assert all(float(x.group(2).replace(",", "")) <= best + 0.005 + 1e-9 for x in m)
    for args in (["--iterations", "20", "--serial"], ["--time-limit", "3"]):
        assert _cli("learn", "nltcs", *args, "-o", str(out), "-q").stderr == ""


def test_cache_build_and_grid_run_say_their_phases(tmp_path):
    out = tmp_path / "c.jkl"
    args = ["cache", "build", "nltcs", "--scores-per-variable", "20", "--max-indegree", "2",
            "-o", str(out)]
    got = _phases(_cli(*args).stderr)
    assert len(got) == 2 and re.fullmatch(KERNELS, got[0])
    assert got[1] == "building the cache: independence selection over 16 variables"
    assert _cli(*args, "-q").stderr == ""
    grid = tmp_path / "g.yaml"
    grid.write_text(json.dumps({
        "name": "p", "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0, 1],
        "budget": {"iterations": 5}}))
    run = ["grid", "run", str(grid), "--workers", "1", "--no-report"]
    r = _cli(*run, "--results", str(tmp_path / "a"))
    cells = re.findall(r"^\d\d:\d\d:\d\d ([12])/2 nltcs/test kg k=2 seed=\d: -[\d.]+ in ",
                       r.stderr, re.M)
    assert cells == ["1", "2"], r.stderr  # a line per stored cell, with its score
    r = _cli(*run, "--results", str(tmp_path / "b"), "-q")
    assert "nltcs/test" not in r.stderr and "2 computed" in r.stdout


def test_impute_says_each_iteration_and_nothing_with_q(tmp_path):
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 300, np.random.default_rng(0))
    src = tmp_path / "masked.csv"
    write_csv(mask_mcar(truth, 0.1, np.random.default_rng(1)), src)
    args = ["impute", str(src), "-k", "2", "--serial", "--scores-per-variable", "30",
            "--search-iterations", "10", "--max-iterations", "2", "-o",
            str(tmp_path / "done.csv")]
    lines = _cli(*args).stderr.splitlines()
    assert re.fullmatch(KERNELS, lines[0]), lines
    assert all(re.fullmatch(r"iteration \d: score -[\d.]+, \d+ arcs \(\+\d+/-\d+\)", ln)
               for ln in lines[1:]) and len(lines) >= 2, lines
    assert _cli(*args, "-q").stderr == ""


@pytest.mark.parametrize("cmd", ["learn", "cache build", "grid run", "impute"])
def test_every_long_command_has_q(cmd):
    r = _cli(*cmd.split(), "--help")
    assert "-q, --quiet" in r.stdout
