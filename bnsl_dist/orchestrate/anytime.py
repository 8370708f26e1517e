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

__all__ = ["THREADS_MAX_SECONDS", "fits_threads", "learn_distributed",
           "prepare_cache_distributed"]

#: A job whose serial work is estimated below this many seconds runs on a local cluster
#: of threads: a cluster of processes costs more to start (its forkserver imports the
#: package again and loads the kernels; measured 3-6 CPU seconds on 2 cores) than threads
#: can lose to the GIL on such a job (at most its serial time).
THREADS_MAX_SECONDS = 1.0
#: Upper bounds of the serial seconds, measured on a loaded 2-core machine (nltcs,
#: plants, book): per variable x exact score x sample of a cache build (6-9 ns), and per
#: seed x iteration x variable**2 x exact score of a search (winasobs, the slowest
#: optimizer per iteration: 40-100 ns; asobs(-ent), obs, kg, kmax, hc-tabu: 0.2-6 ns).
_CACHE_SECONDS_PER_UNIT = 1e-8
_SEARCH_SECONDS_PER_UNIT = 1e-7


def fits_threads(cells: Sequence[Cell], n_vars: int, n_samples: int) -> bool:
    """Whether ``learn`` of ``cells`` on data of ``n_vars`` x ``n_samples`` is small
    enough for a local cluster of threads (:data:`THREADS_MAX_SECONDS`): only when its
    work is bounded by exact budgets — a cache built from the data with an exact-score
    budget, an iteration budget and an optimizer that is neither exact nor scored from
    the data. Then the result is the same on threads or processes (the same seed, the
    same result); only the wall time differs."""
    from bnsl_dist.search.base import optimizer_info

    c0 = cells[0]
    cache, budget = c0.cache, c0.search.budget
    info = optimizer_info(c0.algorithm)
    if (c0.cache_job.given_path is not None or cache.scores_per_variable is None
            or cache.seconds_per_variable is not None or budget.seconds is not None
            or budget.iterations is None or info.exact
            or getattr(info.cls, "needs_data", False)):
        return False
    scores = n_vars * cache.scores_per_variable
    estimate = (_CACHE_SECONDS_PER_UNIT * scores * n_samples
                + _SEARCH_SECONDS_PER_UNIT * len(cells) * budget.iterations * n_vars * scores)
    return estimate <= THREADS_MAX_SECONDS


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
