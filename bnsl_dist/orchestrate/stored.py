"""The route of :func:`~bnsl_dist.orchestrate.execute.execute` for search, inference and
SEM cells run into a store (``grid run``; ``execute(cells, client, store)``).

The store keeps what the run makes: each cache the pending cells need is the file
``caches/<key>.jkl.gz`` (:meth:`~bnsl_dist.results.store.ResultStore.cache_path`, key
:attr:`~bnsl_dist.pipeline.cell.CacheJob.key`), built once
(:func:`~bnsl_dist.pipeline.run.ensure_cache`) and read by every cell of it and by any
rerun; each cell's outcome is its record, or a failure record when it raised or found no
DAG (:func:`~bnsl_dist.orchestrate.outcomes.store_outcome`). The cells the store already
holds are skipped, so a rerun resumes.

Serially the cells run in order in this process, each cache built before its first
cell; on Dask all of it is one graph (:func:`~bnsl_dist.orchestrate.cells.run_cells`:
caches as tasks, fanned out in variable batches when large, cells depending on their
cache, in priority order). A cell's seed stream derives from the grid seed and its
identity, and a task runs the very functions the serial route runs, so the records are
the same either way (with exact-score cache budgets and iteration search budgets).
Without a client no Dask is imported.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bnsl_dist.orchestrate.outcomes import GridSummary, NotStarted, store_outcome
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.cost import FAN_OUT_SECONDS, builds_cache
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore

__all__ = ["Scheduling", "run_stored"]


@dataclass(frozen=True)
class Scheduling:
    """How a stored run runs (``grid run``'s options).

    ``stop_at``: a ``time.time()`` by which the run should end: no cell starts that would
    not end by then at its ``expected`` wall seconds (key -> seconds; default the mean of
    the stored cells like it, :func:`~bnsl_dist.pipeline.forecast.estimate_from_store`),
    or at the mean of the cells like it the run has run on its worker process when
    larger (:class:`~bnsl_dist.pipeline.forecast.RunWalls`); they stay pending (the
    summary's ``not_started``). On Dask: ``fan_out_seconds`` (caches of at least this
    estimated work are built as variable batches), ``no_worker_timeout``, ``shared_fs``
    (:mod:`~bnsl_dist.orchestrate.staging`), ``compute`` (the task functions a replay
    puts in place of the work, :mod:`~bnsl_dist.orchestrate.replay`), ``warmup``
    (register the kernels' warm-up plugin). ``bar`` (a rich progress bar) and
    ``on_result`` hear each stored cell."""

    stop_at: float | None = None
    expected: Mapping[str, float | None] | None = None
    fan_out_seconds: float = FAN_OUT_SECONDS
    no_worker_timeout: float | None = None
    shared_fs: bool | None = None
    compute: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    warmup: bool = True
    bar: Any = None
    on_result: Callable[[CellResult], None] | None = None


def run_stored(cells: Sequence[Cell], client: Any, store: ResultStore,
               how: Scheduling) -> GridSummary:
    """Run the cells of ``cells`` that ``store`` does not hold yet, storing each outcome
    as it arrives (serially without ``client``); the summary counts all of ``cells``.

    Raises
    ------
    GridInterrupted
        On Dask: the cluster was lost, or cut cells off; stored results stay.
    """
    t0 = time.perf_counter()
    done = store.done_keys()
    pending = [c for c in cells if c.key not in done]
    expected = how.expected
    if pending and how.stop_at is not None and expected is None:
        from bnsl_dist.pipeline.forecast import estimate_from_store
        from bnsl_dist.results.store import StoreStatus

        expected = estimate_from_store(store.root, cells, StoreStatus(
            tuple(done), (), tuple(c.key for c in pending)))
    if not pending:
        summary = GridSummary(total=0, skipped=0)
    elif client is None:
        summary = _run_serially(pending, store, how, expected or {})
    else:
        summary = _run_on_dask(pending, client, store, how, expected)
    summary.total, summary.skipped = len(cells), len(cells) - len(pending)
    summary.seconds = time.perf_counter() - t0
    return summary


def _cache_path(store: ResultStore, cell: Cell) -> str | None:
    """The store's file of the cell's cache; None when the cell builds none itself (a
    cache file its spec names, a SEM cell's per-M-step caches)."""
    return str(store.cache_path(cell.cache_job.key)) if builds_cache(cell) else None


def _run_serially(cells: Sequence[Cell], store: ResultStore, how: Scheduling,
                  expected: Mapping[str, float | None]) -> GridSummary:
    from bnsl_dist.pipeline.forecast import RunWalls, likeness
    from bnsl_dist.pipeline.run import ensure_cache, run_cell

    summary = GridSummary(total=len(cells), skipped=0, workers=1, threads=1)
    t0 = time.perf_counter()
    walls = RunWalls()  # as on Dask: the like cells run so far
    for cell in cells:
        left = None if how.stop_at is None else how.stop_at - time.time()
        like = likeness(cell)
        if left is not None and (
                left <= 0 or walls.expected(like, expected.get(cell.key)) > left):
            outcome: Any = NotStarted("too late for the stop time")
        else:
            t1 = time.perf_counter()
            try:
                path = _cache_path(store, cell)
                if path is not None:
                    # once: later cells find the file; resumable, stops at a batch
                    ensure_cache(cell.cache_job, path, stop_at=how.stop_at)
                outcome = run_cell(cell, path)
                walls.add(like, time.perf_counter() - t1)
            except Exception:  # noqa: BLE001 - stored as the cell's failure record
                outcome = sys.exc_info()
        store_outcome(outcome, cell, store, summary, how.bar, how.on_result)
        if how.bar is not None:
            how.bar.advance(how.bar.task_ids[0])
    summary.cells_seconds = summary.busy_seconds = time.perf_counter() - t0
    return summary


def _run_on_dask(cells: Sequence[Cell], client: Any, store: ResultStore, how: Scheduling,
                 expected: Mapping[str, float | None] | None) -> GridSummary:
    from pathlib import Path

    from bnsl_dist.orchestrate.cells import NO_WORKER_TIMEOUT, run_cells
    from bnsl_dist.orchestrate.staging import Staging, has_shared_fs

    if how.warmup:
        from bnsl_dist.orchestrate.workers import register_warmup
        from bnsl_dist.search.warmup import algorithm_spec

        methods = {c.cache.method for c in cells if c.kind == "sem" or (
            (p := _cache_path(store, c)) is not None and not Path(p).is_file())}
        register_warmup(client, cache_methods=methods,
                        algorithms={algorithm_spec(c.algorithm, c.search.params, c.k)
                                    for c in cells})
    return run_cells(client, cells, store, cache_path=lambda c: _cache_path(store, c),
                     bar=how.bar, on_result=how.on_result,
                     no_worker_timeout=how.no_worker_timeout or NO_WORKER_TIMEOUT,
                     fan_out_seconds=how.fan_out_seconds, stop_at=how.stop_at,
                     expected=expected,
                     staging=Staging(client, has_shared_fs(client, how.shared_fs)),
                     **how.compute)
