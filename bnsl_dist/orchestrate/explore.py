"""The one route of a cache on Dask: Dask tasks of shrinking batches of variables, and
one task that assembles them.

:func:`submit_cache_build` submits the cache of a
:class:`~bnsl_dist.pipeline.cell.CacheJob` as batches of :func:`explore_job` (each runs
:func:`bnsl_dist.cache.build.explore_batch`, the very function of the serial build, on
the job's data staged by this worker process once:
:func:`~bnsl_dist.pipeline.run.stage_data`) and one task that depends on them and
merges their results by variable (:func:`~bnsl_dist.cache.build.assemble_cache`): it
writes the file :func:`~bnsl_dist.pipeline.run.ensure_cache` would write
(:func:`store_job_cache`, ``grid run``: the cells depend on its future, so they start as
soon as the file exists, and a failed batch fails the cache and, through it, its cells),
or returns the cache itself (:func:`assemble_job_cache`, a cache the client needs:
``learn``, ``cache build``, ``impute``'s M-steps). A score-budgeted (or unbudgeted)
build therefore equals the serial one whatever the number of workers or the batching.

Load balance: the cost of exploring one variable differs by orders of magnitude, so
batches shrink as the work proceeds (guided self-scheduling: each batch takes about
1/(4 W) of the variables left, W = worker threads, down to one variable,
:func:`~bnsl_dist.pipeline.cost.guided_batches`), queued on the scheduler in order of
decreasing priority; the long tail is made of one-variable tasks that idle threads pick
up. A time-limited build (``learn --time-limit``: a ``deadline`` and a ``cutoff``) is
one interleaved slice of the variables per worker thread instead (:func:`thread_slices`),
each pinned to its worker, all sharing the deadline, so all run at once.

Data never ride in the task graph: the batches read the job's data themselves (a shared
file system), get them sent once per worker process
(:class:`~bnsl_dist.orchestrate.staging.Staging`), or, for data that exist only in the
client's memory (a screened data set's roots, an EM iteration's completed data), get
them scattered once (:meth:`~bnsl_dist.orchestrate.staging.Staging.hold`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from distributed import Client, Future

from bnsl_dist.cache.build import VariableResult, assemble_cache, explore_batch
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError
from bnsl_dist.orchestrate.queued import queued_delayed
from bnsl_dist.pipeline.cell import CacheJob
from bnsl_dist.pipeline.cost import guided_batches
from bnsl_dist.pipeline.run import ensure_cache, stage_data

if TYPE_CHECKING:
    from bnsl_dist.orchestrate.staging import StagedFile, Staging

__all__ = ["assemble_job_cache", "cache_of_held", "explore_job", "guided_batches",
           "store_job_cache", "submit_cache_build", "thread_slices"]

#: One batch's outcome: the explored variables and the task's seconds.
BatchResult = tuple[list[VariableResult], float]


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


# ------------------------------------------------------------------- the route
def explore_job(job: CacheJob, variables: list[int], deadline: float | None = None,
                cutoff: float | None = None) -> BatchResult:
    """Explore ``variables`` of the data ``job`` builds its cache on (staged by this
    worker process once: :func:`~bnsl_dist.pipeline.run.stage_data`), within
    ``deadline`` and ``cutoff`` when given (:func:`~bnsl_dist.cache.build.explore_batch`).
    Indices beyond the data are skipped (the assembling task explores whatever a wrong
    size hint left out)."""
    t0 = time.perf_counter()
    _, _, target = stage_data(job)
    if target is None:
        raise DataError("a cache build needs data")
    todo = [v for v in variables if v < target.n_vars]
    return (explore_batch(target, todo, job.cache, deadline=deadline, cutoff=cutoff),
            time.perf_counter() - t0)


def _assembler(parts: Sequence[BatchResult]
               ) -> Callable[[CategoricalData, CacheSpec], ParentSetCache]:
    """The cache of the batches' results (variables no batch explored are explored
    here), with the batches' seconds as its ``remote_seconds``."""
    results = [r for res, _ in parts for r in res]

    def assemble(data: CategoricalData, spec: CacheSpec) -> ParentSetCache:
        done = {r.variable for r in results}
        rest = explore_batch(data, [v for v in range(data.n_vars) if v not in done], spec)
        cache = assemble_cache(data, [*results, *rest], spec, list(range(data.n_vars)))
        cache.meta["remote_seconds"] = sum(s for _, s in parts)
        return cache

    return assemble


def assemble_job_cache(job: CacheJob, *parts: BatchResult) -> ParentSetCache:
    """The cache of ``job`` from the batches' results (:func:`_assembler`)."""
    _, _, target = stage_data(job)
    if target is None:
        raise DataError("a cache build needs data")
    return _assembler(parts)(target, job.cache)


def store_job_cache(job: CacheJob, path: str, *parts: BatchResult) -> str:
    """:func:`~bnsl_dist.pipeline.run.ensure_cache` of ``job`` at ``path`` from the
    batches' results (:func:`_assembler`); the batches' seconds count in the cache's
    ``build_seconds``. Returns the path."""
    return ensure_cache(job, path, _assembler(parts))


