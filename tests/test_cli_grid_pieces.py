"""`grid run --datasets`: a grid runs in pieces; the pieces' records are the whole
grid's (same keys), and the stored grid stays the whole one."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.config import load_grid
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.results.store import ResultStore


@pytest.fixture
def two_set_grid(tmp_path):
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        x = rng.integers(0, 2, size=(60, 4))
        x[:, 1] = x[:, 0] ^ (rng.random(60) < 0.1)
        (tmp_path / f"{name}.csv").write_text(
            "w,x,y,z\n" + "\n".join(",".join(map(str, r)) for r in x) + "\n")
    grid = {"name": "pieces", "seed": 1,
            "datasets": [{"name": "a", "path": str(tmp_path / "a.csv")},
                         {"name": "b", "path": str(tmp_path / "b.csv")}],
            "cache": {"method": "sequential", "max_indegree": 2, "scores_per_variable": 20},
            "algorithms": [{"name": "asobs"}, {"name": "obs"}], "seeds": [0],
            "budget": {"iterations": 5}}
    path = tmp_path / "grid.yaml"
    path.write_text(json.dumps(grid))
    return path


def test_dry_run_of_a_piece_and_unknown_names(two_set_grid, tmp_path):
    run = CliRunner().invoke
    r = run(main, ["grid", "run", str(two_set_grid), "--results", str(tmp_path / "r"),
                   "--dry-run", "--datasets", "b"])
    assert r.exit_code == 0, r.output
    assert "2 cells" in r.output and "1 data sets" in r.output
    r = run(main, ["grid", "run", str(two_set_grid), "--results", str(tmp_path / "r"),
                   "--dry-run", "--datasets", "b,nope"])
    assert r.exit_code == 2 and "--datasets: nope not in grid pieces" in r.output


@pytest.mark.dask
def test_pieces_add_up_to_the_grid(two_set_grid, tmp_path):
    res = tmp_path / "r"
    full = load_grid(two_set_grid)
    for piece in ("b", "a"):
        r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results",
                                      str(res), "--datasets", piece, "--workers", "1",
                                      "--no-progress", "--no-report"])
        assert r.exit_code == 0, r.output
        assert "2 computed" in r.output
        stored = json.loads((res / "grids" / "pieces.json").read_text())
        assert stored == json.loads(full.model_dump_json())
        # no progress bar: a line per stored cell, with the score its record holds
        for rec in ResultStore(res).read_results():
            if rec.dataset == piece:
                assert re.search(rf"\d\d:\d\d:\d\d [12]/2 {piece}/{rec.split} "
                                 rf"{rec.label} seed={rec.seed}: {rec.best_score:.4f} in ",
                                 r.output), r.output
    store = ResultStore(res)
    assert store.done_keys() == {c.key for c in expand_grid(full)}
    assert sorted(r.dataset for r in store.read_results()) == ["a", "a", "b", "b"]
    # all stored: the whole grid run again starts no cluster and computes nothing
    r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results", str(res),
                                  "--workers", "1", "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    assert "4 cells: all already done" in r.output and "Dask cluster" not in r.output
    assert store.done_keys() == {c.key for c in expand_grid(full)}


def test_status_counts_per_data_set_and_algorithm(two_set_grid, tmp_path):
    """`grid status --by`: one row per group, in grid order, each cell counted once by
    what the folder holds for it (a cell with both a result and a failure is done)."""
    from bnsl_dist.pipeline.run import failure_record, run_cell

    res = tmp_path / "r"
    store = ResultStore(res)
    cells = {(c.dataset, c.label): c for c in expand_grid(load_grid(two_set_grid))}
    assert sorted(cells) == [("a", "asobs"), ("a", "obs"), ("b", "asobs"), ("b", "obs")]
    store.write_result(run_cell(cells["a", "asobs"]))
    store.write_failure(failure_record(cells["b", "obs"], "error", "boom"))
    store.write_result(run_cell(cells["b", "asobs"]))  # failed once, then done
    store.write_failure(failure_record(cells["b", "asobs"], "error", "earlier"))
    run = CliRunner().invoke
    r = run(main, ["grid", "status", str(two_set_grid), "--results", str(res), "--by",
                   "dataset", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert (got["done"], got["failed"], got["pending"]) == (2, 1, 1)
    assert got["groups"] == [
        {"dataset": "a", "done": 1, "failed": 0, "pending": 1, "total": 2},
        {"dataset": "b", "done": 1, "failed": 1, "pending": 0, "total": 2}]
    r = run(main, ["grid", "status", str(two_set_grid), "--results", str(res), "--by",
                   "label", "--by", "budget_scale"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "pieces: 2 done, 1 failed, 1 pending (of 4)"
    assert [ln.split() for ln in lines[1:]] == [
        ["label", "budget_scale", "done", "failed", "pending", "total"],
        ["asobs", "-", "2", "0", "0", "2"], ["obs", "-", "0", "1", "1", "2"]]
    r = run(main, ["grid", "status", str(two_set_grid), "--results", str(res), "--by",
                   "datset"])
    assert r.exit_code == 2 and "--by: unknown field 'datset'" in r.output
