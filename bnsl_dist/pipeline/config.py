"""Pydantic models for every YAML file of the project: grids and clusters.

A grid names data sets (registry name + splits), the cache spec, the algorithms with
their parameters, treewidths and optional screening, seeds, a budget with checkpoints,
the comparisons the paper tables report, and optionally the cluster to run on. Its
parts are the pipeline's spec models (:mod:`bnsl_dist.pipeline.specs`): algorithm names,
parameters and data set names are checked against the registries while the file is
read. Every model is frozen and rejects unknown keys. :func:`load_grid` and
:func:`load_cluster` turn any validation error into one
:class:`~bnsl_dist.exceptions.InvalidConfigError` naming the file, the field path
(``algorithms[2].params``) and, when the YAML parser knows it, the line.

Examples
--------
>>> grid = GridConfig.model_validate({
...     "name": "toy", "datasets": [{"name": "nltcs", "splits": ["train"]}],
...     "cache": {"method": "sequential", "max_indegree": 2},
...     "algorithms": [{"name": "kg", "k": [2]}], "budget": {"iterations": 10}})
>>> grid.algorithms[0].treewidths(grid)
(2,)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bnsl_dist._spec import NoBoolModel, format_validation_error, load_yaml_model
from bnsl_dist.cache.spec import with_iteration_budget
from bnsl_dist.pipeline.specs import (
    BudgetSpec,
    CacheSpec,
    DataRef,
    InferenceSettings,
    ScreeningSpec,
    dataset_names,
)
from bnsl_dist.search.base import optimizer_info
from bnsl_dist.search.spec import AlgorithmName, JSONValue, declared_params

__all__ = [
    "DatasetRef",
    "AlgorithmConfig",
    "ComparisonConfig",
    "SemConfig",
    "InferenceConfig",
    "JobqueueConfig",
    "KubernetesConfig",
    "ClusterConfig",
    "GridConfig",
    "load_grid",
    "load_cluster",
    "load_yaml_model",
    "format_validation_error",
]

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def _distinct(v: tuple[Any, ...], what: str) -> tuple[Any, ...]:
    """``v`` when it is non-empty and without duplicates (``what``: its plural name)."""
    if not v:
        raise ValueError(f"at least one of the {what} is required")
    if len(set(v)) != len(v):
        raise ValueError(f"duplicate {what} in {list(v)}")
    return v


def _field(obj: Any, name: str) -> Any:
    """A field of a section not validated yet: a mapping's key or a model's attribute."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


