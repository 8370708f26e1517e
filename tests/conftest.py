"""Shared fixtures: the staged benchmark data, found only through ``$BNSL_SHARED_DATA``."""

from __future__ import annotations

import pytest

from bnsl_dist.datasets import shared_data_dir


@pytest.fixture(scope="session")
def shared_data():
    """Path of the staged benchmark data (``$BNSL_SHARED_DATA``); skipped without it."""
    path = shared_data_dir()
    if path is None:
        pytest.skip("$BNSL_SHARED_DATA is not set to the staged benchmark data")
    return path


@pytest.fixture()
def data_root(tmp_path, monkeypatch):
    """An empty data root for the registry ($BNSL_DATA), with no mirror or extra
    registry from the caller's environment."""
    root = tmp_path / "root"
    monkeypatch.setenv("BNSL_DATA", str(root))
    monkeypatch.delenv("BNSL_MIRROR", raising=False)
    monkeypatch.delenv("BNSL_DATASETS", raising=False)
    return root
