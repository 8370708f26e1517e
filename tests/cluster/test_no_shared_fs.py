"""End to end on hosts that share no file system with the client (tests/cluster/
conftest.py): a grid (a screening stage, two optimizers, two seeds) and a SEM grid,
``learn``, ``learn --time-limit``, ``cache build`` and ``impute`` run against a TLS
scheduler whose workers cannot see the client's data, results or cache folders; the
records and files equal serial runs in this process. Faults: every process of one
worker host killed mid-grid, the scheduler host killed (one line, the rerun resumes).
Wrong set-ups fail in one line before any cell runs."""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path

import numpy as np
import pytest

from bnsl_dist.cache.jkl import read_jkl
from bnsl_dist.data.io import write_csv
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import load_data, run_cell
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.results.store import ResultStore

pytestmark = [pytest.mark.dask, pytest.mark.timeout(600)]


def _same(rec) -> tuple:
    """What work budgets make reproducible: the best DAG and its score."""
    return rec.key, rec.best_score, rec.dag_json


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """nltcs/test as a CSV file of the client's (hidden from the private hosts)."""
    csv = tmp_path_factory.mktemp("client-data") / "nl.csv"
    write_csv(load_data(DataRef(name="nltcs", split="test")), csv)
    return csv


def _grid(csv: Path, name: str, seeds=(0, 1), iterations: int = 10) -> GridConfig:
    return GridConfig.model_validate({
        "name": name, "seed": 4,
        "datasets": [{"name": "nl", "path": str(csv), "splits": ["train"]}],
        "cache": {"method": "independence", "scores_per_variable": 40, "max_indegree": 3},
        "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs-ent"},
                       {"name": "hc-tabu", "label": "qds", "screening": {"epsilon": 0.05}}],
        "seeds": list(seeds), "budget": {"iterations": iterations}})


def _write(grid: GridConfig, folder: Path) -> str:
    f = folder / f"{grid.name}.yaml"
    f.write_text(json.dumps(grid.model_dump(mode="json")))
    return str(f)


def _serial(grid: GridConfig) -> dict:
    return {c.key: _same(run_cell(c)) for c in expand_grid(grid)}


def _stored(folder: Path) -> dict:
    return {r.key: _same(r) for r in ResultStore(folder).read_results()}


def test_grid_and_sem_grid_without_a_shared_file_system(cluster, data, tmp_path):
    grid = _grid(data, "nofs")
    res = tmp_path / "res"
    r = cluster.cli(["grid", "run", _write(grid, tmp_path), "--results", str(res),
                     "--no-progress", "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    assert _stored(res) == _serial(grid)
    assert len(list((res / "caches").glob("*.jkl.gz"))) == 2  # written by the client
    # the workers really do not see the client's files: told they do, every cell fails
    r = cluster.cli(["grid", "run", _write(grid, tmp_path), "--results",
                     str(tmp_path / "shared"), "--no-progress", "--no-report", "--shared-fs"])
    assert r.returncode == 1 and "no such file" in r.stderr, r.stdout + r.stderr

    sem = GridConfig.model_validate({
        "name": "nofs-sem", "kind": "sem", "seed": 1,
        "datasets": [{"name": "nl", "path": str(data), "splits": ["train"]}],
        "cache": {"method": "independence", "scores_per_variable": 20},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": [0],
        "budget": {"iterations": 10},
        "sem": {"missing_rates": [0.2], "max_em_iterations": 2}})
    r = cluster.cli(["grid", "run", _write(sem, tmp_path), "--results", str(res),
                     "--no-progress", "--no-report"])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    (cell,) = expand_grid(sem)
    got = {rec.key: rec for rec in ResultStore(res).read_results()}[cell.key]
    want = run_cell(cell)
    assert (got.best_score, got.dag_json, got.outputs) == (want.best_score, want.dag_json,
                                                            want.outputs)


def test_learn_cache_build_and_impute_without_a_shared_file_system(cluster, data,
                                                                     tmp_path):
    base = ["learn", str(data), "--algorithm", "asobs-ent", "--iterations", "10",
            "--seeds", "2", "--scores-per-variable", "40", "-q"]
    r = cluster.cli([*base, "-o", str(tmp_path / "d.json")])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    r = cluster.cli([*base, "--serial", "-o", str(tmp_path / "s.json")], scheduler=False)
    assert r.returncode == 0, r.stderr
    d, s = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "ds")
    assert (d["score"], d["dag"]) == (s["score"], s["dag"])

    r = cluster.cli(["learn", str(data), "--time-limit", "8", "-q", "-o",
                     str(tmp_path / "t.json")])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    assert json.loads((tmp_path / "t.json").read_text())["score"] < 0

    cb = ["cache", "build", str(data), "--method", "independence",
          "--scores-per-variable", "40", "--max-indegree", "3"]
    r = cluster.cli([*cb, "-o", str(tmp_path / "d.jkl.gz")])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    r = cluster.cli([*cb, "-o", str(tmp_path / "s.jkl.gz")], scheduler=False)
    assert r.returncode == 0, r.stderr
    d_c, s_c = (read_jkl(tmp_path / f"{n}.jkl.gz") for n in "ds")
    for f in ("scores", "par_flat", "par_offsets", "offsets"):
        assert np.array_equal(getattr(d_c, f), getattr(s_c, f)), f

    from bnsl_dist.data.masking import mask_mcar

    masked = tmp_path / "masked.csv"
    write_csv(mask_mcar(load_data(DataRef(name="nltcs", split="test")), 0.1,
                        np.random.default_rng(0)), masked)
    imp = ["impute", str(masked), "-k", "2", "--max-iterations", "2",
           "--scores-per-variable", "20", "--search-iterations", "10"]
    r = cluster.cli([*imp, "-o", str(tmp_path / "d.csv")])
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    r = cluster.cli([*imp, "--serial", "-o", str(tmp_path / "s.csv")], scheduler=False)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "d.csv").read_bytes() == (tmp_path / "s.csv").read_bytes()


