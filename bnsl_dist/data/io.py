"""Reading and writing categorical data files, whatever their format.

Each format's reader (:mod:`bnsl_dist.data.readers`: delimited text, ``.csv``, ``.data``,
``.dat``, optionally ``.gz``, in :mod:`bnsl_dist.data.formats.text`; Parquet in
:mod:`bnsl_dist.data.formats.parquet`) turns a file into a raw table; this module combines
the tables of one file or of a data set's splits into
:class:`~bnsl_dist.data.dataset.CategoricalData` with shared arities and state mappings
(strings map to codes in sorted order; the mapping is kept in
:attr:`CategoricalData.states`), and writes CSV that reads back as itself.

Missing values (``?``, empty, ``NA``) are accepted only with ``missing="mask"``
(otherwise: :class:`~bnsl_dist.exceptions.MissingValueError`).
"""

from __future__ import annotations

import csv
import functools
import io
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from bnsl_dist._io import is_plain_int
from bnsl_dist.data.dataset import MAX_STATES, CategoricalData, Dataset
from bnsl_dist.data.readers import (
    MISSING_TOKENS,
    Factorized,
    LabelPolicy,
    MissingPolicy,
    RawTable,
    column_label,
    is_code,
    reader_for,
)
from bnsl_dist.exceptions import DataError

__all__ = ["read_data", "read_dataset", "peek_shape", "write_csv", "MISSING_TOKENS"]


def _parse(path: str | os.PathLike[str], header: bool | None, labels: LabelPolicy,
           missing: MissingPolicy) -> RawTable:
    return reader_for(path).parse(Path(path), header, labels, missing)


def _label_order(labels: set[str]) -> list[str]:
    """Sorted labels ("", a missing cell's, left out); numerically when all are integers."""
    uniq = sorted(labels - {""})
    if uniq and all(is_plain_int(u) for u in uniq):
        uniq.sort(key=int)
    return uniq


def _as_labels(raw: RawTable, j: int) -> Factorized:
    """Column ``j`` of ``raw`` as codes into its distinct labels (an integer column's
    values written as text)."""
    lab = raw.labels[j]
    if lab is not None:
        return raw.cols[j], lab
    values, inverse = np.unique(raw.cols[j], return_inverse=True)
    return inverse.ravel(), [str(v) for v in values.tolist()]


def _combine(raws: Sequence[RawTable], arities: Sequence[int] | None,
             names: Sequence[str] | None) -> list[CategoricalData]:
    """Turn parsed tables into CategoricalData sharing arities and state mappings."""
    ref = raws[0]
    width = len(ref.cols)
    for r in raws[1:]:
        if len(r.cols) != width:
            raise DataError(f"{len(r.cols)} columns, but {ref.path} has {width}", path=r.path)
        if r.names is not None and ref.names is not None and r.names != ref.names:
            raise DataError(f"column names differ from those of {ref.path}", path=r.path, line=1)
    final_names = list(names) if names is not None else (
        ref.names if ref.names is not None else [f"X{i}" for i in range(width)])
    if len(final_names) != width:
        raise DataError(f"{len(final_names)} names given for {width} columns", path=ref.path)
    states: list[tuple[str, ...] | None] = []
    codes = [np.zeros((len(r.cols[0]), width), dtype=np.int64) for r in raws]
    arity = np.zeros(width, dtype=np.int64)
    for j in range(width):
        if any(r.labels[j] is not None for r in raws):
            split = [_as_labels(r, j) for r in raws]
            order = _label_order(set().union(*(set(u) for _, u in split)))
            index = {s: i for i, s in enumerate(order)}
            for k, (cj, uniq) in enumerate(split):  # a missing cell ("") gets code 0
                codes[k][:, j] = np.array([index.get(u, 0) for u in uniq], dtype=np.int64)[cj]
            states.append(tuple(order))
            arity[j] = max(len(order), 1)
        else:
            for k, r in enumerate(raws):
                codes[k][:, j] = r.cols[j]
            arity[j] = max(int(max(c[:, j].max() for c in codes)) + 1, 1)
            states.append(None)
    decl = [r for r in raws if r.declared is not None]
    declared = decl[0].declared if decl else None
    for r in decl[1:]:  # the splits of one data set declare the same arities
        assert declared is not None and r.declared is not None
        if r.declared.shape == declared.shape and not np.array_equal(r.declared, declared):
            j = int(np.flatnonzero(r.declared != declared)[0])
            raise DataError(f"declares arity {r.declared[j]}, but {decl[0].path} declares "
                            f"{declared[j]}", path=r.path, column=column_label(final_names, j))
    if arities is not None:
        declared = np.asarray(arities, dtype=np.int64)
    if declared is not None:
        if declared.shape != (width,):
            raise DataError(f"{declared.shape[0]} arities for {width} columns", path=ref.path)
        for j in range(width):
            if arity[j] > declared[j]:
                k = next(k for k, c in enumerate(codes) if c[:, j].max() >= declared[j])
                row = int(np.argmax(codes[k][:, j] >= declared[j]))
                raise DataError(f"code {codes[k][row, j]} not below the declared arity "
                                f"{declared[j]}", path=raws[k].path,
                                line=raws[k].row_line(row), column=column_label(final_names, j))
        arity = declared
    if arity.max() > MAX_STATES:
        j = int(np.argmax(arity))
        raise DataError(f"{arity[j]} states exceed the maximum of {MAX_STATES}", path=ref.path,
                        column=column_label(final_names, j))
    st = tuple(states) if any(s is not None for s in states) else None
    return [CategoricalData.from_array(c, arities=arity, names=final_names, states=st,
                                       missing=r.missing, source=r.path)
            for c, r in zip(codes, raws, strict=True)]


