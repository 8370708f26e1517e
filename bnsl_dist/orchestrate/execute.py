"""One executor for every command's cells: :func:`execute` builds each distinct cache the
cells need once, through one route, then runs every cell, serially or on Dask —
``learn`` (with or without ``--time-limit``), ``impute``, ``grid run`` (cells into a
store) and ``cache build`` (cache jobs alone).

The route: :func:`bnsl_dist.cache.build.explore_batch` over every variable, assembled by
:func:`~bnsl_dist.cache.build.assemble_cache` — in this process
(:func:`~bnsl_dist.cache.build.build_cache`) or fanned out in guided batches on Dask
(:func:`~bnsl_dist.orchestrate.explore.submit_cache_build`: its last task returns the
cache, or, cells run into a store, writes its file, the cells depending on it). A
time-limited cell's cache is built in its share of the limit (each variable an equal share of the time
still left; on Dask one slice of the variables per worker thread, all sharing the
deadline). A cache file the spec names is read, never rebuilt; with a store, each cache
is its file ``caches/<key>.jkl.gz`` there (key :attr:`~bnsl_dist.pipeline.cell.CacheJob.key`),
built once and read by later runs.

Then each cell runs: a search, inference or SEM cell as
:func:`~bnsl_dist.pipeline.learn.run_seed` (``run_cell``; into a store:
:mod:`bnsl_dist.orchestrate.stored`), a time-limited one as
:func:`bnsl_dist.pipeline.tasks.within.run` on its cell's seed stream until the shared
deadline (serially the cells take equal shares of what is left, one after the other; on
Dask they run at once). The same cells give the same results serially and on any number
of workers when every budget is a count (exact scores, iterations). Without a client no
Dask is imported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.orchestrate.stored import Scheduling
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.tasks.within import Progress, WithinResult, WithinTask

__all__ = ["Execution", "Scheduling", "execute"]


@dataclass
class Execution:
    """What :func:`execute` did: per cell (in order) its outcome — a
    :class:`~bnsl_dist.results.records.CellResult` or the
    :class:`~bnsl_dist.pipeline.run.NoSolutionError` of a seed that found no DAG (search,
    inference and SEM cells; :meth:`~bnsl_dist.pipeline.learn.LearnResult.merge` reads
    them), or a :class:`~bnsl_dist.pipeline.tasks.within.WithinResult`; the caches built
    or read, by :attr:`~bnsl_dist.pipeline.cell.CacheJob.key`, and their stages
    (seconds, exact scores, sets, slices); the seconds spent compiling numba kernels
    before a time limit's clock ran. Cells run into a store: their records (None for a
    cell skipped or failed) and the run's
    :class:`~bnsl_dist.orchestrate.outcomes.GridSummary`; cache jobs: their caches."""

    outcomes: list[Any]
    caches: dict[str, ParentSetCache] = field(default_factory=dict)
    cache_stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    compile_seconds: float = 0.0
    cells: Sequence[Cell] = ()
    started: float = 0.0
    summary: Any = None

    def learn_result(self) -> Any:
        """What ``learn`` writes: the seeds' records merged
        (:class:`~bnsl_dist.pipeline.learn.LearnResult`), or for time-limited cells the
        result JSON of ``learn --time-limit`` (:func:`~bnsl_dist.pipeline.tasks.within.merge`,
        its wall time counted from ``started``)."""
        if self.cells and self.cells[0].kind == "within":
            from bnsl_dist.pipeline.tasks.within import merge

            (stage,) = self.cache_stages.values()
            return merge(self.cells, self.outcomes, wall=time.time() - self.started,
                         cache=stage, compile_seconds=self.compile_seconds)
        from bnsl_dist.pipeline.learn import LearnResult

        return LearnResult.merge(self.cells, self.outcomes)


def execute(cells: Sequence[Cell] | Sequence[CacheJob], client: Any = None,
            store: Any = None, *, started: float | None = None, margin: float = 0.0,
            on_progress: Callable[[Any], None] | None = None,
            phase: Callable[[str], AbstractContextManager[Any]] | None = None,
            caches: Mapping[str, ParentSetCache] | None = None,
            scheduling: Scheduling | None = None, progress: bool = False) -> Execution:
    """Build the caches ``cells`` need (each once) and run the cells.

    Parameters
    ----------
    cells : the cells, of one kind; or cache jobs (:class:`~bnsl_dist.pipeline.cell.CacheJob`):
        their caches are built (or read) and are the outcomes
    client : distributed.Client, optional
        Run on it; default: in this process.
    store : ResultStore, optional
        Search, inference and SEM cells it holds a record of are skipped (their outcome
        is None); the others' records, or failure records, are written to it as they
        arrive, and their caches kept in it (:mod:`~bnsl_dist.orchestrate.stored`); a
        cache job's cache is kept in it and read back by later runs.
    started : float, optional
        When a time limit's clock started (``time.time()``; default now): the limit
        counts from it, so a cluster's start is inside it; compiling kernels is not.
    margin : float
        Seconds of a time limit kept for gathering the results.
    on_progress : callable, optional
        Hears a time-limited run's stages (:class:`Progress`), or an impute cell's EM
        iterations (:class:`~bnsl_dist.sem.structural_em.SEMIteration`).
    phase : callable, optional
        ``phase("cache")`` and ``phase("run")`` (context managers) around the caches'
        builds and the cells' runs of search, inference and SEM cells (a command's
        progress lines).
    caches : mapping, optional
        Caches already built, by their :attr:`~bnsl_dist.pipeline.cell.CacheJob.key`
        (search, inference and SEM cells): not built again.
    scheduling : Scheduling, optional
        Cells run into a store: the stop time, priorities' fan-out threshold, progress
        bar... (:class:`~bnsl_dist.orchestrate.stored.Scheduling`).
    progress : bool
        A progress bar of each cache build (cache jobs).
    """
    if not cells:
        return Execution([])
    jobs = [c for c in cells if isinstance(c, CacheJob)]
    todo = [c for c in cells if isinstance(c, Cell)]
    if jobs and todo:
        raise ValueError("execute takes cells or cache jobs, not both")
    if jobs:
        return _execute_caches(jobs, client, store, progress)
    kinds = {c.kind for c in todo}
    if len(kinds) != 1 or (kinds & {"within", "impute"} and store is not None):
        raise ValueError("execute takes cells of one kind (time-limited and impute cells "
                         "no store)")
    t0 = time.time() if started is None else started
    if "within" in kinds:
        out = _execute_within(todo, client, t0, margin, on_progress)
    elif "impute" in kinds:
        out = _execute_impute(todo, client, t0, on_progress)
    elif store is not None:
        out = _execute_stored(todo, client, store, scheduling or Scheduling())
    else:
        out = _execute_cells(todo, client, phase or (lambda _: nullcontext()),
                             dict(caches or {}))
    out.cells, out.started = list(todo), t0
    return out


def _execute_stored(cells: Sequence[Cell], client: Any, store: Any,
                    how: Scheduling) -> Execution:
    """:func:`~bnsl_dist.orchestrate.stored.run_stored`; the records this run stored
    are the outcomes."""
    from dataclasses import replace

    from bnsl_dist.orchestrate.stored import run_stored

    got: dict[str, Any] = {}

    def heard(rec: Any) -> None:
        got[rec.key] = rec
        if how.on_result is not None:
            how.on_result(rec)

    out = Execution([])
    out.summary = run_stored(cells, client, store, replace(how, on_result=heard))
    out.outcomes = [got.get(c.key) for c in cells]
    return out


# ------------------------------------------------------------------ cache jobs
def _builder(client: Any, progress: bool) -> Callable[[CategoricalData, Any], ParentSetCache]:
    """The one way a cache is built from data in this process's memory: in this process,
    or on ``client`` through the route of every cache on Dask
    (:func:`~bnsl_dist.orchestrate.explore.cache_of_held`: the same cache with a score
    budget or none)."""
    if client is None:
        from bnsl_dist.cache.build import build_cache

        return lambda data, spec: build_cache(data, spec, progress=progress)
    from bnsl_dist.orchestrate.explore import cache_of_held

    return lambda data, spec: cache_of_held(client, data, spec, progress=progress)


def _execute_caches(jobs: Sequence[CacheJob], client: Any, store: Any,
                    progress: bool) -> Execution:
    """Each distinct job's cache: its spec's file, the store's file (unless built from
    other data: the data at a path changed), or built (and kept in the store; built in
    this process, resumably: :mod:`bnsl_dist.cache.parts`)."""
    from pathlib import Path

    from bnsl_dist.exceptions import DataError
    from bnsl_dist.pipeline.run import build, build_and_save, load_cache, stage_data

    out = Execution([])
    for job in jobs:
        if job.key in out.caches:
            continue
        _, _, target = stage_data(job)
        given = job.given_path
        if given is not None:
            out.caches[job.key] = load_cache(given, target)
            continue
        if target is None:
            raise DataError("a cache job needs data or a cache file")
        path = None if store is None else Path(store.cache_path(job.key))
        if path is not None and path.is_file():
            kept = load_cache(path, None)  # its data first: names may differ too
            if kept.meta.get("data_hash") in (None, target.content_hash()):
                out.caches[job.key] = load_cache(path, target)
                continue
        if path is None:
            cache = build(job.cache, target, _builder(client, progress))
        else:  # kept in the store; built here, resumably (its batches stored beside it)
            cache = build_and_save(job, target, path, None if client is None
                                   else _builder(client, progress), progress=progress)
        out.caches[job.key] = cache
    out.outcomes = [out.caches[j.key] for j in jobs]
    return out


# ------------------------------------------------------------------ search, inference, sem
def _execute_cells(cells: Sequence[Cell], client: Any,
                   phase: Callable[[str], AbstractContextManager[Any]],
                   given: dict[str, ParentSetCache]) -> Execution:
    from bnsl_dist.pipeline.islands import as_islands
    from bnsl_dist.pipeline.learn import prepare_cache, run_seed

    groups: dict[str, list[Cell]] = {}
    for c in cells:
        if c.kind != "sem":  # a SEM cell builds its caches itself, one per M-step
            groups.setdefault(c.cache_job.key, []).append(c)
    out = Execution([None] * len(cells), {k: v for k, v in given.items() if k in groups})
    builder = None if client is None else _builder(client, False)
    islands = as_islands(cells) and _islands_fit(client, cells)
    with phase("cache"):
        for key, group in groups.items():
            # a .jkl the spec names, on Dask: each worker process reads it (islands: the
            # client makes the seeds' records from it)
            if key not in out.caches and (client is None or islands
                                          or group[0].cache_job.given_path is None):
                out.caches[key] = prepare_cache(group[0], builder)
    with phase("run"):
        if islands:
            out.outcomes = _run_islands(client, cells, out.caches[cells[0].cache_job.key])
        elif client is None:
            out.outcomes = [run_seed(c, out.caches.get(c.cache_job.key)) for c in cells]
        else:
            out.outcomes = _map_cells(client, cells, out.caches)
    return out


def _map_cells(client: Any, cells: Sequence[Cell], caches: dict[str, ParentSetCache]
               ) -> list[Any]:
    """``client.map(run_seed, cells)``, each cache scattered once; the optimizers' kernels
    loaded in every worker before the timed runs (compiling never counts against a
    budget)."""
    from bnsl_dist.orchestrate.workers import register_warmup, task_key
    from bnsl_dist.pipeline.learn import run_seed
    from bnsl_dist.search.warmup import algorithm_spec

    register_warmup(client, algorithms={algorithm_spec(c.algorithm, c.search.params, c.k)
                                        for c in cells})
    scattered = {k: client.scatter(v, broadcast=False) for k, v in caches.items()}
    futures = [client.submit(run_seed, c, scattered.get(c.cache_job.key),
                             key=task_key("learn", c.key), pure=False) for c in cells]
    return list(client.gather(futures))


def _islands_fit(client: Any, cells: Sequence[Cell]) -> bool:
    """Whether seeds may search as islands here: serially (each island counts its own
    seconds), with an iteration budget, or with every seed on a worker thread of its
    own. On Dask an island's seconds are wall seconds from the start, so more seeds than
    threads would share them, and ``--seconds`` is a budget per seed: those run as
    independent seeds instead."""
    if client is None or cells[0].search.budget.as_budget().seconds is None:
        return True
    return bool(len(cells) <= sum(client.nthreads().values()))


def _run_islands(client: Any, cells: Sequence[Cell], cache: ParentSetCache) -> list[Any]:
    """The seeds searched as islands (:mod:`bnsl_dist.pipeline.islands`), here or on
    ``client`` (the kernels loaded in every worker first)."""
    from bnsl_dist.pipeline.islands import island_cells

    if client is None:
        return list(island_cells(cells, cache))
    from bnsl_dist.orchestrate.islands import islands_runner
    from bnsl_dist.orchestrate.workers import register_warmup
    from bnsl_dist.search.warmup import algorithm_spec

    c0 = cells[0]
    register_warmup(client, algorithms={algorithm_spec(c0.algorithm, c0.search.params,
                                                       c0.k)})
    return list(island_cells(cells, cache, islands_runner(client)))


# ------------------------------------------------------------------ impute cells
def _execute_impute(cells: Sequence[Cell], client: Any, t0: float,
                    on_iteration: Callable[[Any], None] | None) -> Execution:
    """Structural EM of each cell's incomplete data (:func:`bnsl_dist.pipeline.tasks.sem.run`):
    on Dask each M-step's cache is built through the one route (:func:`_builder`) and the E-step's
    record batches are tasks (:class:`~bnsl_dist.orchestrate.sem.DaskEStep`); the result
    is the serial one. An impute cell's stream is its seed's (``default_rng(seed)``, as
    ``bnsl-dist impute --seed`` always was, so earlier runs replay)."""
    import numpy as np

    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.tasks.sem import ImputeTask, run

    out = Execution([])
    for c in cells:
        task = c.task
        assert isinstance(task, ImputeTask) and c.data is not None  # the cell's validator
        data = load_data(c.data)
        kw: dict[str, Any] = {}
        if client is not None:
            from bnsl_dist.orchestrate.sem import DaskEStep

            build = _builder(client, False)

            def builder(d: CategoricalData, spec: Any = c.cache,
                        build: Callable[..., ParentSetCache] = build) -> ParentSetCache:
                return build(d, spec)

            kw = {"cache_builder": builder, "e_step_runner": DaskEStep(client, task.batch_size)}
        out.outcomes.append(run(task, data, c.cache, np.random.default_rng(c.seed),
                                started=t0, on_iteration=on_iteration, **kw))
    return out


# ------------------------------------------------------------------ time-limited cells
def _within_task(data: CategoricalData, cell: Cell, cache: ParentSetCache,
                 deadline: float | None, topic: str | None) -> WithinResult:
    """One time-limited cell's search and polish on a worker; each improvement of its
    best score is logged to the scheduler's ``topic`` for the client's live display."""
    from bnsl_dist.pipeline.tasks.within import run

    on_progress = None
    if topic is not None:
        from distributed import get_worker

        worker = get_worker()

        def on_progress(p: Progress) -> None:
            if p.best_score is not None:
                worker.log_event(topic, {"seed": cell.seed, "best": float(p.best_score)})

    assert isinstance(cell.task, WithinTask)
    res = run(cell.task, data, cache, cell.rng(), deadline=deadline, on_progress=on_progress)
    res.cache = None  # the client has it
    return res


def _execute_within(cells: Sequence[Cell], client: Any, t0: float, margin: float,
                    on_progress: Callable[[Progress], None] | None) -> Execution:
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.tasks.within import (
        build_cache_within,
        cache_deadline,
        run,
        stage_algorithms,
    )
    from bnsl_dist.search.warmup import compile_clock, kernels_phase, warm_up

    task = cells[0].task
    assert isinstance(task, WithinTask)
    if any(c.task != task or c.cache_job.key != cells[0].cache_job.key for c in cells):
        raise ValueError("time-limited cells run together share their task and cache")
    algorithms = stage_algorithms(task)
    if on_progress is not None and client is None:  # a fresh machine compiles: say so
        on_progress(Progress(kernels_phase(), 0, 0, None, time.time() - t0, None))
    w0 = time.time()
    with compile_clock() as here:  # not counted in the limit
        if client is None:
            warm_up(cache_methods=("independence",), algorithms=algorithms)
        else:  # an empty disk cache: the client compiles, the workers load
            from bnsl_dist.orchestrate.workers import compiled_since, register_warmup

            register_warmup(client, cache_methods=("independence",), algorithms=algorithms)
    compiled = here.seconds if client is None else \
        min(time.time() - w0, max(here.seconds, compiled_since(client, w0)))
    deadline = None if task.time_limit is None \
        else t0 + task.time_limit - margin + compiled
    job = cells[0].cache_job
    assert job.data is not None  # a time-limited cell has data (its validator)
    data = load_data(job.data)
    t_cache = time.time()
    if client is None:
        cache = build_cache_within(data, job.cache, task, deadline, on_progress, started=t0)
        slices = 1
    else:
        from bnsl_dist.orchestrate.explore import cache_of_held, thread_slices
        from bnsl_dist.pipeline.cost import guided_batches

        timed = deadline is not None
        slices = len(thread_slices(client, range(data.n_vars)) if timed
                     else guided_batches(range(data.n_vars), sum(client.nthreads().values())))
        if on_progress is not None:
            on_progress(Progress(f"cache: {data.n_vars} variables"
                                 + (f" in {slices} slices" if timed else ""), 0, 0, None,
                                 time.time() - t0,
                                 None if deadline is None else max(0.0, deadline - time.time())))
        cache = cache_of_held(client, data, job.cache, deadline=None if deadline is None
                              else cache_deadline(task, deadline), cutoff=deadline, warmed=True)
    stage = {"seconds": time.time() - t_cache,
             "exact_scores": int(sum(cache.meta["stats"]["exact_scores"])),
             "n_sets": cache.n_sets, "slices": slices}
    out = Execution([], {job.key: cache}, {job.key: stage}, compiled)
    if client is None:
        for i, c in enumerate(cells):
            end = None if deadline is None \
                else time.time() + (deadline - time.time()) / (len(cells) - i)
            out.outcomes.append(run(task, data, cache, c.rng(), deadline=end,
                                    on_progress=on_progress))
        return out
    out.outcomes = _run_within_distributed(client, cells, data, cache, deadline, t0,
                                           on_progress)
    return out


def _run_within_distributed(client: Any, cells: Sequence[Cell], data: CategoricalData,
                            cache: ParentSetCache, deadline: float | None, t0: float,
                            on_progress: Callable[[Progress], None] | None
                            ) -> list[WithinResult]:
    """A task per cell, all at once, on the data and cache scattered once; meanwhile
    ``on_progress`` hears the best score the cells reported and the time left, twice a
    second."""
    from distributed import wait

    from bnsl_dist.orchestrate.workers import task_key

    data_f = client.scatter(data, broadcast=True, hash=False)
    cache_f = client.scatter(cache, broadcast=True, hash=False)
    # the scattered data's key is unique (hash=False): two calls on one scheduler (the
    # same seeds, no limit) never share a task key, which would hand one the other's runs
    run_id = (data_f.key, deadline)
    topic = None if on_progress is None else task_key("within-best", run_id)
    best: list[float] = []
    if topic is not None:
        client.subscribe_topic(topic, lambda event: best.append(float(event[1]["best"])))
    try:
        futures = [client.submit(_within_task, data_f, c, cache_f, deadline, topic,
                                 key=task_key("within", run_id, c.key), pure=False)
                   for c in cells]
        stage = f"search + polish: {len(cells)} seed(s) on {cache.n_sets} parent sets"
        while on_progress is not None:
            now = time.time()
            on_progress(Progress(stage, 0, 0, max(best) if best else None, now - t0,
                                 None if deadline is None else max(0.0, deadline - now)))
            try:
                wait(futures, timeout=0.5)
                break
            except TimeoutError:
                continue
        return list(client.gather(futures))
    finally:
        if topic is not None:
            client.unsubscribe_topic(topic)
