"""Cells: one unit of work of any run (a grid, ``learn``'s seeds) and the cache it needs.

A :class:`Cell` is (data reference, cache spec, optional screening spec, search spec,
seed, and the SEM or inference-study settings of those grid kinds) plus the grid it
belongs to. Its ``key`` hashes its canonical JSON with the code
version, so a results folder knows which cells are done; its random generator is a
:class:`numpy.random.SeedSequence` child of the grid seed keyed by the cell's identity,
so results never depend on which worker runs a cell, or when.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import numpy as np
from pydantic import NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from bnsl_dist import __version__
from bnsl_dist._json import canonical_json, json_digest
from bnsl_dist._spec import Spec
from bnsl_dist.pipeline.specs import (
    CacheSpec,
    DataRef,
    InferenceSettings,
    ScreeningSpec,
    SearchSpec,
    fill_placeholders,
)
from bnsl_dist.search.base import Budget

__all__ = ["Cell", "CacheJob", "SemSpec", "InferenceSpec", "canonical_json", "code_version"]


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


class SemSpec(Spec):
    """SEM-kMAX imputation of one cell (docs/ALGORITHMS.md §9): the MCAR missing rate, the
    EM iteration cap and the M-step budgets (:class:`~bnsl_dist.pipeline.config.SemConfig`):
    k-MAX's seconds per variable per M-step (None: the data-scaled iterations), whether the
    cache's budget is the data-scaled one or the cell's ``cache`` budget, and a factor on
    both (``budget_scale``: the paper's tuning study, §7.4)."""

    missing_rate: float
    max_em_iterations: PositiveInt = 10
    search_seconds_per_variable: PositiveFloat | None = None
    cache_budget: Literal["data", "grid"] = "data"
    budget_scale: PositiveFloat = 1.0

    def json_dict(self) -> dict[str, Any]:
        """The canonical JSON data; a ``budget_scale`` of 1 is left out, so cells (and
        their keys) of earlier versions stay valid."""
        out = super().json_dict()
        if out.get("budget_scale") == 1.0:
            out.pop("budget_scale")
        return out


class InferenceSpec(InferenceSettings):
    """The inference study's settings of one cell
    (:class:`~bnsl_dist.pipeline.config.InferenceConfig`); ``reference`` marks the unbounded learner's cell, which also answers the queries on
    the true network when the data set has one."""

    reference: bool = False


class Cell(Spec):
    """One point of a run; ``label`` names the algorithm entry in tables."""

    grid: str
    kind: Literal["search", "sem", "inference"] = "search"
    label: str
    data: DataRef | None
    cache: CacheSpec
    screening: ScreeningSpec | None = None
    search: SearchSpec
    seed: NonNegativeInt
    grid_seed: NonNegativeInt = 0
    sem: SemSpec | None = None
    inference: InferenceSpec | None = None
    #: A split the learned DAG is scored on (held-out log-likelihood, CPTs fitted on
    #: the cell's data with the cache's equivalent sample size); screening grids.
    holdout: DataRef | None = None

    def json_dict(self) -> dict[str, Any]:
        """The canonical JSON data of the cell; settings of other grid kinds are left
        out when unset, so cells (and their keys) of earlier versions stay valid."""
        out = super().json_dict()
        for name in ("inference", "holdout"):
            if out.get(name) is None:
                out.pop(name, None)
        if self.sem is not None:
            out["sem"] = self.sem.json_dict()
        return out

    @model_validator(mode="after")
    def _consistent(self) -> Cell:
        if self.data is None and (self.cache.path is None or self.screening is not None
                                  or self.kind == "sem"):
            raise ValueError("a cell without data needs a ready cache file and no "
                             "screening")
        if (self.kind == "sem") != (self.sem is not None):
            raise ValueError("a 'sem' cell needs its 'sem' settings (and only it)")
        if (self.kind == "inference") != (self.inference is not None):
            raise ValueError("an 'inference' cell needs its 'inference' settings (and only it)")
        if self.kind == "inference" and self.data is None:
            raise ValueError("an 'inference' cell needs data (its CPTs are fitted on them)")
        return self

    # -- what grids and records read -------------------------------------------------
    @property
    def algorithm(self) -> str:
        return self.search.algorithm

    @property
    def k(self) -> int | None:
        return self.search.k

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
    def params_json(self) -> str:
        return canonical_json(self.search.params)

    @property
    def cache_job(self) -> CacheJob:
        return CacheJob(data=self.data, screening=self.screening, cache=self.cache)

    def identity(self) -> dict[str, Any]:
        """What makes the cell what it is (its seed stream derives from this). The
        inference study's settings are left out: the model a cell learns does not depend
        on how many queries it then answers (its key, which names its record, does). So
        is a SEM cell's ``budget_scale``, a budget: the cells of one repetition at several
        budgets mask the same cells and start EM from the same chain."""
        sem = {} if self.sem is None else self.sem.json_dict()
        sem.pop("budget_scale", None)
        out = {"grid": self.grid, "kind": self.kind, "dataset": self.dataset,
               "split": self.split, "algorithm": self.algorithm, "label": self.label,
               "params": self.search.params, "k": self.k, "seed": self.seed,
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
