"""`grid run --datasets` (and ``--labels``): a grid runs in pieces; the pieces' records are the whole
grid's (same keys), and the stored grid stays the whole one."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.pipeline.config import load_grid
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


def test_dry_run_of_a_piece_by_label(two_set_grid, tmp_path):
    run = CliRunner().invoke
    r = run(main, ["grid", "run", str(two_set_grid), "--results", str(tmp_path / "r"),
                   "--dry-run", "--labels", "obs"])
    assert r.exit_code == 0, r.output
    assert "2 cells" in r.output and "obs: 2 cells" in r.output
    assert "asobs: " not in r.output
    r = run(main, ["grid", "run", str(two_set_grid), "--results", str(tmp_path / "r"),
                   "--dry-run", "--labels", "obs", "--datasets", "a"])
    assert r.exit_code == 0 and "1 cells" in r.output, r.output
    r = run(main, ["grid", "run", str(two_set_grid), "--results", str(tmp_path / "r"),
                   "--dry-run", "--labels", "asobs-ent"])
    assert r.exit_code == 2
    assert "--labels: asobs-ent not in grid pieces (it has asobs, obs)" in r.output


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
    # all stored: the whole grid run again starts no cluster and computes nothing, but
    # stores the grid it ran (here over another grid's JSON, as `grid import` leaves)
    (res / "grids" / "pieces.json").write_text(json.dumps({"name": "pieces", "old": 1}))
    r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results", str(res),
                                  "--workers", "1", "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    assert "4 cells: all already done" in r.output and "Dask cluster" not in r.output
    assert store.done_keys() == {c.key for c in expand_grid(full)}
    assert json.loads((res / "grids" / "pieces.json").read_text()) == \
        json.loads(full.model_dump_json())


def test_status_of_a_folder_that_is_not_there_says_so(two_set_grid, tmp_path):
    """A mistyped --results read as a grid not yet begun (every cell pending, nothing
    said); the count stands (nothing has run there) and stderr names the folder."""
    r = CliRunner().invoke(main, ["grid", "status", str(two_set_grid), "--results",
                                  str(tmp_path / "typo")])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("pieces: 0 done, 0 failed, 4 pending (of 4)")
    assert f"no results folder {tmp_path / 'typo'}" in r.stderr
    assert not (tmp_path / "typo").exists()  # status creates nothing


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
        {"dataset": "a", "done": 1, "failed": 0, "pending": 1, "total": 2,
         "seconds_left": None},   # no obs cell stored: nothing to estimate it by
        {"dataset": "b", "done": 1, "failed": 1, "pending": 0, "total": 2,
         "seconds_left": None}]
    r = run(main, ["grid", "status", str(two_set_grid), "--results", str(res), "--by",
                   "label", "--by", "budget_scale"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == ("pieces: 2 done, 1 failed, 1 pending (of 4); no stored cell like "
                        "the 2 to run to estimate their time by")
    assert [ln.split() for ln in lines[1:]] == [
        ["label", "budget_scale", "done", "failed", "pending", "total", "left"],
        ["asobs", "-", "2", "0", "0", "2", "-"], ["obs", "-", "0", "1", "1", "2", "?"]]
    r = run(main, ["grid", "status", str(two_set_grid), "--results", str(res), "--by",
                   "datset"])
    assert r.exit_code == 2 and "--by: unknown field 'datset'" in r.output


def test_export_keeps_the_complete_pieces(two_set_grid, tmp_path):
    """`grid export --complete-by dataset`: a data set goes in once none of its cells is
    pending (a failure counts as stored); a folder without its grid says so."""
    from bnsl_dist.pipeline.run import failure_record, run_cell
    from bnsl_dist.results.export import read_records

    res = tmp_path / "r"
    store = ResultStore(res)
    grid = load_grid(two_set_grid)
    cells = {(c.dataset, c.label): c for c in expand_grid(grid)}
    for cell in (cells["a", "asobs"], cells["b", "asobs"]):
        store.write_result(run_cell(cell))
    store.write_failure(failure_record(cells["b", "obs"], "error", "boom"))
    run = CliRunner().invoke
    out = tmp_path / "records.parquet"
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "dataset"])
    assert r.exit_code == 2 and "no stored grid" in r.output and not out.exists()
    store.save_text("grids/pieces.json", grid.model_dump_json())
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "dataset"])
    assert r.exit_code == 0, r.output
    assert "1 of 2 pieces complete; left out: dataset=a (1 pending)" in r.output
    recs = read_records(out)
    assert recs.table.column("key").to_pylist() == [cells["b", "asobs"].key]
    assert [f.key for f in recs.failures] == [cells["b", "obs"].key]
    # by data set and label: a's asobs cell is a piece of its own
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "dataset",
                   "--complete-by", "label"])
    assert r.exit_code == 0 and "3 of 4 pieces complete" in r.output, r.output
    assert sorted(read_records(out).table.column("key").to_pylist()) == sorted(
        [cells["a", "asobs"].key, cells["b", "asobs"].key])
    # the other pieces to a second file: both imported, the folder again
    rest = tmp_path / "rest.parquet"
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "dataset",
                   "--left-out", str(rest)])
    assert r.exit_code == 0, r.output
    assert read_records(rest).table.column("key").to_pylist() == [cells["a", "asobs"].key]
    again = tmp_path / "again"
    r = run(main, ["grid", "import", str(out), str(rest), "--results", str(again)])
    assert r.exit_code == 0 and f"1 results written, 0 already there, 0 failures, 1 grid(s) " \
        f"from {rest}" in r.output, r.output
    assert ResultStore(again).done_keys() == store.done_keys()
    assert ResultStore(again).failed_keys() == store.failed_keys()
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--left-out", str(rest)])
    assert r.exit_code == 2 and "--left-out needs --complete-by" in r.output
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "dataset",
                   "--left-out", str(out)])
    assert r.exit_code == 2 and "the same file as --out" in r.output
    # without --complete-by: every stored result
    r = run(main, ["grid", "export", str(res), "--out", str(out)])
    assert r.exit_code == 0 and read_records(out).table.num_rows == 2, r.output
    r = run(main, ["grid", "export", str(res), "--out", str(out), "--complete-by", "sed"])
    assert r.exit_code == 2 and "--complete-by: unknown field 'sed'" in r.output


def test_status_estimates_the_time_left(two_set_grid, tmp_path):
    """Each cell still to run (pending or failed) is expected to take the mean wall time
    of the stored cells of its data set and algorithm; with none stored, no estimate."""
    from dataclasses import replace

    from bnsl_dist.pipeline.run import failure_record, run_cell

    spec = json.loads(two_set_grid.read_text())
    two_set_grid.write_text(json.dumps({**spec, "seeds": [0, 1, 2]}))
    res = tmp_path / "r"
    store = ResultStore(res)
    cells = {(c.dataset, c.label, c.seed): c for c in expand_grid(load_grid(two_set_grid))}
    for key, wall in ((("a", "asobs", 0), 10.0), (("a", "asobs", 1), 20.0),
                      (("b", "asobs", 0), 4.0)):
        store.write_result(replace(run_cell(cells[key]), wall_seconds=wall))
    store.write_failure(failure_record(cells["b", "asobs", 1], "error", "boom"))
    r = CliRunner().invoke(main, ["grid", "status", str(two_set_grid), "--results", str(res),
                                  "--by", "label", "--by", "dataset", "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    # a/asobs/2: 15 (mean of 10 and 20); b/asobs/1 (failed) and b/asobs/2: 4 each
    assert got["seconds_left"] == pytest.approx(15 + 4 + 4)
    assert got["cells_without_estimate"] == 6          # every obs cell
    left = {(g["label"], g["dataset"]): g["seconds_left"] for g in got["groups"]}
    assert left == {("asobs", "a"): pytest.approx(15), ("asobs", "b"): pytest.approx(8),
                    ("obs", "a"): None, ("obs", "b"): None}
    r = CliRunner().invoke(main, ["grid", "status", str(two_set_grid), "--results", str(res)])
    assert ("about 23 s of worker time left for 3 of them (6 with nothing to go by), "
            "from the wall times") in r.output, r.output
    r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results", str(res),
                                  "--dry-run", "--workers", "2"])
    assert r.exit_code == 0, r.output
    assert ("from the stored cells' wall times: 23 s of worker time, 12 s on 2 workers "
            "(6 cells with nothing to go by)") in r.output, r.output


def test_estimates_scale_with_the_sem_budget():
    """A SEM cell at a budget scale with no stored peer: the peers at other scales, each
    wall time divided by its scale, times the cell's scale."""
    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.pipeline.forecast import estimate_left
    from bnsl_dist.results.store import StoreStatus

    grid = GridConfig.model_validate({
        "name": "semtoy", "kind": "sem", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "seconds_per_variable": 0.01},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": [0, 1],
        "budget": {"seconds": 5},
        "sem": {"missing_rates": [0.1], "budget_scales": [1, 0.5, 2],
                "search_seconds_per_variable": 0.01}})
    cells = {(c.sem.budget_scale, c.seed): c for c in expand_grid(grid)}
    done = {(1, 0): 10.0, (0.5, 0): 4.0, (0.5, 1): 8.0}
    st = StoreStatus(done=tuple(cells[k].key for k in done), failed=(),
                     pending=tuple(c.key for k, c in cells.items() if k not in done))
    est = estimate_left(list(cells.values()), st, {cells[k].key: w for k, w in done.items()})
    assert est[cells[1, 1].key] == pytest.approx(10.0)          # its own scale's mean
    # per unit of scale: 10/1, 4/0.5, 8/0.5 -> mean 34/3; at x2: 68/3
    assert est[cells[2, 0].key] == pytest.approx(2 * (10 + 8 + 16) / 3)
    assert set(est) == {cells[1, 1].key, cells[2, 0].key, cells[2, 1].key}


