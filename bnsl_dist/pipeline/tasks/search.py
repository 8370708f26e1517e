"""The search task: one optimizer on the cell's cache for its budget.

:func:`run` is the search itself (:func:`run` of an inference cell too, which then
answers its queries on the network found); ``run_cell``
(:mod:`bnsl_dist.pipeline.run`) stages the data and cache around it, lifts a screened
cell's DAGs back to all the variables and writes the record.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.pipeline.tasks import GridTask, register_task
from bnsl_dist.pipeline.tasks.inference import InferenceTask
from bnsl_dist.search.base import AnytimeTrace, optimizer_stream
from bnsl_dist.search.spec import SearchSpec

if TYPE_CHECKING:
    from bnsl_dist.pipeline.config import GridConfig

__all__ = ["SearchTask", "SearchResult", "run", "grid_tasks"]


@register_task
class SearchTask(GridTask):
    """Search the cell's cache with one optimizer for its budget
    (:func:`~bnsl_dist.pipeline.run.run_cell`); ``holdout``: a split the learned DAG is
    scored on (held-out log-likelihood, CPTs fitted on the cell's data with the cache's
    equivalent sample size; screening grids)."""

    kind: Literal["search"] = "search"
    search: SearchSpec
    holdout: DataRef | None = None


def grid_tasks(grid: GridConfig, label: str, search: SearchSpec,
               holdout: DataRef | None) -> list[dict[str, Any]]:
    """The tasks of a search grid's cells of one algorithm entry and treewidth: the
    search, scored on the held-out split ``holdout`` when given."""
    return [{"kind": "search", "search": search, "holdout": holdout}]


@dataclass(frozen=True)
class SearchResult:
    """The incumbents found within the budget, and for a best-first search (A*, AWA*,
    BFBnB) the run's totals: its final proven bound (``final_bound``) and statistics
    (nodes, proof, top-p epsilon: ``stats``), which may come after the last incumbent."""

    trace: AnytimeTrace
    final_bound: float | None = None
    stats: dict[str, Any] = field(default_factory=dict)


def run(task: SearchTask | InferenceTask, data: CategoricalData | None,
        cache: ParentSetCache, rng: np.random.Generator, *, optimizer: Any = None
        ) -> SearchResult:
    """Search ``cache`` (of ``data``, which an optimizer scoring new families reads) with
    the task's optimizer (``optimizer``: the instance already made, default a new one)
    for its budget; incumbents found after the budget are left out."""
    opt = task.search.optimizer() if optimizer is None else optimizer
    budget = task.search.budget.as_budget()
    og = opt.search(cache) if hasattr(opt, "search") else None
    if og is None:
        trace = AnytimeTrace.collect(optimizer_stream(opt, cache, budget, rng, data))
        return SearchResult(trace.within(budget))
    trace = AnytimeTrace.collect(og.incumbents(budget)).within(budget)
    return SearchResult(trace, og.stats.bound, og.stats.as_info())
