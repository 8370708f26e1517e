"""The SEM tasks (docs/ALGORITHMS.md §9): structural EM with k-MAX on incomplete data.

Two kinds share :func:`run` (one call of :func:`bnsl_dist.sem.structural_em`):

- ``impute`` (:class:`ImputeTask`, ``bnsl-dist impute``): the cell's data have missing
  values; the result is the completed data and the network;
- ``sem`` (:class:`SemTask`, the SEM grid cells): the cell's complete data are masked
  MCAR (:func:`sem_cell_inputs`), completed, and the record gives the imputation
  accuracy (:func:`run_cell`).

The M-step builds its caches through :func:`bnsl_dist.cache.build.build_cache`, or
on Dask the route of every cache there (the executor's ``cache_builder``:
``orchestrate.explore.cache_of_held``, the completed data scattered once; with the
E-step's record batches fanned out too).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal

import numpy as np
from pydantic import PositiveFloat, PositiveInt, field_validator

from bnsl_dist._json import canonical_json
from bnsl_dist._spec import ConfigModel, Spec, distinct
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.pipeline.tasks import GridTask, register_task
from bnsl_dist.search.base import Budget
from bnsl_dist.search.spec import SearchSpec
from bnsl_dist.sem.spec import ImputeTask

if TYPE_CHECKING:
    from bnsl_dist.pipeline.cell import Cell
    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.results.records import CellResult
    from bnsl_dist.sem.structural_em import SEMIteration, SEMResult

__all__ = ["SemConfig", "SemSpec", "SemTask", "ImputeTask", "run", "run_cell",
           "sem_cell_inputs", "grid_tasks", "grid_input", "sem_chain", "GRID_SECTION"]


class SemConfig(ConfigModel):
    """The ``sem`` section of a SEM grid: the structural EM imputation study (docs/ALGORITHMS.md §9): MCAR missing rates. Each rate
    × seed is one repetition; the grid's ``cache`` rebuilds the cache at every M-step.

    The M-step budgets are those of ``bnsl-dist impute``
    (:func:`bnsl_dist.sem.budgets.sem_budgets`: work counts scaled to the data, so
    a cell reproduces on any machine) unless given in seconds, the paper's protocol:
    ``search_seconds_per_variable`` gives k-MAX that many seconds × n per M-step (the
    paper: 1), and ``cache_budget: grid`` builds the cache with the grid's ``cache``
    budget (``seconds_per_variable``; the paper: 1) instead of the data-scaled exact
    scores (``data``). In YAML, ``cache_budget`` defaults to ``grid`` when the ``cache``
    section gives a budget, else ``data``. The grid's ``budget`` caps k-MAX either way.

    ``budget_scales`` runs every repetition at each of these multiples of both M-step
    budgets (the paper's tuning study, §7.4, Figures 9-10; default: 1 only). The cells of
    one repetition mask the same cells at every scale."""

    missing_rates: tuple[float, ...]
    max_em_iterations: PositiveInt = 10
    search_seconds_per_variable: PositiveFloat | None = None
    cache_budget: Literal["data", "grid"] = "data"
    budget_scales: tuple[PositiveFloat, ...] = (1.0,)

    @field_validator("budget_scales")
    @classmethod
    def _scales(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        return distinct(v, "budget scales")

    @field_validator("missing_rates")
    @classmethod
    def _rates(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for r in v:
            if not 0.0 < r < 1.0:
                raise ValueError(f"missing rates must lie in (0, 1), got {r}")
        return distinct(v, "missing rates")


#: The grid's section of this kind (``sem:``); a SEM grid scales its own budgets, so the
#: iteration-budget cache rule of other grids is not applied to it.
GRID_SECTION = SemConfig
SCALES_OWN_BUDGETS = True


def grid_input(data: dict[str, Any]) -> dict[str, Any]:
    """A SEM grid whose ``cache`` section gives a budget builds its M-step caches with
    it unless ``sem.cache_budget`` says otherwise (:class:`SemConfig`): ``data`` (a
    grid's input, its ``sem`` section a mapping) with ``cache_budget`` filled in."""
    if "cache_budget" in data["sem"]:
        return data
    cache = data.get("cache")
    given = not isinstance(cache, dict) or any(
        cache.get(f) is not None for f in ("seconds_per_variable", "scores_per_variable",
                                           "path"))
    return {**data, "sem": {**data["sem"], "cache_budget": "grid" if given else "data"}}


class SemSpec(Spec):
    """SEM-kMAX imputation of one cell (docs/ALGORITHMS.md §9): the MCAR missing rate, the
    EM iteration cap and the M-step budgets (:class:`SemConfig`):
    k-MAX's seconds per variable per M-step (None: the data-scaled iterations), whether the
    cache's budget is the data-scaled one or the cell's ``cache`` budget, and a factor on
    both (``budget_scale``: the paper's tuning study, §7.4)."""

    missing_rate: float
    max_em_iterations: PositiveInt = 10
    search_seconds_per_variable: PositiveFloat | None = None
    cache_budget: Literal["data", "grid"] = "data"
    budget_scale: PositiveFloat = 1.0

    #: Settings that are budgets, not part of what a cell is: left out of the cell's
    #: identity, so the cells of one repetition at several budgets mask the same cells
    #: and start EM from the same chain (:meth:`~bnsl_dist.pipeline.cell.Cell.identity`).
    SEED_FREE: ClassVar[tuple[str, ...]] = ("budget_scale",)

    def json_dict(self) -> dict[str, Any]:
        """The canonical JSON data; a ``budget_scale`` of 1 is left out, so cells (and
        their keys) of earlier versions stay valid."""
        out = super().json_dict()
        if out.get("budget_scale") == 1.0:
            out.pop("budget_scale")
        return out


@register_task
class SemTask(GridTask):
    """SEM-kMAX imputation of the cell's data, MCAR-masked (docs/ALGORITHMS.md §9); the
    search spec is k-MAX's (its budget caps each M-step's search). Its grid axes: the
    missing rate and the budget scale."""

    kind: Literal["sem"] = "sem"
    search: SearchSpec
    sem: SemSpec

    AXES: ClassVar[tuple[str, ...]] = ("missing_rate", "budget_scale")

    def axes(self) -> dict[str, Any]:
        return {name: getattr(self.sem, name) for name in self.AXES}


def grid_tasks(grid: GridConfig, label: str, search: SearchSpec,
               holdout: DataRef | None) -> list[dict[str, Any]]:
    """The tasks of a SEM grid's cells of one algorithm entry and treewidth: one per
    missing rate × budget scale, in that order."""
    sem = grid.section("sem")
    if not isinstance(sem, SemConfig):  # pragma: no cover - GridConfig's validator
        raise DataError("a sem grid needs its sem section")
    if holdout is not None:
        raise InvalidConfigError("held-out scoring (a screening grid with a test split) "
                                 "is for search grids, not kind: sem")
    common = sem.model_dump(exclude={"missing_rates", "budget_scales"})
    return [{"kind": "sem", "search": search,
             "sem": SemSpec(missing_rate=r, budget_scale=b, **common)}
            for r in sem.missing_rates for b in sem.budget_scales]


register_task(ImputeTask)


def run(task: ImputeTask, data: CategoricalData, cache: CacheSpec,
        rng: np.random.Generator, *, started: float | None = None,
        on_iteration: Callable[[SEMIteration], None] | None = None,
        cache_builder: Any = None, e_step_runner: Any = None) -> SEMResult:
    """Structural EM of ``data`` (missing values masked) with the task's settings and
    ``cache`` as each M-step's cache build; ``started`` (a ``time.time()``): where the
    time limit counts from; ``cache_builder`` and ``e_step_runner``: the Dask ones
    (:mod:`bnsl_dist.orchestrate.sem`), default in this process."""
    import bnsl_dist.sem

    budget = None
    if task.search_seconds is not None or task.search_iterations is not None:
        budget = Budget(seconds=task.search_seconds, max_iterations=task.search_iterations)
    kw: dict[str, Any] = {}
    if cache_builder is not None:
        kw["cache_builder"] = cache_builder
    if e_step_runner is not None:
        kw["e_step_runner"] = e_step_runner
    return bnsl_dist.sem.structural_em(
        data, k=task.k, rng=rng, max_iterations=task.max_iterations, e_step=task.e_step,
        imputation=task.imputation, accumulate=task.accumulate, cache=cache,
        search_budget=budget, on_iteration=on_iteration, time_limit=task.time_limit,
        started=started, **kw)


#: The completion a SEM cell's ``imputation_accuracy`` measures (its record says which).
_SEM_IMPUTATION: Final = "marginal"


def sem_cell_inputs(cell: Cell, truth: CategoricalData | None = None
                    ) -> tuple[CategoricalData, CategoricalData]:
    """The complete data of a SEM cell and its MCAR-masked copy, exactly as the cell
    masks them (the first of the two seed sequences its seed spawns), so that another
    imputer can be run on the same hidden cells; ``truth``: the cell's complete data,
    when already loaded (not read again).

    Raises
    ------
    DataError
        Not a SEM cell (no data or no SEM settings), or its data cannot be loaded.
    """
    from bnsl_dist.data.masking import mask_mcar
    from bnsl_dist.pipeline.run import load_data

    if cell.sem is None or cell.data is None:
        raise DataError("a sem cell needs data and sem settings")
    if truth is None:
        truth = load_data(cell.data)
    return truth, mask_mcar(truth, cell.sem.missing_rate,
                            np.random.default_rng(_sem_streams(cell)[0]))


def sem_chain(cell: Cell, n_vars: int) -> tuple[list[list[int]], list[int]]:
    """The random chain a SEM cell's structural EM starts from (the first draw of its EM
    seed stream: :func:`bnsl_dist.sem.structural_em.initial_network`) as parent lists,
    and the elimination order its first E-step used."""
    from bnsl_dist.sem.structural_em import random_chain

    parents, perm = random_chain(n_vars, np.random.default_rng(_sem_streams(cell)[1]))
    return parents, perm[::-1]


def _sem_streams(cell: Cell) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """A SEM cell's two seed streams: its masking's and its structural EM's."""
    mask_ss, sem_ss = cell.seed_sequence().spawn(2)
    return mask_ss, sem_ss


def run_cell(cell: Cell, t_start: float) -> CellResult:
    """SEM-kMAX imputation (docs/ALGORITHMS.md §9): mask the data MCAR, run structural EM,
    record (its ``sem`` column) the imputation accuracy of the best network's completion by each
    missing cell's posterior-marginal argmax (``imputation_accuracy``) and by each
    record's joint MPE (``imputation_accuracy_mpe``: the paper's) and of the baseline
    filling each cell with its variable's most frequent observed state
    (``imputation_accuracy_mode``), and the final DAG's completed-data BIC.

    The M-step budgets are those of ``bnsl-dist impute`` (data-scaled work counts,
    reproducible) unless the cell's SEM settings give seconds (the paper's protocol);
    the cell's budget caps k-MAX."""
    from bnsl_dist.pipeline.run import provenance_fields
    from bnsl_dist.results.records import CellResult
    from bnsl_dist.sem import imputation_accuracy, impute, mode_impute
    from bnsl_dist.sem.budgets import sem_cache_spec, sem_search_budget

    truth, masked = sem_cell_inputs(cell)
    sem = cell.sem
    assert sem is not None  # sem_cell_inputs checked it
    sem_ss = _sem_streams(cell)[1]
    cache = sem_cache_spec(cell.cache, cell.cache.score, truth,
                           scaled=sem.cache_budget == "data", scale=sem.budget_scale)
    search = sem_search_budget(truth, sem.search_seconds_per_variable, cell.budget,
                               scale=sem.budget_scale)
    task = ImputeTask(k=cell.k or 4, max_iterations=sem.max_em_iterations,
                      imputation=_SEM_IMPUTATION, search_seconds=search.seconds,
                      search_iterations=search.max_iterations)
    res = run(task, masked, cache, np.random.default_rng(sem_ss))
    acc = imputation_accuracy(truth, masked, res.completed)
    # the paper's completion (joint MPE of each record) by the same network, beside ours
    acc_mpe = imputation_accuracy(truth, masked, impute(res.network, masked,
                                                        order=res.order or None))
    acc_mode = imputation_accuracy(truth, masked, mode_impute(masked))  # the baseline
    last = res.history[-1] if res.history else None
    out = {**sem.json_dict(), "budget_scale": sem.budget_scale, "imputation_accuracy": acc,
                 "imputation": _SEM_IMPUTATION, "imputation_accuracy_mpe": acc_mpe,
                 "imputation_accuracy_mode": acc_mode,
                 "cache_scores_per_variable": cache.scores_per_variable,
                 "search_iterations": search.max_iterations,
                 "converged": bool(res.converged), "em_iterations": len(res.history),
                 "missing_cells": int(masked.missing.sum()) if masked.missing is not None
                 else 0}
    return CellResult(
        key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
        algorithm=cell.algorithm, label=cell.label, params=cell.params_json, k=cell.k,
        seed=cell.seed, budget_seconds=cell.budget_seconds,
        budget_iterations=cell.budget_iterations,
        best_score=float(last.score) if last is not None else math.nan,
        dag_json=canonical_json(res.network.dag.to_json_dict()),
        n_vars=truth.n_vars, n_samples=truth.n_samples, status="ok",
        iterations=len(res.history), elapsed=time.perf_counter() - t_start,
        wall_seconds=time.perf_counter() - t_start, cache_key=cell.cache_job.key,
        data_hash=truth.content_hash(), treewidth_order=tuple(int(v) for v in res.order),
        outputs={"sem": out}, **provenance_fields(cell))
