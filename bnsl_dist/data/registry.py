"""Where data sets live: files on disk, data shipped in the package, registered names.

``resolve_data(spec)`` accepts a path, or ``NAME[/SPLIT]`` of a bundled data set
(``nltcs``, ``nltcs/test``, ``wine``, ``child-5000``).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from bnsl_dist.data.dataset import CategoricalData, Dataset
from bnsl_dist.data.io import read_data, read_dataset
from bnsl_dist.exceptions import DataError

__all__ = ["bundled_path", "bundled_names", "resolve_data", "load_bundled_dataset"]

_BUNDLED_SPLITS = {"nltcs": ("train", "valid", "test")}
_BUNDLED_FILES = {"wine": "wine.csv.gz", "child-5000": "child-5000.dat.gz"}


def bundled_path(relative: str) -> Path:
    """Path of a file shipped in ``bnsl_dist/_bundled``."""
    p = Path(str(resources.files("bnsl_dist") / "_bundled" / relative))
    if not p.exists():
        raise DataError(f"no bundled file {relative!r}")
    return p


def bundled_names() -> list[str]:
    names = [f"{k}/{s}" for k, ss in _BUNDLED_SPLITS.items() for s in ss]
    return sorted(names + list(_BUNDLED_FILES))


def load_bundled_dataset(name: str) -> Dataset:
    """A bundled data set with all its splits (arities agree across splits)."""
    if name not in _BUNDLED_SPLITS:
        raise DataError(f"no bundled data set {name!r} with splits; have {sorted(_BUNDLED_SPLITS)}")
    return read_dataset(name, {s: bundled_path(f"{name}/{s}.csv.gz")
                               for s in _BUNDLED_SPLITS[name]})


def resolve_data(spec: str | os.PathLike[str], **read_kwargs: object) -> CategoricalData:
    """Load data from a path, or from a bundled ``NAME[/SPLIT]`` (default split: train).

    Examples
    --------
    >>> d = resolve_data("nltcs/test")
    >>> d.n_vars, d.arities.max()
    (16, np.int64(2))
    """
    p = Path(spec)
    if p.exists():
        return read_data(p, **read_kwargs)  # type: ignore[arg-type]
    s = str(spec)
    name, _, split = s.partition("/")
    if name in _BUNDLED_SPLITS:
        return load_bundled_dataset(name)[split or "train"]
    if s in _BUNDLED_FILES:
        return read_data(bundled_path(_BUNDLED_FILES[s]), **read_kwargs)  # type: ignore[arg-type]
    raise DataError(f"{spec}: no such file, and not a bundled data set "
                    f"(bundled: {', '.join(bundled_names())})")
