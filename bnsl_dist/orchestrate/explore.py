"""Distributed parent-set exploration: Dask tasks of shrinking batches of variables.

Data never ride in the task graph: the client reads them (a path or a bundled name) and
scatters them once to every worker; a URL is read by each worker process once
(:func:`load_data_task`, memoised per process and checked against the client's content
hash), without passing through the client.
Tasks therefore carry only variable indices and settings, and no task is tied to the
worker that happens to hold the data.

Load balance: the cost of exploring one variable differs by orders of magnitude, so
batches shrink as the work proceeds (guided self-scheduling: each batch takes about
1/(4 W) of the variables left, W = workers, down to one variable), submitted in order
with decreasing priorities; the long tail is made of one-variable tasks that idle
workers pick up (and Dask's work stealing moves queued ones).

Each task runs :func:`bnsl_dist.cache.build.explore_batch`, the very function of the
serial build, and :func:`~bnsl_dist.cache.build.assemble_cache` merges the results by
variable, so a score-budgeted (or unbudgeted) build equals the serial one whatever the
number of workers or the batching. Where a built cache is kept (a results folder's
``caches/``, by :attr:`~bnsl_dist.pipeline.cell.CacheJob.key`) is the executor's
(:func:`bnsl_dist.orchestrate.execute.execute`).

Grids (:func:`submit_cache_build`) fan a large cache out the same way without any
client round trip: batches of :func:`explore_job` (each worker stages the cell's data
from its :class:`~bnsl_dist.pipeline.specs.DataRef`, once per process) and one
:func:`store_job_cache` task that depends on them, assembles the cache and writes the
file :func:`~bnsl_dist.pipeline.run.ensure_cache` would write (the same bytes but for
the timings). Its future is what the cells depend on, so they start as soon as the
file exists, and a failed batch fails the cache and, through it, its cells. Without a
shared file system the batches get the data, and the client the file's bytes, through
Dask (:mod:`bnsl_dist.orchestrate.staging`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from distributed import Client, Future, as_completed

from bnsl_dist.cache.build import (
    VariableResult,
    as_spec,
    assemble_cache,
    explore_batch,
    resolve_variables,
)
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.orchestrate.queued import queued_delayed
from bnsl_dist.pipeline.cell import CacheJob
from bnsl_dist.pipeline.cost import guided_batches
from bnsl_dist.pipeline.run import ensure_cache, stage_data
from bnsl_dist.pipeline.staged import is_url, local_path

if TYPE_CHECKING:
    from bnsl_dist.orchestrate.staging import StagedFile, Staging

__all__ = ["build_cache_distributed", "explore_job", "guided_batches",
           "load_data_task", "store_job_cache", "submit_cache_build", "thread_slices"]

#: One batch's outcome: the explored variables and the task's seconds.
BatchResult = tuple[list[VariableResult], float]


@functools.lru_cache(maxsize=4)
def load_data_task(spec: str, expected_hash: str) -> CategoricalData:
    """Read ``spec`` (a URL, or a bundled name) in this process, once per (spec, hash).

    Raises
    ------
    DataError
        The worker read different data than the client (another file at that path).
    """
    from bnsl_dist.data.registry import resolve_data

    data = resolve_data(local_path(spec))
    if data.content_hash() != expected_hash:
        raise DataError("the data read on the worker differ from the client's copy",
                        path=str(spec))
    return data


def _explore_task(data: CategoricalData | str, data_hash: str, variables: list[int],
                  settings: CacheSpec, deadline: float | None = None,
                  cutoff: float | None = None) -> list[VariableResult]:
    if isinstance(data, str):
        data = load_data_task(data, data_hash)
    return explore_batch(data, variables, settings, deadline=deadline, cutoff=cutoff)


def thread_slices(client: Client, variables: Sequence[int]
                  ) -> list[tuple[list[int], str | None]]:
    """One interleaved slice of ``variables`` per worker thread, with the worker it is
    pinned to (a worker of t threads takes t slices): a time-limited build, where every
    slice shares one deadline, so all must run at once."""
    info = client.scheduler_info().get("workers", {})
    slots: list[str | None] = [w for w in sorted(info)
                               for _ in range(int(info[w].get("nthreads", 1)))] or [None]
    m = min(len(slots), len(variables))
    return [(list(variables[i::m]), slots[i]) for i in range(m)]


def build_cache_distributed(client: Client, data: CategoricalData | str | os.PathLike[str],
                            spec: CacheSpec | None = None, *,
                            variables: Sequence[int | str] | None = None,
                            progress: bool = False, batch_size: int | None = None,
                            deadline: float | None = None, cutoff: float | None = None,
                            warmed: bool = False, **settings: Any) -> ParentSetCache:
    """:func:`bnsl_dist.cache.build_cache` on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster (see :func:`bnsl_dist.orchestrate.cluster.connect`).
    data : CategoricalData, or a path / URL / bundled name
        Read on the client and scattered to the workers; a URL (fsspec) is read by
        the workers themselves (checked against the client's copy).
    spec, settings, variables, progress
        As in :func:`~bnsl_dist.cache.build_cache`; ``progress`` shows a rich bar.
    batch_size : int, optional
        Variables per task (default: shrinking batches, see :func:`guided_batches`).
    deadline, cutoff : float, optional
        A time-limited build (``time.time()`` values, as in
        :func:`~bnsl_dist.cache.build.explore_batch`): one slice of the variables per
        worker thread (:func:`thread_slices`), all sharing the deadline, so each variable
        gets as many times a one-process build's time as there are threads.
    warmed : bool
        The workers' exploration kernels are already warm (registered by the caller,
        before a deadline was set): no warm-up here.

    Returns
    -------
    ParentSetCache
        Equal to the serial build (score budget or none).
    """
    cfg = as_spec(spec, settings)
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise InvalidConfigError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(data, CategoricalData):
        local = data
        source: str | CategoricalData = data
    else:
        from bnsl_dist.data.registry import resolve_data

        p = Path(data)
        source = str(p.resolve()) if p.exists() else str(data)
        local = resolve_data(local_path(source))
    if local.missing is not None:  # as LocalScorer would say, without loading numba here
        raise DataError("scores need complete data: this data set has missing values"
                        " (impute them, or use structural EM)", path=local.source)
    todo = resolve_variables(local, variables)
    from bnsl_dist.orchestrate.workers import register_warmup, task_key

    if not warmed:
        register_warmup(client, cache_methods=(cfg.method,))
    h = local.content_hash()
    shipped: Future[Any] | str = source if isinstance(source, str) and is_url(source) \
        else client.scatter(local, broadcast=True, hash=False)
    if deadline is None and cutoff is None:
        n_workers = len(client.scheduler_info().get("workers", {}))
        pinned: list[tuple[list[int], str | None]] = [
            (b, None) for b in guided_batches(todo, n_workers, batch_size)]
    else:
        pinned = thread_slices(client, todo)
    batches = [b for b, _ in pinned]
    # the data's key is unique (scattered with hash=False): two builds at once on one
    # scheduler never share a task
    tag = (h, cfg.json_dict(), todo, getattr(shipped, "key", shipped), deadline, cutoff)
    futures: list[Future[Any]] = [client.submit(_explore_task, shipped, h, b, cfg, deadline, cutoff,
                                           key=task_key("explore", tag, b), pure=False,
                                           priority=len(batches) - i,
                                           **({} if w is None else
                                              {"workers": [w], "allow_other_workers": True}))
                             for i, (b, w) in enumerate(pinned)]
    results = _drain(futures, batches, cfg, progress)
    del futures, shipped
    return assemble_cache(local, results, cfg, todo, data_hash=h)


def _drain(futures: list[Future[Any]], batches: list[list[int]], settings: CacheSpec,
           progress: bool) -> list[VariableResult]:
    results: list[VariableResult] = []
    if not progress:
        for _fut, res in as_completed(futures, with_results=True):
            results.extend(res)
        return results
    from rich.progress import Progress

    sizes = {f.key: len(b) for f, b in zip(futures, batches, strict=True)}
    with Progress(transient=True) as bar:
        task = bar.add_task(f"{settings.method} selection", total=sum(sizes.values()))
        for fut, res in as_completed(futures, with_results=True):
            results.extend(res)
            bar.advance(task, sizes[fut.key])
    return results



# ------------------------------------------------------------------- caches of a grid
def explore_job(job: CacheJob, variables: list[int]) -> BatchResult:
    """Explore ``variables`` of the data ``job`` builds its cache on (staged by this
    worker process once: :func:`~bnsl_dist.pipeline.run.stage_data`). Indices beyond
    the data are skipped (the assembling task explores whatever a wrong size hint
    left out)."""
    t0 = time.perf_counter()
    _, _, target = stage_data(job)
    if target is None:
        raise DataError("a cache build needs data")
    todo = [v for v in variables if v < target.n_vars]
    return explore_batch(target, todo, job.cache), time.perf_counter() - t0


def store_job_cache(job: CacheJob, path: str, *parts: BatchResult) -> str:
    """:func:`~bnsl_dist.pipeline.run.ensure_cache` of ``job`` at ``path`` from the
    batches' results (variables no batch explored are explored here); the batches'
    seconds count in the cache's ``build_seconds``. Returns the path."""
    results = [r for res, _ in parts for r in res]

    def assemble(data: CategoricalData, spec: CacheSpec) -> ParentSetCache:
        done = {r.variable for r in results}
        rest = explore_batch(data, [v for v in range(data.n_vars) if v not in done], spec)
        cache = assemble_cache(data, [*results, *rest], spec, list(range(data.n_vars)))
        cache.meta["remote_seconds"] = sum(s for _, s in parts)
        return cache

    return ensure_cache(job, path, assemble)


