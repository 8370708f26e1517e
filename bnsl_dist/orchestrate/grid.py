"""Run an experiment grid on a Dask cluster, resumably.

``run_grid(client, grid, results_dir)``:

1. expands the grid into cells (:func:`bnsl_dist.pipeline.grid.expand_grid`) and runs
   them through the one executor, :func:`bnsl_dist.orchestrate.execute.execute`, into
   the results folder (:mod:`bnsl_dist.orchestrate.stored`), which skips every cell
   whose result file exists;
2. the executor builds each distinct cache the pending cells need once (key
   :attr:`~bnsl_dist.pipeline.cell.CacheJob.key`), saved as ``caches/<key>.jkl.gz`` so
   reruns and recomputed tasks reuse it: as one task, or, when its estimated work
   (:func:`~bnsl_dist.pipeline.cost.cache_work`) reaches ``fan_out_seconds`` on a cluster
   of two workers or more, as guided batches of per-variable tasks and one task storing
   the file (:func:`bnsl_dist.orchestrate.explore.submit_cache_build`; the same file);
3. and submits every pending cell as a task ``run_cell(cell, cache)`` keyed
   ``cell-<key>``, all in one graph (:func:`~bnsl_dist.orchestrate.cells.run_cells`): a
   cell starts as soon as its own cache exists, in the order of
   :func:`~bnsl_dist.pipeline.cost.priorities` (caches before all but one last wave of
   cells, long cells first); a cell's seed derives from the grid seed and the cell
   identity, so the result is the same on any worker, in any order, after any worker
   loss (without a client, the same cells run in this process: the same records);
4. writes each result as its own Parquet file atomically, or a failure record (status +
   traceback) — never a result — when the cell raised, found no DAG or killed its
   workers (:mod:`bnsl_dist.orchestrate.outcomes`); cells the cluster cut off are left
   for the rerun (:class:`GridInterrupted` when the scheduler or every worker is lost);
   Without a shared file system (``shared_fs``), the data and caches travel through
   Dask and the client writes the cache files (:mod:`bnsl_dist.orchestrate.staging`);
5. shows a progress bar and the dashboard link, saves a Dask performance report in
   ``reports/``, the run's counts and utilisation in
   ``reports/grid-run-<name>-<time>.json`` and its makespan, utilisation, lower bound and
   efficiency in ``reports/summary.json`` (:mod:`bnsl_dist.orchestrate.summary`);
6. with ``stop_at`` (``grid run --stop-at``, e.g. a batch job's wall-clock end), starts
   no task that would not finish by then: each cell checks the clock on its worker
   when it starts, against its expected wall time (the mean of the stored cells like
   it, :func:`~bnsl_dist.pipeline.forecast.estimate_left`, or of those like it its
   worker has run in this run when longer), and a cell that would overrun
   does not run (:class:`NotStarted`): it stays pending for the rerun, as do the cells
   of a cache not started in time.

What the run would do and how long it would take, before any of it runs, is
:mod:`bnsl_dist.pipeline.forecast` (``grid run --dry-run``) and
:mod:`bnsl_dist.pipeline.plan` (``grid plan``); clusters are opened by
:func:`bnsl_dist.orchestrate.cluster.open_client`.

Numba kernels are compiled (or loaded from numba's disk cache) once per worker process
by the warm-up worker plugin (:mod:`bnsl_dist.orchestrate.workers`), for the grid's
algorithms (and cache method when caches are built), before the first task, so
compilation never lands inside a timed run.

References
----------
M. Rocklin, "Dask: parallel computation with blocked algorithms and task scheduling",
SciPy 2015 (futures, ``as_completed``). docs/ARCHITECTURE.md "Distribution (Dask)".
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from distributed import Client, performance_report

from bnsl_dist.orchestrate.cells import (
    NO_WORKER_TIMEOUT,
    connected_workers,
    run_cells,
    unless_late,
)
from bnsl_dist.orchestrate.execute import execute
from bnsl_dist.orchestrate.outcomes import GridInterrupted, GridSummary, NotStarted
from bnsl_dist.orchestrate.stored import Scheduling
from bnsl_dist.orchestrate.summary import run_report
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.cost import FAN_OUT_SECONDS
from bnsl_dist.pipeline.grid import grid_cells
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore

__all__ = ["GridInterrupted", "GridSummary", "NotStarted", "connected_workers", "grid_cells",
           "run_cells", "run_grid", "unless_late"]


def _progress(enabled: bool, total: int) -> Any:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from bnsl_dist.orchestrate._console import stderr_console

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(),
                    console=stderr_console(), disable=not enabled or total == 0,
                    transient=False)


@contextlib.contextmanager
def _report(path: Path | None) -> Iterator[None]:
    """A Dask performance report written atomically to ``path``; skipped (no file, no
    traceback) when the scheduler is gone by the end."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    rep = performance_report(filename=str(tmp))
    rep.__enter__()
    try:
        yield
    finally:
        try:
            rep.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - a lost cluster has no report to give
            tmp.unlink(missing_ok=True)
        if tmp.exists():
            os.replace(tmp, path)