def test_estimates_of_a_sem_cell_follow_its_missing_rate():
    """A SEM cell takes the mean of the stored cells at its own missing rate (and scale);
    at a rate with none stored, the mean over every rate."""
    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.pipeline.forecast import estimate_left
    from bnsl_dist.results.store import StoreStatus

    grid = GridConfig.model_validate({
        "name": "semrates", "kind": "sem", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "seconds_per_variable": 0.01},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": [0, 1],
        "budget": {"seconds": 5},
        "sem": {"missing_rates": [0.05, 0.1, 0.2], "search_seconds_per_variable": 0.01}})
    cells = {(c.sem.missing_rate, c.seed): c for c in expand_grid(grid)}
    done = {(0.1, 0): 10.0, (0.1, 1): 14.0, (0.2, 0): 30.0}
    st = StoreStatus(done=tuple(cells[k].key for k in done), failed=(),
                     pending=tuple(c.key for k, c in cells.items() if k not in done))
    est = estimate_left(list(cells.values()), st, {cells[k].key: w for k, w in done.items()})
    assert est[cells[0.2, 1].key] == pytest.approx(30.0)        # its rate's one cell
    assert est[cells[0.05, 0].key] == pytest.approx((10 + 14 + 30) / 3)   # every rate
    assert est[cells[0.05, 1].key] == est[cells[0.05, 0].key]


