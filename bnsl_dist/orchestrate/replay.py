"""Replay a grid through the real scheduler path, the compute replaced by sleeps.

``bnsl-dist grid run GRID.yaml --results DIR --replay RECORDS --speed X --workers N``
runs :func:`~bnsl_dist.orchestrate.grid.run_grid` as a real run does — the expansion,
the cells already stored skipped, each cache's tasks and its per-variable batches, the
dependencies, the priorities, ``--stop-at``, the store — on a local cluster of ``N``
worker threads that only sleep: every cache batch for the recorded exploration seconds
of its variables, and every cell for its recorded wall seconds, each ÷ ``X``
(:func:`~bnsl_dist.pipeline.plan.replay_model`: records of this grid, or of a reduced
one brought to this grid's budgets; a cell without a record: its budget). The seam is
the four task functions :func:`~bnsl_dist.orchestrate.grid.run_cells` takes (``run``,
``build_cache``, ``explore``, ``store_cache``); nothing else differs.

Each replayed cell stores a record of status ``replayed`` (no score: NaN, an empty DAG;
its ``replay`` column says from which records, at which speed, and where its seconds came
from), so no table can take it for a result; a replayed cache leaves a text file (not a
cache) where the cache would be, so that a resumed replay skips it as a resumed run
would. The folder is marked (``REPLAY``) and a real run refuses it
(:func:`refuse_replayed`). ``reports/summary.json`` reads in the grid's seconds (×
``X``); the scheduler's CPU per task does not. Dask's own cost per task (the event loop
the scheduler shares here with the workers and the client: 3 to 8 ms on a shared 2-core
machine) and the client's fixed start (planning and sending the graph: 1 to 3 s) are in
real seconds, so they too are multiplied by ``X``: choose ``X`` so that the tasks still
sleep some 50 times longer, and the replay lasts minutes (the SEM grid on 16 workers:
efficiency 0.78 replayed in 20 s, 0.97 in 120 s; ``workflows/benchmarks/replay_scale.py``).
The cluster has at most :data:`MAX_REPLAY_WORKERS` worker objects, more slots being more
threads each (:func:`replay_layout`).

``--virtual-clock`` (``replay_grid(virtual_clock=True)``) leaves real time out: each task
waits its grid seconds on a simulated clock that moves only when nothing else in the
cluster can happen (:mod:`~bnsl_dist.orchestrate.virtual_clock`), so the replay gives
exactly the schedule Dask makes when every task takes its seconds, whatever the
machine's load, as fast as the scheduler goes; Dask's own cost per task is what it does
not show.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bnsl_dist._io import atomic_write_bytes
from bnsl_dist._json import canonical_json
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.orchestrate.virtual_clock import VirtualClock
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.cost import n_vars_hint
from bnsl_dist.pipeline.plan import ReplayModel, replay_model
from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore

__all__ = ["MAX_REPLAY_WORKERS", "REPLAY_MARKER", "ReplayRun", "refuse_replayed",
           "replay_client", "replay_compute", "replay_grid", "replay_layout",
           "replayed_record"]

#: The file that marks a results folder as holding a replay.
REPLAY_MARKER = "REPLAY"
_EMPTY_DAG = canonical_json({"nodes": [], "parents": {}})


@dataclass(frozen=True)
class ReplayRun:
    """What the sleeping tasks of one replay read: the model, the speed, and the
    simulated clock they wait on instead of sleeping (None: real time ÷ ``speed``)."""

    model: ReplayModel
    speed: float
    records: str
    clock: VirtualClock | None = None


#: Replays in progress in this process, by token (the workers are threads of it).
_RUNS: dict[str, ReplayRun] = {}
_TOKENS = itertools.count()
_LOCK = threading.Lock()


def _sleep(grid_seconds: float, run: ReplayRun) -> float:
    """Sleep ``grid_seconds`` (÷ the speed, or on the simulated clock); the seconds
    slept (real, or simulated)."""
    if run.clock is not None:
        return run.clock.sleep(grid_seconds)
    t0 = time.perf_counter()
    time.sleep(max(0.0, grid_seconds) / run.speed)
    return time.perf_counter() - t0


def replayed_record(cell: Cell, run: ReplayRun, real_seconds: float) -> CellResult:
    """The record a replayed cell stores: never a result (status ``replayed``, score
    NaN, no DAG); ``wall_seconds`` its replayed (grid) seconds."""
    prov = provenance()
    b = cell.search.budget
    return CellResult(
        key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
        algorithm=cell.algorithm, label=cell.label, params=cell.params_json, k=cell.k,
        seed=cell.seed, budget_seconds=b.seconds, budget_iterations=b.iterations,
        best_score=math.nan, dag_json=_EMPTY_DAG, n_vars=n_vars_hint(cell.data) or 0,
        n_samples=0, status="replayed", elapsed=real_seconds,
        wall_seconds=run.model.cells.get(cell.key, 0.0), cache_key=cell.cache_job.key,
        outputs={"replay": {"records": run.records, "speed": run.speed,
                            "seconds_from": run.model.sources.get(cell.key)}},
        versions=canonical_json(prov["versions"]), hostname=prov["hostname"],
        commit=prov["commit"], dirty=prov["dirty"], cpus=prov["cpus"], spec=canonical_json(cell.json_dict()),
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"))


def _run_cell(token: str, cell: Cell, cache: Any = None) -> CellResult:
    run = _RUNS[token]
    return replayed_record(cell, run, _sleep(run.model.cells.get(cell.key, 0.0), run))


def _explore(token: str, job: CacheJob, variables: list[int]) -> tuple[list[Any], float]:
    run = _RUNS[token]
    return [], _sleep(run.model.batch(job.key, variables), run)


def _mark_cache(path: str, job: CacheJob) -> str:
    atomic_write_bytes(Path(path), f"replayed cache {job.key}: no parent sets\n".encode())
    return path


def _build_cache(token: str, job: CacheJob, path: str) -> str:
    run = _RUNS[token]
    n = len(run.model.caches.get(job.key, ()))
    _sleep(run.model.batch(job.key, range(n)), run)
    return _mark_cache(path, job)


def _store_cache(token: str, job: CacheJob, path: str, *parts: Any) -> str:
    _sleep(0.0, _RUNS[token])  # no time, but a span on the simulated clock
    return _mark_cache(path, job)


def replay_compute(token: str) -> dict[str, Any]:
    """The task functions of a replay (``run_grid(compute=...)``)."""
    from functools import partial

    return {"run": partial(_run_cell, token), "build_cache": partial(_build_cache, token),
            "explore": partial(_explore, token), "store_cache": partial(_store_cache, token)}


@contextmanager
def registered(run: ReplayRun) -> Iterator[str]:
    """A token the sleeping tasks find ``run`` by, while the block runs."""
    with _LOCK:
        token = f"replay-{os.getpid()}-{next(_TOKENS)}"
        _RUNS[token] = run
    try:
        yield token
    finally:
        with _LOCK:
            _RUNS.pop(token, None)


def refuse_replayed(results_dir: str | os.PathLike[str], replay: bool) -> None:
    """A real run never writes into a replay's folder, nor a replay into a folder of
    real results."""
    store = ResultStore(results_dir)
    marked = (store.root / REPLAY_MARKER).is_file()
    if not replay and marked:
        raise InvalidConfigError(f"--results {results_dir} holds a replay "
                                 f"({REPLAY_MARKER}): run into another folder")
    if replay and not marked and store.results_dir.is_dir() \
            and any(store.results_dir.iterdir()):
        raise InvalidConfigError(f"--results {results_dir} holds real results: replay "
                                 f"into another folder")


#: The most worker objects a replay's cluster has: each heartbeats and monitors itself
#: on the one event loop the scheduler shares in this process (256 and 1,024 workers of
#: one thread each stalled a 2-core machine); more slots are more threads per worker.
MAX_REPLAY_WORKERS = 16


def replay_layout(slots: int) -> tuple[int, int]:
    """(workers, threads per worker) of a replay cluster of ``slots`` worker threads: the
    fewest threads per worker that divide ``slots`` and leave at most
    :data:`MAX_REPLAY_WORKERS` workers.

    >>> replay_layout(16), replay_layout(1024), replay_layout(100), replay_layout(17)
    ((16, 1), (16, 64), (10, 10), (1, 17))
    """
    if slots < 1:
        raise InvalidConfigError(f"a replay needs at least one worker, got {slots}")
    t = next(t for t in range(1, slots + 1)
             if slots % t == 0 and slots // t <= MAX_REPLAY_WORKERS)
    return slots // t, t


#: The chores every Dask server runs on its event loop, off or rare in a replay's
#: cluster: its scheduler and workers share one loop, where each worker's statistical
#: profiler (every thread's stack every 10 ms), 17 system monitors (psutil, every 0.5 s)
#: and 17 loop-latency ticks (every 20 ms) took most of it (py-spy samples of the loop,
#: 16 workers x 16 threads). None of them decides where a task runs.
REPLAY_CONFIG = {"distributed.worker.profile.enabled": False,
                 "distributed.admin.system-monitor.interval": "60s",
                 "distributed.admin.system-monitor.disk": False,
                 "distributed.admin.system-monitor.gil.enabled": False,
                 "distributed.admin.tick.interval": "1s"}


@contextmanager
def replay_client(workers: int, threads_per_worker: int | None = None) -> Iterator[Any]:
    """A local cluster of ``workers`` sleeping worker threads (as ``workers`` ×
    ``threads_per_worker``, or as :func:`replay_layout` lays ``workers`` out), in this
    process (``processes=False``: its threads find the replay's model)."""
    import dask
    from distributed import Client, LocalCluster

    from bnsl_dist.orchestrate.cluster import SCHEDULER_CONFIG

    if threads_per_worker is None:
        workers, threads_per_worker = replay_layout(workers)
    # as every cluster this package starts, but for the chores (:data:`REPLAY_CONFIG`)
    with dask.config.set({**SCHEDULER_CONFIG, **REPLAY_CONFIG}):
        lc = LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker,
                          processes=False, dashboard_address=None, memory_limit=None)
    with lc, Client(lc) as client:
        yield client