def run_grid(client: Client | None, grid: GridConfig, results_dir: str | os.PathLike[str], *,
             progress: bool = True, report: bool = True, warmup: bool = True,
             on_result: Callable[[CellResult], None] | None = None,
             no_worker_timeout: float = NO_WORKER_TIMEOUT,
             fan_out_seconds: float = FAN_OUT_SECONDS,
             datasets: Collection[str] | None = None,
             labels: Collection[str] | None = None,
             stop_at: float | None = None,
             expected: Mapping[str, float | None] | None = None,
             compute: Mapping[str, Callable[..., Any]] | None = None,
             time_scale: float = 1.0, shared_fs: bool | None = None) -> GridSummary:
    """Run every pending cell of ``grid`` (of its ``datasets`` and ``labels`` only, when
    given: a piece of it; the whole grid is stored either way) on ``client``'s cluster into
    ``results_dir``.

    Parameters
    ----------
    client : distributed.Client, optional
        Any cluster (the function never creates one); None: in this process.
    grid : GridConfig
    results_dir : path
        Results folder (:class:`~bnsl_dist.results.store.ResultStore` layout).
    progress : bool
        A rich progress bar on stderr.
    report : bool
        Save a Dask performance report in ``results_dir/reports/``.
    warmup : bool
        Register the numba warm-up worker plugin for the grid's kernels.
    on_result : callable, optional
        Called on the client with each result as it is written.
    no_worker_timeout : float
        Seconds without any worker after which the run stops (see :func:`~bnsl_dist.orchestrate.cells.run_cells`).
    fan_out_seconds : float
        Caches estimated at this many worker seconds or more are built as per-variable
        batches (see :func:`~bnsl_dist.orchestrate.cells.run_cells`).
    stop_at : float, optional
        A ``time.time()`` by which the run should end: no cell starts that would not
        end by then at the mean wall time of the stored cells like it, or of those like
        it its worker has run in this run when longer (see
        :func:`~bnsl_dist.orchestrate.cells.run_cells`); those left are the summary's
        ``not_started``.
    expected : mapping, optional
        With ``stop_at``: the pending cells' expected wall seconds (key -> seconds), when
        the caller has them (:func:`~bnsl_dist.pipeline.forecast.estimate_left`); read from
        the stored cells otherwise.
    compute : mapping, optional
        What the tasks run instead of the real work (keyword arguments of
        :func:`~bnsl_dist.orchestrate.cells.run_cells`: ``run``, ``build_cache``, ``explore``, ``store_cache``): a
        replay's sleeps (:mod:`bnsl_dist.orchestrate.replay`).
    time_scale : float
        Grid seconds per real second in ``reports/summary.json`` (a replay's speed).
    shared_fs : bool, optional
        Whether the workers see the client's files (the grid's paths are the
        client's): then they read the data and write the caches themselves; else the
        data and caches travel through Dask and the client writes every file
        (:mod:`~bnsl_dist.orchestrate.staging`; the same records either way). Default:
        true for a local cluster of this process only.

    Returns
    -------
    GridSummary
        Also saved as ``reports/grid-run-<name>-<time>.json`` (utilisation included);
        ``reports/summary.json``: the run's makespan (from the first task submitted),
        utilisation, lower bound and efficiency
        (:func:`~bnsl_dist.orchestrate.summary.run_report`), and ``planning_s``: the
        real seconds before the first task was submitted (expansion, the stored cells,
        the caches' sizes, the priorities).

    Raises
    ------
    GridInterrupted
        The cluster was lost, or cut cells off; stored results stay.
    """
    t0 = time.perf_counter()
    store = ResultStore(results_dir)
    store.save_grid(grid.name, grid.model_dump_json(indent=1) + "\n")
    cells = grid_cells(grid, datasets, labels)
    n_pending = len(set(c.key for c in cells) - store.done_keys())
    if not n_pending:
        return GridSummary(total=len(cells), skipped=len(cells),
                           seconds=time.perf_counter() - t0)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report_path = store.reports_dir / f"dask-performance-{grid.name}-{stamp}.html" \
        if report and client is not None else None
    with _report(report_path), _progress(progress, n_pending) as bar:
        bar.add_task(grid.name, total=n_pending)
        summary: GridSummary = execute(cells, client, store, scheduling=Scheduling(
            stop_at=stop_at, expected=expected, fan_out_seconds=fan_out_seconds,
            no_worker_timeout=no_worker_timeout, shared_fs=shared_fs,
            compute=dict(compute or {}), warmup=warmup, bar=bar,
            on_result=on_result)).summary
    summary.report = report_path if report_path is not None and report_path.exists() \
        else None
    summary.seconds = time.perf_counter() - t0
    store.save_text(f"reports/grid-run-{grid.name}-{stamp}.json",
                    json.dumps({**summary.to_dict(), "finished_at": time.strftime(
                        "%Y-%m-%dT%H:%M:%S%z")}, indent=1) + "\n")
    store.save_text("reports/summary.json", json.dumps(
        {"grid": grid.name, **run_report(summary.spans, summary.deps,
                                         summary.threads or summary.workers,
                                         summary.cells_seconds,
                                         scheduler_s=summary.scheduler_seconds,
                                         scale=time_scale),
         "planning_s": None if summary.submitted_at is None
         else round(summary.submitted_at - t0, 3)}, indent=1) + "\n")
    return summary