def submit_cache_build(client: Client, job: CacheJob, path: str, n_vars: int,
                       n_workers: int, priority: float, store_priority: float,
                       explore: Any = explore_job, store: Any = store_job_cache,
                       deps: dict[str, list[str]] | None = None,
                       staging: Staging | None = None) -> Future[Any] | StagedFile | str:
    """Submit the cache of ``job`` as guided batches of ``n_vars`` variables for
    ``n_workers`` worker threads (priorities in (``priority``, ``priority`` + 1), largest
    batches first; ``explore(job, variables)`` each; all in one graph) and the task
    storing it at ``path`` (``store_priority``;
    ``store(job, path, *batches)``). Returns the storing task's future (its result:
    the path); with ``deps``, its key -> its batches' keys is added there. With a
    ``staging`` that sends inputs (no shared file system), the batches get the data
    from it and the client writes the file
    (:meth:`~bnsl_dist.orchestrate.staging.Staging.build`)."""
    from bnsl_dist.orchestrate.staging import StagedFile, Staging
    from bnsl_dist.orchestrate.workers import task_key

    stage = staging or Staging(client, shared_fs=True)
    batches = guided_batches(range(n_vars), n_workers)
    tasks = [queued_delayed(*stage.task([job.data], explore, job, b),
                            key=task_key("cache-part", job.key, path, b),
                            priority=priority + (len(batches) - i) / (len(batches) + 1))
             for i, b in enumerate(batches)]
    # one graph, one message to the scheduler, each batch queued there (:mod:`.queued`):
    # submitted one by one, the first batches went to workers at once (their task group
    # still small) and waited there, and each cost the scheduler a graph update
    parts: list[Future[Any]] = client.compute(tasks, optimize_graph=False)
    out = stage.build(store, job, path, *parts, key=task_key("cache", job.key, path),
                      pure=False, priority=store_priority)
    if deps is not None:
        fut = out.future if isinstance(out, StagedFile) else out
        deps[str(getattr(fut, "key", fut))] = [str(p.key) for p in parts]
    return out