class _Model(NoBoolModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DatasetRef(_Model):
    """A data set of the registry (bundled, :mod:`bnsl_dist.datasets`, shared copies) and
    its splits; ``path`` gives a file instead (``{split}`` in it is replaced by each split).
    A name that no registry knows is rejected when the grid is read."""

    name: str = Field(min_length=1)
    splits: tuple[str, ...] = ("train",)
    path: str | None = None
    missing: Literal["error", "mask"] = "error"

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _SLUG.match(v):
            raise ValueError(f"{v!r} is not a valid data set name (letters, digits, _.+-)")
        return v

    @field_validator("splits")
    @classmethod
    def _splits(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        _distinct(v, "splits")
        for s in v:
            if not _SLUG.match(s):
                raise ValueError(f"{s!r} is not a valid split name")
        return v

    @model_validator(mode="after")
    def _known(self, info: ValidationInfo) -> DatasetRef:
        # a grid stored with its results (context ``stored``) is read for its tables,
        # which need no data: its data sets need not be registered here
        stored = bool(info.context and info.context.get("stored"))
        if not stored and self.path is None and self.name not in dataset_names():
            raise ValueError(f"unknown data set {self.name!r} (see `bnsl-dist data list`; "
                             f"or give a 'path')")
        return self

    def refs(self) -> list[DataRef]:
        """One :class:`DataRef` per split."""
        return [DataRef(name=self.name, split=s, path=self.path, missing=self.missing)
                for s in self.splits]


class AlgorithmConfig(_Model):
    """One algorithm of a grid: a registered optimizer, its declared parameters, its
    treewidths, an optional budget of its own and an optional screening stage.

    ``label`` is the name used in tables (default: ``name``); two entries of one grid may
    run the same optimizer with different parameters under different labels.
    """

    name: AlgorithmName
    label: str | None = None
    params: dict[str, JSONValue] = Field(default_factory=dict)
    k: tuple[PositiveInt, ...] | None = None
    budget: BudgetSpec | None = None
    screening: ScreeningSpec | None = None

    @field_validator("params")
    @classmethod
    def _declared(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return declared_params(v, info, "name")

    @field_validator("k")
    @classmethod
    def _distinct_k(cls, v: tuple[int, ...] | None) -> tuple[int, ...] | None:
        return None if v is None else _distinct(v, "treewidths")

    @model_validator(mode="after")
    def _k(self) -> AlgorithmConfig:
        if self.k is not None and not optimizer_info(self.name).takes_k:
            raise ValueError(f"algorithm {self.name!r} takes no treewidth bound k")
        return self

    @property
    def display(self) -> str:
        return self.label or self.name

    def treewidths(self, grid: GridConfig) -> tuple[int | None, ...]:
        """The treewidths this algorithm runs with (``(None,)`` when unbounded)."""
        if self.k is not None:
            return tuple(self.k)
        if optimizer_info(self.name).takes_k:
            return tuple(grid.treewidths)
        return (None,)


class ComparisonConfig(_Model):
    """A ΔBIC table: algorithm ``a`` against ``b`` (labels), columns by size class and/or
    treewidth, as in the papers' tables."""

    a: str
    b: str
    title: str = ""
    columns: tuple[Literal["size", "k"], ...] = ("size",)

    @model_validator(mode="after")
    def _distinct(self) -> ComparisonConfig:
        if self.a == self.b:
            raise ValueError(f"a comparison needs two different algorithms, got {self.a!r} twice")
        return self


class SemConfig(_Model):
    """Structural EM imputation study (docs/ALGORITHMS.md §9): MCAR missing rates. Each rate
    × seed is one repetition; the grid's ``cache`` rebuilds the cache at every M-step.

    The M-step budgets are those of ``bnsl-dist impute``
    (:func:`bnsl_dist.sem.budgets.sem_budgets`: work counts scaled to the data, so
    a cell reproduces on any machine) unless given in seconds, the paper's protocol:
    ``search_seconds_per_variable`` gives k-MAX that many seconds × n per M-step (the
    paper: 1), and ``cache_budget: grid`` builds the cache with the grid's ``cache``
    budget (``seconds_per_variable``; the paper: 1) instead of the data-scaled exact
    scores (``data``). In YAML, ``cache_budget`` defaults to ``grid`` when the ``cache``
    section gives a budget, else ``data``. The grid's ``budget`` caps k-MAX either way.

    ``budget_scales`` runs every repetition at each of these multiples of both M-step
    budgets (the paper's tuning study, §7.4, Figures 9-10; default: 1 only). The cells of
    one repetition mask the same cells at every scale."""

    missing_rates: tuple[float, ...]
    max_em_iterations: PositiveInt = 10
    search_seconds_per_variable: PositiveFloat | None = None
    cache_budget: Literal["data", "grid"] = "data"
    budget_scales: tuple[PositiveFloat, ...] = (1.0,)

    @field_validator("budget_scales")
    @classmethod
    def _scales(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        return _distinct(v, "budget scales")

    @field_validator("missing_rates")
    @classmethod
    def _rates(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        for r in v:
            if not 0.0 < r < 1.0:
                raise ValueError(f"missing rates must lie in (0, 1), got {r}")
        return _distinct(v, "missing rates")


class InferenceConfig(InferenceSettings):
    """Inference study (Scanagatta et al. 2018, §6.3; :mod:`bnsl_dist.inference.study`):
    each cell learns its model, fits CPTs (Dirichlet ``alpha``, BDeu-spread) and answers
    ``queries`` P(e) queries of ``evidence_vars`` random variables in random states and,
    on data sets sampled from a known network, ``marginal_queries`` marginals of its
    leaves. Queries are drawn from a stream keyed by the data set, split and seed, so
    every model of one data set answers the same ones.

    ``reference`` is the label of the unbounded learner: on real data its model is the
    assumed ground truth; on data of a known network its cell also answers the queries
    on the true network (exact when its junction tree fits in ``memory_gib``, else
    ``truth_pe_samples`` / ``truth_samples`` likelihood-weighting particles; a
    ``truth_pe_samples`` of 0 skips P(e) on known networks, as the paper did). Learned
    models whose junction tree exceeds ``memory_gib`` get ``lw_samples`` particles per
    query."""

    reference: str

    @model_validator(mode="after")
    def _some_query(self) -> InferenceConfig:
        if self.queries == 0 and self.marginal_queries == 0:
            raise ValueError("an inference study needs 'queries' or 'marginal_queries' > 0")
        return self


class JobqueueConfig(_Model):
    """Arguments of a dask-jobqueue cluster (SLURMCluster, PBSCluster, ...)."""

    cores: PositiveInt = 1
    processes: PositiveInt = 1
    memory: str = "4GiB"
    walltime: str = "02:00:00"
    queue: str | None = None
    account: str | None = None
    jobs: PositiveInt = 1
    interface: str | None = None
    local_directory: str | None = None
    job_extra_directives: tuple[str, ...] = ()
    job_script_prologue: tuple[str, ...] = ()
    worker_extra_args: tuple[str, ...] = ()

    def cluster_kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = {"cores": self.cores, "processes": self.processes,
                              "memory": self.memory, "walltime": self.walltime,
                              "job_extra_directives": list(self.job_extra_directives),
                              "job_script_prologue": list(self.job_script_prologue),
                              "worker_extra_args": list(self.worker_extra_args)}
        for name in ("queue", "account", "interface", "local_directory"):
            val = getattr(self, name)
            if val is not None:
                kw[name] = val
        return kw


class KubernetesConfig(_Model):
    """A dask-kubernetes (operator) cluster."""

    name: str = "bnsl-dist"
    namespace: str | None = None
    image: str = "bnsl-dist:0.1.0"
    n_workers: PositiveInt = 2
    resources: dict[str, dict[str, str]] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class ClusterConfig(_Model):
    """Where a grid runs: a local cluster of processes, an existing scheduler, SLURM/PBS/
    SGE/LSF through dask-jobqueue, or Kubernetes through the dask operator."""

    kind: Literal["local", "address", "scheduler-file", "slurm", "pbs", "sge", "lsf",
                  "kubernetes"] = "local"
    workers: PositiveInt | None = None
    threads_per_worker: PositiveInt = 1
    memory_limit: str | None = "auto"
    address: str | None = None
    scheduler_file: str | None = None
    jobqueue: JobqueueConfig | None = None
    kubernetes: KubernetesConfig | None = None
    tls: bool = True  # jobqueue clusters: temporary TLS credentials (deploy/README.md)
    dashboard_address: str | None = None  # jobqueue scheduler: default 127.0.0.1:8787
    #: whether the workers see the client's files (data, results folder): then they
    #: read and write them; else data and caches travel through Dask (default: only a
    #: local cluster of the client's process is taken to share them)
    shared_fs: bool | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ClusterConfig:
        if self.kind == "address" and not self.address:
            raise ValueError("kind 'address' needs 'address' (tcp://host:port)")
        if self.kind == "scheduler-file" and not self.scheduler_file:
            raise ValueError("kind 'scheduler-file' needs 'scheduler_file'")
        if self.kind in ("slurm", "pbs", "sge", "lsf") and self.jobqueue is None:
            raise ValueError(f"kind {self.kind!r} needs a 'jobqueue' section")
        if self.kind == "kubernetes" and self.kubernetes is None:
            raise ValueError("kind 'kubernetes' needs a 'kubernetes' section")
        if self.address is not None and not re.match(r"^[a-z]+://", self.address):
            raise ValueError(f"address {self.address!r} must look like tcp://host:port")
        return self


class GridConfig(_Model):
    """An experiment grid: data sets × splits × algorithms × treewidths × seeds."""

    name: str
    description: str = ""
    reference: str = ""
    kind: Literal["search", "sem", "inference"] = "search"
    seed: NonNegativeInt = 0
    datasets: tuple[DatasetRef, ...] = Field(min_length=1)
    cache: CacheSpec
    algorithms: tuple[AlgorithmConfig, ...] = Field(min_length=1)
    treewidths: tuple[PositiveInt, ...] = ()
    seeds: tuple[NonNegativeInt, ...] = (0,)
    budget: BudgetSpec
    comparisons: tuple[ComparisonConfig, ...] = ()
    sem: SemConfig | None = None
    inference: InferenceConfig | None = None
    cluster: ClusterConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _sem_cache_budget(cls, data: Any) -> Any:
        """A SEM grid whose ``cache`` section gives a budget builds its M-step caches
        with it unless ``sem.cache_budget`` says otherwise (:class:`SemConfig`)."""
        if isinstance(data, dict) and isinstance(data.get("sem"), dict) \
                and "cache_budget" not in data["sem"]:
            cache = data.get("cache")
            given = not isinstance(cache, dict) or any(
                cache.get(f) is not None
                for f in ("seconds_per_variable", "scores_per_variable", "path"))
            data = {**data, "sem": {**data["sem"], "cache_budget": "grid" if given else "data"}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _iteration_cache_budget(cls, data: Any) -> Any:
        """A grid whose every budget is in iterations alone and whose independence-selection
        cache gives no budget explores :data:`~bnsl_dist.cache.spec.ITERATION_CACHE_SCORES`
        exact scores per variable (:func:`~bnsl_dist.cache.spec.with_iteration_budget`), as
        ``learn --iterations`` does, not CacheSpec's 1 s: its cells are then the same on
        any machine. SEM grids scale their own budgets."""
        if not isinstance(data, dict) or data.get("kind", "search") == "sem" \
                or data.get("sem") is not None:
            return data
        cache = data.get("cache")
        budgets = [data.get("budget"), *(_field(a, "budget") for a in data.get("algorithms") or ())]
        if isinstance(cache, dict) and budgets[0] is not None:  # None: the grid's budget
            data = {**data, "cache": with_iteration_budget(
                cache, [b for b in budgets if b is not None])}
        return data

    @field_validator("name")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _SLUG.match(v):
            raise ValueError(f"{v!r} is not a valid grid name (letters, digits, _.+-)")
        return v

    @field_validator("treewidths")
    @classmethod
    def _treewidths(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return _distinct(v, "treewidths") if v else v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or len(set(v)) != len(v):
            raise ValueError(f"seeds must be a non-empty list without duplicates, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _check(self) -> GridConfig:
        names = [d.name for d in self.datasets]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"data sets listed twice: {dup}")
        labels = [a.display for a in self.algorithms]
        dup = sorted({n for n in labels if labels.count(n) > 1})
        if dup:
            raise ValueError(f"algorithm labels used twice: {dup} (give each a distinct "
                             f"'label')")
        for a in self.algorithms:
            if optimizer_info(a.name).takes_k and a.k is None and not self.treewidths:
                raise ValueError(f"algorithm {a.display!r} needs a treewidth: set 'k' on it "
                                 f"or the grid's 'treewidths'")
        for c in self.comparisons:
            for side in (c.a, c.b):
                if side not in labels:
                    raise ValueError(f"comparison names {side!r}, which is not an algorithm "
                                     f"label of this grid ({labels})")
        if self.kind == "sem" and self.sem is None:
            raise ValueError("a grid of kind 'sem' needs a 'sem' section")
        if self.kind != "sem" and self.sem is not None:
            raise ValueError("a 'sem' section needs kind: sem")
        if self.kind == "inference":
            self._check_inference(labels)
        elif self.inference is not None:
            raise ValueError("an 'inference' section needs kind: inference")
        return self

    def _check_inference(self, labels: list[str]) -> None:
        inf = self.inference
        if inf is None:
            raise ValueError("a grid of kind 'inference' needs an 'inference' section")
        if inf.reference not in labels:
            raise ValueError(f"inference.reference names {inf.reference!r}, which is not an "
                             f"algorithm label of this grid ({labels})")
        ref = self.algorithm(inf.reference)
        if ref.treewidths(self) != (None,):
            raise ValueError(f"inference.reference {inf.reference!r} must be an unbounded "
                             f"learner (no treewidth k): it is the assumed ground truth")

    def algorithm(self, label: str) -> AlgorithmConfig:
        for a in self.algorithms:
            if a.display == label:
                return a
        raise KeyError(label)


def load_grid(path: str | os.PathLike[str]) -> GridConfig:
    """Load and validate a grid YAML file (``configs/grids/*.yaml``)."""
    return load_yaml_model(path, GridConfig)


def load_cluster(path: str | os.PathLike[str]) -> ClusterConfig:
    """Load and validate a cluster YAML file (``configs/clusters/*.yaml``)."""
    return load_yaml_model(path, ClusterConfig)