def test_a_tls_scheduler_without_certificates_is_one_line(cluster, data, tmp_path):
    r = cluster.cli(["grid", "run", _write(_grid(data, "nocert"), tmp_path), "--results",
                     str(tmp_path / "res"), "--no-progress"], tls=False)
    assert r.returncode == 2 and r.stdout.count("\n") + r.stderr.count("\n") == 1, \
        r.stdout + r.stderr
    assert "certificates" in r.stdout + r.stderr
    assert not (tmp_path / "res" / "results").exists()


def _fault_grid(csv: Path) -> GridConfig:
    """12 cells of about a second each (the faults strike while most are pending)."""
    return _grid(csv, "faults", seeds=(0, 1, 2, 3), iterations=15_000)


@functools.cache
def _fault_serial(csv: Path) -> dict:
    return _serial(_fault_grid(csv))


def _wait_for_a_record(folder: Path, proc, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not list((folder / "results").glob("*.parquet")):
        assert proc.poll() is None and time.monotonic() < deadline, "no record stored"
        time.sleep(0.2)


def test_a_worker_host_lost_mid_grid(cluster, data, tmp_path):
    """Every process of worker host w2 killed once a record is stored: the cells rerun
    on w1, every record equals the serial run's."""
    grid = _fault_grid(data)
    res = tmp_path / "res"
    proc = cluster.popen(["grid", "run", _write(grid, tmp_path), "--results", str(res),
                          "--no-progress", "--no-report"], tmp_path / "client.log")
    try:
        _wait_for_a_record(res, proc)
        cluster.hosts.kill("w2")
        stored_then = len(list((res / "results").glob("*.parquet")))
        assert proc.wait(timeout=300) == 0, (tmp_path / "client.log").read_text()
    finally:
        if proc.poll() is None:
            cluster.hosts.kill("client")
    assert stored_then < len(expand_grid(grid))  # lost mid-grid
    assert _stored(res) == _fault_serial(data)
    cluster.start(["w2"])


def test_the_scheduler_host_lost_then_the_rerun_resumes(cluster, data, tmp_path):
    grid = _fault_grid(data)
    res = tmp_path / "res"
    gfile = _write(grid, tmp_path)
    args = ["grid", "run", gfile, "--results", str(res), "--no-progress", "--no-report"]
    log = tmp_path / "client.log"
    proc = cluster.popen(args, log)
    try:
        _wait_for_a_record(res, proc)
        cluster.hosts.kill("scheduler")
        assert proc.wait(timeout=120) == 2
    finally:
        if proc.poll() is None:
            cluster.hosts.kill("client")
    lines = [ln for ln in log.read_text().splitlines() if ln.strip()]
    assert len(lines) >= 1 and "rerun" in lines[-1], log.read_text()
    assert not any("Traceback" in ln for ln in lines), log.read_text()
    before = {p.name: p.read_bytes() for p in (res / "results").glob("*.parquet")}
    assert 0 < len(before) < len(expand_grid(grid))
    cluster.stop()
    cluster.start()
    r = cluster.cli(args)
    assert r.returncode == 0, r.stdout + r.stderr + cluster.log_tail()
    assert f"{len(before)} already done" in r.stdout
    assert {p.name: p.read_bytes() for p in (res / "results").glob("*.parquet")
            if p.name in before} == before
    assert _stored(res) == _fault_serial(data)
