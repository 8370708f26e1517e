"""Run cells on a Dask cluster and store each outcome as it arrives
(:func:`run_cells`): each distinct cache built once as its own task(s), every cell a
task depending on its cache's, all in one graph in the order of
:func:`~bnsl_dist.pipeline.cost.priorities`; the loop that stores the outcomes and watches
for a lost scheduler or the last worker gone (:func:`_drain`); ``--stop-at``'s check on
the workers (:func:`unless_late`, :func:`unless_late_learning`). The grid around it
(expansion, warm-up, reports) is :func:`bnsl_dist.orchestrate.grid.run_grid`.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import sys
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed

from bnsl_dist.orchestrate._disk import resumable_when_full
from bnsl_dist.orchestrate.explore import explore_job, store_job_cache, submit_cache_build
from bnsl_dist.orchestrate.outcomes import (
    GridInterrupted,
    GridSummary,
    NotStarted,
    store_outcome,
)
from bnsl_dist.orchestrate.queued import queued_delayed
from bnsl_dist.orchestrate.staging import StagedFile, Staging
from bnsl_dist.orchestrate.summary import scheduler_cpu_seconds, task_seconds
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.cost import (
    FAN_OUT_SECONDS,
    cache_sizes,
    cache_work,
    cell_cost,
    n_vars_hint,
    priorities,
)
from bnsl_dist.pipeline.forecast import RunWalls, likeness
from bnsl_dist.pipeline.run import ensure_cache, run_cell
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore

__all__ = ["NO_WORKER_TIMEOUT", "connected_workers", "run_cells", "unless_late",
           "unless_late_learning"]


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
    bnsl_dist.orchestrate.outcomes.NotStarted: expected to take 120 s, 60 s before the stop time
    """
    left = stop_at - time.time()
    if left <= 0 or expected > left:
        raise NotStarted(f"expected to take {expected:.0f} s, {max(0.0, left):.0f} s "
                         f"before the stop time")
    return fn(*args)


#: Per run (:func:`run_cells` call, by its id), the wall seconds of the cells this
#: process ran (:func:`unless_late_learning`); the last :data:`_RUNS_KEPT` runs kept.
_RUN_WALLS: OrderedDict[str, RunWalls] = OrderedDict()
_RUN_WALLS_LOCK = threading.Lock()
_RUNS_KEPT = 8


def _walls_of(run: str) -> RunWalls:
    with _RUN_WALLS_LOCK:
        walls = _RUN_WALLS.get(run)
        if walls is None:
            walls = _RUN_WALLS[run] = RunWalls()
            while len(_RUN_WALLS) > _RUNS_KEPT:
                _RUN_WALLS.popitem(last=False)
        _RUN_WALLS.move_to_end(run)
        return walls


def unless_late_learning(run: str, like: tuple[Any, ...], stop_at: float,
                         expected: float | None, fn: Callable[..., Any], *args: Any) -> Any:
    """A cell's :func:`unless_late`: it expects the larger of ``expected`` (the stored
    cells' estimate; None: 0) and the mean wall time of the cells alike (``like``,
    :func:`~bnsl_dist.pipeline.forecast.likeness`) that this worker process has run in
    ``run``; when ``fn`` returns, the seconds it took join them
    (:class:`~bnsl_dist.pipeline.forecast.RunWalls`). The estimate is read when the
    cell starts, not when it was submitted: cells sent before any like cell ended would
    otherwise keep 0 s to the end.

    Examples
    --------
    >>> like = ("nltcs", "test", "kg", 2, 1.0, None)
    >>> unless_late_learning("doc", like, time.time() + 60, None, time.sleep, 0.2)
    >>> unless_late_learning("doc", like, time.time() + 0.1, None, max, 2, 3)
    Traceback (most recent call last):
    ...
    bnsl_dist.orchestrate.outcomes.NotStarted: expected to take 0 s, 0 s before the stop time
    """
    walls = _walls_of(run)
    t0 = time.perf_counter()
    out = unless_late(stop_at, walls.expected(like, expected), fn, *args)
    walls.add(like, time.perf_counter() - t0)
    return out


