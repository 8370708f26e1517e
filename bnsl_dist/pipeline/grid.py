"""A grid YAML as cells: data sets × splits × algorithms × treewidths × seeds (× SEM
missing rates × budget scales; inference grids: the study's settings on every cell, the reference
learner's cells marked)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from bnsl_dist.config import GridConfig
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.cell import Cell, InferenceSpec, SemSpec
from bnsl_dist.pipeline.specs import SearchSpec
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["expand_grid", "grid_status", "count_by", "cell_field", "check_status_fields",
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


def count_by(cells: Sequence[Cell], status: StoreStatus,
             fields: Sequence[str]) -> list[dict[str, Any]]:
    """Done, failed and pending cells per value of ``fields``, one row per group in the
    order the grid first reaches it."""
    check_status_fields(fields)
    state = {**{k: "pending" for k in status.pending}, **{k: "failed" for k in status.failed},
             **{k: "done" for k in status.done}}
    groups: dict[tuple[Any, ...], dict[str, int]] = {}
    for c in cells:
        g = groups.setdefault(tuple(cell_field(c, f) for f in fields),
                              {"done": 0, "failed": 0, "pending": 0})
        g[state[c.key]] += 1
    return [{**dict(zip(fields, vals, strict=True)), **g, "total": sum(g.values())}
            for vals, g in groups.items()]