def replay_grid(client: Any, grid: GridConfig, results_dir: str | os.PathLike[str],
                records: Any, *, speed: float = 1.0, records_name: str = "",
                datasets: Collection[str] | None = None, stop_at: float | None = None,
                progress: bool = False, report: bool = False,
                cells: Sequence[Cell] | None = None, model: ReplayModel | None = None,
                virtual_clock: bool = False, **kwargs: Any) -> Any:
    """Replay ``grid`` into ``results_dir`` on ``client`` (its workers threads of this
    process: :func:`replay_client`) from ``records`` (a
    :class:`~bnsl_dist.results.export.RecordSet`, or None: budgets only) at ``speed``.
    ``stop_at`` is in the grid's time: the run stops that many grid seconds from now,
    i.e. ÷ ``speed`` of real time. ``model``: the durations, when the caller has them
    (instead of :func:`~bnsl_dist.pipeline.plan.replay_model` of ``records``: e.g. a
    cache's measured per-variable seconds). ``virtual_clock``: the tasks wait on a
    simulated clock instead of sleeping (:mod:`~bnsl_dist.orchestrate.virtual_clock`:
    the schedule the scheduler makes when each task takes exactly its grid seconds,
    whatever the machine's load; ``speed`` is then unused). Returns the
    :class:`~bnsl_dist.orchestrate.grid.GridSummary`; ``reports/summary.json`` reads in
    grid seconds."""
    from bnsl_dist.orchestrate.grid import grid_cells, run_grid

    if not speed > 0 or not math.isfinite(speed):
        raise InvalidConfigError(f"--speed must be a positive number, got {speed}")
    if virtual_clock and stop_at is not None:
        raise InvalidConfigError("--stop-at reads the real clock: not with --virtual-clock")
    refuse_replayed(results_dir, replay=True)
    store = ResultStore(results_dir)
    source = records_name or "the budgets"
    store.save_text(REPLAY_MARKER, f"a replay of grid {grid.name} from {source}\n")
    every = list(cells) if cells is not None else grid_cells(grid, datasets)
    clock = VirtualClock() if virtual_clock else None
    run = ReplayRun(model or replay_model(every, records), float(speed), records_name,
                    clock)
    expected = None
    if stop_at is not None:  # as a real run: the stored cells' wall times (grid seconds)
        from bnsl_dist.pipeline.forecast import estimate_from_store

        now = time.time()
        stop_at = now + (stop_at - now) / speed
        left = estimate_from_store(results_dir, every, store.status(c.key for c in every))
        expected = {k: None if s is None else s / speed for k, s in left.items()}
    with registered(run) as token, _driven(clock, client):
        compute = replay_compute(token)
        if clock is not None:  # the makespan and the spans in simulated seconds
            compute.update(clock=clock.now, task_spans=clock.spans, on_submitted=clock.arm)
        return run_grid(client, grid, results_dir, progress=progress, report=report,
                        warmup=False, datasets=datasets, stop_at=stop_at,
                        expected=expected, compute=compute,
                        time_scale=1.0 if clock is not None else speed, **kwargs)


@contextmanager
def _driven(clock: VirtualClock | None, client: Any) -> Iterator[None]:
    if clock is None:
        yield
        return
    with clock.running(client):
        yield
