"""Grid cells and ``run_cell``: data -> cache -> optimizer -> trace -> record. No Dask.

A :class:`Cell` is one point of a grid (data set, split, algorithm, parameters,
treewidth, seed, budget, cache settings). Its ``key`` hashes the cell's canonical JSON
together with the code version, so a results folder knows which cells are done. Its
random generator is a :class:`numpy.random.SeedSequence` child of the grid seed, keyed
by the cell's identity, so results never depend on which worker runs a cell or when.

References
----------
M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate structure learning
for large Bayesian networks", Machine Learning 107, 2018, §4.3 and §5.3 (the grid of
data sets × algorithms × treewidths that :func:`expand_grid` reproduces).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import platform
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist import __version__
from bnsl_dist._json import canonical_json, json_digest
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.config import AlgorithmConfig, BudgetConfig, CacheConfig, GridConfig
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.results.records import CellFailure, CellResult
from bnsl_dist.search.base import AnytimeTrace, Budget, make_optimizer

__all__ = ["CacheSpec", "Cell", "expand_grid", "run_cell", "load_data", "load_cache",
           "ensure_cache", "canonical_json", "fill_placeholders", "code_version", "NoSolutionError",
           "failure_record"]


class NoSolutionError(RuntimeError):
    """The optimizer reported no DAG within its budget (recorded as a failure)."""


def code_version() -> str:
    """The version that cell keys include: results of another version are not reused."""
    return __version__


def fill_placeholders(template: str, dataset: str, split: str) -> str:
    """Replace ``{dataset}`` and ``{split}`` (other braces, e.g. ``${VAR}``, stay)."""
    return template.replace("{dataset}", dataset).replace("{split}", split)


# ---------------------------------------------------------------------------- cells
@dataclass(frozen=True, slots=True)
class CacheSpec:
    """Which cache a cell searches: a data set split and the cache settings."""

    dataset: str
    split: str
    data_path: str | None
    settings: str  # canonical JSON of CacheConfig

    @property
    def config(self) -> CacheConfig:
        return CacheConfig.model_validate(json.loads(self.settings))

    @property
    def key(self) -> str:
        """Hash of the data reference and the cache settings (names the saved file)."""
        return json_digest({"dataset": self.dataset, "split": self.split,
                        "data_path": self.data_path, "cache": json.loads(self.settings),
                        "version": code_version()})

    @property
    def given_path(self) -> str | None:
        """A ready ``.jkl`` file named by the settings (placeholders filled), if any."""
        p = self.config.path
        return None if p is None else os.path.expandvars(
            fill_placeholders(p, self.dataset, self.split))


@dataclass(frozen=True, slots=True)
class Cell:
    """One point of a grid. ``params`` is canonical JSON; ``extra`` holds kind-specific
    settings (the SEM missing rate)."""

    grid: str
    kind: str
    dataset: str
    split: str
    algorithm: str
    label: str
    params: str
    k: int | None
    seed: int
    grid_seed: int
    budget_seconds: float | None
    budget_iterations: int | None
    checkpoints: tuple[float, ...]
    iteration_checkpoints: tuple[int, ...]
    cache: CacheSpec
    extra: str = "{}"
    _key: str = field(default="", compare=False, repr=False)

    def identity(self) -> dict[str, Any]:
        """What makes the cell what it is (the seed stream derives from this)."""
        return {"grid": self.grid, "kind": self.kind, "dataset": self.dataset,
                "split": self.split, "algorithm": self.algorithm, "label": self.label,
                "params": json.loads(self.params), "k": self.k, "seed": self.seed,
                "extra": json.loads(self.extra)}

    def to_json_dict(self) -> dict[str, Any]:
        return {**self.identity(), "grid_seed": self.grid_seed,
                "budget": {"seconds": self.budget_seconds, "iterations": self.budget_iterations,
                           "checkpoints": list(self.checkpoints),
                           "iteration_checkpoints": list(self.iteration_checkpoints)},
                "cache": {"data_path": self.cache.data_path,
                          "settings": json.loads(self.cache.settings)}}

    @property
    def key(self) -> str:
        """Hash of the cell's canonical JSON plus the code version."""
        if not self._key:
            object.__setattr__(self, "_key", json_digest({"cell": self.to_json_dict(),
                                                      "version": code_version()}))
        return self._key

    @property
    def params_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = json.loads(self.params)
        return out

    @property
    def budget(self) -> Budget:
        return Budget(seconds=self.budget_seconds, max_iterations=self.budget_iterations)

    def seed_sequence(self) -> np.random.SeedSequence:
        """The cell's seed: a child of the grid seed keyed by the cell identity (not by
        budget, version or scheduling), so longer runs replay shorter ones."""
        h = hashlib.sha256(canonical_json(self.identity()).encode()).digest()
        words = tuple(int.from_bytes(h[i:i + 4], "little") for i in range(0, 16, 4))
        return np.random.SeedSequence(entropy=self.grid_seed, spawn_key=words)

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed_sequence())

    def describe(self) -> str:
        kk = f" k={self.k}" if self.k is not None else ""
        return f"{self.dataset}/{self.split} {self.label}{kk} seed={self.seed}"


