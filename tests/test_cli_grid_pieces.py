"""`grid run --datasets`: a grid runs in pieces; the pieces' records are the whole
grid's (same keys), and the stored grid stays the whole one."""

from __future__ import annotations

import json

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
    store = ResultStore(res)
    assert store.done_keys() == {c.key for c in expand_grid(full)}
    assert sorted(r.dataset for r in store.read_results()) == ["a", "a", "b", "b"]
    # all stored: the whole grid run again starts no cluster and computes nothing
    r = CliRunner().invoke(main, ["grid", "run", str(two_set_grid), "--results", str(res),
                                  "--workers", "1", "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    assert "4 cells: all already done" in r.output and "Dask cluster" not in r.output
    assert store.done_keys() == {c.key for c in expand_grid(full)}
