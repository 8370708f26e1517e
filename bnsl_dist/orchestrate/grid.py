"""Run an experiment grid on a Dask cluster, resumably.

``run_grid(client, grid, results_dir)``:

1. expands the grid into cells (:func:`bnsl_dist.pipeline.grid.expand_grid`) and skips every
   cell whose result file exists;
2. builds each distinct cache the pending cells need once (key ``cache-<hash of data +
   settings>``), saved as ``caches/<key>.jkl.gz`` so reruns and recomputed tasks reuse
   it: as one task, or, when its estimated work (:func:`cache_work`) reaches
   ``fan_out_seconds`` on a cluster of two workers or more, as guided batches of
   per-variable tasks and one task storing the file
   (:func:`bnsl_dist.orchestrate.explore.submit_cache_build`; the same file);
3. submits every pending cell as a task ``run_cell(cell, cache)`` keyed ``cell-<key>``,
   all in one graph (:func:`run_cells`): a cell starts as soon as its own cache exists,
   in the order of :func:`~bnsl_dist.pipeline.cost.priorities` (caches before all but
   one last wave of cells, long cells first); a cell's seed derives from the grid seed and
   the cell identity, so the result is the same on any worker, in any order, after any
   worker loss;
4. writes each result as its own Parquet file atomically, or a failure record (status +
   traceback) — never a result — when the cell raised, found no DAG or killed its
   workers; cells the cluster cut off are left for the rerun (:class:`GridInterrupted` when the scheduler
   or every worker is lost);
   Without a shared file system (``shared_fs``), the data and caches travel through
   Dask and the client writes the cache files (:mod:`bnsl_dist.orchestrate.staging`);
5. shows a progress bar and the dashboard link, saves a Dask performance report in
   ``reports/``, the run's counts and utilisation in
   ``reports/grid-run-<name>-<time>.json`` and its makespan, utilisation, lower bound and
   efficiency in ``reports/summary.json`` (:mod:`bnsl_dist.orchestrate.summary`);
6. with ``stop_at`` (``grid run --stop-at``, e.g. a batch job's wall-clock end), starts
   no task that would not finish by then: each cell checks the clock on its worker
   when it starts, against its expected wall time (the mean of the stored cells like
   it, :func:`~bnsl_dist.pipeline.grid.estimate_left`), and a cell that would overrun
   does not run (:class:`NotStarted`): it stays pending for the rerun, as do the cells
   of a cache not started in time.

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

import asyncio
import contextlib
import functools
import json
import os
import sys
import time
import traceback as tb_mod
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dask
from distributed import Client, Future, as_completed, performance_report

from bnsl_dist.exceptions import BNSLError, InvalidConfigError
from bnsl_dist.orchestrate._disk import resumable_when_full
from bnsl_dist.orchestrate.explore import explore_job, store_job_cache, submit_cache_build
from bnsl_dist.orchestrate.staging import StagedFile, Staging, has_shared_fs
from bnsl_dist.orchestrate.summary import run_report, scheduler_cpu_seconds, task_seconds
from bnsl_dist.orchestrate.workers import register_warmup
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.config import ClusterConfig, GridConfig, JobqueueConfig
from bnsl_dist.pipeline.cost import (
    ASSUMED_ROWS,
    FAN_OUT_SECONDS,
    SCORE_SECONDS,
    SCORE_SECONDS_PER_ROW,
    cache_sizes,
    cache_work,
    cell_budget_seconds,
    cell_cost,
    priorities,
)
from bnsl_dist.pipeline.cost import n_vars_hint as _n_vars_hint
from bnsl_dist.pipeline.grid import (
    estimate_from_store,
    expand_grid,
    format_duration,
    grid_status,
    started_by,
    sum_known,
)
from bnsl_dist.pipeline.plan import utilisation
from bnsl_dist.pipeline.run import NoSolutionError, ensure_cache, failure_record, run_cell
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore, StoreStatus
from bnsl_dist.search.warmup import algorithm_spec

__all__ = ["ASSUMED_ROWS", "FAN_OUT_SECONDS", "SCORE_SECONDS", "SCORE_SECONDS_PER_ROW",
           "GridInterrupted", "GridPlan", "GridSummary", "NotStarted", "cache_sizes",
           "cache_work", "cell_budget_seconds", "cell_cost", "connected_workers", "plan_grid",
           "format_plan", "grid_status", "run_cells", "run_grid", "open_client",
           "jobqueue_job_script", "stop_note", "unless_late"]


# ---------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class GridPlan:
    """What a run of ``grid`` into ``results_dir`` would do."""

    grid: GridConfig
    cells: tuple[Cell, ...]
    pending: tuple[Cell, ...]
    done: tuple[str, ...]
    failed: tuple[str, ...]
    caches_to_build: tuple[CacheJob, ...]
    search_seconds: float | None  # sum of the pending cells' time budgets (None: unknown)
    cache_seconds: float | None

    def estimated_seconds(self, n_workers: int) -> float | None:
        if self.search_seconds is None or self.cache_seconds is None:
            return None
        return (self.search_seconds + self.cache_seconds) / max(1, n_workers)


def grid_cells(grid: GridConfig, datasets: Collection[str] | None = None,
               labels: Collection[str] | None = None) -> list[Cell]:
    """The cells of ``grid``; with ``datasets`` (``labels``), only those of the data sets
    (algorithm labels) so named (a piece of the grid: cell keys do not depend on the
    selection)."""
    return [c for c in expand_grid(grid) if (datasets is None or c.dataset in datasets)
            and (labels is None or c.label in labels)]


def plan_grid(grid: GridConfig, results_dir: str | os.PathLike[str],
              datasets: Collection[str] | None = None,
              labels: Collection[str] | None = None) -> GridPlan:
    """Expand ``grid`` (the ``datasets`` and ``labels`` piece of it) and compare it with
    what ``results_dir`` holds (no Dask)."""
    store = ResultStore(results_dir)
    cells = grid_cells(grid, datasets, labels)
    st = store.status(c.key for c in cells)
    done = set(st.done)
    pending = tuple(c for c in cells if c.key not in done)
    caches: dict[str, CacheJob] = {}
    for c in pending:
        job = c.cache_job
        if grid.kind != "sem" and job.given_path is None \
                and not store.cache_path(job.key).is_file():
            caches.setdefault(job.key, job)
    search: float | None = 0.0
    for c in pending:
        b = cell_budget_seconds(c)
        search = None if b is None or search is None else search + b
    works = [cache_work(job) for job in caches.values()]
    cache_s = None if None in works else sum(w or 0.0 for w in works)
    return GridPlan(grid, tuple(cells), pending, st.done, st.failed, tuple(caches.values()),
                    search, cache_s)


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown (iteration budgets or unknown sizes)"
    return format_duration(s)


def format_plan(plan: GridPlan, n_workers: int,
                left: Mapping[str, float | None] | None = None,
                stop_in: float | None = None) -> str:
    """A human-readable plan (``grid run --dry-run``); with ``left``, the pending cells'
    expected wall seconds (:func:`~bnsl_dist.pipeline.grid.estimate_left`), the time
    the stored cells' wall times predict too, and with ``stop_in`` (``--stop-at``, in
    seconds from now) how many cells would start, longest first
    (:func:`~bnsl_dist.pipeline.grid.started_by`)."""
    g = plan.grid
    n_sets = len({c.dataset for c in plan.cells})
    n_ds = len({(c.dataset, c.split) for c in plan.cells})
    lines = [f"grid {g.name}: {len(plan.cells)} cells "
             f"({n_sets} data sets, {n_ds} data set splits, "
             f"{len(g.algorithms)} algorithms, seeds {list(g.seeds)})",
             f"  done: {len(plan.done)}   failed before (will retry): {len(plan.failed)}   "
             f"to run: {len(plan.pending)}",
             f"  caches to build: {len(plan.caches_to_build)}"
             + (f" (est. {_fmt_seconds(plan.cache_seconds)} of worker time)"
                if plan.caches_to_build else ""),
             ]
    lines += _time_lines(plan, n_workers, left)
    if stop_in is not None:
        lines.append("  " + stop_note(plan.pending, left or {}, n_workers, stop_in))
    by_alg: dict[str, int] = {}
    for c in plan.pending:
        name = c.label + (f" k={c.k}" if c.k is not None else "")
        by_alg[name] = by_alg.get(name, 0) + 1
    for name, n in by_alg.items():
        lines.append(f"    {name}: {n} cells")
    return "\n".join(lines)


def _time_lines(plan: GridPlan, n_workers: int,
                left: Mapping[str, float | None] | None) -> list[str]:
    """The plan's time, each figure with how it is derived: a time-budgeted grid's
    budgets are its time; iteration budgets (and SEM's EM cap) give only an upper bound,
    from the seconds caps (a smoke grid's 54 cells capped at 60 s read "27 min at most"
    and ran in 13 s); the stored cells' wall times give the expected time of the cells
    like them, and the cells with none like them are said to have no estimate."""
    sem = plan.grid.kind == "sem"
    what = ("M-step time budgets x the EM iteration cap (E-steps not counted)" if sem
            else "search time budgets")
    capped = sum(bool(c.budget_iterations) for c in plan.pending)
    on = f"{_fmt_seconds(plan.estimated_seconds(n_workers))} on {n_workers} workers"
    if sem or capped:
        why = (f"{capped} of {len(plan.pending)} cells have an iteration budget, which "
               f"usually ends them far sooner" if capped else "EM usually converges sooner")
        lines = [f"  {what}: {_fmt_seconds(plan.search_seconds)} of worker time at most, "
                 f"{on} at most (an upper bound: every cell running to its seconds cap; "
                 f"{why})"]
    else:
        lines = [f"  {what}: {_fmt_seconds(plan.search_seconds)} of worker time",
                 f"  estimated wall time: {on} (the time budgets and the caches' "
                 f"estimate, shared evenly)"]
    seconds, known, unknown = sum_known({c.key: (left or {}).get(c.key) for c in plan.pending})
    if known:
        lines.append(f"  from the stored cells' wall times: {format_duration(seconds)} of "
                     f"worker time, {format_duration(seconds / max(1, n_workers))} on "
                     f"{n_workers} workers"
                     + (f" ({unknown} cells with nothing to go by)" if unknown else ""))
    elif unknown and left is not None:
        lines.append(f"  expected time: no estimate yet (no stored cell like any of the "
                     f"{unknown} to run; --dry-run says more once some are stored)")
    return lines


def stop_note(pending: Sequence[Cell], left: Mapping[str, float | None], n_workers: int,
              stop_in: float) -> str:
    """One line: how many of the ``pending`` cells would run within ``stop_in`` seconds
    (``--stop-at``) on ``n_workers``, handed out longest first as :func:`run_cells` does,
    at their expected wall seconds ``left`` (:func:`~bnsl_dist.pipeline.grid.started_by`)."""
    order = sorted(pending, key=cell_cost, reverse=True)
    est = [left.get(c.key) for c in order]
    unknown = sum(e is None for e in est)
    n = started_by(est, n_workers, stop_in)
    return (f"--stop-at in {format_duration(max(0.0, stop_in))}: about {n} of {len(order)} "
            f"cells would run on {n_workers} workers"
            + (f" ({unknown} with nothing to go by counted as taking no time)"
               if unknown else ""))


# ---------------------------------------------------------------------------- running
class GridInterrupted(BNSLError):
    """The cluster went away mid-grid (scheduler lost, or no worker left): what was stored
    stays, a rerun resumes."""


class NotStarted(Exception):  # noqa: N818 - an outcome, not an error
    """A task that reached its worker too late to finish before the run's ``stop_at``:
    it did not run, and its cell (the cells of its cache) stays pending."""


def unless_late(stop_at: float, expected: float, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``, unless it would not end by ``stop_at`` (a ``time.time()`` on this
    worker's clock) if it takes ``expected`` seconds: then :class:`NotStarted`, before
    any work.

    Examples
    --------
    >>> unless_late(time.time() + 60, 1.0, max, 2, 3)
    3
    >>> unless_late(time.time() + 60, 120.0, max, 2, 3)
    Traceback (most recent call last):
    ...
    bnsl_dist.orchestrate.grid.NotStarted: expected to take 120 s, 60 s before the stop time
    """
    left = stop_at - time.time()
    if left <= 0 or expected > left:
        raise NotStarted(f"expected to take {expected:.0f} s, {max(0.0, left):.0f} s "
                         f"before the stop time")
    return fn(*args)


#: Seconds without any worker after which a grid gives up (workers seen before).
NO_WORKER_TIMEOUT = 30.0

_INFRASTRUCTURE = ("CommClosedError", "CancelledError", "FutureCancelledError",
                   "FutureLostError")


@dataclass
class GridSummary:
    """What a :func:`run_grid` call did. ``utilisation`` = sum of task compute time /
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
    scheduler_seconds: float | None = None  # the scheduler's CPU seconds over run_cells

    @property
    def utilisation(self) -> float | None:
        return utilisation(self.busy_seconds, self.threads or self.workers,
                           max(self.cells_seconds or self.seconds, self.task_span_seconds))

    def to_dict(self) -> dict[str, Any]:
        return {"total": self.total, "skipped": self.skipped, "computed": len(self.computed),
                "failed": len(self.failed), "interrupted": len(self.interrupted),
                "not_started": len(self.not_started),
                "wall_seconds": round(self.seconds, 3), "workers": self.workers,
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


def connected_workers(client: Client) -> int | None:
    """Workers connected now; None when the scheduler does not answer."""
    slots = _worker_slots(client)
    return None if slots is None else slots[0]


def _worker_slots(client: Client) -> tuple[int, int] | None:
    """(workers, their threads in all) connected now; None when the scheduler does not
    answer."""
    if client.status != "running":
        return None
    try:
        workers = client.scheduler_info().get("workers", {})
    except Exception:  # noqa: BLE001 - a lost scheduler
        return None
    return len(workers), sum(int(w.get("nthreads", 1)) for w in workers.values())


def _compute_spans(client: Client, since: float, prefixes: tuple[str, ...]
                   ) -> dict[str, list[tuple[float, float]]] | None:
    """Key -> (start, stop) of each compute of our tasks that started since ``since``
    (:func:`~bnsl_dist.orchestrate.summary.task_seconds`); None when the scheduler does
    not answer."""
    try:
        stream = client.get_task_stream(start=since)
    except Exception:  # noqa: BLE001 - a lost scheduler
        return None
    return task_seconds(stream, since, prefixes)


def run_cells(client: Client, cells: Sequence[Cell], store: ResultStore, *,
              cache_path: Callable[[Cell], str | None],
              build_cache: Callable[..., str] = ensure_cache,
              run: Callable[..., CellResult] = run_cell,
              cost: Callable[[Cell], float] = cell_cost,
              bar: Any = None, on_result: Callable[[CellResult], None] | None = None,
              no_worker_timeout: float = NO_WORKER_TIMEOUT,
              fan_out_seconds: float = FAN_OUT_SECONDS,
              explore: Callable[..., Any] = explore_job,
              store_cache: Callable[..., str] = store_job_cache,
              stop_at: float | None = None,
              expected: Mapping[str, float | None] | None = None,
              staging: Staging | None = None) -> GridSummary:
    """Run ``cells`` on the cluster and store each outcome as it arrives.

    A cell needing a cache that ``cache_path(cell)`` names but that does not exist yet
    depends on the task that builds and stores it, one per distinct cache: each cell
    starts as soon as *its* cache exists (no barrier between cache and search phases).
    The cache is one ``build_cache(cell.cache_job, path)`` task, or, when its estimated
    work (:func:`cache_work`) is at least ``fan_out_seconds`` and the cluster has two
    workers or more, guided batches of ``explore(cache_job, variables)`` tasks and one
    task that stores the file once they are done
    (:func:`~bnsl_dist.orchestrate.explore.submit_cache_build`; ``fan_out_seconds=0``
    fans out every cache of known size; those of unknown size stay one task), stored by
    ``store_cache(cache_job, path, *batches)``. The file is the one ``ensure_cache``
    writes, but for its timings. (``build_cache``, ``explore``, ``store_cache`` and
    ``run`` are the seam a replay fills with sleeps: :mod:`bnsl_dist.orchestrate.replay`.)
    Priorities (:func:`~bnsl_dist.pipeline.cost.priorities`, on the connected worker
    threads): the storing tasks above all; the cells beyond one last wave of the
    workers, those of the cheapest caches, as soon as their cache exists; then every
    cache (the largest first, ``cost``'s longest cell where its work is unknown); then
    the last wave, longest first (``cost``), so no short task holds a worker while a
    long one waits and the last cells fill every worker. A failed batch fails its cache,
    and each cell of it gets a failure record.

    Only a cell's own exception makes a failure record, status ``killed`` when its
    workers died under it as often as the scheduler allows (``KilledWorker``: e.g. an
    out-of-memory kill; a cell waiting on such a worker counts those deaths too, so a
    healthy one can share the status, and a rerun retries it like any failure). A cell the infrastructure cut off (cancelled, lost with the
    scheduler) is counted as interrupted and left for a rerun; when the scheduler is
    lost, or no worker is left for ``no_worker_timeout`` seconds (counted once a worker
    has been seen: a batch cluster's jobs may queue before any worker joins), the remaining
    cells are interrupted too.

    With ``stop_at`` (a ``time.time()``), every task checks the clock when it starts on
    its worker (:func:`unless_late`): a cell runs only if it would end by then at its
    ``expected`` wall seconds (key -> seconds; unknown: 0), a cache (one task or a batch)
    only if it starts before then; the others are :class:`NotStarted`, listed in the
    summary's ``not_started`` (no record: they stay pending), as are the cells of a
    cache not started. Running tasks are never stopped.

    ``staging`` says how tasks get their data and caches: the paths (a shared file
    system, the default) or sent through Dask, the client writing the caches
    (:class:`~bnsl_dist.orchestrate.staging.Staging`).
    """
    stage = staging or Staging(client, shared_fs=True)
    stage.check(r for c in cells for r in (c.data, c.holdout))
    summary = GridSummary(total=len(cells), skipped=0)
    if stop_at is not None:  # checked on the workers, when each task starts
        build_cache = functools.partial(unless_late, stop_at, 0.0, build_cache)
        explore = functools.partial(unless_late, stop_at, 0.0, explore)
    t0 = time.perf_counter()
    since = time.time()
    with contextlib.suppress(Exception):  # installs the scheduler's task-stream plugin
        client.get_task_stream(start=0, stop=0)
    summary.workers, summary.threads = _worker_slots(client) or (0, 0)
    cpu0 = scheduler_cpu_seconds(client)
    by_key = {c.key: c for c in cells}
    sizes, first = cache_sizes(cells, cache_path, cost)
    cache_futs: dict[str, Future | StagedFile | str | None] = {}
    for ck in first:
        path = cache_path(first[ck])
        if path is not None and Path(path).is_file():
            cache_futs[ck] = stage.existing(path)
            del sizes[ck]
    prio = priorities(cells, sizes, summary.threads, cost)
    # submitted in priority order too: an idle worker takes the first task that arrives
    for ck in sorted(sizes, key=prio.caches.__getitem__, reverse=True):
        job = first[ck].cache_job
        path = cache_path(first[ck])
        assert path is not None
        work, n = cache_work(job), _n_vars_hint(job.data)
        if summary.workers >= 2 and work is not None and n is not None \
                and work >= fan_out_seconds:
            cache_futs[ck] = submit_cache_build(client, job, path, n, summary.workers,
                                                priority=prio.caches[ck],
                                                store_priority=prio.store, explore=explore,
                                                store=store_cache, deps=summary.deps,
                                                staging=stage)
        else:
            cache_futs[ck] = stage.build(build_cache, job, path, key=f"cache-{ck}",
                                         pure=False, priority=prio.caches[ck])
    futures: dict[Future, str] = {}
    ordered = sorted(cells, key=lambda c: prio.cells[c.key], reverse=True)
    tasks = []
    for c in ordered:
        task = stage.cell_task(run, c, cache_futs.get(c.cache_job.key))
        if stop_at is not None:
            task = (unless_late, stop_at, (expected or {}).get(c.key) or 0.0, *task)
        with dask.annotate(priority=prio.cells[c.key]):
            tasks.append(dask.delayed(task[0], pure=False)(*task[1:],
                                                           dask_key_name=f"cell-{c.key}"))
        dep = cache_futs.get(c.cache_job.key)
        if isinstance(dep, StagedFile):
            dep = dep.future
        if isinstance(dep, Future):
            summary.deps[f"cell-{c.key}"] = [str(dep.key)]
    # one graph: Dask queues a large group of tasks without dependencies on the scheduler
    # and hands each to the first free thread in priority order, but only when the group
    # is large when it arrives (cells submitted one by one, the first went to workers at
    # once and queued there behind others: tests/orchestrate/test_replay.py)
    for fut, c in zip(client.compute(tasks, optimize_graph=False), ordered, strict=True):
        futures[fut] = c.key
    del cache_futs  # cells hold their cache futures; release ours
    with resumable_when_full(store.root, lambda: len(store.done_keys() & set(by_key)),
                             len(cells), lambda: client.cancel(list(futures))):
        lost = _drain(client, futures, by_key, store, summary, bar, on_result,
                      no_worker_timeout)
    stage.wait()
    for err in stage.errors:  # the cells ran on the bytes; the next run rebuilds it
        print(f"could not write the cache {err}", file=sys.stderr)
    summary.seconds = summary.cells_seconds = time.perf_counter() - t0
    if lost is None:
        workers, threads = _worker_slots(client) or (0, 0)
        summary.workers = max(summary.workers, workers)
        summary.threads = max(summary.threads, threads)
        cpu1 = scheduler_cpu_seconds(client)
        summary.scheduler_seconds = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        spans = _compute_spans(client, since, ("cell-", "cache-"))
        if spans is not None:
            summary.spans = spans
            flat = [ab for ss in spans.values() for ab in ss]
            summary.busy_seconds = sum(b - a for a, b in flat)
            if flat:
                summary.task_span_seconds = max(b for _, b in flat) - min(a for a, _ in flat)
    else:
        summary.interrupted.extend(futures.values())
        with contextlib.suppress(Exception):
            client.cancel(list(futures))
    if summary.interrupted:
        done = len(store.done_keys() & set(by_key))
        raise GridInterrupted(
            f"{lost or 'the cluster cut cells off'}: {done} of {len(cells)} pending cells "
            f"stored ({len(summary.computed)} this run, {len(summary.failed)} failed, "
            f"{len(summary.interrupted)} interrupted); rerun the same command to resume")
    return summary


def _drain(client: Client, futures: dict[Future, str], by_key: dict[str, Cell],
           store: ResultStore, summary: GridSummary, bar: Any,
           on_result: Callable[[CellResult], None] | None,
           no_worker_timeout: float) -> str | None:
    """Store outcomes as they come; the reason the cluster was lost, or None."""
    ac = as_completed(list(futures), with_results=True)  # gathers in the background
    next_check = time.monotonic() + 1.0
    workerless_since: float | None = None
    seen = summary.workers > 0  # a batch cluster's workers may still wait in its queue
    while not ac.is_empty():
        batch = ac.next_batch(block=False)
        if not batch:
            now = time.monotonic()
            if now >= next_check:
                next_check = now + 1.0
                n = connected_workers(client)
                if n is None:
                    return "lost the scheduler"
                seen = seen or n > 0
                workerless_since = None if n or not seen else (workerless_since or now)
                if workerless_since is not None and now - workerless_since > no_worker_timeout:
                    return f"no worker left for {no_worker_timeout:g} s"
            time.sleep(0.05)
            continue
        for fut, outcome in batch:
            key = futures.pop(fut)
            _store_outcome(outcome, by_key[key], store, summary, bar, on_result)
            fut.release()
            if bar is not None:
                bar.advance(bar.task_ids[0])
    if summary.interrupted and connected_workers(client) is None:
        return "lost the scheduler"
    return None


def _store_outcome(outcome: Any, cell: Cell, store: ResultStore, summary: GridSummary,
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
    if isinstance(exc, NotStarted):  # the cell or its cache: too late for ``stop_at``
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


def run_grid(client: Client, grid: GridConfig, results_dir: str | os.PathLike[str], *,
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
    client : distributed.Client
        Any cluster (the function never creates one).
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
        Seconds without any worker after which the run stops (see :func:`run_cells`).
    fan_out_seconds : float
        Caches estimated at this many worker seconds or more are built as per-variable
        batches (see :func:`run_cells`).
    stop_at : float, optional
        A ``time.time()`` by which the run should end: no cell starts that would not
        end by then at the mean wall time of the stored cells like it (see
        :func:`run_cells`); those left are the summary's ``not_started``.
    expected : mapping, optional
        With ``stop_at``: the pending cells' expected wall seconds (key -> seconds), when
        the caller has them (:func:`~bnsl_dist.pipeline.grid.estimate_left`); read from
        the stored cells otherwise.
    compute : mapping, optional
        What the tasks run instead of the real work (keyword arguments of
        :func:`run_cells`: ``run``, ``build_cache``, ``explore``, ``store_cache``): a
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
        ``reports/summary.json``: the run's makespan, utilisation, lower bound and
        efficiency (:func:`~bnsl_dist.orchestrate.summary.run_report`).

    Raises
    ------
    GridInterrupted
        The cluster was lost, or cut cells off; stored results stay.
    """
    t0 = time.perf_counter()
    store = ResultStore(results_dir)
    store.save_text(f"grids/{grid.name}.json", grid.model_dump_json(indent=1) + "\n")
    cells = grid_cells(grid, datasets, labels)
    done = store.done_keys()
    pending = [c for c in cells if c.key not in done]
    if not pending:
        return GridSummary(total=len(cells), skipped=len(cells),
                           seconds=time.perf_counter() - t0)

    def cache_path(c: Cell) -> str | None:
        if grid.kind == "sem" or c.cache_job.given_path is not None:
            return None
        return str(store.cache_path(c.cache_job.key))

    if warmup:
        builds = any(cache_path(c) is not None and not Path(cache_path(c) or "").is_file()
                     for c in pending) or grid.kind == "sem"
        register_warmup(client, cache_methods=(grid.cache.method,) if builds else (),
                        algorithms={algorithm_spec(c.algorithm, c.search.params, c.k)
                                    for c in pending})
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report_path = store.reports_dir / f"dask-performance-{grid.name}-{stamp}.html" \
        if report else None
    if stop_at is not None and expected is None:  # run_cells reads them for stop_at
        expected = estimate_from_store(results_dir, cells, StoreStatus(
            tuple(done), (), tuple(c.key for c in pending)))
    with _report(report_path), _progress(progress, len(pending)) as bar:
        bar.add_task(grid.name, total=len(pending))
        summary = run_cells(client, pending, store, cache_path=cache_path, bar=bar,
                            on_result=on_result, no_worker_timeout=no_worker_timeout,
                            fan_out_seconds=fan_out_seconds, stop_at=stop_at,
                            expected=expected,
                            staging=Staging(client, has_shared_fs(client, shared_fs)),
                            **(compute or {}))
    summary.total, summary.skipped = len(cells), len(cells) - len(pending)
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
                                         scale=time_scale)}, indent=1) + "\n")
    return summary