@pytest.mark.dask
def test_cell_log_says_the_time_left(two_set_grid, tmp_path):
    """Each logged line estimates the cells still to run of the piece from the cells
    stored so far (the same data set and algorithm): a cell with no such cell is not
    counted, and the last line has nothing left."""
    spec = json.loads(two_set_grid.read_text())
    two_set_grid.write_text(json.dumps({**spec, "seeds": [0, 1]}))
    r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results",
                                  str(tmp_path / "r"), "--datasets", "a", "--workers", "1",
                                  "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    lines = re.findall(r"\d/4 a/train (\w+) seed=(\d): \S+ in [\d.]+ s(.*)", r.output)
    assert len(lines) == 4, r.output
    stored: list[str] = []
    for i, (label, _seed, eta) in enumerate(lines):
        stored.append(label)
        left = [lab for lab in ("asobs", "obs") for _ in range(2)]
        for lab in stored:
            left.remove(lab)
        known = [lab for lab in left if lab in stored]
        if not known:
            assert eta == "", (i, r.output)
        else:
            want = (r"; about \d+ s left on 1 worker" if len(known) == len(left) else
                    rf"; {len(known)} cells like the stored ones: about \d+ s on 1 worker; "
                    rf"{len(left) - len(known)} with nothing to go by yet")
            assert re.fullmatch(want, eta), (i, r.output)


def test_dry_run_of_an_iteration_grid_says_its_bound_is_a_bound(tmp_path):
    """The smoke grid (54 cells of 200 iterations capped at 60 s) ran in 13 s; its dry
    run said "estimated wall time on 2 workers: 27.0 min at most". The cap's sum is
    now called an upper bound, with why, and the expected time is said to be unknown
    until cells like them are stored."""
    from pathlib import Path

    smoke = Path(__file__).resolve().parents[1] / "configs" / "grids" / "smoke.yaml"
    r = CliRunner().invoke(main, ["grid", "run", str(smoke), "--results", str(tmp_path),
                                  "--dry-run", "--workers", "2"])
    assert r.exit_code == 0, r.output
    assert ("search time budgets: 54.0 min of worker time at most, 27.0 min on 2 workers "
            "at most (an upper bound: every cell running to its seconds cap; 54 of 54 "
            "cells have an iteration budget, which usually ends them far sooner)"
            ) in r.output, r.output  # 54 cells x 60 s
    assert "estimated wall time" not in r.output
    assert "expected time: no estimate yet (no stored cell like any of the 54 to run" \
        in r.output
