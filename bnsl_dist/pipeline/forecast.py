"""What a run of a grid would do, and how long what is left of it would take (no Dask):
the dry-run plan of ``grid run --dry-run`` (:func:`plan_grid`, :func:`format_plan`), the
expected wall seconds of each cell still to run from the stored cells' wall times
(:func:`estimate_left`, measured by ``python -m workflows.benchmarks.estimate_left``),
and how many of them a ``--stop-at`` lets start (:func:`started_by`, :func:`stop_note`).

The cost model these read (time budgets, cache work, the order work is handed out in)
is :mod:`bnsl_dist.pipeline.cost`; the replay model and its schedule on W workers
(``grid plan``) is :mod:`bnsl_dist.pipeline.plan`.
"""

from __future__ import annotations

import heapq
import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.cost import builds_cache, cache_work, cell_budget_seconds, cell_cost
from bnsl_dist.pipeline.grid import grid_cells
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["GridPlan", "RunWalls", "estimate_from_store", "estimate_left",
           "format_duration", "format_plan", "likeness", "plan_grid", "started_by",
           "stop_note", "stored_walls", "sum_known"]


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
        if builds_cache(c) and not store.cache_path(job.key).is_file():
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
    (``--stop-at``) on ``n_workers``, handed out longest first as
    :func:`bnsl_dist.orchestrate.cells.run_cells` does,
    at their expected wall seconds ``left`` (:func:`~bnsl_dist.pipeline.grid.started_by`)."""
    order = sorted(pending, key=cell_cost, reverse=True)
    est = [left.get(c.key) for c in order]
    unknown = sum(e is None for e in est)
    n = started_by(est, n_workers, stop_in)
    return (f"--stop-at in {format_duration(max(0.0, stop_in))}: about {n} of {len(order)} "
            f"cells would run on {n_workers} workers"
            + (f" ({unknown} with nothing to go by counted as taking no time)"
               if unknown else ""))



def estimate_left(cells: Sequence[Cell], status: StoreStatus,
                  walls: Mapping[str, float]) -> dict[str, float | None]:
    """The expected wall seconds of each cell still to run (pending or failed: a rerun
    retries failures), from the stored cells' ``walls`` (key -> wall seconds): the mean
    over the done cells of the same data set, split, algorithm label, treewidth, SEM
    budget scale and SEM missing rate; failing those, at any missing rate (more missing
    cells, longer E-steps and often more EM iterations: leaving each of the SEM grid's
    1,080 cells out in turn, the mean relative error is 0.153 with the rate, 0.192
    without, ``python -m workflows.benchmarks.estimate_left``); failing those, the same cells at any budget scale, each wall time scaled
    by the ratio of the budget scales (an M-step's budgets, and so nearly its time, are
    proportional to the scale); None when no stored cell is of the same data set,
    algorithm and treewidth.

    Examples
    --------
    >>> g = GridConfig.model_validate({
    ...     "name": "toy", "datasets": [{"name": "nltcs"}],
    ...     "cache": {"method": "sequential", "max_indegree": 2},
    ...     "algorithms": [{"name": "kg", "k": [2, 3]}], "seeds": [0, 1],
    ...     "budget": {"iterations": 10}})
    >>> cells = grid_cells(g)                      # k=2 seeds 0, 1; k=3 seeds 0, 1
    >>> st = StoreStatus(done=(cells[0].key, cells[1].key), failed=(),
    ...                  pending=(cells[2].key, cells[3].key))
    >>> estimate_left(cells, st, {cells[0].key: 3.0, cells[1].key: 5.0})[cells[2].key] is None
    True
    >>> st = StoreStatus(done=(cells[0].key,), failed=(), pending=tuple(c.key for c in cells[1:]))
    >>> estimate_left(cells, st, {cells[0].key: 3.0})[cells[1].key]
    3.0
    """
    # the tiers, most alike first: (key, whether walls are pooled per unit of scale)
    tiers: tuple[tuple[Callable[[Cell], tuple[Any, ...]], bool], ...] = (
        (likeness, False),
        (lambda c: (*_peers(c), _scale(c)), False),
        (_peers, True))
    done = set(status.done)
    pooled: list[dict[tuple[Any, ...], list[float]]] = [{} for _ in tiers]
    for c in cells:
        if c.key in done and c.key in walls:
            for (key, per_scale), by_key in zip(tiers, pooled, strict=True):
                by_key.setdefault(key(c), []).append(
                    walls[c.key] / _scale(c) if per_scale else walls[c.key])
    out: dict[str, float | None] = {}
    for c in cells:
        if c.key not in done:
            out[c.key] = next((sum(w) / len(w) * (_scale(c) if per_scale else 1.0)
                               for (key, per_scale), by_key in zip(tiers, pooled, strict=True)
                               if (w := by_key.get(key(c))) is not None), None)
    return out


def _scale(c: Cell) -> float:
    return 1.0 if c.sem is None else float(c.sem.budget_scale)


def _peers(c: Cell) -> tuple[Any, ...]:
    return (c.dataset, c.split, c.label, c.search.k)


def likeness(cell: Cell) -> tuple[Any, ...]:
    """What makes cells alike enough to expect one's wall time from the others' mean
    (:func:`estimate_left`'s first tier): the data set, split, algorithm label,
    treewidth, and a SEM cell's budget scale and missing rate."""
    return (*_peers(cell), _scale(cell),
            None if cell.sem is None else float(cell.sem.missing_rate))


class RunWalls:
    """The wall seconds of the cells one process has run during one run, by
    :func:`likeness`: ``--stop-at`` expects of the next like cell the larger of their
    mean and the estimate from the cells stored before the run (so a run never expects
    less than the stored cells showed, and expects more when its own cells take longer:
    a loaded or slower machine, or cells with nothing stored to go by). Without it, a
    run of cells with no stored twin expected 0 s of each to the end, and each worker
    started one more cell when the stop time was out of reach (after cells of 10 to 14
    minutes, one 3 and one 6 minutes before the stop). Safe for the threads of one
    process.

    Examples
    --------
    >>> w = RunWalls()
    >>> w.expected(("nltcs", "test", "kg", 2, 1.0, None), 5.0)   # none run: the estimate
    5.0
    >>> w.add(("nltcs", "test", "kg", 2, 1.0, None), 700.0)
    >>> w.add(("nltcs", "test", "kg", 2, 1.0, None), 740.0)
    >>> w.expected(("nltcs", "test", "kg", 2, 1.0, None), None)
    720.0
    >>> w.expected(("nltcs", "test", "kg", 2, 1.0, None), 900.0)  # the larger
    900.0
    >>> w.expected(("nltcs", "test", "kg", 3, 1.0, None), None)  # not alike: unknown
    0.0
    """

    def __init__(self) -> None:
        self._walls: dict[tuple[Any, ...], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def add(self, like: tuple[Any, ...], seconds: float) -> None:
        """One more cell of ``like`` run here, in ``seconds``."""
        with self._lock:
            total, n = self._walls.get(like, (0.0, 0))
            self._walls[like] = (total + seconds, n + 1)

    def expected(self, like: tuple[Any, ...], estimate: float | None) -> float:
        """The seconds to expect of the next cell of ``like``: the larger of the mean of
        those run here (none: 0) and ``estimate`` (None, unknown: 0)."""
        with self._lock:
            total, n = self._walls.get(like, (0.0, 0))
        return max(total / n if n else 0.0, estimate or 0.0)


def stored_walls(results_dir: str | os.PathLike[str], keys: Iterable[str]
                 ) -> dict[str, float]:
    """Key -> wall seconds of the stored results of ``keys`` (the rest of each record
    left on disk)."""
    t = ResultStore(results_dir).read_table(keys, columns=["key", "wall_seconds"])
    return dict(zip(t.column("key").to_pylist(), t.column("wall_seconds").to_pylist(),
                    strict=True))


def estimate_from_store(results_dir: str | os.PathLike[str], cells: Sequence[Cell],
                        status: StoreStatus) -> dict[str, float | None]:
    """:func:`estimate_left` from the wall times stored in ``results_dir``."""
    return estimate_left(cells, status, stored_walls(results_dir, status.done))


def sum_known(left: Mapping[str, float | None]) -> tuple[float, int, int]:
    """Seconds of the estimated cells of ``left``, their count and that of the others."""
    known = [s for s in left.values() if s is not None]
    return sum(known), len(known), len(left) - len(known)


def started_by(expected: Sequence[float | None], workers: int, seconds: float) -> int:
    """How many of the cells of ``expected`` (their wall seconds, in the order they are
    handed out; None: unknown, counted as no time) ``workers`` run when none may start
    unless it ends within ``seconds`` (``grid run --stop-at``): each free worker takes
    the next cell and skips it at once if it would not end in time.

    Examples
    --------
    >>> started_by([50, 40, 30, 20], workers=2, seconds=60)   # 50 | 40, then 20 on it
    3
    >>> started_by([70, 10, None], workers=1, seconds=60)
    2
    """
    free = [0.0] * max(1, workers)  # the times the workers become free
    started = 0
    for e in expected:
        t = heapq.heappop(free)
        if t + (e or 0.0) <= seconds and t < seconds:
            started += 1
            t += e or 0.0
        heapq.heappush(free, t)
    return started


def format_duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``7.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"