def _budget_of(alg: AlgorithmConfig, grid: GridConfig) -> BudgetConfig:
    return alg.budget or grid.budget


def expand_grid(grid: GridConfig) -> list[Cell]:
    """Every cell of a grid: data sets × splits × algorithms × treewidths × seeds (× SEM
    missing rates), in that nesting order.

    Examples
    --------
    >>> g = GridConfig.model_validate({
    ...     "name": "toy", "datasets": [{"name": "nltcs", "splits": ["train", "test"]}],
    ...     "cache": {"method": "sequential", "max_indegree": 2},
    ...     "algorithms": [{"name": "kg", "k": [2, 3]}], "seeds": [0, 1],
    ...     "budget": {"iterations": 10}})
    >>> len(expand_grid(g))
    8
    """
    settings = canonical_json(grid.cache.model_dump(mode="json"))
    rates: tuple[float | None, ...] = (None,)
    sem_extra: dict[str, Any] = {}
    if grid.kind == "sem" and grid.sem is not None:
        rates = tuple(grid.sem.missing_rates)
        sem_extra = {"max_em_iterations": grid.sem.max_em_iterations,
                     "search_seconds_per_variable": grid.sem.search_seconds_per_variable}
    cells: list[Cell] = []
    for ds in grid.datasets:
        for split in ds.splits:
            spec = CacheSpec(ds.name, split, ds.path, settings)
            for alg in grid.algorithms:
                b = _budget_of(alg, grid)
                params = canonical_json(alg.params)
                for k in alg.treewidths(grid):
                    for rate in rates:
                        extra = canonical_json({} if rate is None else
                                               {"missing_rate": rate, **sem_extra})
                        for seed in grid.seeds:
                            cells.append(Cell(
                                grid=grid.name, kind=grid.kind, dataset=ds.name, split=split,
                                algorithm=alg.name, label=alg.display, params=params, k=k,
                                seed=int(seed), grid_seed=grid.seed,
                                budget_seconds=b.seconds, budget_iterations=b.iterations,
                                checkpoints=tuple(b.checkpoints),
                                iteration_checkpoints=tuple(b.iteration_checkpoints),
                                cache=spec, extra=extra))
    return cells


# ---------------------------------------------------------------------------- data
@functools.lru_cache(maxsize=4)
def load_data(name: str, split: str = "train", path: str | None = None) -> CategoricalData:
    """One split of a data set: an explicit file (``{split}`` replaced), a bundled data
    set, or a registered one (:mod:`bnsl_dist.datasets`). Cached per process.

    Raises
    ------
    DataError
        No such file or data set.
    """
    from bnsl_dist.data.registry import _BUNDLED_SPLITS, resolve_data

    if path is not None:
        p = os.path.expandvars(fill_placeholders(path, name, split))
        if "$" in p:
            raise DataError(f"data path {path!r}: an environment variable in it is not set")
        return resolve_data(p)
    if name in _BUNDLED_SPLITS:
        return resolve_data(f"{name}/{split}")
    from bnsl_dist.datasets.catalog import load_registered, shared_data_dir

    try:
        return load_registered(name, split=split)
    except DataError:
        shared = shared_data_dir()
        if shared is None or not (shared / "twenty" / name).is_dir():
            raise
    shared = shared_data_dir()
    if shared is not None and (shared / "twenty" / name / f"{split}.csv.gz").is_file():
        from bnsl_dist.data.io import read_dataset

        paths = {s: shared / "twenty" / name / f"{s}.csv.gz" for s in ("train", "valid", "test")}
        return read_dataset(name, paths)[split]
    return resolve_data(f"{name}/{split}" if split != "train" else name)


# ---------------------------------------------------------------------------- caches
def _build(spec: CacheSpec, data: CategoricalData) -> ParentSetCache:
    try:
        from bnsl_dist.cache import build_cache  # type: ignore[attr-defined]
    except ImportError:
        raise InvalidConfigError("bnsl_dist.cache.build_cache is not available in this "
                                 "version; give the grid a cache 'path'") from None
    cache: ParentSetCache = build_cache(data, **spec.config.build_kwargs())
    return cache


