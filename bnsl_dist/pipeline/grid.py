"""A grid YAML as cells: data sets × splits × algorithms × treewidths × the axes of the
grid's kind × seeds. The kind's task module (``pipeline/tasks/<kind>.py``) makes the
tasks of each algorithm entry and treewidth (``grid_tasks``: SEM missing rates × budget
scales; inference: the study's settings, the reference learner's cells marked) and names
its axes (:class:`~bnsl_dist.pipeline.tasks.GridTask`); nothing here names a kind's
axis."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.specs import DataRef, SearchSpec
from bnsl_dist.pipeline.tasks import GridTask, grid_kind, task_axes, task_models
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["expand_grid", "grid_cells", "grid_status", "count_by", "cell_field",
           "check_status_fields", "complete_pieces", "status_fields", "grid_axes",
           "BASE_STATUS_FIELDS"]

#: The tasks of a grid's cells of one algorithm entry (label) and treewidth (search),
#: with the held-out split of a screening grid: a kind's ``grid_tasks``.
GridTasks = Callable[[GridConfig, str, SearchSpec, DataRef | None], list[dict[str, Any]]]


def _grid_tasks(kind: str) -> GridTasks:
    """The ``grid_tasks`` of the task module named after the grid kind ``kind``."""
    fn: GridTasks = grid_kind(kind, "grid_tasks")
    return fn


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
    tasks_of = _grid_tasks(grid.kind)
    screens = any(a.screening is not None for a in grid.algorithms)
    cells: list[Cell] = []
    for ds in grid.datasets:
        test = next((r for r in ds.refs() if r.split == "test"), None)
        for ref in ds.refs():
            holdout = test if screens and ref.split != "test" else None
            for alg in grid.algorithms:
                for search in alg.search_specs(grid):
                    for task in tasks_of(grid, alg.display, search, holdout):
                        for seed in grid.seeds:
                            cells.append(Cell.model_validate(dict(
                                grid=grid.name, label=alg.display, data=ref,
                                cache=grid.cache, screening=alg.screening, task=task,
                                seed=int(seed), grid_seed=grid.seed)))
    return cells


def grid_cells(grid: GridConfig, datasets: Collection[str] | None = None,
               labels: Collection[str] | None = None) -> list[Cell]:
    """The cells of ``grid``; with ``datasets`` (``labels``), only those of the data sets
    (algorithm labels) so named (a piece of the grid: cell keys do not depend on the
    selection)."""
    return [c for c in expand_grid(grid) if (datasets is None or c.dataset in datasets)
            and (labels is None or c.label in labels)]


def grid_status(grid: GridConfig, results_dir: str | os.PathLike[str],
                cells: Sequence[Cell] | None = None) -> StoreStatus:
    """Done / failed / pending cells of ``grid`` in ``results_dir`` (``cells``: the grid's
    :func:`expand_grid`, if already expanded)."""
    cells = expand_grid(grid) if cells is None else cells
    return ResultStore(results_dir).status(c.key for c in cells)


#: What `grid status --by` counts every grid's cells by (and the axes of the kinds).
BASE_STATUS_FIELDS = ("dataset", "split", "label", "algorithm", "k", "seed")


def grid_axes() -> tuple[str, ...]:
    """The axes of every grid kind's task (``AXES`` of the registered task models), in
    the registry's order."""
    names = (n for t in task_models().values() if issubclass(t, GridTask) for n in t.AXES)
    return tuple(dict.fromkeys(names))


def status_fields() -> tuple[str, ...]:
    """What `grid status --by` counts a grid's cells by: :data:`BASE_STATUS_FIELDS`, the
    search settings a grid varies (:attr:`SearchSpec.AXES`) and :func:`grid_axes`."""
    return (*BASE_STATUS_FIELDS, *SearchSpec.AXES, *grid_axes())


def check_status_fields(fields: Sequence[str]) -> None:
    """An error naming the first of ``fields`` not in :func:`status_fields`."""
    known = status_fields()
    for name in fields:
        if name not in known:
            raise InvalidConfigError(f"unknown field {name!r} (one of {', '.join(known)})")


def cell_field(cell: Cell, name: str) -> Any:
    """The value of one of :func:`status_fields` for ``cell`` (None where it has none:
    a SEM axis of a search cell, a search setting of a cell without a search)."""
    if name in BASE_STATUS_FIELDS:
        return getattr(cell, name)
    if name in SearchSpec.AXES:
        return getattr(getattr(cell.task, "search", None), name, None)
    return task_axes(cell.task).get(name)


def count_by(cells: Sequence[Cell], status: StoreStatus, fields: Sequence[str],
             left: Mapping[str, float | None] | None = None) -> list[dict[str, Any]]:
    """Done, failed and pending cells per value of ``fields``, one row per group in the
    order the grid first reaches it. With ``left``
    (:func:`~bnsl_dist.pipeline.forecast.estimate_left`), each group
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
        A field is not one of :func:`status_fields`, or no field is given.
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
