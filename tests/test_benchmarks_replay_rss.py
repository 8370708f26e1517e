"""workflows/benchmarks/replay_rss.py: a grid of zero-second cells on a scheduler and a
worker in processes of their own stores every cell's record, and reports the client's,
the scheduler's and the worker's peak memory."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.dask


def test_the_client_memory_benchmark_runs_every_cell(monkeypatch):
    import bnsl_dist.orchestrate.cells as cells_mod
    from workflows.benchmarks.replay_rss import measure

    monkeypatch.setattr(cells_mod, "MIN_WINDOW", 8)  # 30 cells: the window refills
    monkeypatch.setattr(cells_mod, "WINDOW_PER_SLOT", 1)
    row = measure(30, threads=2)  # asserts 30 records stored
    assert row["cells"] == 30
    assert row["client_peak_rss_bytes"] >= row["client_rss_before_bytes"] > 0
    assert row["scheduler_peak_rss_bytes"] > 0 and row["worker_peak_rss_bytes"] > 0
    assert row["makespan_s"] > 0 and row["planning_s"] >= 0
