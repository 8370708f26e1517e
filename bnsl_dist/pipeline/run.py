"""``run_cell``: data -> [screening] -> cache -> search -> [lift] -> [inference study]
-> record. No Dask.

The one unit of work of every run: ``grid run`` maps it over a grid's cells, ``learn``
over one data set's seeds, serially (``map(run_cell, cells)``) or on Dask
(``client.map(run_cell, cells)``). Caches are their own step (:func:`ensure_cache`
writes one file per :class:`~bnsl_dist.pipeline.cell.CacheJob`), so cells that share
a cache share its build.

References
----------
M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate structure learning
for large Bayesian networks", Machine Learning 107, 2018, §4.3 and §5.3 (the grids).
Rahier et al., JFRB 2018, Algorithm 2 (screening as a stage).
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import BNSLError, DataError, InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.pipeline.cell import CacheJob, Cell, canonical_json
from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.pipeline.specs import (
    BudgetSpec,
    CacheSpec,
    DataRef,
    ScreeningSpec,
    shared_data_dir,
)
from bnsl_dist.pipeline.staged import client_named, local_path, staged_data
from bnsl_dist.pipeline.tasks import grid_kind
from bnsl_dist.pipeline.tasks import search as search_task
from bnsl_dist.pipeline.tasks.inference import InferenceTask
from bnsl_dist.pipeline.tasks.search import SearchTask
from bnsl_dist.results.records import CellFailure, CellResult
from bnsl_dist.search.base import AnytimeTrace, Incumbent
from bnsl_dist.search.qds import Screening, screen

__all__ = ["run_cell", "load_data", "stage_data",
           "ensure_cache", "build_and_save", "save_cache", "load_cache", "build", "NoSolutionError",
           "failure_record",
           "trace_fields"]


class NoSolutionError(BNSLError, RuntimeError):
    """The optimizer reported no DAG within its budget (recorded as a failure; the CLI's
    one-line error, exit 2, like any impossible request). ``iterations`` and
    ``seconds``: what the run did (None where unknown)."""

    def __init__(self, message: str, iterations: int | None = None,
                 seconds: float | None = None) -> None:
        super().__init__(message)
        self.iterations = iterations
        self.seconds = seconds


# ---------------------------------------------------------------------------- data
def load_data(ref: DataRef) -> CategoricalData:
    """The split ``ref`` names: the data sent with the task for it
    (:func:`~bnsl_dist.pipeline.staged.staged`), else a file (a URL read with fsspec), a
    bundled data set, a registered one (materialised through the registry, copied from
    the shared data folder ``BNSL_SHARED_DATA`` when set) or a shared Twenty Datasets
    copy, cached per process.

    Raises
    ------
    DataError
        No such file or data set.
    """
    got = staged_data(ref)
    return got if got is not None else _load_data(ref)


@functools.lru_cache(maxsize=4)
def _load_data(ref: DataRef) -> CategoricalData:
    from bnsl_dist.data.registry import _BUNDLED_SPLITS, resolve_data
    from bnsl_dist.datasets.catalog import load_catalog, load_registered

    if ref.file is not None:
        with client_named(local := local_path(ref.file), ref.file):
            return resolve_data(local, missing=ref.missing)
    if ref.name in _BUNDLED_SPLITS:
        return resolve_data(f"{ref.name}/{ref.split}")
    shared = shared_data_dir()
    if ref.name in load_catalog().datasets:
        return load_registered(ref.name, split=ref.split, mirror=shared)
    folder = None if shared is None else shared / "twenty" / ref.name
    if folder is not None and (folder / f"{ref.split}.csv.gz").is_file():
        from bnsl_dist.data.io import read_dataset

        return read_dataset(ref.name, {s: folder / f"{s}.csv.gz"
                                       for s in ("train", "valid", "test")})[ref.split]
    return resolve_data(ref.name if ref.split == "train" else f"{ref.name}/{ref.split}")


@functools.lru_cache(maxsize=4)
def _screening(ref: DataRef, spec: ScreeningSpec, score: str, ess: float) -> Screening:
    return screen(load_data(ref), spec, score=score, ess=ess)


def stage_data(job: CacheJob) -> tuple[CategoricalData | None, Screening | None,
                                       CategoricalData | None]:
    """(all data, screening, the data the cache is built on: the roots' with screening).
    Cached per process (cells of one data set screen once)."""
    if job.data is None:
        return None, None, None
    data = load_data(job.data)
    if job.screening is None:
        return data, None, data
    scr = _screening(job.data, job.screening, job.cache.score, job.cache.ess)
    return data, scr, data.select(scr.roots)


# ---------------------------------------------------------------------------- caches
#: Builds the cache of data with a spec: :func:`bnsl_dist.cache.build_cache` serially,
#: ``orchestrate.explore.cache_of_held`` bound to a client on Dask.
CacheBuilder = Callable[[CategoricalData, CacheSpec], ParentSetCache]


def build(spec: CacheSpec, data: CategoricalData,
          builder: CacheBuilder | None = None) -> ParentSetCache:
    """The cache of ``data`` (``builder``, default serial), timed, with the entropies the
    entropy-ordered optimizers read. A builder that ran part of the work in other tasks
    reports those seconds in ``meta["remote_seconds"]``; they count in ``build_seconds``."""
    from bnsl_dist.cache.build import build_cache

    t0 = time.perf_counter()
    cache = with_entropies((builder or build_cache)(data, spec), data)
    remote = float(cache.meta.pop("remote_seconds", 0.0))
    cache.meta["build_seconds"] = time.perf_counter() - t0 + remote
    return cache


def with_entropies(cache: ParentSetCache, data: CategoricalData | None) -> ParentSetCache:
    """``cache`` with the variables' entropies of ``data`` unless it has some: a new
    object, never the given one changed (a cache read once per process serves every
    cell of the file, whatever their data)."""
    if data is not None and cache.entropies is None:
        from bnsl_dist.scores.local import LocalScorer

        return cache.with_entropies(LocalScorer(data, "ll").entropies())
    return cache


def ensure_cache(job: CacheJob, path: str | os.PathLike[str],
                 builder: CacheBuilder | None = None, *, stop_at: float | None = None) -> str:
    """Build the cache of ``job`` (with ``builder``, default serial) and save it at
    ``path`` unless a file is there.

    Idempotent (a rerun, or a task recomputed after a lost worker, reuses the file);
    the file is written atomically. Returns the path. The serial build is resumable:
    its finished batches are stored beside ``path`` (:mod:`bnsl_dist.cache.parts`) and
    read by the next build, and removed once the file is written; with ``stop_at`` (a
    ``time.time()``) it stops at a batch boundary
    (:class:`~bnsl_dist.cache.parts.BuildStopped`).
    """
    p = Path(path)
    if p.is_file():
        return str(p)
    _, _, target = stage_data(job)
    if target is None:
        raise DataError("a cache build needs data")
    build_and_save(job, target, p, builder, stop_at=stop_at)
    return str(p)


def build_and_save(job: CacheJob, data: CategoricalData, path: str | os.PathLike[str],
                   builder: CacheBuilder | None = None, *, progress: bool = False,
                   stop_at: float | None = None) -> ParentSetCache:
    """The cache of ``job`` from ``data`` (:func:`build`), saved at ``path``
    (:func:`save_cache`). Without ``builder`` it is built here, resumably: the
    finished batches are stored beside ``path`` (:mod:`bnsl_dist.cache.parts`), read by
    the next build and removed once the file is written; with ``stop_at`` (a
    ``time.time()``) the build stops at a batch boundary
    (:class:`~bnsl_dist.cache.parts.BuildStopped`)."""
    stored = None
    if builder is None:
        from bnsl_dist.cache.build import build_cache
        from bnsl_dist.cache.parts import StoredBatches

        stored = StoredBatches.beside(path, data.content_hash())
        builder = functools.partial(build_cache, progress=progress, stored=stored,
                                    stop_at=stop_at)
    cache = build(job.cache, data, builder)
    save_cache(job, cache, path)
    if stored is not None:
        stored.clear()
    return cache


def save_cache(job: CacheJob, cache: ParentSetCache, path: str | os.PathLike[str]) -> None:
    """Write ``cache``, built for ``job``, at ``path`` (atomically; its key in its
    ``meta``) and its build times beside it (``<key>.times.json``)."""
    from bnsl_dist.cache.jkl import write_jkl

    p = Path(path)
    cache.meta["cache_key"] = job.key
    write_jkl(cache, p)
    _write_cache_times(cache, p.with_name(f"{job.key}.times.json"))


def _write_cache_times(cache: ParentSetCache, path: Path) -> None:
    """The cache's record beside it: its build seconds and each variable's exploration
    seconds (what a replay of the grid sleeps, :mod:`bnsl_dist.pipeline.plan`)."""
    from bnsl_dist._io import atomic_write_text

    stats = cache.meta.get("stats", {})
    seconds = dict(zip(stats.get("variables", []), stats.get("seconds", []), strict=False))
    times = [round(float(seconds.get(v, 0.0)), 4) for v in range(cache.n_vars)]
    atomic_write_text(path, json.dumps({
        "cache_key": cache.meta.get("cache_key"), "n_vars": cache.n_vars,
        "build_seconds": round(float(cache.meta.get("build_seconds", 0.0)), 4),
        "variable_seconds": times}) + "\n")


@functools.lru_cache(maxsize=2)
def _read_cache_file(path: str, mtime_ns: int, names: tuple[str, ...] | None
                     ) -> ParentSetCache:
    from bnsl_dist.cache.jkl import read_jkl

    return read_jkl(path, names=names)


def load_cache(path: str | os.PathLike[str], data: CategoricalData | None) -> ParentSetCache:
    """Read a ``.jkl`` cache (for ``data`` when given), cached per process while the
    file is unchanged."""
    p = Path(local_path(path))  # the bytes sent for the client's path, if any
    try:
        mtime = p.stat().st_mtime_ns
    except FileNotFoundError:
        raise DataError("no such cache file", path=str(path)) from None
    with client_named(str(p), path):
        cache = _read_cache_file(str(p), mtime, None if data is None else tuple(data.names))
    if data is not None and cache.n_vars != data.n_vars:
        raise DataError(f"the cache has {cache.n_vars} variables, the data {data.n_vars}",
                        path=str(path))
    return with_entropies(cache, data)


def resolve_cache(job: CacheJob, cache: ParentSetCache | str | os.PathLike[str] | None,
                  target: CategoricalData | None, builder: CacheBuilder | None = None
                  ) -> tuple[ParentSetCache, float]:
    """The cache of ``job`` (given, read from its file, or built from ``target`` with
    ``builder``) and its build seconds."""
    if isinstance(cache, ParentSetCache):
        return with_entropies(cache, target), float(cache.meta.get("build_seconds", 0.0))
    if cache is None:
        cache = job.given_path
    if cache is not None:
        loaded = load_cache(cache, target)
        return loaded, float(loaded.meta.get("build_seconds", 0.0))
    if target is None:  # pragma: no cover - Cell's validator forbids it
        raise DataError("a cell without data needs a cache file")
    built = build(job.cache, target, builder)
    return built, float(built.meta["build_seconds"])


# ---------------------------------------------------------------------------- running
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _score_or_nan(inc: Incumbent | None) -> float:
    return math.nan if inc is None else float(inc.score)


def trace_fields(trace: AnytimeTrace, budget: BudgetSpec) -> dict[str, Any]:
    """A record's fields of the run's ``trace`` (incumbents within ``budget``, at least
    one): the best score at each checkpoint of the budget, every incumbent's time, score
    and iterations, and the DAG of each checkpoint's best but the overall best's, whose
    DAG is ``dag_json`` (:meth:`CellResult.trace` reads them back)."""
    best = trace.best
    at_time = [trace.best_at(c) for c in budget.checkpoints]
    at_iter = [trace.best_at_iteration(c) for c in budget.iteration_checkpoints]
    index = {id(inc): i for i, inc in enumerate(trace.incumbents)}
    kept = {index[id(inc)] for inc in (*at_time, *at_iter)
            if inc is not None and inc is not best}
    return {"checkpoints": tuple(budget.checkpoints),
            "checkpoint_scores": tuple(map(_score_or_nan, at_time)),
            "iteration_checkpoints": tuple(budget.iteration_checkpoints),
            "iteration_checkpoint_scores": tuple(map(_score_or_nan, at_iter)),
            "trace_elapsed": tuple(float(i.elapsed) for i in trace.incumbents),
            "trace_scores": tuple(float(i.score) for i in trace.incumbents),
            "trace_iterations": tuple(int(i.iterations) for i in trace.incumbents),
            "incumbent_dags": canonical_json({
                str(i): [list(p) for p in trace.incumbents[i].dag.parents]
                for i in sorted(kept)})}


def provenance_fields(cell: Cell) -> dict[str, Any]:
    prov = provenance()
    return {"versions": canonical_json(prov["versions"]), "hostname": prov["hostname"],
            "commit": prov["commit"], "dirty": prov["dirty"], "cpus": prov["cpus"],
            "spec": canonical_json(cell.json_dict()), "finished_at": _now()}


def _task_hook(kind: str, name: str) -> Any:
    """What the task module of the grid kind ``kind`` (``pipeline/tasks/<kind>.py``)
    declares as ``name``, None when it declares none (or ``kind`` is no grid kind, as
    impute): ``run_cell(cell, t_start)``, a kind whose cell is not a search (SEM);
    ``outputs(cell, data, best, order)``, the kind's results of the network a search
    found, by result column (inference)."""
    return grid_kind(kind, name)


def _needs_no_data(cell: Cell, cache: Any, opt: Any) -> bool:
    """Whether ``cell`` can run from ``cache`` alone: a cache object already holding the
    entropies, the data's hash and its rows (``learn`` builds it from the cell's data and
    sends it to its seeds), and nothing else of the cell reading the data (screening, a
    holdout, its kind's outputs such as the inference study, an optimizer that scores new
    families)."""
    return (isinstance(cache, ParentSetCache) and cache.entropies is not None
            and "data_hash" in cache.meta and "n_samples" in cache.meta
            and cell.cache_job.screening is None and cell.holdout is None
            and _task_hook(cell.kind, "outputs") is None
            and not getattr(opt, "needs_data", False))


def run_cell(cell: Cell, cache: ParentSetCache | str | os.PathLike[str] | None = None,
             found: search_task.SearchResult | None = None) -> CellResult:
    """Run one cell and return its record. Pure: no Dask, no files written.

    Parameters
    ----------
    cell : Cell
    cache : ParentSetCache or path, optional
        The cell's cache (of the screened roots when the cell screens), or the ``.jkl``
        file holding it. Default: the cache spec's ``path``, else built here.
    found : SearchResult, optional
        The cell's search as already run (a seed of islands searched together,
        :mod:`bnsl_dist.pipeline.islands`): its record is made, nothing searched.

    Returns
    -------
    CellResult
        Incumbents found after the budget are not reported: the best is the best at
        the budget.

    Raises
    ------
    NoSolutionError
        The optimizer found no DAG within the budget.
    BNSLError
        Bad data, cache or parameters.
    """
    t_start = time.perf_counter()
    provenance()  # the code as it was when this process's first cell started
    own = _task_hook(cell.kind, "run_cell")
    if own is not None:  # a kind whose cell is not a search
        result: CellResult = own(cell, t_start)
        return result
    job = cell.cache_job
    opt = cell.search.optimizer()
    if _needs_no_data(cell, cache, opt):  # a seed of learn on a worker: no second read
        data, scr, target = None, None, None
    else:
        data, scr, target = stage_data(job)
    pc, cache_seconds = resolve_cache(job, cache, target)
    if getattr(opt, "needs_data", False) and \
            (opt.score, float(opt.ess)) != (job.cache.score, float(job.cache.ess)):
        raise InvalidConfigError(
            f"{cell.search.algorithm} scores with {opt.score} but the cache with "
            f"{job.cache.score}: give params score/ess equal to the cache's")
    assert isinstance(cell.task, SearchTask | InferenceTask)
    if found is None:
        found = search_task.run(cell.task, target, pc, cell.rng(), optimizer=opt)
    trace = found.trace
    if scr is not None:
        trace = AnytimeTrace([scr.lift_incumbent(i) for i in trace.incumbents],
                             trace.total_iterations, trace.total_seconds)
    best = trace.best
    if best is None:
        raise NoSolutionError(f"{cell.describe()}: no DAG within the budget",
                              int(trace.total_iterations), float(trace.total_seconds))
    b = cell.search.budget
    last = trace.incumbents[-1]
    bound = best.bound if best.bound is not None else last.bound
    info = {**best.info, **found.stats}
    if found.final_bound is not None:  # any proven bound holds: keep the tightest
        final = found.final_bound + (0.0 if scr is None else scr.forest_score)
        bound = final if bound is None else min(bound, final)
    optimal = bound is not None and bound - best.score <= 1e-9 * max(1.0, abs(best.score))
    order, width = _certificate(best, cell.k)
    outputs: dict[str, Any] = {} if scr is None else {"screening": scr.to_dict()}
    solver = solver_stats(info)
    if solver:
        outputs["solver"] = solver
    kind_outputs = _task_hook(cell.kind, "outputs")
    if kind_outputs is not None and data is not None:
        outputs.update(kind_outputs(cell, data, best, order or None))
    if cell.holdout is not None and data is not None:
        outputs["holdout"] = holdout_loglik(best.dag, data, cell.holdout, job.cache.ess)
    return CellResult(
        key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
        algorithm=cell.algorithm, label=cell.label, params=cell.params_json, k=cell.k,
        seed=cell.seed, budget_seconds=b.seconds, budget_iterations=b.iterations,
        best_score=float(best.score), dag_json=canonical_json(best.dag.to_json_dict()),
        n_vars=best.dag.n_vars,
        n_samples=data.n_samples if data is not None else int(pc.meta.get("n_samples", 0)),
        status="optimal" if optimal else "ok",
        bound=None if bound is None else float(bound),
        iterations=int(max(trace.total_iterations, last.iterations)),
        elapsed=float(trace.total_seconds), wall_seconds=time.perf_counter() - t_start,
        cache_key=job.key, cache_seconds=float(cache_seconds), n_parent_sets=int(pc.n_sets),
        data_hash=data.content_hash() if data is not None else str(pc.meta.get("data_hash", "")),
        treewidth_bound=width, treewidth_order=order, **trace_fields(trace, b),
        outputs=outputs, **provenance_fields(cell))


def holdout_loglik(dag: DAG, data: CategoricalData, holdout: DataRef,
                   alpha: float) -> dict[str, Any]:
    """The held-out log-likelihood of ``dag`` (Rahier et al. 2018 §4; Scanagatta et al.
    2018 §6): CPTs fitted on ``data`` with a BDeu-spread Dirichlet prior of equivalent
    sample size ``alpha``, then ``sum_rows ln P(row)`` of the ``holdout`` split (its
    total, per-row mean and rows, natural log)."""
    from bnsl_dist.inference import log_likelihood
    from bnsl_dist.model.fit import fit_cpts

    net = fit_cpts(dag, data, alpha=alpha)
    return {"split": holdout.split, **log_likelihood(net, load_data(holdout)).to_json_dict()}


def solver_stats(info: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar statistics an optimizer reports with an incumbent (A*/AWA*/BFBnB:
    nodes expanded and generated, pattern-database seconds, subproblems, top-p epsilon;
    ILP/TWILP: optimal, k), as found with the best network: JSON-ready (non-finite
    floats as None), in key order; certificates and other sequences are left out.

    Examples
    --------
    >>> solver_stats({"nodes_expanded": np.int64(7), "certificate": object(), "k": 2})
    {'k': 2, 'nodes_expanded': 7}
    """
    out: dict[str, Any] = {}
    for key in sorted(info):
        v = info[key]
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not math.isfinite(v):
            v = None  # JSON has no infinities
        if v is None or isinstance(v, bool | int | float | str):
            out[key] = v
    return out


def _certificate(best: Incumbent, k: int | None) -> tuple[tuple[int, ...], int | None]:
    """A bounded-treewidth result's certificate: the optimizer's elimination order, or
    a min-fill one (width <= k checked either way)."""
    if k is None:
        return (), None
    from bnsl_dist.graph.treewidth import certify

    cert = best.info.get("certificate")
    if cert is None:
        cert = certify(best.dag, k)
    return tuple(int(v) for v in cert.order), int(cert.width)


def failure_record(cell: Cell, status: str, error: BaseException | str,
                   traceback_text: str = "", extra: Mapping[str, Any] | None = None
                   ) -> CellFailure:
    """The failure record of a cell (kept apart from results), with its provenance."""
    err = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    prov = provenance()
    return CellFailure(key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
                       algorithm=cell.algorithm, label=cell.label, k=cell.k, seed=cell.seed,
                       status=status, error=err, traceback=traceback_text,
                       finished_at=_now(),
                       extra={**dict(extra or {}), "provenance": prov,
                              "spec": cell.json_dict()})
