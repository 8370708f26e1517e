"""The spec models of a run, one per concept, shared by YAML, the library and the CLI.

A cell of any run is (:class:`DataRef`, :class:`CacheSpec`, optional
:class:`ScreeningSpec`, :class:`SearchSpec`, seed). All are frozen pydantic models
that reject unknown keys; defaults are resolved into them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from bnsl_dist._spec import Spec, make
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.datasets.catalog import shared_data_dir
from bnsl_dist.exceptions import DataError
from bnsl_dist.pipeline.staged import is_url, url_exists
from bnsl_dist.search.qds import ScreeningSpec
from bnsl_dist.search.spec import BudgetSpec, SearchSpec

__all__ = ["DataRef", "CacheSpec", "ScreeningSpec", "SearchSpec", "BudgetSpec", "make",
           "fill_placeholders", "shared_data_dir", "dataset_names", "InferenceSettings"]

_SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def fill_placeholders(template: str, dataset: str, split: str) -> str:
    """Replace ``{dataset}`` and ``{split}`` (other braces, e.g. ``${VAR}``, stay)."""
    return template.replace("{dataset}", dataset).replace("{split}", split)


def dataset_names() -> set[str]:
    """Every name a DataRef may give: bundled, registered (``bnsl-dist data list``) and
    the shared Twenty Datasets copies."""
    from bnsl_dist.data.registry import _BUNDLED_FILES, _BUNDLED_SPLITS
    from bnsl_dist.datasets.catalog import load_catalog

    names = set(_BUNDLED_SPLITS) | set(_BUNDLED_FILES) | set(load_catalog().datasets)
    shared = shared_data_dir()
    if shared is not None and (shared / "twenty").is_dir():
        names |= {p.name for p in (shared / "twenty").iterdir() if p.is_dir()}
    return names


class DataRef(Spec):
    """One split of a data set: a registered or bundled ``name``, or a file ``path``
    (``{dataset}``/``{split}`` and environment variables filled in; a path of the
    client's file system, or a URL fsspec reads, e.g. ``s3://``). ``missing``:
    values missing in the file are an error, or masked (SEM)."""

    name: str = Field(min_length=1)
    split: str = "train"
    path: str | None = None
    missing: Literal["error", "mask"] = "error"

    @field_validator("name", "split")
    @classmethod
    def _slug(cls, v: str) -> str:
        if not _SLUG.match(v):
            raise ValueError(f"{v!r} is not a valid name (letters, digits, _.+-)")
        return v

    @classmethod
    def parse(cls, source: str, missing: Literal["error", "mask"] = "error") -> DataRef:
        """A command-line DATA argument: a file, a URL (read with fsspec where the
        data is read: :func:`~bnsl_dist.pipeline.staged.local_copy`), ``NAME`` or
        ``NAME/SPLIT``.

        Raises
        ------
        DataError
            ``source`` is no file and cannot be ``NAME[/SPLIT]`` (e.g. ``/x/y.csv``).
        """
        if is_url(source):  # asked whether it exists by check(), read by load_data
            stem = source.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1].split(".")[0]
            return make(cls, name=stem if _SLUG.match(stem) else "data", path=source,
                        missing=missing)
        p = Path(source)
        if p.exists():
            stem = p.name.split(".")[0] or "data"
            return make(cls, name=stem if _SLUG.match(stem) else "data",
                        path=str(p.resolve()), missing=missing)
        name, _, split = source.partition("/")
        if not _SLUG.match(name) or (split and not _SLUG.match(split)):
            raise DataError("no such file", path=source)  # a path, not NAME[/SPLIT]
        return make(cls, name=name, split=split or "train", missing=missing)

    @property
    def file(self) -> str | None:
        """The file to read, placeholders and environment variables filled in."""
        if self.path is None:
            return None
        p = os.path.expandvars(fill_placeholders(self.path, self.name, self.split))
        if "$" in p:
            raise DataError(f"data path {self.path!r}: an environment variable in it is not set")
        return p

    def check(self) -> None:
        """Fail now, not after a cluster started, if the name or file is unknown.

        Raises
        ------
        DataError
        """
        if self.path is not None:
            f = self.file
            if f is not None and is_url(f):  # workers read it: only asked if it exists
                if not url_exists(f):
                    raise DataError("no such file", path=f)
            elif f is not None and not Path(f).exists():
                raise DataError("no such file", path=f)
            return
        if self.name not in dataset_names():
            if self.split == "train":
                raise DataError(f"{self.name!r}: no such file, bundled or registered data "
                                f"set (see `bnsl-dist data list`)")
            raise DataError(f"'{self.name}/{self.split}': no such file, nor is "
                            f"{self.name!r} a bundled or registered data set (see "
                            f"`bnsl-dist data list`)")

    def describe(self) -> str:
        return f"{self.name}/{self.split}"


class InferenceSettings(Spec):
    """The inference study's query settings, shared by the grid's ``inference`` section
    (:class:`bnsl_dist.pipeline.tasks.inference.InferenceConfig`) and each of its cells
    (:class:`bnsl_dist.pipeline.tasks.inference.InferenceSpec`)."""

    queries: NonNegativeInt = 100
    evidence_vars: PositiveInt = 5
    marginal_queries: NonNegativeInt = 100
    lw_samples: PositiveInt = 20_000
    truth_samples: PositiveInt = 1_000_000
    truth_pe_samples: NonNegativeInt = 100_000
    memory_gib: PositiveFloat = 2.0
    alpha: PositiveFloat = 1.0

    @property
    def memory_limit(self) -> int:
        return int(self.memory_gib * 2**30)
