"""Cells: one unit of work of any run (a grid, ``learn``'s seeds) and the cache it needs.

A :class:`Cell` is (data reference, cache spec, optional screening spec, task, seed)
plus the grid it belongs to; the task is one of a union on ``kind`` (search, inference,
SEM, impute, time-limited learn: :mod:`bnsl_dist.pipeline.tasks`). Its ``key`` hashes its canonical JSON with the code
version, so a results folder knows which cells are done; its random generator is a
:class:`numpy.random.SeedSequence` child of the grid seed keyed by the cell's identity,
so results never depend on which worker runs a cell, or when.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Annotated, Any, Protocol, Union

import numpy as np
from pydantic import Discriminator, NonNegativeInt, Tag, model_validator

from bnsl_dist import __version__
from bnsl_dist._json import canonical_json, json_digest
from bnsl_dist._spec import Spec
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.specs import (
    CacheSpec,
    DataRef,
    ScreeningSpec,
    SearchSpec,
    fill_placeholders,
)
from bnsl_dist.pipeline.tasks import task_models
from bnsl_dist.pipeline.tasks.inference import InferenceSpec, InferenceTask
from bnsl_dist.pipeline.tasks.search import SearchTask
from bnsl_dist.pipeline.tasks.sem import ImputeTask, SemSpec, SemTask
from bnsl_dist.pipeline.tasks.within import WithinTask
from bnsl_dist.search.base import Budget

__all__ = ["Cell", "CacheJob", "SemSpec", "InferenceSpec", "Task", "SearchTask", "SemTask",
           "InferenceTask", "WithinTask", "canonical_json", "code_version"]


def code_version() -> str:
    """The version that keys include: results of another version are not reused."""
    return __version__


def _keyed_seed(entropy: int, ident: dict[str, Any]) -> np.random.SeedSequence:
    """A child of ``entropy`` keyed by the SHA-256 of ``ident``'s canonical JSON."""
    h = hashlib.sha256(canonical_json(ident).encode()).digest()
    words = tuple(int.from_bytes(h[i:i + 4], "little") for i in range(0, 16, 4))
    return np.random.SeedSequence(entropy=entropy, spawn_key=words)


class CacheJob(Spec):
    """The cache a cell searches: of the data (the screened roots' data when screening
    is on), built with ``cache`` — or the ready file ``cache.path`` names."""

    data: DataRef | None
    screening: ScreeningSpec | None = None
    cache: CacheSpec

    @property
    def key(self) -> str:
        """Names the saved file: hash of the data, screening, settings and version."""
        return json_digest({**self.json_dict(), "version": code_version()})

    @property
    def given_path(self) -> str | None:
        """A ready ``.jkl`` file (placeholders filled), if the spec names one."""
        p = self.cache.path
        if p is None:
            return None
        import os

        d = self.data
        return os.path.expandvars(p if d is None else fill_placeholders(p, d.name, d.split))


def _task_kind(v: Any) -> str | None:
    kind = v.get("kind", "search") if isinstance(v, dict) else getattr(v, "kind", None)
    return kind if isinstance(kind, str) else None


def _task_union() -> Any:
    """The union of every registered task model, told apart by ``kind``."""
    members = tuple(Annotated[m, Tag(k)] for k, m in task_models().items())
    return Annotated[Union[members], Discriminator(_task_kind)]  # noqa: UP007


if TYPE_CHECKING:
    class Task(Protocol):
        """What every task model has (a cell's code narrows it by ``isinstance``)."""

        @property
        def kind(self) -> str: ...

        def json_dict(self) -> dict[str, Any]: ...
else:
    #: A cell's work, one model per kind (``kind`` tells them apart): the task models
    #: of :mod:`bnsl_dist.pipeline.tasks`, whatever module declares them.
    Task = _task_union()

#: The cell's keys of the layout before tasks (their canonical JSON, hence stored keys),
#: and the kinds written in it (a kind added since is written as its ``task``).
_FLAT = ("search", "sem", "inference", "holdout")
_FLAT_KINDS = ("search", "sem", "inference")