#: Seconds without any worker after which a grid gives up (workers seen before).
NO_WORKER_TIMEOUT = 30.0

#: Cells submitted and not yet stored at any time: at least :data:`MIN_WINDOW`, or
#: :data:`WINDOW_PER_SLOT` per worker thread. The rest wait on the client, in priority
#: order, and go as outcomes arrive: what the client, the scheduler and the workers
#: hold for the cells in flight (futures, task states, graphs, results not yet
#: gathered) stays bounded whatever the grid's size (100,000 cells:
#: ``workflows/benchmarks/replay_rss.py``). Dask queues the cells by priority on the
#: scheduler, so a window of many more cells than threads leaves the schedule as it
#: was with every cell submitted (a window filled with cells waiting on caches not yet
#: built would not: the caches are all submitted at once and come before all but the
#: cheapest caches' cells).
MIN_WINDOW = 2_000
WINDOW_PER_SLOT = 4


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


def _spans_on_scheduler(dask_scheduler: Any, since: float, prefixes: tuple[str, ...]
                        ) -> dict[str, list[tuple[float, float]]]:
    from distributed.diagnostics.task_stream import TaskStreamPlugin

    plugin = dask_scheduler.plugins.get(TaskStreamPlugin.name)
    return {} if plugin is None else task_seconds(plugin.buffer, since, prefixes)