def submit_cache_build(client: Client, job: CacheJob, path: str | None, n_vars: int,
                       n_workers: int, priority: float = 0.0, store_priority: float = 1.0,
                       explore: Any = explore_job, store: Any = store_job_cache,
                       deps: dict[str, list[str]] | None = None,
                       staging: Staging | None = None, *, deadline: float | None = None,
                       cutoff: float | None = None,
                       on_part: Callable[[int], None] | None = None
                       ) -> Future[Any] | StagedFile | str:
    """Submit the cache of ``job`` as batches of its ``n_vars`` variables and the task
    that assembles them.

    The batches: guided batches for ``n_workers`` worker threads (priorities in
    (``priority``, ``priority`` + 1), largest batches first; ``explore(job, variables)``
    each; all in one graph, queued on the scheduler); with a ``deadline`` or ``cutoff``
    (``time.time()`` values, as in :func:`~bnsl_dist.cache.build.explore_batch`), one
    slice per worker thread connected now, pinned to it (:func:`thread_slices`;
    ``explore(job, variables, deadline, cutoff)``). ``on_part(n)`` hears, in a thread of
    the client, each batch of ``n`` variables done.

    The last task: with a ``path``, it stores the cache there (``store_priority``;
    ``store(job, path, *batches)``) and its future's result is the path; with a
    ``staging`` that sends inputs (no shared file system), the client writes the file
    (:meth:`~bnsl_dist.orchestrate.staging.Staging.build`). Without a ``path``, its
    result is the cache (:func:`assemble_job_cache`). With ``deps``, its key -> its
    batches' keys is added there. The batches get the job's data from ``staging``
    (default: the paths, on a shared file system)."""
    from bnsl_dist.orchestrate.staging import StagedFile, Staging
    from bnsl_dist.orchestrate.workers import task_key

    stage = staging or Staging(client, shared_fs=True)
    parts: list[Future[Any]]
    if deadline is None and cutoff is None:
        batches = guided_batches(range(n_vars), n_workers)
        tasks = [queued_delayed(*stage.task([job.data], explore, job, b),
                                key=task_key("cache-part", job.key, path, b),
                                priority=priority + (len(batches) - i) / (len(batches) + 1))
                 for i, b in enumerate(batches)]
        # one graph, one message to the scheduler, each batch queued there (:mod:`.queued`):
        # submitted one by one, the first batches went to workers at once (their task
        # group still small) and waited there, and each cost the scheduler a graph update
        parts = client.compute(tasks, optimize_graph=False)
    else:  # all at once, each slice on a thread of its own
        pinned = thread_slices(client, range(n_vars))
        batches = [b for b, _ in pinned]
        parts = [client.submit(*stage.task([job.data], explore, job, b, deadline, cutoff),
                               key=task_key("cache-part", job.key, path, b, deadline, cutoff),
                               pure=False, priority=priority, **_pinned_to(w))
                 for b, w in pinned]
    if on_part is not None:
        for p, b in zip(parts, batches, strict=True):
            p.add_done_callback(_told(on_part, len(b)))
    out: Future[Any] | StagedFile | str
    if path is None:
        out = client.submit(*stage.task([job.data], assemble_job_cache, job, *parts),
                            key=task_key("cache", job.key, deadline, cutoff),
                            pure=False, priority=store_priority)
    else:
        out = stage.build(store, job, path, *parts, key=task_key("cache", job.key, path),
                          pure=False, priority=store_priority)
    if deps is not None:
        fut = out.future if isinstance(out, StagedFile) else out
        deps[str(getattr(fut, "key", fut))] = [str(p.key) for p in parts]
    return out


def _pinned_to(worker: str | None) -> dict[str, Any]:
    """``client.submit``'s arguments running a task on ``worker`` when it can."""
    return {} if worker is None else {"workers": [worker], "allow_other_workers": True}


def _told(hear: Callable[[int], None], n: int) -> Callable[[Any], None]:
    """A future's callback telling ``hear`` its batch of ``n`` variables is done."""
    return lambda _fut: hear(n)


def cache_of_held(client: Client, data: CategoricalData, spec: CacheSpec, *,
                  deadline: float | None = None, cutoff: float | None = None,
                  progress: bool = False, warmed: bool = False) -> ParentSetCache:
    """The cache of ``data`` (in this process's memory: held on the workers,
    :meth:`~bnsl_dist.orchestrate.staging.Staging.hold`) with ``spec``, through
    :func:`submit_cache_build` for the worker threads connected now, waited for here.

    ``deadline``, ``cutoff``: a time-limited build (one slice per thread); ``progress``:
    a rich bar of the variables explored; ``warmed``: the workers' exploration kernels
    are already warm (else they are warmed first, never inside a budget).

    Raises
    ------
    DataError
        ``data`` have missing values (scores need complete data).
    """
    from bnsl_dist.orchestrate.staging import Staging
    from bnsl_dist.orchestrate.workers import register_warmup

    if data.missing is not None:  # as LocalScorer would say, before anything is sent
        raise DataError("scores need complete data: this data set has missing values"
                        " (impute them, or use structural EM)", path=data.source)
    if not warmed:
        register_warmup(client, cache_methods=(spec.method,))
    stage = Staging(client, shared_fs=True)
    job = CacheJob(data=stage.hold(data), cache=spec)
    threads = sum(client.nthreads().values())
    from rich.progress import Progress

    with Progress(transient=True, disable=not progress) as bar:
        task = bar.add_task(f"{spec.method} selection", total=data.n_vars)
        fut = submit_cache_build(client, job, None, data.n_vars, threads, staging=stage,
                                 deadline=deadline, cutoff=cutoff,
                                 on_part=(lambda n: bar.advance(task, n)) if progress
                                 else None)
        return _own(fut)


def _own(fut: Any) -> ParentSetCache:
    """The cache a build's future holds, its batches' seconds dropped (the client waited
    for them: its wall time is the build's)."""
    cache: ParentSetCache = fut.result()
    cache.meta.pop("remote_seconds", None)
    return cache
