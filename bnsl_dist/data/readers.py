"""Data readers by file format: the registry that :func:`~bnsl_dist.data.io.read_data`
and :func:`~bnsl_dist.data.io.peek_shape` dispatch on.

A reader turns one file into a :class:`RawTable` (columns of codes or labels, names,
declared arities, the missing mask); :mod:`bnsl_dist.data.io` then combines tables into
:class:`~bnsl_dist.data.dataset.CategoricalData` the same way for every format. A file
goes to the reader registered for its suffix (a trailing ``.gz`` removed, case ignored),
or to the default reader (delimited text, :mod:`bnsl_dist.data.formats.text`). A new format is one
module in :mod:`bnsl_dist.data.formats` that calls :func:`register_reader`: every module
there is imported when a reader is first looked up.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["RawTable", "Reader", "register_reader", "reader_for", "base_suffix",
           "column_label", "is_code", "Factorized", "MissingPolicy", "LabelPolicy",
           "MISSING_TOKENS"]

MissingPolicy = Literal["error", "mask"]
LabelPolicy = Literal["auto", "never", "always"]

#: Tokens read as a missing value (only where the caller asks for a missing mask).
MISSING_TOKENS = frozenset({"?", "", "NA"})

#: A column as (the code of each row into ``uniques``, its distinct stripped tokens).
Factorized = tuple[NDArray[np.intp], list[str]]


def is_code(tok: str) -> bool:
    """``tok`` is a state code as written: ASCII digits without a leading zero. Where a
    file may hold labels, a column of other integer tokens ("01".."12", "-1", "+2") is one
    of labels: read as codes, "01" became code 1 (written back as "1") and the arity the
    largest value plus one, a state no row takes."""
    return tok.isascii() and tok.isdigit() and (tok[0] != "0" or tok == "0")


@dataclass
class RawTable:
    """One file as read, before arities and state mappings are settled."""

    path: str
    names: list[str] | None
    declared: NDArray[np.int64] | None
    #: per column: int64 codes, or (a label column) codes into ``labels[j]``
    cols: list[NDArray[Any]]
    labels: list[list[str] | None]  # a label column's distinct labels ("": missing)
    missing: NDArray[np.bool_] | None
    #: the 1-based line of a data row (0-based index): blank lines and fields spanning
    #: lines counted, as in the messages of the readers' own checks
    row_line: Callable[[int], int]


@dataclass(frozen=True)
class Reader:
    """A file format: ``parse(path, header, labels, missing)`` reads a file (raising
    :class:`~bnsl_dist.exceptions.DataError` naming it), ``peek(path)`` gives its
    (variables, rows) cheaply, without reading values."""

    name: str
    suffixes: tuple[str, ...]
    parse: Callable[[Path, bool | None, LabelPolicy, MissingPolicy], RawTable]
    peek: Callable[[Path], tuple[int, int]]


_READERS: dict[str, Reader] = {}
_DEFAULT = "text"


def register_reader(reader: Reader) -> Reader:
    """Add ``reader``; a suffix or name another reader holds is an error.

    Raises
    ------
    ValueError
    """
    for other in _READERS.values():
        if other.name != reader.name and (set(other.suffixes) & set(reader.suffixes)):
            raise ValueError(f"reader {reader.name!r}: suffixes {reader.suffixes} overlap "
                             f"{other.name!r}'s {other.suffixes}")
    _READERS[reader.name] = reader
    return reader


def column_label(names: list[str] | None, j: int) -> str | int:
    """Column ``j`` as error messages name it: ``3``, or ``3 (name)``."""
    return j + 1 if names is None else f"{j + 1} ({names[j]})"


def base_suffix(path: Path) -> str:
    """The suffix that names the format: ``x.CSV.gz`` -> ``.csv``."""
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _load_all() -> None:
    import bnsl_dist.data.formats as formats

    for mod in pkgutil.iter_modules(formats.__path__):
        importlib.import_module(f"{formats.__name__}.{mod.name}")


def reader_for(path: str | os.PathLike[str]) -> Reader:
    """The reader of ``path``'s format (the delimited-text reader for other suffixes)."""
    _load_all()
    suffix = base_suffix(Path(path))
    for reader in _READERS.values():
        if suffix in reader.suffixes:
            return reader
    return _READERS[_DEFAULT]
