"""TLS needs the optional package cryptography (extra ``tls``): without it, one clear
error before anything is written or started, from `cluster start --tls` and from a
jobqueue cluster's TLS credentials alike."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.orchestrate.jobqueue import jobqueue_kwargs
from bnsl_dist.pipeline.config import load_cluster

REPO = Path(__file__).resolve().parents[2]


def test_tls_without_cryptography(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "cryptography", None)  # `import cryptography` fails
    run_dir = tmp_path / "cl"
    r = CliRunner().invoke(main, ["cluster", "start", "--workers", "1", "--dir", str(run_dir),
                                  "--tls", "--timeout", "5"])
    assert r.exit_code == 2, r.output
    assert "need the optional package cryptography (pip install 'bnsl_dist[tls]')" \
        in r.output and "Traceback" not in r.output
    assert not (run_dir / "tls").exists() and not (run_dir / "scheduler.json").exists()
    assert not (run_dir / "cluster.json").exists()
    cfg = load_cluster(REPO / "configs" / "clusters" / "slurm.yaml")
    assert cfg.tls
    with pytest.raises(InvalidConfigError, match=r"bnsl_dist\[tls\]"):
        jobqueue_kwargs(cfg)


def test_jobqueue_credentials_go_to_a_private_folder_not_the_working_directory(
        tmp_path, monkeypatch):
    pytest.importorskip("cryptography")
    monkeypatch.setenv("HOME", str(tmp_path))
    kw = jobqueue_kwargs(load_cluster(REPO / "configs" / "clusters" / "slurm.yaml"))
    d = Path(kw["shared_temp_directory"])
    assert d == tmp_path / ".bnsl-dist" / "jobqueue-tls"
    assert d.stat().st_mode & 0o077 == 0
