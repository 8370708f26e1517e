"""Shared fixtures: the staged benchmark data (../shared/data beside the repo)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _shared_data() -> Path | None:
    env = os.environ.get("BNSL_SHARED_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data",
                                                Path("/work/shared/data")]:
        if cand.is_dir():
            return cand
    return None


SHARED_DATA = _shared_data()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of shared/data (public benchmark files); the test is skipped without it."""
    if SHARED_DATA is None:
        pytest.skip("shared/data not found beside the repository")
    return SHARED_DATA
