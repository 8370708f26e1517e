"""A grid YAML as cells: data sets × splits × algorithms × treewidths × seeds (× SEM
missing rates × budget scales; inference grids: the study's settings on every cell, the reference
learner's cells marked)."""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.pipeline.cell import Cell, InferenceSpec, SemSpec
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.specs import SearchSpec
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["expand_grid", "grid_status", "count_by", "cell_field", "check_status_fields",
           "complete_pieces", "estimate_left", "estimate_from_store", "stored_walls",
           "sum_known", "format_duration", "started_by",
           "STATUS_FIELDS"]


def expand_grid(grid: GridConfig) -> list[Cell]:
    """Every cell of ``grid``, in the nesting order data sets, splits, algorithms,
    treewidths, missing rates, budget scales, seeds.

    In a grid with a screening stage (qds), the cells of a data set that lists a
    ``test`` split score their DAG on it (``holdout``: the held-out log-likelihood the
    screening table reports), the test split's own cells excepted.

    Examples
    --------
    >>> g = GridConfig.model_validate({
    ...     "name": "toy", "datasets": [{"name": "nltcs", "splits": ["train", "test"]}],
    ...     "cache": {"method": "sequential", "max_indegree": 2},
    ...     "algorithms": [{"name": "kg", "k": [2, 3]}], "seeds": [0, 1],
    ...     "budget": {"iterations": 10}})
    >>> len(expand_grid(g))
    8
    """
    sems: tuple[SemSpec | None, ...] = (None,)
    if grid.kind == "sem" and grid.sem is not None:
        common = grid.sem.model_dump(exclude={"missing_rates", "budget_scales"})
        sems = tuple(SemSpec(missing_rate=r, budget_scale=b, **common)
                     for r in grid.sem.missing_rates for b in grid.sem.budget_scales)
    inf = grid.inference if grid.kind == "inference" else None
    screens = any(a.screening is not None for a in grid.algorithms)
    cells: list[Cell] = []
    for ds in grid.datasets:
        test = next((r for r in ds.refs() if r.split == "test"), None)
        for ref in ds.refs():
            holdout = test if screens and ref.split != "test" else None
            for alg in grid.algorithms:
                study = None if inf is None else InferenceSpec(
                    reference=alg.display == inf.reference,
                    **inf.model_dump(exclude={"reference"}))
                for k in alg.treewidths(grid):
                    search = SearchSpec(algorithm=alg.name, params=alg.params, k=k,
                                        budget=alg.budget or grid.budget)
                    for sem in sems:
                        for seed in grid.seeds:
                            cells.append(Cell(grid=grid.name, kind=grid.kind,
                                              label=alg.display, data=ref, cache=grid.cache,
                                              screening=alg.screening, search=search,
                                              seed=int(seed), grid_seed=grid.seed, sem=sem,
                                              inference=study, holdout=holdout))
    return cells


def grid_status(grid: GridConfig, results_dir: str | os.PathLike[str],
                cells: Sequence[Cell] | None = None) -> StoreStatus:
    """Done / failed / pending cells of ``grid`` in ``results_dir`` (``cells``: the grid's
    :func:`expand_grid`, if already expanded)."""
    cells = expand_grid(grid) if cells is None else cells
    return ResultStore(results_dir).status(c.key for c in cells)


#: What `grid status --by` counts a grid's cells by.
STATUS_FIELDS = ("dataset", "split", "label", "algorithm", "k", "seed", "missing_rate",
                 "budget_scale")


def check_status_fields(fields: Sequence[str]) -> None:
    """An error naming the first of ``fields`` not in :data:`STATUS_FIELDS`."""
    for name in fields:
        if name not in STATUS_FIELDS:
            raise InvalidConfigError(f"unknown field {name!r} (one of "
                                     f"{', '.join(STATUS_FIELDS)})")


def cell_field(cell: Cell, name: str) -> Any:
    """The value of one of :data:`STATUS_FIELDS` for ``cell`` (None where it has none:
    the SEM settings of a search cell)."""
    if name in ("missing_rate", "budget_scale"):
        return None if cell.sem is None else getattr(cell.sem, name)
    return getattr(cell, name)