def _compute_spans(client: Client, since: float, prefixes: tuple[str, ...]
                   ) -> dict[str, list[tuple[float, float]]] | None:
    """Key -> (start, stop) of each compute of our tasks that started since ``since``
    (:func:`~bnsl_dist.orchestrate.summary.task_seconds`), worked out on the scheduler
    (the task stream's records, some 1 KiB a task, stay there), else from the stream
    sent to the client (a scheduler without this package); None when the scheduler does
    not answer."""
    with contextlib.suppress(Exception):  # noqa: BLE001 - answered below, or None
        spans = client.run_on_scheduler(_spans_on_scheduler, since=since, prefixes=prefixes)
        return {k: [(a, b) for a, b in v] for k, v in spans.items()}
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
              staging: Staging | None = None,
              clock: Callable[[], float] = time.perf_counter,
              task_spans: Callable[[], dict[str, list[tuple[float, float]]]] | None = None,
              on_submitted: Callable[[int, bool], None] | None = None) -> GridSummary:
    """Run ``cells`` on the cluster and store each outcome as it arrives.

    A cell needing a cache that ``cache_path(cell)`` names but that does not exist yet
    depends on the task that builds and stores it, one per distinct cache: each cell
    starts as soon as *its* cache exists (no barrier between cache and search phases).
    The cache is one ``build_cache(cell.cache_job, path)`` task, or, when its estimated
    work (:func:`~bnsl_dist.pipeline.cost.cache_work`) is at least ``fan_out_seconds`` and the cluster has two
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
    expected wall seconds (:func:`unless_late_learning`: the larger of its ``expected``,
    key -> seconds, unknown: 0, and the mean of the cells like it that its worker
    process has run in this call), a cache (one task or a batch)
    only if it starts before then; the others are :class:`NotStarted`, listed in the
    summary's ``not_started`` (no record: they stay pending), as are the cells of a
    cache not started. Running cells are never stopped; a one-task cache build
    (``ensure_cache``) starts no batch of variables that would not end by then
    (:class:`~bnsl_dist.cache.parts.BuildStopped`, its cells not started): the batches
    it finished stay stored beside its file, and the next run's build explores only
    the variables they do not hold.

    ``staging`` says how tasks get their data and caches: the paths (a shared file
    system, the default) or sent through Dask, the client writing the caches
    (:class:`~bnsl_dist.orchestrate.staging.Staging`).

    The summary's ``cells_seconds`` (the makespan) runs on ``clock`` from the first task
    submitted to the last outcome stored; ``planning_seconds`` is the time before, spent
    sizing the caches and setting the priorities. A replay on a simulated clock
    (:mod:`~bnsl_dist.orchestrate.virtual_clock`) gives its ``clock``, the tasks'
    ``task_spans`` on it (else: the scheduler's task stream) and ``on_submitted``, called
    after each submission of cells with the count of cells sent so far and whether that
    is every cell. At most
    :data:`MIN_WINDOW` cells, or :data:`WINDOW_PER_SLOT` per worker thread, are in
    flight: the others follow, in priority order, as outcomes are stored.
    """
    stage = staging or Staging(client, shared_fs=True)
    stage.check(r for c in cells for r in (c.data, c.holdout))
    summary = GridSummary(total=len(cells), skipped=0)
    if stop_at is not None:  # checked on the workers, when each task starts
        if build_cache is ensure_cache:  # and by the build before each of its batches
            build_cache = functools.partial(ensure_cache, stop_at=stop_at)
        build_cache = functools.partial(unless_late, stop_at, 0.0, build_cache)
        explore = functools.partial(unless_late, stop_at, 0.0, explore)
    run_id = uuid.uuid4().hex  # the cells each worker runs in this call: :data:`_RUN_WALLS`
    p0 = time.perf_counter()
    since = time.time()
    with contextlib.suppress(Exception):  # installs the scheduler's task-stream plugin
        client.get_task_stream(start=0, stop=0)
    summary.workers, summary.threads = _worker_slots(client) or (0, 0)
    cpu0 = scheduler_cpu_seconds(client)
    by_key = {c.key: c for c in cells}
    sizes, first = cache_sizes(cells, cache_path, cost)
    cache_futs: dict[str, Future[Any] | StagedFile | str | None] = {}
    for ck in first:
        path = cache_path(first[ck])
        if path is not None and Path(path).is_file():
            cache_futs[ck] = stage.existing(path)
            del sizes[ck]
    prio = priorities(cells, sizes, summary.threads, cost)
    summary.planning_seconds = time.perf_counter() - p0
    summary.submitted_at = time.perf_counter()
    t0 = clock()  # the makespan runs from the first task submitted
    futures: dict[Future[Any], str] = {}
    ordered = sorted(by_key, key=prio.cells.__getitem__, reverse=True)
    sent: list[int] = []

    def submit(keys: Sequence[str]) -> list[Future[Any]]:
        tasks = []
        for key in keys:  # a cell's key and its cache's are hashes: computed once
            c = by_key[key]
            dep = cache_futs.get(c.cache_job.key)
            task = stage.cell_task(run, c, dep)
            if stop_at is not None:
                task = (unless_late_learning, run_id, likeness(c), stop_at,
                        (expected or {}).get(key), *task)
            tasks.append(queued_delayed(*task, key=f"cell-{key}", priority=prio.cells[key]))
            if isinstance(dep, StagedFile):
                dep = dep.future
            if isinstance(dep, Future):
                summary.deps[f"cell-{key}"] = [str(dep.key)]
        # one graph, each cell queued on the scheduler (:mod:`.queued`), which hands it
        # to the first free thread in priority order (cells submitted one by one, or
        # given to workers when ready, queued there behind others:
        # tests/orchestrate/test_replay.py)
        out: list[Future[Any]] = client.compute(tasks, optimize_graph=False) if tasks else []
        futures.update(zip(out, keys, strict=True))
        sent.append(len(keys))
        if on_submitted is not None and keys:
            on_submitted(sum(sent), sum(sent) == len(ordered))
        return out

    window = max(MIN_WINDOW, WINDOW_PER_SLOT * (summary.threads or summary.workers))
    head = ordered[:window]
    # the cells that need no cache built and come before every cache first: an idle
    # worker takes the first task that arrives, and a worker of one thread holds two
    # (the scheduler's worker-saturation), so caches submitted first ran before them
    top = max(prio.caches.values(), default=-math.inf)
    ready = [k for k in head if by_key[k].cache_job.key not in sizes and prio.cells[k] > top]
    submit(ready)
    # submitted in priority order too: an idle worker takes the first task that arrives
    for ck in sorted(sizes, key=prio.caches.__getitem__, reverse=True):
        job = first[ck].cache_job
        path = cache_path(first[ck])
        assert path is not None
        work, n = cache_work(job), n_vars_hint(job.data)
        slots = summary.threads or summary.workers  # batches for every worker thread
        if slots >= 2 and work is not None and n is not None and work >= fan_out_seconds:
            cache_futs[ck] = submit_cache_build(client, job, path, n, slots,
                                                priority=prio.caches[ck],
                                                store_priority=prio.store, explore=explore,
                                                store=store_cache, deps=summary.deps,
                                                staging=stage)
        else:
            # queued, as the cells: sent to a worker at once, it ran before the cells
            # of caches already stored whatever its priority (one worker: a 16-minute
            # build while ready cells waited)
            cache_futs[ck] = stage.build(build_cache, job, path, key=f"cache-{ck}",
                                         queued=True, priority=prio.caches[ck])
    early = set(ready)
    submit([k for k in head if k not in early])
    rest = iter(ordered[window:])
    with resumable_when_full(store.root, lambda: len(store.done_keys() & set(by_key)),
                             len(cells), lambda: client.cancel(list(futures))):
        lost = _drain(client, futures, by_key, store, summary, bar, on_result,
                      no_worker_timeout, lambda n: submit(list(itertools.islice(rest, n))))
    cache_futs.clear()  # every cell sent: they hold their cache futures
    stage.wait()
    for err in stage.errors:  # the cells ran on the bytes; the next run rebuilds it
        print(f"could not write the cache {err}", file=sys.stderr)
    summary.cells_seconds = clock() - t0
    summary.seconds = time.perf_counter() - p0
    if lost is None:
        workers, threads = _worker_slots(client) or (0, 0)
        summary.workers = max(summary.workers, workers)
        summary.threads = max(summary.threads, threads)
        cpu1 = scheduler_cpu_seconds(client)
        summary.scheduler_seconds = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        spans = _compute_spans(client, since, ("cell-", "cache-")) if task_spans is None \
            else task_spans()
        if spans is not None:
            summary.spans = spans
            flat = [ab for ss in spans.values() for ab in ss]
            summary.busy_seconds = sum(b - a for a, b in flat)
            if flat:
                summary.task_span_seconds = max(b for _, b in flat) - min(a for a, _ in flat)
    else:
        summary.interrupted.extend(futures.values())
        summary.interrupted.extend(rest)  # not sent: the rerun runs them
        with contextlib.suppress(Exception):
            client.cancel(list(futures))
    if summary.interrupted:
        done = len(store.done_keys() & set(by_key))
        raise GridInterrupted(
            f"{lost or 'the cluster cut cells off'}: {done} of {len(cells)} pending cells "
            f"stored ({len(summary.computed)} this run, {len(summary.failed)} failed, "
            f"{len(summary.interrupted)} interrupted); rerun the same command to resume")
    return summary


def _drain(client: Client, futures: dict[Future[Any], str], by_key: dict[str, Cell],
           store: ResultStore, summary: GridSummary, bar: Any,
           on_result: Callable[[CellResult], None] | None,
           no_worker_timeout: float,
           refill: Callable[[int], list[Future[Any]]] = lambda n: []) -> str | None:
    """Store outcomes as they come, and for each ``refill(n)`` more cells (their
    futures joining the loop) before the outcomes' futures are released (so the
    scheduler hears of the new cells first); the reason the cluster was lost, or
    None."""
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
            store_outcome(outcome, by_key[key], store, summary, bar, on_result)
            if bar is not None:
                bar.advance(bar.task_ids[0])
        ac.update(refill(len(batch)))
        for fut, _ in batch:
            fut.release()
    if summary.interrupted and connected_workers(client) is None:
        return "lost the scheduler"
    return None