class Cell(Spec):
    """One point of a run: (data reference, optional screening, cache spec, task, seed);
    ``label`` names the algorithm entry in tables.

    A search, inference or SEM cell is also read from, and written as, the flat layout
    of earlier versions (``kind``, ``search`` and the kind's settings beside the data),
    so the keys of stored records stay valid."""

    grid: str
    label: str
    data: DataRef | None
    cache: CacheSpec
    screening: ScreeningSpec | None = None
    task: Task
    seed: NonNegativeInt
    grid_seed: NonNegativeInt = 0

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "task" in data:
            return data
        out = {k: v for k, v in data.items() if k not in ("kind", *_FLAT)}
        task = {"kind": data.get("kind", "search")}
        task.update({k: data[k] for k in _FLAT if data.get(k) is not None})
        out["task"] = task
        return out

    def json_dict(self) -> dict[str, Any]:
        """The canonical JSON data of the cell: for a search, inference or SEM cell the
        flat layout of earlier versions (the settings of other kinds left out when unset,
        ``sem`` null), so cells (and their keys) of earlier versions stay valid."""
        out = super().json_dict()
        task = out.pop("task")
        if self.kind not in _FLAT_KINDS:
            return {**out, "task": self.task.json_dict()}
        out.update({"sem": None, **task})
        for name in ("inference", "holdout"):
            if out.get(name) is None:
                out.pop(name, None)
        if isinstance(self.task, SemTask):
            out["sem"] = self.task.sem.json_dict()
        return out

    @model_validator(mode="after")
    def _consistent(self) -> Cell:
        if self.data is None and (self.cache.path is None or self.screening is not None
                                  or self.kind in ("sem", "within", "impute")):
            raise ValueError("a cell without data needs a ready cache file and no "
                             "screening")
        if self.kind == "inference" and self.data is None:
            raise ValueError("an 'inference' cell needs data (its CPTs are fitted on them)")
        if self.kind == "within":
            from bnsl_dist.pipeline.tasks.within import check_cell

            check_cell(self)
        return self

    # -- the task's parts --------------------------------------------------------------
    @property
    def kind(self) -> str:
        return self.task.kind

    @property
    def search(self) -> SearchSpec:
        """The search spec of a cell whose task has one (search, inference, SEM).

        Raises
        ------
        InvalidConfigError
            A task without one (time-limited, impute: their stages' budgets are the
            task's own)."""
        search = getattr(self.task, "search", None)
        if not isinstance(search, SearchSpec):
            raise InvalidConfigError(f"a {self.kind} cell has no search spec")
        return search

    @property
    def sem(self) -> SemSpec | None:
        return self.task.sem if isinstance(self.task, SemTask) else None

    @property
    def inference(self) -> InferenceSpec | None:
        return self.task.inference if isinstance(self.task, InferenceTask) else None

    @property
    def holdout(self) -> DataRef | None:
        return self.task.holdout if isinstance(self.task, SearchTask) else None

    # -- what grids and records read -------------------------------------------------
    @property
    def algorithm(self) -> str:
        if isinstance(self.task, WithinTask):
            return self.task.algorithm
        if isinstance(self.task, ImputeTask):
            return "kmax"
        return self.search.algorithm

    @property
    def k(self) -> int | None:
        if isinstance(self.task, ImputeTask):
            return self.task.k
        return None if isinstance(self.task, WithinTask) else self.search.k

    @property
    def dataset(self) -> str:
        return self.data.name if self.data is not None else "cache"

    @property
    def split(self) -> str:
        return self.data.split if self.data is not None else ""

    @property
    def budget_seconds(self) -> float | None:
        return self.search.budget.seconds

    @property
    def budget_iterations(self) -> int | None:
        return self.search.budget.iterations

    @property
    def budget(self) -> Budget:
        return self.search.budget.as_budget()

    @property
    def params(self) -> dict[str, Any]:
        """The optimizer's parameters (a time-limited cell's search stage's)."""
        if isinstance(self.task, WithinTask):
            return dict(self.task.params)
        if isinstance(self.task, ImputeTask):
            return {}
        return dict(self.search.params)

    @property
    def params_json(self) -> str:
        return canonical_json(self.params)

    @property
    def cache_job(self) -> CacheJob:
        return CacheJob(data=self.data, screening=self.screening, cache=self.cache)

    def identity(self) -> dict[str, Any]:
        """What makes the cell what it is (its seed stream derives from this). The
        inference study's settings are left out: the model a cell learns does not depend
        on how many queries it then answers (its key, which names its record, does). So
        are a SEM cell's budgets (``SemSpec.SEED_FREE``: ``budget_scale``): the cells of
        one repetition at several budgets mask the same cells and start EM from the same
        chain."""
        sem = {} if self.sem is None else self.sem.json_dict()
        for name in SemSpec.SEED_FREE:
            sem.pop(name, None)
        out = {"grid": self.grid, "kind": self.kind, "dataset": self.dataset,
               "split": self.split, "algorithm": self.algorithm, "label": self.label,
               "params": self.params, "k": self.k, "seed": self.seed,
               "extra": sem}
        if self.screening is not None:
            out["screening"] = self.screening.json_dict()
        return out

    @property
    def key(self) -> str:
        """Hash of the cell's canonical JSON plus the code version."""
        return json_digest({"cell": self.json_dict(), "version": code_version()})

    def seed_sequence(self) -> np.random.SeedSequence:
        """A child of the grid seed keyed by the cell identity (not by budget, version
        or scheduling), so longer runs replay shorter ones."""
        return _keyed_seed(self.grid_seed, self.identity())

    def data_seed_sequence(self, purpose: str) -> np.random.SeedSequence:
        """A child of the grid seed keyed by the data set, split, seed and ``purpose``
        only: the same for every algorithm of one data set (e.g. the inference study's
        queries, which all models of a data set answer)."""
        ident = {"dataset": self.dataset, "split": self.split, "seed": self.seed,
                 "purpose": purpose}
        return _keyed_seed(self.grid_seed, ident)

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed_sequence())

    def describe(self) -> str:
        kk = f" k={self.k}" if self.k is not None else ""
        return f"{self.dataset}/{self.split} {self.label}{kk} seed={self.seed}"