def read_data(path: str | os.PathLike[str], *, missing: MissingPolicy = "error",
              header: bool | None = None, labels: LabelPolicy = "auto",
              arities: Sequence[int] | None = None,
              names: Sequence[str] | None = None) -> CategoricalData:
    """Read one data file.

    Parameters
    ----------
    path : path-like
        ``.csv``, ``.data``, ``.dat``, ``.txt`` (optionally ``.gz``) or ``.parquet``.
    missing : {"error", "mask"}
        Whether missing values are an error (default) or recorded in a mask.
    header : bool, optional
        Whether line 1 holds names; by default detected (a non-integer token).
    labels : {"auto", "never", "always"}
        Whether tokens may be state labels: "auto" allows them in files with a header
        (a column of codes as written, digits without a leading zero, holds codes; any
        other column labels, so "01".."12" stay themselves), "always" maps every
        column's values to codes in sorted order.
    arities, names : sequence, optional
        Declared arities and names (otherwise taken from the file / max code + 1).

    Raises
    ------
    DataError
        With the file, line and column of the first problem.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.csv")
    >>> _ = open(p, "w").write("0,1\\n1,1\\n")
    >>> read_data(p).arities.tolist()
    [2, 2]
    """
    return _combine([_parse(path, header, labels, missing)], arities, names)[0]


def peek_shape(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """(variables, rows) of a data file without reading its values: a Parquet file's
    metadata, or a text file's first line (its fields) and line ends (a ``.dat`` file's
    two heading lines and a detected header not counted; blank lines are). None when
    the file cannot be read. A hint for sizing work (the grid's cache estimates), not a
    check: :func:`read_data` finds what is wrong.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "d.csv")
    >>> _ = open(p, "w").write("a,b,c\\n0,1,0\\n1,1,0\\n")
    >>> peek_shape(p)
    (3, 2)
    """
    p = Path(path)
    try:
        st = p.stat()
        return _peek_shape(str(p), st.st_mtime_ns, st.st_size)
    except (OSError, ValueError, EOFError, UnicodeDecodeError):
        return None


@functools.lru_cache(maxsize=64)
def _peek_shape(path: str, mtime_ns: int, size: int) -> tuple[int, int]:
    return reader_for(path).peek(Path(path))


def read_dataset(name: str, paths: Mapping[str, str | os.PathLike[str]], *,
                 missing: MissingPolicy = "error", header: bool | None = None,
                 labels: LabelPolicy = "auto", arities: Sequence[int] | None = None,
                 names: Sequence[str] | None = None) -> Dataset:
    """Read the splits of a data set together, so that arities and labels agree."""
    keys = list(paths)
    raws = [_parse(paths[k], header, labels, missing) for k in keys]
    datas = _combine(raws, arities, names)
    return Dataset(name, dict(zip(keys, datas, strict=True)))


def write_csv(data: CategoricalData, path: str | os.PathLike[str], *, header: bool = True,
              labels: bool = True) -> None:
    """Write data as CSV atomically (temp file, then rename); missing cells as ``?``.

    Raises
    ------
    DataError
        With ``labels``, a state that some row takes and that :func:`read_data` would
        not read back as itself: a missing-value token (:data:`MISSING_TOKENS`, e.g.
        the state ``NA`` of the bnlearn network pathfinder) or a label with white space
        around it; or, in a column whose states (those rows take) are all codes as
        written (digits, no leading zero), one whose value is not its code (bnlearn's
        link labels states 1..4: read back, "1" is code 1, the arity one more). Nothing is written; ``labels=False`` writes the
        codes.
    """
    from bnsl_dist._io import atomic_write_text

    cols = []
    for j in range(data.n_vars):
        col = data.codes[:, j].astype(np.int64)
        if labels and data.states is not None and data.states[j] is not None:
            lab = np.array(data.states[j], dtype=object)
            used = col if data.missing is None else col[~data.missing[:, j]]
            ks = np.unique(used).tolist()
            if ks and all(is_code(str(lab[k])) for k in ks):
                # a column of integer tokens reads back as codes (their values; arity the
                # largest plus one): only labels equal to their codes survive that
                k = next((k for k in ks if int(str(lab[k])) != k), None)
                if k is not None:
                    raise DataError(f"state {str(lab[k])!r} (code {k}) would read back as code "
                                    f"{int(str(lab[k]))}: integer tokens are codes; write the "
                                    "state codes instead (labels=False, `bnsl-dist data "
                                    "sample --codes`)", path=str(path),
                                    column=column_label(list(data.names), j))
            for k in ks:
                s = str(lab[k])
                if s in MISSING_TOKENS or s != s.strip():
                    why = ("a missing value" if s in MISSING_TOKENS
                           else "another label (white space is stripped)")
                    raise DataError(f"state {s!r} would read back as {why}; write the state "
                                    "codes instead (labels=False, `bnsl-dist data sample "
                                    "--codes`)", path=str(path),
                                    column=column_label(list(data.names), j))
            vals = lab[col]
        else:
            vals = col.astype(str).astype(object)
        if data.missing is not None:
            vals = np.where(data.missing[:, j], "?", vals)
        cols.append(vals)
    # the csv module, as pandas' to_csv writes (minimal quoting, "\n"), row by row: to_csv
    # converts every column again for each chunk of 100,000 / n rows, O(N n²) in all
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    if header:
        out.writerow(data.names)
    if cols:
        out.writerows(np.stack(cols, axis=1).tolist())
    atomic_write_text(path, buf.getvalue())


