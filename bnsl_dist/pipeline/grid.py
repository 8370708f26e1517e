"""A grid YAML as cells: data sets × splits × algorithms × treewidths × seeds (× SEM
missing rates × budget scales; inference grids: the study's settings on every cell, the reference
learner's cells marked)."""

from __future__ import annotations

from bnsl_dist.config import GridConfig
from bnsl_dist.pipeline.cell import Cell, InferenceSpec, SemSpec
from bnsl_dist.pipeline.specs import SearchSpec

__all__ = ["expand_grid"]


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
