"""A full file system mid-grid: one line naming the results folder, the count of
stored cells and the rerun that resumes (it said only "No space left on device"); the
stored records are whole and a rerun elsewhere completes the grid. The real command on
a 160 KiB tmpfs (mounting one needs root: skipped, with the reason, otherwise)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from bnsl_dist.results.store import ResultStore

pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]

GRID = {"name": "full", "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": list(range(30)),
        "budget": {"iterations": 5}}
CLI = [sys.executable, "-c", "from bnsl_dist.cli import main; main()"]


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160k", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs (needs root): {r.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def _run(grid, results):
    return subprocess.run([*CLI, "grid", "run", str(grid), "--results", str(results),
                           "--workers", "2", "--no-report"],
                          capture_output=True, text=True, timeout=240)


def test_full_disk_says_where_what_is_stored_and_how_to_resume(small_fs, tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(json.dumps(GRID))
    res = small_fs / "res"
    r = _run(grid, res)
    assert r.returncode == 2, r.stderr
    last = r.stderr.splitlines()[-1]
    m = re.fullmatch(rf"error: no space left on the device of {re.escape(str(res))}: "
                     r"(\d+) of 30 pending cells stored; free space there and rerun the "
                     r"same command to resume", last)
    assert m, r.stderr
    assert "Traceback" not in r.stderr
    stored = ResultStore(res).read_results()  # every stored record reads whole
    assert len(stored) == int(m.group(1)) > 0
    moved = tmp_path / "res"  # "free space": the same folder on a roomier disk
    shutil.copytree(res, moved)
    again = _run(grid, moved)
    assert again.returncode == 0, again.stderr
    assert f"30 cells: {len(stored)} already done, {30 - len(stored)} computed" in again.stdout
