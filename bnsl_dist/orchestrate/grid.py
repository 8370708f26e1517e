"""Run an experiment grid on a Dask cluster, resumably.

``run_grid(client, grid, results_dir)``:

1. expands the grid into cells (:func:`bnsl_dist.pipeline.grid.expand_grid`) and skips every
   cell whose result file exists;
2. builds each distinct cache the pending cells need once, as its own task (key
   ``cache-<hash of data + settings>``), saved as ``caches/<key>.jkl.gz`` so reruns and
   recomputed tasks reuse it;
3. submits every pending cell as ``client.submit(run_cell, cell, cache, key="cell-<key>",
   pure=False)``; a cell's seed derives from the grid seed and the cell identity, so
   the result is the same on any worker, in any order, after any worker loss;
4. drains ``as_completed`` and writes each result as its own Parquet file atomically, or
   a failure record (status + traceback) — never a result — when the cell raised, found
   no DAG, or kept killing workers;
5. shows a progress bar and the dashboard link, and saves a Dask performance report in
   ``reports/`` beside the results.

Numba kernels are compiled (or loaded from numba's disk cache) once per worker process
by a worker plugin that runs every algorithm of the grid on a toy cache before the first
task, so compilation never lands inside a timed run.

References
----------
M. Rocklin, "Dask: parallel computation with blocked algorithms and task scheduling",
SciPy 2015 (futures, ``as_completed``). ARCHITECTURE.md "Distribution".
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback as tb_mod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed, performance_report
from distributed.diagnostics.plugin import WorkerPlugin

from bnsl_dist.config import ClusterConfig, GridConfig, JobqueueConfig
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import NoSolutionError, ensure_cache, failure_record, run_cell
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["GridPlan", "GridSummary", "WarmupPlugin", "plan_grid", "format_plan",
           "grid_status", "run_grid", "open_client", "jobqueue_job_script", "warm_up"]


# ---------------------------------------------------------------------------- planning
@dataclass(frozen=True)
class GridPlan:
    """What a run of ``grid`` into ``results_dir`` would do."""

    grid: GridConfig
    cells: tuple[Cell, ...]
    pending: tuple[Cell, ...]
    done: tuple[str, ...]
    failed: tuple[str, ...]
    caches_to_build: tuple[CacheJob, ...]
    search_seconds: float | None  # sum of the pending cells' time budgets (None: unknown)
    cache_seconds: float | None

    def estimated_seconds(self, n_workers: int) -> float | None:
        if self.search_seconds is None or self.cache_seconds is None:
            return None
        return (self.search_seconds + self.cache_seconds) / max(1, n_workers)


def _n_vars_hint(name: str, path: str | None) -> int | None:
    if path is not None:
        return None
    if name == "nltcs":
        return 16
    try:
        from bnsl_dist.datasets.catalog import load_catalog

        cat = load_catalog()
        spec = cat.dataset(name).spec
        n = getattr(spec, "n_vars", None)
        if n is None and getattr(spec, "network", None):
            n = getattr(cat.network(spec.network).spec, "n_vars", None)
    except Exception:  # noqa: BLE001 - a hint only
        return None
    return int(n) if n else None


def plan_grid(grid: GridConfig, results_dir: str | os.PathLike[str]) -> GridPlan:
    """Expand ``grid`` and compare it with what ``results_dir`` holds (no Dask)."""
    store = ResultStore(results_dir)
    cells = expand_grid(grid)
    st = store.status(c.key for c in cells)
    done = set(st.done)
    pending = tuple(c for c in cells if c.key not in done)
    caches: dict[str, CacheJob] = {}
    for c in pending:
        job = c.cache_job
        if grid.kind == "search" and job.given_path is None \
                and not store.cache_path(job.key).is_file():
            caches.setdefault(job.key, job)
    search: float | None = 0.0
    for c in pending:
        if c.budget_seconds is None or search is None:
            search = None
        else:
            search += c.budget_seconds
    cache_s: float | None = 0.0 if grid.cache.seconds_per_variable is not None else None
    spv = grid.cache.seconds_per_variable
    for spec in caches.values():
        n = None if spec.data is None else _n_vars_hint(spec.data.name, spec.data.path)
        cache_s = None if (cache_s is None or spv is None or n is None) else cache_s + spv * n
    if not caches:
        cache_s = 0.0
    return GridPlan(grid, tuple(cells), pending, st.done, st.failed, tuple(caches.values()),
                    search, cache_s)


def _fmt_seconds(s: float | None) -> str:
    if s is None:
        return "unknown (iteration budgets or unknown sizes)"
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.1f} h"


def format_plan(plan: GridPlan, n_workers: int) -> str:
    """A human-readable plan (``grid run --dry-run``)."""
    g = plan.grid
    n_ds = sum(len(d.splits) for d in g.datasets)
    lines = [f"grid {g.name}: {len(plan.cells)} cells "
             f"({len(g.datasets)} data sets, {n_ds} data set splits, "
             f"{len(g.algorithms)} algorithms, seeds {list(g.seeds)})",
             f"  done: {len(plan.done)}   failed before (will retry): {len(plan.failed)}   "
             f"to run: {len(plan.pending)}",
             f"  caches to build: {len(plan.caches_to_build)}"
             + (f" (est. {_fmt_seconds(plan.cache_seconds)} of worker time)"
                if plan.caches_to_build else ""),
             f"  search time budgets: {_fmt_seconds(plan.search_seconds)} of worker time"
             + (" at most (iteration budgets may end runs earlier)"
                if any(c.budget_iterations for c in plan.pending) else ""),
             f"  estimated wall time on {n_workers} workers: "
             f"{_fmt_seconds(plan.estimated_seconds(n_workers))}"
             + (" at most" if any(c.budget_iterations for c in plan.pending) else "")]
    by_alg: dict[str, int] = {}
    for c in plan.pending:
        name = c.label + (f" k={c.k}" if c.k is not None else "")
        by_alg[name] = by_alg.get(name, 0) + 1
    for name, n in by_alg.items():
        lines.append(f"    {name}: {n} cells")
    return "\n".join(lines)


def grid_status(grid: GridConfig, results_dir: str | os.PathLike[str]) -> StoreStatus:
    """Done / failed / pending cells of ``grid`` in ``results_dir``."""
    return ResultStore(results_dir).status(c.key for c in expand_grid(grid))


# ---------------------------------------------------------------------------- warm-up
def warm_up(algorithms: tuple[tuple[str, str, int | None], ...]) -> dict[str, str]:
    """Compile (or load from numba's cache) the kernels of the given algorithms by
    running each for two iterations on a toy cache. Returns problems by algorithm
    (warm-up never raises: a real run reports real errors)."""
    import itertools
    import json

    import numpy as np

    from bnsl_dist.cache.parent_sets import ParentSetCache
    from bnsl_dist.data.dataset import CategoricalData
    from bnsl_dist.scores.local import LocalScorer
    from bnsl_dist.search.base import Budget, make_optimizer

    problems: dict[str, str] = {}
    rng = np.random.default_rng(0)
    data = CategoricalData.from_array(rng.integers(0, 2, size=(200, 6)))
    sc = LocalScorer(data, "bic")
    n = data.n_vars
    lists = [[(ps, sc.score(v, ps)) for r in range(3)
              for ps in itertools.combinations([u for u in range(n) if u != v], r)]
             for v in range(n)]
    cache = ParentSetCache.from_lists(lists, names=data.names).prune_dominated()
    cache.entropies = sc.entropies()
    try:  # the cache builders' kernels (cache tasks and SEM cells build caches)
        from bnsl_dist.cache import build_cache

        for method in ("independence", "sequential"):
            build_cache(data, method=method, scores_per_variable=20, max_indegree=2)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        problems["build_cache"] = f"{type(exc).__name__}: {exc}"
    for name, params_json, k in algorithms:
        try:
            params = json.loads(params_json)
            if k is not None:
                params["k"] = min(k, n - 1)
            opt = make_optimizer(name, **params)
            for _ in opt.run(cache, Budget(seconds=30.0, max_iterations=2), rng):
                pass
        except Exception as exc:  # noqa: BLE001 - reported, never raised
            problems[name] = f"{type(exc).__name__}: {exc}"
    return problems


class WarmupPlugin(WorkerPlugin):
    """Runs :func:`warm_up` once in every worker process (also in workers that join
    later, e.g. replacements of lost ones)."""

    def __init__(self, algorithms: tuple[tuple[str, str, int | None], ...]) -> None:
        self.algorithms = algorithms

    def setup(self, worker: Any) -> None:
        worker.bnsl_warmup_problems = warm_up(self.algorithms)


# ---------------------------------------------------------------------------- running
@dataclass
class GridSummary:
    """What a :func:`run_grid` call did."""

    total: int
    skipped: int
    computed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    seconds: float = 0.0
    report: Path | None = None

    def __str__(self) -> str:
        return (f"{self.total} cells: {self.skipped} already done, {len(self.computed)} "
                f"computed, {len(self.failed)} failed ({self.seconds:.1f} s)")


def _failure_status(exc: BaseException) -> str:
    if isinstance(exc, NoSolutionError):
        return "no-solution"
    if type(exc).__name__ == "KilledWorker":
        return "killed"
    return "error"


def _progress(enabled: bool, total: int) -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), disable=not enabled or total == 0,
                    transient=False)


@contextlib.contextmanager
def _report(path: Path | None) -> Iterator[None]:
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with performance_report(filename=str(tmp)):
        yield
    if tmp.exists():
        os.replace(tmp, path)


def run_grid(client: Client, grid: GridConfig, results_dir: str | os.PathLike[str], *,
             progress: bool = True, report: bool = True, warmup: bool = True,
             on_result: Callable[[CellResult], None] | None = None) -> GridSummary:
    """Run every pending cell of ``grid`` on ``client``'s cluster into ``results_dir``.

    Parameters
    ----------
    client : distributed.Client
        Any cluster (the function never creates one).
    grid : GridConfig
    results_dir : path
        Results folder (:class:`~bnsl_dist.results.store.ResultStore` layout).
    progress : bool
        A rich progress bar on stderr.
    report : bool
        Save a Dask performance report in ``results_dir/reports/``.
    warmup : bool
        Register the numba warm-up worker plugin.
    on_result : callable, optional
        Called on the client with each result as it is written.

    Returns
    -------
    GridSummary
    """
    t0 = time.perf_counter()
    store = ResultStore(results_dir)
    store.save_text(f"grids/{grid.name}.json", grid.model_dump_json(indent=1) + "\n")
    cells = expand_grid(grid)
    done = store.done_keys()
    pending = [c for c in cells if c.key not in done]
    summary = GridSummary(total=len(cells), skipped=len(cells) - len(pending))
    if not pending:
        summary.seconds = time.perf_counter() - t0
        return summary
    if warmup:
        algs = tuple(sorted({(c.algorithm, c.params_json, c.k) for c in pending},
                            key=lambda t: (t[0], t[1], t[2] or 0)))
        client.register_plugin(WarmupPlugin(algs), name="bnsl-dist-warmup")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    report_path = store.reports_dir / f"dask-performance-{grid.name}-{stamp}.html" \
        if report else None
    by_key = {c.key: c for c in pending}
    with _report(report_path), _progress(progress, len(pending)) as bar:
        task = bar.add_task(grid.name, total=len(pending))
        cache_futs: dict[str, Future | str | None] = {}
        for c in pending:
            job = c.cache_job
            ck = job.key
            if ck in cache_futs:
                continue
            if grid.kind != "search" or job.given_path is not None:
                cache_futs[ck] = None
                continue
            path = store.cache_path(ck)
            cache_futs[ck] = str(path) if path.is_file() else client.submit(
                ensure_cache, job, str(path), key=f"cache-{ck}", pure=False)
        futures: dict[Future, str] = {}
        for c in pending:
            fut = client.submit(run_cell, c, cache_futs[c.cache_job.key], key=f"cell-{c.key}",
                                pure=False)
            futures[fut] = c.key
        del cache_futs  # cells hold their cache futures; release ours
        for fut in as_completed(list(futures)):
            key = futures.pop(fut)
            cell = by_key[key]
            if fut.status == "finished":
                rec = fut.result()
                store.write_result(rec)
                summary.computed.append(key)
                if on_result is not None:
                    on_result(rec)
            else:
                exc = fut.exception()
                tb = fut.traceback()
                text = "".join(tb_mod.format_exception(type(exc), exc, tb)) if tb is not None \
                    else ""
                store.write_failure(failure_record(cell, _failure_status(exc), exc, text))
                summary.failed.append(key)
                bar.console.print(f"[red]failed[/red] {cell.describe()}: "
                                  f"{type(exc).__name__}: {exc}")
            fut.release()
            bar.advance(task)
    summary.report = report_path if report_path is not None and report_path.exists() \
        else None
    summary.seconds = time.perf_counter() - t0
    return summary


# ---------------------------------------------------------------------------- clusters
def jobqueue_job_script(kind: str, cfg: JobqueueConfig,
                        scheduler: str = "tcp://scheduler:8786") -> str:
    """The batch script dask-jobqueue would submit for one worker job (no cluster is
    started). Needs the optional ``dask-jobqueue`` package."""
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {kind!r} needs the optional package "
                                 "dask-jobqueue (pip install dask-jobqueue)") from None
    job_cls = {"slurm": dask_jobqueue.slurm.SLURMJob, "pbs": dask_jobqueue.pbs.PBSJob,
               "sge": dask_jobqueue.sge.SGEJob, "lsf": dask_jobqueue.lsf.LSFJob}[kind]
    kw = cfg.cluster_kwargs()
    kw.pop("interface", None)
    kw.pop("local_directory", None)
    job = job_cls(scheduler=scheduler, name="bnsl-dist-worker", **kw)
    script: str = job.job_script()
    return script


@contextlib.contextmanager
def open_client(cluster: ClusterConfig | None = None, *, workers: int | None = None,
                scheduler: str | None = None, scheduler_file: str | None = None,
                announce: bool = True) -> Iterator[Client]:
    """A client for the command line: explicit options first, else ``cluster``, else a
    local cluster of single-threaded processes sized to the machine."""
    from bnsl_dist.orchestrate.cluster import connect

    if scheduler or scheduler_file or workers or cluster is None \
            or cluster.kind in ("local", "address", "scheduler-file"):
        c = cluster or ClusterConfig()
        if not (scheduler or scheduler_file or workers):
            scheduler = c.address if c.kind == "address" else None
            scheduler_file = os.path.expanduser(c.scheduler_file) \
                if c.kind == "scheduler-file" and c.scheduler_file else None
            workers = c.workers if c.kind == "local" else None
        with connect(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                     threads_per_worker=c.threads_per_worker, announce=announce,
                     memory_limit=c.memory_limit) as client:
            yield client
        return
    if cluster.kind == "kubernetes":
        k8s = cluster.kubernetes
        if k8s is None:
            raise InvalidConfigError("cluster kind 'kubernetes' needs a 'kubernetes' section")
        try:
            from dask_kubernetes.operator import KubeCluster
        except ImportError:
            raise InvalidConfigError("cluster kind 'kubernetes' needs the optional package "
                                     "dask-kubernetes") from None
        kc = KubeCluster(name=k8s.name, namespace=k8s.namespace, image=k8s.image,
                         n_workers=k8s.n_workers, resources=k8s.resources or None,
                         env=k8s.env or None)
        try:
            with Client(kc) as client:
                _announce(client, announce)
                yield client
        finally:
            kc.close()
        return
    jq = cluster.jobqueue
    if jq is None:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs a 'jobqueue' section")
    try:
        import dask_jobqueue
    except ImportError:
        raise InvalidConfigError(f"cluster kind {cluster.kind!r} needs the optional package "
                                 f"dask-jobqueue (pip install dask-jobqueue)") from None
    cls = {"slurm": dask_jobqueue.SLURMCluster, "pbs": dask_jobqueue.PBSCluster,
           "sge": dask_jobqueue.SGECluster, "lsf": dask_jobqueue.LSFCluster}[cluster.kind]
    jc = cls(**jq.cluster_kwargs())
    jc.scale(jobs=jq.jobs)
    try:
        with Client(jc) as client:
            _announce(client, announce)
            yield client
    finally:
        jc.close()


def _announce(client: Client, announce: bool) -> None:
    if announce:
        print(f"Dask cluster: dashboard: {client.dashboard_link}", file=sys.stderr)
