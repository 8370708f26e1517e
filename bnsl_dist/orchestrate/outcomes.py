"""What became of each cell of a grid run, and where it is stored: its record, a failure
record (status ``error``, ``no-solution`` or ``killed``, with its traceback), or nothing
when the cluster cut it off (``interrupted``: the rerun resumes it) or it started too late
for ``--stop-at`` (``not_started``); the run's counts and utilisation
(:class:`GridSummary`)."""

from __future__ import annotations

import asyncio
import traceback as tb_mod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bnsl_dist.cache.parts import BuildStopped
from bnsl_dist.exceptions import BNSLError
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.plan import utilisation
from bnsl_dist.pipeline.run import NoSolutionError, failure_record
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore

__all__ = ["GridInterrupted", "GridSummary", "NotStarted", "store_outcome"]


class GridInterrupted(BNSLError):
    """The cluster went away mid-grid (scheduler lost, or no worker left): what was stored
    stays, a rerun resumes."""


class NotStarted(Exception):  # noqa: N818 - an outcome, not an error
    """A task that reached its worker too late to finish before the run's ``stop_at``:
    it did not run, and its cell (the cells of its cache) stays pending."""



_INFRASTRUCTURE = ("CommClosedError", "CancelledError", "FutureCancelledError",
                   "FutureLostError")


@dataclass
class GridSummary:
    """What a :func:`~bnsl_dist.orchestrate.grid.run_grid` call did. ``utilisation`` = sum of task compute time /
    (wall time × worker threads), None when the scheduler could not say. The wall time
    is the longer of the client's clock from the first task submitted to the last result
    stored and the span of the tasks on the workers' clocks (the scheduler shifts those
    by a measured delay, so a short run could otherwise read above 1)."""

    total: int
    skipped: int
    computed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    not_started: list[str] = field(default_factory=list)  # too late for ``stop_at``
    errors: dict[str, str] = field(default_factory=dict)  # failed key -> first error line
    seconds: float = 0.0
    busy_seconds: float | None = None
    task_span_seconds: float = 0.0
    workers: int = 0
    threads: int = 0  # worker threads (task slots); 0 = unknown, one per worker assumed
    report: Path | None = None
    # for reports/summary.json (bnsl_dist.orchestrate.summary.run_report)
    spans: dict[str, list[tuple[float, float]]] = field(default_factory=dict, repr=False)
    deps: dict[str, list[str]] = field(default_factory=dict, repr=False)
    cells_seconds: float = 0.0  # run_cells: the first submission to the last result
    planning_seconds: float = 0.0  # run_cells: cache sizes and priorities, before it
    submitted_at: float | None = None  # run_cells: perf_counter() at the first submission
    scheduler_seconds: float | None = None  # the scheduler's CPU seconds over run_cells

    @property
    def utilisation(self) -> float | None:
        return utilisation(self.busy_seconds, self.threads or self.workers,
                           max(self.cells_seconds or self.seconds, self.task_span_seconds))

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "skipped": self.skipped, "computed": len(self.computed),
                "failed": len(self.failed), "interrupted": len(self.interrupted),
                "not_started": len(self.not_started),
                "wall_seconds": round(self.seconds, 3),
                "planning_seconds": round(self.planning_seconds, 3), "workers": self.workers,
                "threads": self.threads or self.workers,
                "busy_seconds": None if self.busy_seconds is None
                else round(self.busy_seconds, 3),
                "utilisation": None if self.utilisation is None
                else round(self.utilisation, 4)}

    def __str__(self) -> str:
        u = self.utilisation
        late = (f", {len(self.not_started)} not started (too late for the stop time)"
                if self.not_started else "")
        return (f"{self.total} cells: {self.skipped} already done, {len(self.computed)} "
                f"computed, {len(self.failed)} failed{late} ({self.seconds:.1f} s on "
                f"{self.workers} workers; utilisation "
                f"{'unknown' if u is None else f'{u:.2f}'})")


def _failure_status(exc: BaseException) -> str:
    if isinstance(exc, NoSolutionError):
        return "no-solution"
    # the workers running it died as often as the scheduler allows (an out-of-memory
    # kill, a crash in native code): rerunning it as it is would kill them again
    return "killed" if type(exc).__name__ == "KilledWorker" else "error"


def _is_infrastructure(exc: BaseException) -> bool:
    """The cluster, not the cell, stopped it (lost worker/scheduler, cancellation)."""
    return type(exc).__name__ in _INFRASTRUCTURE or isinstance(exc, asyncio.CancelledError)



def store_outcome(outcome: Any, cell: Cell, store: ResultStore, summary: GridSummary,
                   bar: Any, on_result: Callable[[CellResult], None] | None) -> None:
    """``outcome``: the cell's record, its ``(type, exception, traceback)``, or the
    cancellation that ended it."""
    if isinstance(outcome, CellResult):
        store.write_result(outcome)
        summary.computed.append(cell.key)
        if on_result is not None:
            on_result(outcome)
        return
    exc, tb = (outcome[1], outcome[2]) if isinstance(outcome, tuple) else (outcome, None)
    if isinstance(exc, NotStarted | BuildStopped):  # the cell or its cache: too late
        summary.not_started.append(cell.key)
        return
    if not isinstance(exc, BaseException) or _is_infrastructure(exc):
        summary.interrupted.append(cell.key)
        return
    text = "".join(tb_mod.format_exception(type(exc), exc, tb)) if tb is not None else ""
    store.write_failure(failure_record(cell, _failure_status(exc), exc, text))
    summary.failed.append(cell.key)
    first = f"{type(exc).__name__}: {exc}".splitlines()[0]
    summary.errors[cell.key] = first
    if bar is not None:
        bar.console.print(f"[red]failed[/red] {cell.describe()} ({cell.key}): {first}",
                          markup=True, highlight=False)