def _with_entropies(cache: ParentSetCache, data: CategoricalData) -> ParentSetCache:
    if cache.entropies is None:
        from bnsl_dist.scores.local import LocalScorer

        cache.entropies = LocalScorer(data, "ll").entropies()
    return cache


def ensure_cache(spec: CacheSpec, path: str | os.PathLike[str]) -> str:
    """Build the cache of ``spec`` and save it at ``path`` unless a file is there.

    Idempotent (a rerun, or a task recomputed after a lost worker, reuses the file);
    the file is written atomically. Returns the path.
    """
    p = Path(path)
    if p.is_file():
        return str(p)
    from bnsl_dist.cache.jkl import write_jkl

    data = load_data(spec.dataset, spec.split, spec.data_path)
    t0 = time.perf_counter()
    cache = _with_entropies(_build(spec, data), data)
    cache.meta["build_seconds"] = time.perf_counter() - t0
    cache.meta["cache_key"] = spec.key
    write_jkl(cache, p)
    return str(p)


@functools.lru_cache(maxsize=2)
def _read_cache_file(path: str, mtime_ns: int, names: tuple[str, ...]) -> ParentSetCache:
    from bnsl_dist.cache.jkl import read_jkl

    return read_jkl(path, names=names)


def load_cache(path: str | os.PathLike[str], data: CategoricalData) -> ParentSetCache:
    """Read a ``.jkl`` cache for ``data`` (cached per process while the file is unchanged)."""
    p = Path(path)
    try:
        mtime = p.stat().st_mtime_ns
    except FileNotFoundError:
        raise DataError("no such cache file", path=str(p)) from None
    cache = _read_cache_file(str(p), mtime, tuple(data.names))
    if cache.n_vars != data.n_vars:
        raise DataError(f"the cache has {cache.n_vars} variables, the data {data.n_vars}",
                        path=str(p))
    return _with_entropies(cache, data)


