"""``learn`` on Dask: the cache as its own tasks, then ``client.map(run_seed, cells)``.

The cells are those of the serial :func:`bnsl_dist.pipeline.learn.learn` (one per
seed, each running the optimizer for the whole budget, its seed a child stream of the
base seed keyed by the cell), and the function is the same
:func:`~bnsl_dist.pipeline.learn.run_seed` (``run_cell``); the records merge into the best DAG per
checkpoint the same way (:meth:`~bnsl_dist.pipeline.learn.LearnResult.merge`). So with
an iteration budget and a cache budget in exact scores, the result equals the serial
one whatever the number of workers.

The cache is built by one exploration task per variable
(:func:`~bnsl_dist.orchestrate.explore.build_cache_distributed`) and reaches the
workers once (scattered); a ``.jkl`` file the spec names is read by each worker process
once, never by the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.learn import LearnResult, prepare_cache, run_seed

__all__ = ["learn_distributed", "prepare_cache_distributed"]


def prepare_cache_distributed(client: Any, cell: Cell) -> ParentSetCache:
    """The cache the cells share: read from the spec's file, or built with one Dask
    task per variable (on the screened roots' data when the cell screens)."""
    from bnsl_dist.orchestrate.explore import build_cache_distributed

    return prepare_cache(cell, lambda data, spec: build_cache_distributed(client, data, spec))


def _warm_workers(client: Any, cell: Cell) -> None:
    """Load the optimizer's numba kernels in every worker before the timed runs, so
    compilation (or loading numba's disk cache) never counts against a budget."""
    from bnsl_dist.orchestrate.workers import register_warmup
    from bnsl_dist.search.warmup import algorithm_spec

    register_warmup(client, algorithms=[algorithm_spec(cell.algorithm, cell.search.params,
                                                       cell.k)])


def learn_distributed(client: Any, cells: Sequence[Cell],
                      cache: ParentSetCache | None = None) -> LearnResult:
    """``client.map(run_seed, cells)`` with one shared cache; the records merged as
    :func:`bnsl_dist.pipeline.learn.learn` does.

    Parameters
    ----------
    client : distributed.Client
    cells : the cells of :func:`~bnsl_dist.pipeline.learn.learn_cells`
    cache : ParentSetCache, optional
        Already built or read: scattered once. Default: a ``.jkl`` the spec names is
        read by each worker process itself (once; a lost worker's cells are simply
        rerun), else the cache is built on the cluster
        (:func:`prepare_cache_distributed`) and scattered.
    """
    from bnsl_dist.orchestrate.workers import task_key

    if cache is None and cells[0].cache_job.given_path is None:
        cache = prepare_cache_distributed(client, cells[0])
    _warm_workers(client, cells[0])
    extra = {} if cache is None else {"cache": client.scatter(cache, broadcast=False)}
    futures = client.map(run_seed, list(cells), key=[task_key("learn", c.key) for c in cells],
                         pure=False, **extra)
    return LearnResult.merge(cells, client.gather(futures))