def count_by(cells: Sequence[Cell], status: StoreStatus, fields: Sequence[str],
             left: Mapping[str, float | None] | None = None) -> list[dict[str, Any]]:
    """Done, failed and pending cells per value of ``fields``, one row per group in the
    order the grid first reaches it. With ``left`` (:func:`estimate_left`), each group
    also has ``seconds_left``, the sum of its cells' estimates (None where a cell to run
    has none)."""
    check_status_fields(fields)
    state = {**{k: "pending" for k in status.pending}, **{k: "failed" for k in status.failed},
             **{k: "done" for k in status.done}}
    groups: dict[tuple[Any, ...], dict[str, int]] = {}
    seconds: dict[tuple[Any, ...], float | None] = {}
    for c in cells:
        vals = tuple(cell_field(c, f) for f in fields)
        g = groups.setdefault(vals, {"done": 0, "failed": 0, "pending": 0})
        g[state[c.key]] += 1
        if left is not None and state[c.key] != "done":
            est, had = left.get(c.key), seconds.get(vals, 0.0)
            seconds[vals] = None if est is None or had is None else had + est
    return [{**dict(zip(fields, vals, strict=True)), **g, "total": sum(g.values()),
             **({} if left is None else {"seconds_left": seconds.get(vals, 0.0)})}
            for vals, g in groups.items()]


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
    >>> cells = expand_grid(g)                     # k=2 seeds 0, 1; k=3 seeds 0, 1
    >>> st = StoreStatus(done=(cells[0].key, cells[1].key), failed=(),
    ...                  pending=(cells[2].key, cells[3].key))
    >>> estimate_left(cells, st, {cells[0].key: 3.0, cells[1].key: 5.0})[cells[2].key] is None
    True
    >>> st = StoreStatus(done=(cells[0].key,), failed=(), pending=tuple(c.key for c in cells[1:]))
    >>> estimate_left(cells, st, {cells[0].key: 3.0})[cells[1].key]
    3.0
    """
    def scale(c: Cell) -> float:
        return 1.0 if c.sem is None else float(c.sem.budget_scale)

    def rate(c: Cell) -> float | None:
        return None if c.sem is None else float(c.sem.missing_rate)

    def peers(c: Cell) -> tuple[Any, ...]:
        return (c.dataset, c.split, c.label, c.search.k)

    # the tiers, most alike first: (key, whether walls are pooled per unit of scale)
    tiers: tuple[tuple[Callable[[Cell], tuple[Any, ...]], bool], ...] = (
        (lambda c: (*peers(c), scale(c), rate(c)), False),
        (lambda c: (*peers(c), scale(c)), False),
        (peers, True))
    done = set(status.done)
    pooled: list[dict[tuple[Any, ...], list[float]]] = [{} for _ in tiers]
    for c in cells:
        if c.key in done and c.key in walls:
            for (key, per_scale), by_key in zip(tiers, pooled, strict=True):
                by_key.setdefault(key(c), []).append(
                    walls[c.key] / scale(c) if per_scale else walls[c.key])
    out: dict[str, float | None] = {}
    for c in cells:
        if c.key not in done:
            out[c.key] = next((sum(w) / len(w) * (scale(c) if per_scale else 1.0)
                               for (key, per_scale), by_key in zip(tiers, pooled, strict=True)
                               if (w := by_key.get(key(c))) is not None), None)
    return out


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


def complete_pieces(results_dir: str | os.PathLike[str], fields: Sequence[str]
                    ) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """The pieces of the grids stored in ``results_dir`` that are complete: group the
    cells of each stored grid by ``fields`` (grid name first); a group is complete when
    none of its cells is pending (a failure is stored too). Returns the keys of the
    complete groups' cells, those of the other groups' cells, and every group's counts
    with ``grid`` and ``complete``.

    This is what a results folder that fills for days exports from: the data sets (or
    data sets × budget scales, ...) whose cells have all run, so that a table never
    reads half a comparison.

    Raises
    ------
    InvalidConfigError
        A field is not one of :data:`STATUS_FIELDS`, or no field is given.
    DataError
        The folder stores no grid, or an unreadable one.
    """
    check_status_fields(fields)
    if not fields:
        raise InvalidConfigError("complete pieces need at least one field to group by")
    store = ResultStore(results_dir)
    grids = store.read_grids()
    if not grids:
        raise DataError("no stored grid (grids/<name>.json): nothing says which cells "
                        "make a piece", path=str(store.root))
    keys: list[str] = []
    others: list[str] = []
    groups: list[dict[str, Any]] = []
    for name, obj in grids.items():
        try:
            grid = GridConfig.model_validate(obj)
        except ValueError as exc:
            raise DataError(f"stored grid {name!r} is not a valid grid: {exc}",
                            path=str(store.root / "grids" / f"{name}.json")) from None
        cells = expand_grid(grid)
        st = store.status(c.key for c in cells)
        rows = count_by(cells, st, fields)
        done = {tuple(r[f] for f in fields) for r in rows if r["pending"] == 0}
        for c in cells:
            (keys if tuple(cell_field(c, f) for f in fields) in done else others).append(c.key)
        groups += [{"grid": name, **r, "complete": r["pending"] == 0} for r in rows]
    return keys, others, groups
