"""The seeds of ``learn`` searched as islands: one memetic search per seed, exchanging
their best orders between epochs (:mod:`bnsl_dist.search.ordering.islands`), instead of
each seed alone. Each seed keeps its record (its own incumbents), made as
:func:`~bnsl_dist.pipeline.run.run_cell` makes it.

Serially the islands run here one after another (:func:`~bnsl_dist.search.ordering.
islands.run_islands`); on Dask, :func:`bnsl_dist.orchestrate.islands.run_islands_distributed`
runs the same epochs on the workers (the executor passes it as ``runner``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.run import NoSolutionError, run_cell
from bnsl_dist.pipeline.tasks.search import SearchResult
from bnsl_dist.results.records import CellResult
from bnsl_dist.search.ordering.islands import run_islands
from bnsl_dist.search.ordering.memetic import Memetic

__all__ = ["as_islands", "island_cells"]


def as_islands(cells: Sequence[Cell]) -> bool:
    """Whether ``cells`` are seeds to search as islands: more than one, search cells of
    one memetic search (unscreened; same spec but the seed) whose ``epochs`` is not 0."""
    if len(cells) < 2 or any(c.kind != "search" for c in cells):
        return False
    c0 = cells[0]
    if any((c.search, c.cache_job.key, c.screening) != (c0.search, c0.cache_job.key, None)
           for c in cells):
        return False
    opt = c0.search.optimizer()
    return isinstance(opt, Memetic) and int(opt.epochs) > 0


def island_cells(cells: Sequence[Cell], cache: ParentSetCache,
                 runner: Callable[..., Any] = run_islands
                 ) -> list[CellResult | NoSolutionError]:
    """The cells' records (a seed without a DAG within the budget: its
    :class:`~bnsl_dist.pipeline.run.NoSolutionError`) after searching them as islands
    with ``runner`` (:func:`~bnsl_dist.search.ordering.islands.run_islands`'s
    signature; default: here)."""
    opt = cells[0].search.optimizer()
    budget = cells[0].search.budget.as_budget()
    traces = runner(opt, cache, budget, [c.rng() for c in cells], epochs=int(opt.epochs),
                    migrants=int(opt.migrants))
    out: list[CellResult | NoSolutionError] = []
    for c, tr in zip(cells, traces, strict=True):
        try:
            out.append(run_cell(c, cache, found=SearchResult(tr.within(budget))))
        except NoSolutionError as exc:
            out.append(exc)
    return out
