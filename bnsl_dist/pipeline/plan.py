"""The replay model of a grid, and its plan on W workers (no Dask).

A grid's work is its cells and the caches they need. The *replay model*
(:func:`replay_model`) gives each a duration: a cell's is the wall time of its recorded
twin (the same data set, split, label, treewidth, seed and SEM settings, in a records file
of this grid or of a reduced one) brought to the cell's time budget (:func:`at_budget`: a
run that used its whole reduced budget takes the full budget plus the same overhead; one
that ended earlier, by the ratio of the budgets), else its time budget
(:func:`~bnsl_dist.pipeline.cost.cell_budget_seconds`); a cache's is per variable: the
recorded exploration times of its twin's cache (the cache records ``grid export``
writes), else that cache's build seconds spread evenly over its variables, each brought
to the per-variable budget the same way, else the build work estimated from its settings
(:func:`~bnsl_dist.pipeline.cost.cache_work`).

:func:`grid_tasks` turns the cells into the tasks ``grid run`` submits
(:func:`bnsl_dist.orchestrate.cells.run_cells`): one per cell, depending on its cache's
task; a cache as one task, or as guided batches of variables and a storing task
(:func:`~bnsl_dist.pipeline.cost.guided_batches`); the same priorities
(:func:`~bnsl_dist.pipeline.cost.priorities`).
:func:`list_schedule` runs them as Dask's scheduler hands them out: a free worker takes
the ready task of highest priority, ties in submission order. :func:`plan` is that
schedule's makespan, CPU-hours and peak memory (``bnsl-dist grid plan``); ``grid run
--replay`` runs the same tasks on a Dask cluster of sleeping threads instead
(:mod:`bnsl_dist.orchestrate.replay`).

Bounds: no schedule of the tasks on W workers ends before :func:`lower_bound`: the total
work over W, the longest chain of dependent tasks (a cache's longest batch, its storing
task, its longest cell), and the caches' work over W followed by a cell.
``efficiency`` = lower bound / makespan.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.cost import (
    FAN_OUT_SECONDS,
    builds_cache,
    cache_sizes,
    cache_work,
    cell_budget_seconds,
    guided_batches,
    priorities,
    shape_hint,
)
from bnsl_dist.pipeline.grid import grid_axes
from bnsl_dist.pipeline.tasks import task_axes
from bnsl_dist.results.columns import KIND_COLUMN_NAMES

__all__ = ["GridPlanEstimate", "ReplayModel", "Schedule", "Task", "cell_twin_key",
           "at_budget", "critical_path", "format_plan_estimate", "grid_tasks", "list_schedule", "lower_bound", "plan",
           "record_twin_key", "replay_model", "utilisation", "BYTES_PER_PARENT_SET"]

#: Bytes a cache holds per parent set in a worker (its score, its parents' indices and
#: the offsets into them), for the peak-memory estimate of :func:`plan`: counted from
#: the arrays' types, not measured.
BYTES_PER_PARENT_SET = 48
#: Bytes per value of the data a worker holds (categorical codes, one byte each).
BYTES_PER_VALUE = 1


def utilisation(busy_s: float | None, workers: int, makespan_s: float) -> float | None:
    """Busy worker-seconds over the worker-seconds available (``workers`` × the
    makespan); None when unknown. The one definition: the run summary and the plan use it.

    >>> utilisation(30.0, 2, 20.0)
    0.75
    """
    if busy_s is None or workers <= 0 or makespan_s <= 0:
        return None
    return busy_s / (workers * makespan_s)


def lower_bound(seconds: Mapping[str, float], deps: Mapping[str, Sequence[str]],
                workers: int) -> float:
    """No schedule of the tasks (``seconds``: key -> duration; ``deps``: key -> the keys
    it waits for) on ``workers`` ends before the largest of: their total work shared
    evenly; their longest chain (:func:`critical_path`); and the work of every task
    something waits for (the caches) shared evenly, plus the shortest chain that can
    follow the last of those (the last cache to be done is done no earlier than that,
    and at least its storing task and its shortest longest cell come after it: this
    bounds a grid whose caches are most of the work and whose cells are few and long).

    >>> lower_bound({"a": 20.0, "b": 20.0, "c": 30.0}, {}, 2)    # the work
    35.0
    >>> lower_bound({"a": 20.0, "b": 20.0, "c": 30.0}, {}, 4)    # the longest task
    30.0
    >>> parts = {f"p{i}": 10.0 for i in range(8)}              # a cache, then one cell
    >>> lower_bound({**parts, "s": 0.0, "x": 10.0}, {"s": list(parts), "x": ["s"]}, 4)
    30.0
    """
    n = max(1, workers)
    children: dict[str, list[str]] = {}
    for k, ds in deps.items():
        for d in ds:
            children.setdefault(d, []).append(k)
    memo: dict[str, float] = {}

    def after(k: str) -> float:  # the longest chain strictly after k
        if k not in memo:
            memo[k] = max((seconds.get(c, 0.0) + after(c) for c in children.get(k, ())),
                          default=0.0)
        return memo[k]

    pre = [k for k in children if k in seconds]
    caches = sum(seconds[k] for k in pre) / n + min((after(k) for k in pre), default=0.0)
    return max(sum(seconds.values()) / n, critical_path(seconds, deps), caches)


def critical_path(seconds: Mapping[str, float], deps: Mapping[str, Sequence[str]]) -> float:
    """The longest chain of ``seconds`` (task -> duration) along ``deps`` (task -> the
    tasks it waits for; absent ones count as taking no time).

    >>> critical_path({"a": 2.0, "b": 3.0, "c": 1.0}, {"c": ["a", "b"]})
    4.0
    """
    memo: dict[str, float] = {}

    def chain(k: str) -> float:
        if k not in memo:  # dependencies are at most two deep (batch, store, cell)
            memo[k] = seconds.get(k, 0.0) + max((chain(d) for d in deps.get(k, ())),
                                                default=0.0)
        return memo[k]

    return max((chain(k) for k in seconds), default=0.0)


# ---------------------------------------------------------------------------- the model
def cell_twin_key(cell: Cell) -> tuple[Any, ...]:
    """What a cell shares with its twin in a records file of another budget: data set,
    split, label, k, seed and its value on each grid axis (:func:`grid_axes`; None off
    its kind's)."""
    axes = task_axes(cell.task)
    return (cell.dataset, cell.split, cell.label, cell.k, cell.seed,
            *(axes.get(a) for a in grid_axes()))


def record_twin_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """:func:`cell_twin_key` of a record (a row of the result table): each axis from its
    kind's result column, which keeps it under its name (a SEM cell's in ``sem``)."""
    kinds = [v for v in (row.get(c) for c in KIND_COLUMN_NAMES) if isinstance(v, Mapping)]
    return (row["dataset"], row["split"], row["label"], row["k"], int(row["seed"]),
            *(next((v[a] for v in kinds if v.get(a) is not None), None)
              for a in grid_axes()))


def at_budget(seconds: float, recorded: float | None, full: float | None) -> float:
    """``seconds`` recorded under a time budget of ``recorded`` seconds, at a budget of
    ``full`` seconds: a run that used its whole budget took that budget plus an overhead
    (reading data and cache, setting up) that does not grow with it, so it takes
    ``seconds + full - recorded``; one that ended before its budget (an ILP proven
    optimal, a variable explored completely, structural EM converged) is scaled by
    ``full / recorded``. Unchanged when either budget is unknown.

    >>> at_budget(4.1, 3.6, 3600.0), at_budget(1.8, 3.6, 3600.0)
    (3600.5, 1800.0)
    """
    if full is None or not recorded or full == recorded:
        return seconds
    if seconds >= recorded:
        return seconds + full - recorded
    return seconds * full / recorded


@dataclass(frozen=True)
class ReplayModel:
    """Durations (grid seconds) of a grid's cells (by key) and of its caches'
    variables (by cache key), with where each came from: ``record`` (this very cell),
    ``scaled`` (a twin at another budget), ``budget`` (the time budget; a SEM cell's
    M-step budgets × its EM iteration cap: an upper bound), ``estimate``
    (:func:`~bnsl_dist.pipeline.cost.cache_work`) or ``none`` (0 s: nothing bounds it in
    seconds). ``memory``: each cell's bytes in a worker (data + cache)."""

    cells: dict[str, float] = field(default_factory=dict)
    caches: dict[str, tuple[float, ...]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # cell or cache key -> source
    memory: dict[str, float] = field(default_factory=dict)

    def batch(self, cache_key: str, variables: Iterable[int]) -> float:
        """Seconds to explore ``variables`` of the cache (beyond the recorded ones: the
        mean of those)."""
        per = self.caches.get(cache_key, ())
        if not per:
            return 0.0
        mean = sum(per) / len(per)
        return float(sum(per[v] if v < len(per) else mean for v in variables))

    def counts(self) -> dict[str, int]:
        """How many durations came from each source."""
        out: dict[str, int] = {}
        for s in self.sources.values():
            out[s] = out.get(s, 0) + 1
        return out


_COLUMNS = ("key", "dataset", "split", "label", "k", "seed", *KIND_COLUMN_NAMES,
            "budget_seconds",
            "wall_seconds", "cache_key", "cache_seconds", "n_vars", "n_samples",
            "n_parent_sets", "spec")


def replay_model(cells: Sequence[Cell], records: Any = None) -> ReplayModel:
    """The durations of ``cells`` and their caches from ``records`` (a
    :class:`~bnsl_dist.results.export.RecordSet`, or None: budgets and estimates only);
    see the module's docstring."""
    rows: list[dict[str, Any]] = []
    cache_times: Mapping[str, Mapping[str, Any]] = {}
    if records is not None:
        t = records.table
        rows = t.select([c for c in _COLUMNS if c in t.schema.names]).to_pylist()
        cache_times = getattr(records, "caches", {}) or {}
    by_key = {r["key"]: r for r in rows}
    by_twin = {record_twin_key(r): r for r in rows}
    m = ReplayModel()
    for c in cells:
        r = by_key.get(c.key) or by_twin.get(cell_twin_key(c))
        n, n_rows = shape_hint(c.data) if c.data is not None else (None, None)
        if r is not None:
            budgets = (r["budget_seconds"], c.budget_seconds) if c.sem is None else \
                (_sem_budget(r), cell_budget_seconds(c))
            m.cells[c.key] = at_budget(float(r["wall_seconds"]), *budgets)
            m.sources[c.key] = "record" if r["key"] == c.key else "scaled"
        else:
            b = cell_budget_seconds(c)
            m.cells[c.key] = float(b or 0.0)
            m.sources[c.key] = "none" if b is None else "budget"
        sets = float(r["n_parent_sets"]) if r is not None else 0.0
        m.memory[c.key] = BYTES_PER_VALUE * float((n or 0) * (n_rows or 0)) \
            + BYTES_PER_PARENT_SET * sets
        job = c.cache_job
        if not builds_cache(c) or job.key in m.caches:
            continue
        if r is not None and float(r.get("cache_seconds") or 0.0) > 0:
            spec = json.loads(r.get("spec") or "{}").get("cache", {})
            budget = spec.get("seconds_per_variable")
            times = cache_times.get(str(r["cache_key"]), {}).get("variable_seconds")
            if not times:
                nv = int(r["n_vars"]) or 1
                times = [float(r["cache_seconds"]) / nv] * nv
            m.caches[job.key] = tuple(at_budget(float(x), budget,
                                                job.cache.seconds_per_variable)
                                      for x in times)
            m.sources[job.key] = "record" if budget == job.cache.seconds_per_variable \
                else "scaled"
        else:
            work = cache_work(job)
            m.caches[job.key] = () if work is None or not n else (work / n,) * n
            m.sources[job.key] = "none" if work is None else "estimate"
    return m


def _sem_budget(row: Mapping[str, Any]) -> float | None:
    """The recorded SEM cell's :func:`cell_budget_seconds`, from its stored spec."""
    spec = row.get("spec")
    if not spec:
        return None
    return cell_budget_seconds(Cell.model_validate(json.loads(spec)))


# ---------------------------------------------------------------------------- the tasks
@dataclass
class Task:
    """One task ``grid run`` submits: its key, grid seconds, Dask priority (higher runs
    first) and the keys of the tasks it waits for."""

    key: str
    seconds: float
    priority: float
    deps: tuple[str, ...] = ()


def grid_tasks(cells: Sequence[Cell], model: ReplayModel, workers: int, *,
               fan_out_seconds: float = FAN_OUT_SECONDS,
               built: Collection[str] = ()) -> list[Task]:
    """The tasks :func:`bnsl_dist.orchestrate.cells.run_cells` submits for ``cells`` on
    ``workers`` (``built``: the keys of caches already stored), in submission order:
    caches (``cache-part-<cache>-<i>`` batches, then ``cache-<cache>``), then cells
    (``cell-<key>``), each in decreasing priority
    (:func:`~bnsl_dist.pipeline.cost.priorities`)."""
    sizes, first = cache_sizes(cells, lambda c: "" if builds_cache(c) else None)
    sizes = {ck: s for ck, s in sizes.items() if ck not in built}
    prio = priorities(cells, sizes, workers)
    tasks: list[Task] = []
    for ck in sorted(sizes, key=prio.caches.__getitem__, reverse=True):
        job = first[ck].cache_job
        work, n = cache_work(job), shape_hint(job.data)[0] if job.data is not None else None
        n = n or len(model.caches.get(ck, ()))
        p = prio.caches[ck]
        if workers >= 2 and work is not None and n and work >= fan_out_seconds:
            batches = guided_batches(range(n), workers)
            parts = [Task(f"cache-part-{ck}-{i}", model.batch(ck, b),
                          p + (len(batches) - i) / (len(batches) + 1))
                     for i, b in enumerate(batches)]
            tasks += [*parts, Task(f"cache-{ck}", 0.0, prio.store, tuple(t.key for t in parts))]
        else:
            tasks.append(Task(f"cache-{ck}", model.batch(ck, range(n)), p))
    for c in sorted(cells, key=lambda c: prio.cells[c.key], reverse=True):
        dep = f"cache-{c.cache_job.key}"
        tasks.append(Task(f"cell-{c.key}", model.cells.get(c.key, 0.0), prio.cells[c.key],
                          (dep,) if c.cache_job.key in sizes else ()))
    return tasks


@dataclass(frozen=True)
class Schedule:
    """Where and when each task ran: key -> (worker, start, end), grid seconds."""

    workers: int
    runs: dict[str, tuple[int, float, float]]

    @property
    def makespan(self) -> float:
        return max((e for _, _, e in self.runs.values()), default=0.0)

    @property
    def busy(self) -> float:
        return sum(e - s for _, s, e in self.runs.values())


def list_schedule(tasks: Sequence[Task], workers: int) -> Schedule:
    """Run ``tasks`` on ``workers`` as Dask hands them out: whenever a worker is free it
    takes the ready task of highest priority (ties: the first submitted; free workers:
    the lowest number first); a task is ready when every task it waits for has ended.

    >>> s = list_schedule([Task("a", 3, 2), Task("b", 2, 1), Task("c", 2, 0)], 2)
    >>> s.runs["c"], s.makespan
    ((1, 2.0, 4.0), 4.0)
    """
    index = {t.key: i for i, t in enumerate(tasks)}
    waiting = [sum(d in index for d in t.deps) for t in tasks]
    children: list[list[int]] = [[] for _ in tasks]
    for i, t in enumerate(tasks):
        for d in t.deps:
            if d in index:
                children[index[d]].append(i)
    ready = [(-t.priority, i) for i, t in enumerate(tasks) if waiting[i] == 0]
    heapq.heapify(ready)
    free = list(range(max(1, workers)))
    running: list[tuple[float, int, int]] = []  # (end, worker, task)
    runs: dict[str, tuple[int, float, float]] = {}
    now = 0.0
    while ready or running:
        while ready and free:
            _, i = heapq.heappop(ready)
            w = heapq.heappop(free)
            runs[tasks[i].key] = (w, now, now + tasks[i].seconds)
            heapq.heappush(running, (now + tasks[i].seconds, w, i))
        if not running:
            break
        now = running[0][0]
        while running and running[0][0] == now:
            _, w, i = heapq.heappop(running)
            heapq.heappush(free, w)
            for j in children[i]:
                waiting[j] -= 1
                if waiting[j] == 0:
                    heapq.heappush(ready, (-tasks[j].priority, j))
    return Schedule(max(1, workers), runs)


# ---------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class GridPlanEstimate:
    """``bnsl-dist grid plan``: the grid's cells on ``workers`` as the replay model
    schedules them."""

    grid: str
    workers: int
    cells: int
    tasks: int
    makespan_s: float
    cpu_hours: float
    lower_bound_s: float
    peak_memory_bytes: float
    sources: dict[str, int]

    @property
    def efficiency(self) -> float:
        return self.lower_bound_s / self.makespan_s if self.makespan_s > 0 else 1.0

    @property
    def utilisation(self) -> float | None:
        return utilisation(self.cpu_hours * 3600.0, self.workers, self.makespan_s)

    def to_dict(self) -> dict[str, Any]:
        return {"grid": self.grid, "workers": self.workers, "cells": self.cells,
                "tasks": self.tasks, "makespan_s": round(self.makespan_s, 1),
                "cpu_hours": round(self.cpu_hours, 2),
                "lower_bound_s": round(self.lower_bound_s, 1),
                "efficiency": round(self.efficiency, 4),
                "peak_memory_per_worker_bytes": int(self.peak_memory_bytes),
                "sources": self.sources}


def plan(cells: Sequence[Cell], workers: int, records: Any = None, *, grid: str = "",
         fan_out_seconds: float = FAN_OUT_SECONDS) -> GridPlanEstimate:
    """The expected makespan of ``cells`` on ``workers`` (:func:`list_schedule` of
    :func:`grid_tasks` under :func:`replay_model` of ``records``), its CPU-hours, the
    largest memory one cell needs in a worker, and the bound the makespan is held to."""
    model = replay_model(cells, records)
    tasks = grid_tasks(cells, model, workers, fan_out_seconds=fan_out_seconds)
    sched = list_schedule(tasks, workers)
    return GridPlanEstimate(
        grid=grid, workers=workers, cells=len(cells), tasks=len(tasks),
        makespan_s=sched.makespan, cpu_hours=sched.busy / 3600.0,
        lower_bound_s=lower_bound({t.key: t.seconds for t in tasks},
                                  {t.key: t.deps for t in tasks}, workers),
        peak_memory_bytes=max(model.memory.values(), default=0.0),
        sources=model.counts())


def format_plan_estimate(p: GridPlanEstimate) -> str:
    """What ``grid plan`` prints."""
    from bnsl_dist.pipeline.forecast import format_duration

    src = ", ".join(f"{n} {s}" for s, n in sorted(p.sources.items()))
    return (f"grid {p.grid}: {p.cells} cells, {p.tasks} tasks on {p.workers} workers\n"
            f"  expected makespan: {format_duration(p.makespan_s)} "
            f"(lower bound {format_duration(p.lower_bound_s)}, efficiency "
            f"{p.efficiency:.3f})\n"
            f"  CPU-hours: {p.cpu_hours:,.1f}\n"
            f"  peak memory per worker: {_fmt_bytes(p.peak_memory_bytes)} (the largest "
            f"cell's data and recorded cache; a cache of a larger budget holds more)\n"
            f"  durations from: {src}")


def _fmt_bytes(b: float) -> str:
    if b <= 0:
        return "unknown"
    e = min(4, int(math.log(b, 1024)))
    return f"{b / 1024 ** e:.1f} {['B', 'KiB', 'MiB', 'GiB', 'TiB'][e]}"