# ---------------------------------------------------------------------------- clusters
def jobqueue_job_script(kind: str, cfg: JobqueueConfig,
                        scheduler: str = "tcp://scheduler:8786") -> str:
    """The batch script dask-jobqueue would submit for one worker job (no cluster is
    started). Needs the optional ``dask-jobqueue`` package."""
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {kind!r} needs the optional package "
                                 "dask-jobqueue (pip install dask-jobqueue)") from None
    job_cls = {"slurm": dask_jobqueue.slurm.SLURMJob, "pbs": dask_jobqueue.pbs.PBSJob,
               "sge": dask_jobqueue.sge.SGEJob, "lsf": dask_jobqueue.lsf.LSFJob}[kind]
    kw = cfg.cluster_kwargs()
    kw.pop("interface", None)
    kw.pop("local_directory", None)
    job = job_cls(scheduler=scheduler, name="bnsl-dist-worker", **kw)
    script: str = job.job_script()
    return script


@contextlib.contextmanager
def open_client(cluster: ClusterConfig | None = None, *, workers: int | None = None,
                scheduler: str | None = None, scheduler_file: str | None = None,
                announce: bool = True, timeout: float | None = None,
                tls_dir: str | None = None) -> Iterator[Client]:
    """A client for the command line: explicit options first, else ``cluster``, else a
    local cluster of single-threaded processes sized to the machine.

    Clusters spanning hosts are encrypted by default: dask-jobqueue clusters get
    temporary TLS credentials (``Security.temporary()``) unless the cluster YAML says
    ``tls: false``; ``tls://`` addresses use ``tls_dir`` or dask's TLS configuration.
    Their dashboards bind to 127.0.0.1 unless ``dashboard_address`` says otherwise.
    """
    from bnsl_dist.orchestrate.cluster import connect

    if scheduler or scheduler_file or workers or cluster is None \
            or cluster.kind in ("local", "address", "scheduler-file"):
        c = cluster or ClusterConfig()
        if not (scheduler or scheduler_file or workers):
            scheduler = c.address if c.kind == "address" else None
            scheduler_file = os.path.expanduser(c.scheduler_file) \
                if c.kind == "scheduler-file" and c.scheduler_file else None
            workers = c.workers if c.kind == "local" else None
        with connect(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                     threads_per_worker=c.threads_per_worker, announce=announce,
                     memory_limit=c.memory_limit, timeout=timeout,
                     tls_dir=tls_dir) as client:
            yield client
        return
    if cluster.kind == "kubernetes":
        k8s = cluster.kubernetes
        if k8s is None:
            raise InvalidConfigError("cluster kind 'kubernetes' needs a 'kubernetes' section")
        try:
            from dask_kubernetes.operator import KubeCluster
        except ImportError:
            raise InvalidConfigError("cluster kind 'kubernetes' needs the optional package "
                                     "dask-kubernetes") from None
        kc = KubeCluster(name=k8s.name, namespace=k8s.namespace, image=k8s.image,
                         n_workers=k8s.n_workers, resources=k8s.resources or None,
                         env=k8s.env or None)
        try:
            with Client(kc) as client:
                _announce(client, announce)
                yield client
        finally:
            kc.close()
        return
    jq = cluster.jobqueue
    if jq is None:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs a 'jobqueue' section")
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs the optional package "
                                 f"dask-jobqueue (pip install dask-jobqueue)") from None
    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster,
           "sge": dask_jobqueue.SGECluster, "lsf": dask_jobqueue.LSFCluster}[cluster.kind]
    jc = cls(**jobqueue_kwargs(cluster))
    jc.scale(jobs=jq.jobs)
    try:
        with Client(jc) as client:
            _announce(client, announce)
            yield client
    finally:
        jc.close()


def jobqueue_kwargs(cluster: ClusterConfig) -> dict[str, Any]:
    """dask-jobqueue arguments of ``cluster``: TLS with temporary credentials unless
    ``tls: false`` (workers on other hosts must not take plain-TCP connections from
    anyone who reaches them; their job scripts read the credentials from
    ``~/.bnsl-dist/jobqueue-tls``, mode 0700, instead of files dask-jobqueue would
    write into the working directory), the dashboard on 127.0.0.1 unless configured."""
    assert cluster.jobqueue is not None
    kw = cluster.jobqueue.cluster_kwargs()
    kw.setdefault("scheduler_options", {}).setdefault(
        "dashboard_address", cluster.dashboard_address or "127.0.0.1:8787")
    if cluster.tls:
        from bnsl_dist.orchestrate.cluster import temporary_security

        kw["security"] = temporary_security()
        kw["protocol"] = "tls://"
        tmp = Path("~/.bnsl-dist/jobqueue-tls").expanduser()
        tmp.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp.chmod(0o700)
        kw["shared_temp_directory"] = str(tmp)
    return kw


def _announce(client: Client, announce: bool) -> None:
    if announce:
        print(f"Dask cluster: dashboard: {client.dashboard_link}", file=sys.stderr)