# ---------------------------------------------------------------------------- running
def _versions() -> str:
    from importlib import metadata

    out = {"bnsl_dist": __version__, "python": platform.python_version()}
    for pkg in ("numpy", "numba", "ortools", "pandas"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return canonical_json(out)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _resolve_cache(cell: Cell, cache: ParentSetCache | str | os.PathLike[str] | None,
                   data: CategoricalData) -> tuple[ParentSetCache, float]:
    t0 = time.perf_counter()
    if isinstance(cache, ParentSetCache):
        return _with_entropies(cache, data), 0.0
    if cache is None:
        cache = cell.cache.given_path
    if cache is not None:
        loaded = load_cache(cache, data)
        return loaded, float(loaded.meta.get("build_seconds", 0.0))
    built = _with_entropies(_build(cell.cache, data), data)
    return built, time.perf_counter() - t0


def _treewidth_bound(dag: Any, k: int | None) -> int | None:
    if k is None or dag.n_vars > 3000:
        return None
    from bnsl_dist.graph.treewidth import certify

    return int(certify(dag).width)


def run_cell(cell: Cell, cache: ParentSetCache | str | os.PathLike[str] | None = None
             ) -> CellResult:
    """Run one grid cell and return its record. Pure: no Dask, no files written.

    Parameters
    ----------
    cell : Cell
    cache : ParentSetCache or path, optional
        The cell's cache, or the ``.jkl`` file holding it (the grid runner passes the
        file its cache task wrote). Default: the cache settings' ``path``, else built
        here from the data.

    Returns
    -------
    CellResult

    Raises
    ------
    NoSolutionError
        The optimizer found no DAG within the budget.
    BNSLError
        Bad data, cache or parameters.
    """
    t_start = time.perf_counter()
    if cell.kind == "sem":
        return _run_sem_cell(cell, t_start)
    data = load_data(cell.dataset, cell.split, cell.cache.data_path)
    pc, cache_seconds = _resolve_cache(cell, cache, data)
    params = cell.params_dict
    if cell.k is not None:
        params["k"] = cell.k
    opt = make_optimizer(cell.algorithm, **params)
    trace = AnytimeTrace.collect(opt.run(pc, cell.budget, cell.rng()))
    best = trace.best
    if best is None:
        raise NoSolutionError(f"{cell.describe()}: no DAG within the budget")
    cps = tuple(float(c) for c in cell.checkpoints)
    cp_scores = tuple(_score_or_nan(trace.best_at(c)) for c in cps)
    icps = tuple(int(c) for c in cell.iteration_checkpoints)
    icp_scores = tuple(_score_or_nan(trace.best_at_iteration(c)) for c in icps)
    last = trace.incumbents[-1]
    bound = best.bound if best.bound is not None else last.bound
    optimal = bound is not None and bound - best.score <= 1e-9 * max(1.0, abs(best.score))
    return CellResult(
        key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
        algorithm=cell.algorithm, label=cell.label, params=cell.params, k=cell.k,
        seed=cell.seed, budget_seconds=cell.budget_seconds,
        budget_iterations=cell.budget_iterations, best_score=float(best.score),
        dag_json=canonical_json(best.dag.to_json_dict()), n_vars=data.n_vars,
        n_samples=data.n_samples, status="optimal" if optimal else "ok",
        bound=None if bound is None else float(bound),
        iterations=int(max(trace.total_iterations, last.iterations)),
        elapsed=float(trace.total_seconds), wall_seconds=time.perf_counter() - t_start,
        cache_key=cell.cache.key, cache_seconds=float(cache_seconds),
        n_parent_sets=int(pc.n_sets), data_hash=data.content_hash(),
        treewidth_bound=_treewidth_bound(best.dag, cell.k),
        checkpoints=cps, checkpoint_scores=cp_scores, iteration_checkpoints=icps,
        iteration_checkpoint_scores=icp_scores,
        trace_elapsed=tuple(float(i.elapsed) for i in trace.incumbents),
        trace_scores=tuple(float(i.score) for i in trace.incumbents),
        trace_iterations=tuple(int(i.iterations) for i in trace.incumbents),
        extra=cell.extra, versions=_versions(), hostname=socket.gethostname(),
        finished_at=_now())


def _score_or_nan(inc: Any) -> float:
    return math.nan if inc is None else float(inc.score)


def _run_sem_cell(cell: Cell, t_start: float) -> CellResult:
    """SEM-kMAX imputation (ALGORITHMS.md §9): mask the data MCAR, run structural EM,
    report the imputation accuracy in ``extra`` and the final DAG's completed-data BIC."""
    from bnsl_dist.data.masking import mask_mcar
    from bnsl_dist.sem import imputation_accuracy, structural_em

    extra = json.loads(cell.extra)
    rate = float(extra["missing_rate"])
    truth = load_data(cell.dataset, cell.split, cell.cache.data_path)
    mask_ss, sem_ss = cell.seed_sequence().spawn(2)
    masked = mask_mcar(truth, rate, np.random.default_rng(mask_ss))
    seconds = float(extra.get("search_seconds_per_variable", 1.0)) * truth.n_vars
    if cell.budget_seconds is not None:
        seconds = min(seconds, cell.budget_seconds)
    search = Budget(seconds=seconds, max_iterations=cell.budget_iterations)
    res = structural_em(masked, k=cell.k or 4, rng=np.random.default_rng(sem_ss),
                        max_iterations=int(extra.get("max_em_iterations", 10)),
                        cache_settings=cell.cache.config.build_kwargs(),
                        search_budget=search)
    acc = imputation_accuracy(truth, masked, res.completed)
    dag = res.network.dag
    last = res.history[-1] if res.history else None
    out_extra = {**extra, "imputation_accuracy": acc, "converged": bool(res.converged),
                 "em_iterations": len(res.history),
                 "missing_cells": int(masked.missing.sum()) if masked.missing is not None
                 else 0}
    return CellResult(
        key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
        algorithm=cell.algorithm, label=cell.label, params=cell.params, k=cell.k,
        seed=cell.seed, budget_seconds=cell.budget_seconds,
        budget_iterations=cell.budget_iterations,
        best_score=float(last.score) if last is not None else math.nan,
        dag_json=canonical_json(dag.to_json_dict()),
        n_vars=truth.n_vars, n_samples=truth.n_samples, status="ok",
        iterations=len(res.history), elapsed=time.perf_counter() - t_start,
        wall_seconds=time.perf_counter() - t_start, cache_key=cell.cache.key,
        data_hash=truth.content_hash(), extra=canonical_json(out_extra),
        versions=_versions(), hostname=socket.gethostname(), finished_at=_now())


def failure_record(cell: Cell, status: str, error: BaseException | str,
                   traceback_text: str = "", extra: Mapping[str, Any] | None = None
                   ) -> CellFailure:
    """The failure record of a cell (kept apart from results)."""
    err = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return CellFailure(key=cell.key, grid=cell.grid, dataset=cell.dataset, split=cell.split,
                       algorithm=cell.algorithm, label=cell.label, k=cell.k, seed=cell.seed,
                       status=status, error=err, traceback=traceback_text,
                       finished_at=_now(), extra=dict(extra or {}))
