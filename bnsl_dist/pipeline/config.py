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
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from bnsl_dist._spec import ConfigModel, distinct, format_validation_error, load_yaml_model
from bnsl_dist.cache.spec import with_iteration_budget
from bnsl_dist.pipeline.specs import (
    BudgetSpec,
    CacheSpec,
    DataRef,
    ScreeningSpec,
    dataset_names,
)
from bnsl_dist.pipeline.tasks import grid_kind, grid_kinds
from bnsl_dist.search.base import optimizer_info
from bnsl_dist.search.spec import AlgorithmName, JSONValue, SearchSpec, declared_params

__all__ = [
    "DatasetRef",
    "AlgorithmConfig",
    "ComparisonConfig",
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


def _field(obj: Any, name: str) -> Any:
    """A field of a section not validated yet: a mapping's key or a model's attribute."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)




class DatasetRef(ConfigModel):
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
        distinct(v, "splits")
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


class AlgorithmConfig(ConfigModel):
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
        return None if v is None else distinct(v, "treewidths")

    @model_validator(mode="after")
    def _k(self) -> AlgorithmConfig:
        if self.k is not None and not optimizer_info(self.name).takes_k:
            raise ValueError(f"algorithm {self.name!r} takes no treewidth bound k")
        return self

    @property
    def display(self) -> str:
        return self.label or self.name

    def search_specs(self, grid: GridConfig) -> list[SearchSpec]:
        """The searches of this entry's cells in ``grid``, one per treewidth (and per value
        of any other search setting the grid varies: :attr:`SearchSpec.AXES`), in order."""
        return [SearchSpec(algorithm=self.name, params=self.params, k=k,
                           budget=self.budget or grid.budget) for k in self.treewidths(grid)]

    def treewidths(self, grid: GridConfig) -> tuple[int | None, ...]:
        """The treewidths this algorithm runs with (``(None,)`` when unbounded)."""
        if self.k is not None:
            return tuple(self.k)
        if optimizer_info(self.name).takes_k:
            return tuple(grid.treewidths)
        return (None,)


class ComparisonConfig(ConfigModel):
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


class JobqueueConfig(ConfigModel):
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


class KubernetesConfig(ConfigModel):
    """A dask-kubernetes (operator) cluster."""

    name: str = "bnsl-dist"
    namespace: str | None = None
    image: str = "bnsl-dist:0.1.0"
    n_workers: PositiveInt = 2
    resources: dict[str, dict[str, str]] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)


class ClusterConfig(ConfigModel):
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


class GridConfig(ConfigModel):
    """An experiment grid: data sets × splits × algorithms × treewidths × seeds.

    ``kind`` is a grid kind (:func:`~bnsl_dist.pipeline.tasks.grid_kinds`: a task module
    of that name); a kind's own section (``sem:``, ``inference:``) is the field of that
    name, of the model its task module declares (``GRID_SECTION``), given exactly when the
    grid is of that kind (:meth:`section`)."""

    name: str
    description: str = ""
    reference: str = ""
    kind: str = "search"
    seed: NonNegativeInt = 0
    datasets: tuple[DatasetRef, ...] = Field(min_length=1)
    cache: CacheSpec
    algorithms: tuple[AlgorithmConfig, ...] = Field(min_length=1)
    treewidths: tuple[PositiveInt, ...] = ()
    seeds: tuple[NonNegativeInt, ...] = (0,)
    budget: BudgetSpec
    comparisons: tuple[ComparisonConfig, ...] = ()
    if TYPE_CHECKING:  # at run time a field added after the kinds' sections (below)
        cluster: ClusterConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _kind_input(cls, data: Any) -> Any:
        """Each given kind section's ``grid_input`` (its task module's) on the input."""
        if isinstance(data, dict):
            for kind in _sections():
                hook = grid_kind(kind, "grid_input")
                if hook is not None and isinstance(data.get(kind), dict):
                    data = hook(data)
        return data

    @model_validator(mode="before")
    @classmethod
    def _iteration_cache_budget(cls, data: Any) -> Any:
        """A grid whose every budget is in iterations alone and whose independence-selection
        cache gives no budget explores :data:`~bnsl_dist.cache.spec.ITERATION_CACHE_SCORES`
        exact scores per variable (:func:`~bnsl_dist.cache.spec.with_iteration_budget`), as
        ``learn --iterations`` does, not CacheSpec's 1 s: its cells are then the same on
        any machine. SEM grids scale their own budgets."""
        if not isinstance(data, dict) or any(
                grid_kind(k, "SCALES_OWN_BUDGETS") for k in (data.get("kind", "search"),
                                                             *_sections())
                if k == data.get("kind", "search") or data.get(k) is not None):
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
        return distinct(v, "treewidths") if v else v

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
        for kind in _sections():
            art = "an" if kind[0] in "aeiou" else "a"
            given = getattr(self, kind) is not None
            if kind == self.kind and not given:
                raise ValueError(f"a grid of kind {kind!r} needs {art} {kind!r} section")
            if kind != self.kind and given:
                raise ValueError(f"{art} {kind!r} section needs kind: {kind}")
        check = grid_kind(self.kind, "check_grid")
        if check is not None:
            check(self)
        return self

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v not in grid_kinds():
            raise ValueError(f"unknown grid kind {v!r} (one of {', '.join(grid_kinds())})")
        return v

    def section(self, kind: str) -> BaseModel | None:
        """The grid's section of the grid kind ``kind`` (None when not given)."""
        value = getattr(self, kind, None) if kind in _sections() else None
        return value if isinstance(value, BaseModel) else None

    def algorithm(self, label: str) -> AlgorithmConfig:
        for a in self.algorithms:
            if a.display == label:
                return a
        raise KeyError(label)


def _sections() -> dict[str, type[BaseModel]]:
    """Each grid kind's section model (``GRID_SECTION`` of its task module), by kind."""
    return {k: m.GRID_SECTION for k, m in grid_kinds().items() if hasattr(m, "GRID_SECTION")}


def _section_fields() -> dict[str, Any]:
    """A field per grid kind's section (default None), then ``cluster`` (the fields'
    order is a stored grid's keys')."""
    fields: dict[str, Any] = {k: (m | None, None) for k, m in _sections().items()}
    fields["cluster"] = (ClusterConfig | None, None)
    return fields


if not TYPE_CHECKING:  # GridConfig with its kinds' sections
    GridConfig = create_model("GridConfig", __base__=GridConfig, __module__=__name__,
                              __doc__=GridConfig.__doc__, **_section_fields())


def load_grid(path: str | os.PathLike[str]) -> GridConfig:
    """Load and validate a grid YAML file (``configs/grids/*.yaml``)."""
    return load_yaml_model(path, GridConfig)


def load_cluster(path: str | os.PathLike[str]) -> ClusterConfig:
    """Load and validate a cluster YAML file (``configs/clusters/*.yaml``)."""
    return load_yaml_model(path, ClusterConfig)
