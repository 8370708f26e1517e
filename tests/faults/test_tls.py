"""TLS: `bnsl-dist cluster start --tls` runs a real scheduler and worker on 127.0.0.1
with a throwaway self-signed certificate; a small grid runs through them; a plain-TCP
client, or a TLS client without the certificate, is refused."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.results.store import ResultStore
from tests.orchestrate.test_grid import comparable, small_grid, write_nltcs_caches

pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]
pytest.importorskip("cryptography")


def test_grid_through_a_tls_cluster_and_plain_tcp_refused(tmp_path):
    from distributed import Client

    from bnsl_dist.orchestrate.cluster import stop_cluster

    run_dir = tmp_path / "cl"
    r = CliRunner().invoke(main, ["cluster", "start", "--workers", "1", "--dir", str(run_dir),
                                  "--tls", "--timeout", "120"])
    assert r.exit_code == 0, r.output
    try:
        info = json.loads(r.output)
        addr = info["address"]
        assert addr.startswith("tls://127.0.0.1:") and info["tls_dir"]
        assert info["dashboard"].startswith("http://127.0.0.1:")
        for name in ("ca", "cert", "key"):
            assert (run_dir / "tls" / f"{name}.pem").stat().st_mode & 0o077 == 0
        grid = small_grid(write_nltcs_caches(tmp_path, splits=("test",)), name="tls",
                          seeds=(0,), splits=("test",))
        gfile = tmp_path / "grid.yaml"
        gfile.write_text(json.dumps(grid.model_dump(mode="json")))
        res = tmp_path / "res"
        base = ["grid", "run", str(gfile), "--results", str(res), "--no-progress",
                "--no-report", "--scheduler-file", info["scheduler_file"],
                "--connect-timeout", "5"]
        r = CliRunner().invoke(main, base)  # TLS address, no certificate: refused
        assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
        r = CliRunner().invoke(main, [*base, "--tls-dir", info["tls_dir"]])
        assert r.exit_code == 0, r.output
        cells = expand_grid(grid)
        got = {rec.key: comparable(rec) for rec in ResultStore(res).read_results()}
        assert got == {c.key: comparable(run_cell(c)) for c in cells}
        with pytest.raises((OSError, TimeoutError)):
            Client(addr.replace("tls://", "tcp://"), timeout="5s")
    finally:
        assert stop_cluster(run_dir)
    assert not (run_dir / "scheduler.json").exists()


def test_a_certificate_from_another_authority_is_refused(tmp_path):
    # It said "cannot reach the scheduler": the certificate was the matter
    from bnsl_dist.orchestrate.cluster import write_tls_credentials
    from tests.faults.conftest import dask_scheduler

    ours, theirs = write_tls_credentials(tmp_path / "a"), write_tls_credentials(tmp_path / "b")
    sf = tmp_path / "scheduler.json"
    with dask_scheduler(sf, "--protocol", "tls", "--tls-ca-file", str(ours / "ca.pem"),
                        "--tls-cert", str(ours / "cert.pem"),
                        "--tls-key", str(ours / "key.pem")):
        gfile = tmp_path / "grid.yaml"
        gfile.write_text(json.dumps({
            "name": "ca", "datasets": [{"name": "nltcs", "splits": ["test"]}],
            "cache": {"method": "sequential", "max_indegree": 1},
            "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0],
            "budget": {"iterations": 5}}))
        r = CliRunner().invoke(main, ["grid", "run", str(gfile), "--results",
                                      str(tmp_path / "res"), "--no-progress", "--no-report",
                                      "--scheduler-file", str(sf), "--tls-dir", str(theirs),
                                      "--connect-timeout", "3"])
        assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
        assert "certificate was refused" in r.output and "tls://127.0.0.1:" in r.output
