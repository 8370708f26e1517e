"""Benchmark: the client's peak memory running a grid of many cells (issue 41: at most
1 GB with 100,000 cells).

``python -m workflows.benchmarks.replay_rss --cells N`` runs
:func:`~bnsl_dist.orchestrate.grid.run_grid` on ``N`` zero-second cells (nltcs's test
split, k-G at k = 2, ``N`` seeds, a given cache file: nothing to build) whose task
returns the record a replay stores (:func:`zero_cell`), on a scheduler and one worker of
``--threads`` threads in processes of their own (``SubprocessCluster``), so that the
figure is the client's alone, as in a real run against a cluster: expansion, planning,
the cells sent in their window (:data:`~bnsl_dist.orchestrate.cells.MIN_WINDOW`), every
record gathered and written to the store, the summary. It reports the client's peak
RSS (``getrusage``) and its RSS before the grid (imports, the cluster started), the
scheduler's and the worker's peak RSS, the real seconds, and adds the row to
``replay-client-rss.json`` (``BNSL_BENCH_OUT``). A replay (``grid run --replay``) holds
the scheduler and its workers in the client's process: ``replay_scale --rss`` measures
that sum.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import OUT_DIR, write_result


def zero_cell(cell: Any, cache: Any = None) -> Any:
    """The record a replayed zero-second cell stores (a worker runs it)."""
    from bnsl_dist.orchestrate.replay import ReplayRun, replayed_record
    from bnsl_dist.pipeline.plan import ReplayModel

    return replayed_record(cell, ReplayRun(ReplayModel(), 1.0, "replay_rss"), 0.0)


def measure(n_cells: int, threads: int = 16) -> dict[str, Any]:
    """The client's (and the scheduler's and worker's) peak RSS running ``n_cells``
    zero-second cells."""
    from distributed import Client
    from distributed.deploy.subprocess import SubprocessCluster

    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.orchestrate.summary import peak_rss_bytes
    from workflows.benchmarks.replay_scale import rss_grid

    g = rss_grid(n_cells)
    with SubprocessCluster(n_workers=1, threads_per_worker=threads,
                           dashboard_address=None) as cluster, Client(cluster) as client, \
            tempfile.TemporaryDirectory() as tmp:
        before = peak_rss_bytes()
        t0 = time.perf_counter()
        summary = run_grid(client, g, tmp, progress=False, report=False, warmup=False,
                           compute={"run": zero_cell}, shared_fs=True)
        real = time.perf_counter() - t0
        report = json.loads((Path(tmp) / "reports" / "summary.json").read_text())
        stored = len(list((Path(tmp) / "results").glob("*.parquet")))
        scheduler = client.run_on_scheduler(peak_rss_bytes)
        (worker,) = client.run(peak_rss_bytes).values()
    assert len(summary.computed) == stored == n_cells, (len(summary.computed), stored)
    out = {"cells": n_cells, "threads": threads, "real_seconds": round(real, 1),
           "client_rss_before_bytes": before,
           "client_peak_rss_bytes": report["client_peak_rss_bytes"],
           "scheduler_peak_rss_bytes": scheduler, "worker_peak_rss_bytes": worker,
           "planning_s": report["planning_s"], "makespan_s": report["makespan_s"],
           "scheduler_ms_per_task": report["scheduler_ms_per_task"]}
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, action="append", required=True, metavar="N")
    ap.add_argument("--threads", type=int, default=16)
    args = ap.parse_args()
    path = OUT_DIR / "replay-client-rss.json"
    for n in args.cells:
        row = measure(n, args.threads)
        old = json.loads(path.read_text())["runs"] if path.is_file() else []
        runs = [r for r in old if r.get("cells") != n] + [row]
        write_result("replay-client-rss", {"runs": sorted(runs, key=lambda r: r["cells"])})


if __name__ == "__main__":
    main()
