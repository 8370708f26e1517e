"""The dataset catalog's schema: the models of a ``registry/*.yaml`` collection (download
``sources``, ``networks``: a BIF file or a random-network recipe, ``datasets``: files per
split or samples of a network), and the catalog read from every collection of a folder
(:func:`load_catalog`), each error naming the file and the field. What the entries name is
fetched, generated and read by :mod:`bnsl_dist.datasets.catalog`.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
)

from bnsl_dist._spec import NoBoolModel, UniqueKeyLoader
from bnsl_dist.exceptions import DataError, InvalidConfigError

__all__ = ["BifNetwork", "Catalog", "Collection", "Entry", "FileSpec", "FilesDataset",
           "Located", "RandomNetwork", "SampleSpec", "SampledDataset", "Source", "catalog_dir",
           "load_catalog"]


class _Model(NoBoolModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Source(_Model):
    """A download URL pattern with ``{name}`` and ``{split}`` placeholders."""

    url: str
    split_names: dict[str, str] = {}

    @field_validator("url")
    @classmethod
    def _has_name(cls, v: str) -> str:
        if "{name}" not in v and "{file}" not in v:
            raise ValueError("the URL pattern needs a {name} placeholder")
        return v


class Located(_Model):
    """A file in the mirror layout, identified by the SHA-256 of its uncompressed bytes."""

    path: str
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    url: str | None = None

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        if not v or v.startswith("/") or ".." in Path(v).parts or "\\" in v:
            raise ValueError("must be a relative path inside the data root")
        return v


class FileSpec(Located):
    n_rows: Annotated[int, Field(gt=0)] | None = None


class FilesDataset(_Model):
    kind: Literal["files"]
    title: str = ""
    n_vars: Annotated[int, Field(gt=0)] | None = None
    arity: Annotated[int, Field(gt=0)] | None = None
    splits: Annotated[dict[str, FileSpec], Field(min_length=1)]


class SampleSpec(_Model):
    n_samples: Annotated[int, Field(gt=0)]
    seed: Annotated[int, Field(ge=0)]


class SampledDataset(_Model):
    kind: Literal["sampled"]
    title: str = ""
    network: str
    splits: Annotated[dict[str, SampleSpec], Field(min_length=1)]


class BifNetwork(Located):
    kind: Literal["bif"]
    title: str = ""
    n_vars: Annotated[int, Field(gt=0)] | None = None
    n_arcs: Annotated[int, Field(ge=0)] | None = None
    n_parameters: Annotated[int, Field(gt=0)] | None = None


class RandomNetwork(_Model):
    kind: Literal["random"]
    title: str = ""
    n_vars: Annotated[int, Field(gt=0)]
    max_indegree: Annotated[int, Field(ge=0)]
    arity_range: tuple[Annotated[int, Field(gt=0)], Annotated[int, Field(gt=0)]] = (2, 4)
    concentration: Annotated[float, Field(gt=0)] = 1.0
    max_parent_configs: Annotated[int, Field(gt=0)] | None = None
    seed: Annotated[int, Field(ge=0)]

    @field_validator("arity_range")
    @classmethod
    def _ordered(cls, v: tuple[int, int]) -> tuple[int, int]:
        if v[0] > v[1]:
            raise ValueError(f"arity_range [{v[0]}, {v[1]}]: the lower end is above the upper")
        return v


def _kind(v: Any) -> Any:
    return v.get("kind") if isinstance(v, dict) else getattr(v, "kind", None)


# Tagged by a callable, not Field(discriminator="kind"): pydantic allows no before-validator
# (NoBoolModel's) on a discriminator field.
_ByKind = Discriminator(_kind)
DatasetSpec = Annotated[Annotated[FilesDataset, Tag("files")]
                        | Annotated[SampledDataset, Tag("sampled")], _ByKind]
NetworkSpec = Annotated[Annotated[BifNetwork, Tag("bif")]
                        | Annotated[RandomNetwork, Tag("random")], _ByKind]


class Collection(_Model):
    """One YAML file of the registry (``registry/*.yaml``)."""

    collection: str
    description: str = ""
    citation: str = ""
    sources: list[Source] = []
    networks: dict[str, NetworkSpec] = {}
    datasets: dict[str, DatasetSpec] = {}


@dataclass(frozen=True)
class Entry:
    """A registered network or dataset, with the file and sources it came from."""

    name: str
    spec: Any  # FilesDataset | SampledDataset | BifNetwork | RandomNetwork
    sources: tuple[Source, ...]
    config: Path  # the YAML file that registers it


@dataclass(frozen=True)
class Catalog:
    """Every registered network and dataset (two name spaces)."""

    networks: dict[str, Entry]
    datasets: dict[str, Entry]

    def dataset(self, name: str) -> Entry:
        if name not in self.datasets:
            hint = " (a network: use load_network)" if name in self.networks else ""
            raise DataError(f"no registered dataset {name!r}{hint}; run `bnsl-dist data list`")
        return self.datasets[name]

    def network(self, name: str) -> Entry:
        if name not in self.networks:
            raise DataError(f"no registered network {name!r}; run `bnsl-dist data list`")
        return self.networks[name]


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


def _read_collection(label: str, text: str) -> Collection:
    try:
        raw = yaml.load(text, Loader=UniqueKeyLoader)  # safe; a key given twice: error
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise InvalidConfigError(f"{label}{where}: invalid YAML: "
                                 f"{getattr(exc, 'problem', None) or exc}") from None
    if not isinstance(raw, dict):
        raise InvalidConfigError(f"{label}: expected a mapping at the top level")
    try:
        return Collection.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
        raise InvalidConfigError(f"{label}: field {_field(err['loc'])!r}: {err['msg']}{more}"
                                 ) from None


def catalog_dir() -> Traversable:
    """``$BNSL_DATASETS``, or the registry shipped in the package (``registry/``)."""
    env = os.environ.get("BNSL_DATASETS")
    return Path(env) if env else resources.files("bnsl_dist.datasets") / "registry"


def load_catalog(directory: str | os.PathLike[str] | Traversable | None = None) -> Catalog:
    """Read and validate every ``*.yaml`` of ``directory`` (default: :func:`catalog_dir`).

    Raises
    ------
    InvalidConfigError
        Naming the file and the field: bad YAML, unknown or mistyped fields, a name
        registered twice, a sampled dataset naming an unknown network.

    Examples
    --------
    >>> cat = load_catalog()
    >>> cat.dataset("nltcs").spec.kind, cat.network("r0").spec.n_vars
    ('files', 2000)
    """
    if directory is None:
        d = catalog_dir()
    elif isinstance(directory, Traversable):
        d = directory
    else:
        d = Path(directory)
    files = sorted((f for f in d.iterdir() if f.name.endswith(".yaml")),
                   key=lambda f: f.name) if d.is_dir() else []
    texts = []
    for f in files:
        try:
            texts.append((str(f), f.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidConfigError(f"{f}: cannot read: {exc}") from None
    return _load_catalog(str(d), tuple(texts))


@functools.lru_cache(maxsize=8)
def _load_catalog(directory: str, files: tuple[tuple[str, str], ...]) -> Catalog:
    if not files:
        raise InvalidConfigError(f"{directory}: no dataset registry (*.yaml) found")
    networks: dict[str, Entry] = {}
    datasets: dict[str, Entry] = {}
    for label, text in files:
        col = _read_collection(label, text)
        srcs = tuple(col.sources)
        for table, space, kind in ((col.networks, networks, "networks"),
                                   (col.datasets, datasets, "datasets")):
            for name, spec in table.items():
                if name in space:
                    raise InvalidConfigError(f"{label}: field '{kind}.{name}': already "
                                             f"registered in {space[name].config}")
                if not name or "/" in name:
                    raise InvalidConfigError(f"{label}: field '{kind}.{name}': bad name")
                space[name] = Entry(name, spec, srcs, Path(label))
    for name, e in datasets.items():
        if isinstance(e.spec, SampledDataset) and e.spec.network not in networks:
            raise InvalidConfigError(f"{e.config}: field 'datasets.{name}.network': unknown "
                                     f"network {e.spec.network!r}")
    return Catalog(networks, datasets)
