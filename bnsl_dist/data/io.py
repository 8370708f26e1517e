"""Readers and writers for categorical data files.

Formats (compressed with gzip when the name ends in ``.gz``):

* headerless integer tables (``.data``/``.csv``, comma or white-space separated);
* CSV with a header row of names, integer or string states (strings map to codes in
  sorted order; the mapping is kept in :attr:`CategoricalData.states`);
  ``.csv`` files, and others whose first line holds a comma, are read by a CSV parser
  (quoted fields, CRLF, a UTF-8 byte-order mark); white space around fields and blank
  lines (empty or white space only) are ignored;
* GOBNILP/BLIP ``.dat``: white-space separated, line 1 names, line 2 arities;
* Parquet (integer or string/categorical columns).

Missing values (``?``, empty, ``NA``) are accepted only with ``missing="mask"``
(otherwise: :class:`~bnsl_dist.exceptions.MissingValueError`).
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from bnsl_dist._io import is_plain_int, read_text
from bnsl_dist.data.dataset import MAX_STATES, CategoricalData, Dataset
from bnsl_dist.data.readers import (
    LabelPolicy,
    MissingPolicy,
    RawTable,
    Reader,
    base_suffix,
    column_label,
    reader_for,
    register_reader,
)
from bnsl_dist.exceptions import DataError, MissingValueError

__all__ = ["read_data", "read_dataset", "peek_shape", "write_csv", "MISSING_TOKENS"]

#: Tokens read as a missing value (only where the caller asks for a missing mask).
MISSING_TOKENS = frozenset({"?", "", "NA"})


def _is_int(tok: str) -> bool:
    return is_plain_int(tok, plus=False)


def _is_code(tok: str) -> bool:
    """``tok`` is a state code as written: ASCII digits without a leading zero. Where a
    file may hold labels, a column of other integer tokens ("01".."12", "-1", "+2") is one
    of labels: read as codes, "01" became code 1 (written back as "1") and the arity the
    largest value plus one, a state no row takes."""
    return tok.isascii() and tok.isdigit() and (tok[0] != "0" or tok == "0")


_SEPARATOR = np.zeros(256, dtype=bool)
_SEPARATOR[np.frombuffer(b' ,\t\n\r"', dtype=np.uint8)] = True


def _has_non_code(text: str, start: int) -> bool:
    """Whether ``text`` from ``start`` (a table :func:`_int_table` read as integers) holds
    a token that is not a code as written: a sign, or a leading zero ("01"). Vectorised: a
    regular expression took longer than the table's parsing."""
    body = text[max(start - 1, 0):]  # with the line end before the first record
    if "+" in body or "-" in body:
        return True
    b = np.frombuffer(body.encode("utf-8"), dtype=np.uint8)
    z = np.flatnonzero(b[1:-1] == ord("0")) + 1  # zeros with a byte either side
    nxt = b[z + 1]
    z = z[(nxt >= ord("0")) & (nxt <= ord("9"))]  # a zero, then a digit: "10", "01"
    return bool(_SEPARATOR[b[z - 1]].any())  # a zero that opens a token: "01"


def _is_names_line(toks: Sequence[str]) -> bool:
    """A first line of names, not data: a token that is neither a code nor missing."""
    return any(not _is_int(t) and t not in MISSING_TOKENS for t in toks)


def _records(buf: io.StringIO, comma: bool, first_line: int) -> Iterator[tuple[int, list[str]]]:
    """(1-based line, stripped fields) of each non-blank record from ``buf``'s position.

    Comma-separated text goes through the :mod:`csv` parser (quoting, CRLF, fields
    spanning lines); other text is split at runs of white space.
    """
    if comma:
        reader = csv.reader(buf)
        line = first_line
        for row in reader:
            if row and (len(row) > 1 or row[0].strip()):  # a white-space line is blank
                yield line, [t.strip() for t in row]
            line = first_line + reader.line_num
        return
    for i, text in enumerate(buf, start=first_line):
        toks = text.split()
        if toks:
            yield i, toks


def _line_finder(text: str, start: int, comma: bool, body_line: int) -> Callable[[int], int]:
    """The line of data row ``r`` (0-based) of the records from offset ``start``: read
    again (only when an error names a row) as :func:`_records` reads them."""
    def row_line(r: int) -> int:
        buf = io.StringIO(text, newline="")
        buf.seek(start)
        for i, (line, _) in enumerate(_records(buf, comma, body_line)):
            if i == r:
                return line
        return body_line  # not reached: r is a row of the table read from this text
    return row_line


def _int_table(buf: io.StringIO, comma: bool, width: int) -> NDArray[np.int64] | None:
    """The rest of ``buf`` as a table of non-negative integers, or None if it is not one."""
    try:
        df = pd.read_csv(buf, header=None, sep="," if comma else r"\s+", dtype=np.int64,
                         engine="c", na_filter=False, low_memory=False)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, OverflowError):
        return None
    arr = df.to_numpy()
    return arr if df.shape[1] == width and arr.size and arr.min() >= 0 else None


#: A column as (the code of each row into ``uniques``, its distinct stripped tokens).
_Factorized = tuple[NDArray[np.intp], list[str]]


def _factorize(col: Any) -> _Factorized:
    """``col``'s tokens as codes into their distinct values, white space stripped."""
    codes, uniq = pd.factorize(col)
    raw = [str(u) for u in uniq]
    stripped = [u.strip() for u in raw]
    if stripped != raw:  # tokens equal once stripped share one value
        merged, uniq2 = pd.factorize(np.asarray(stripped, dtype=object))
        return merged[codes], [str(u) for u in uniq2]
    return codes, stripped


def _str_table(buf: io.StringIO, width: int) -> list[_Factorized] | None:
    """The rest of a comma-separated ``buf`` as factorised columns, read by pandas' C
    parser; None if its rows are not all ``width`` fields long (the record loop then
    finds the line). In one pass (``low_memory=False``): by default the parser makes
    every column anew for each chunk of about 2**20 / width rows, O(N width²) in all."""
    try:
        df = pd.read_csv(buf, header=None, sep=",", dtype="string[pyarrow]", engine="c",
                         na_filter=False, skip_blank_lines=True, low_memory=False)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    if df.shape[1] != width or df.shape[0] == 0 or bool(df.isna().to_numpy().any()):
        return None  # short rows are padded with NA by pandas: not a table
    return [_factorize(df[c]) for c in df.columns]


def _first_row(codes: NDArray[np.intp], values: Sequence[int]) -> int:
    """The first row whose code is one of ``values``."""
    return int(np.flatnonzero(np.isin(codes, list(values)))[0])


def _columns(table: list[_Factorized], lines: list[int] | None, *, spath: str,
             names: list[str] | None, labels: LabelPolicy, allow_labels: bool,
             missing: MissingPolicy, declared: NDArray[np.int64] | None,
             row_line: Callable[[int], int] | None = None) -> RawTable | None:
    """The code or label columns of a table of factorised tokens (each distinct token
    is checked once). ``lines`` (the 1-based line of each row) makes a problem a
    :class:`DataError` naming its line and column; without them (the table came from
    :func:`_str_table`) a problem returns None, and the record loop reads the file
    again to name it; ``row_line`` then gives the line of a row for later checks."""
    n_rows = table[0][0].shape[0]
    miss = np.zeros((n_rows, len(table)), dtype=bool)
    for j, (codes, uniq) in enumerate(table):
        absent = [i for i, u in enumerate(uniq) if u in MISSING_TOKENS]
        if absent:
            miss[:, j] = np.isin(codes, absent)
    if miss.any() and missing != "mask":
        if lines is None:
            return None
        r, c = np.argwhere(miss)[0]
        tok = table[c][1][table[c][0][r]]
        raise MissingValueError(f"missing value {tok!r} where none are allowed",
                                path=spath, line=lines[r], column=column_label(names, int(c)))
    cols: list[NDArray[Any]] = []
    label_sets: list[list[str] | None] = []
    for j, (codes, uniq) in enumerate(table):
        present = [i for i, u in enumerate(uniq) if u not in MISSING_TOKENS]
        non_int = [i for i in present if not _is_int(uniq[i])]
        if labels == "always" or (allow_labels and not all(_is_code(uniq[i]) for i in present)):
            cols.append(codes)
            label_sets.append(["" if u in MISSING_TOKENS else u for u in uniq])
            continue
        if non_int:
            if lines is None:
                return None
            r = _first_row(codes, non_int)
            raise DataError(f"non-integer code {uniq[codes[r]]!r}", path=spath,
                            line=lines[r], column=column_label(names, j))
        try:
            value = np.array([0 if u in MISSING_TOKENS else int(u) for u in uniq],
                             dtype=np.int64)
        except OverflowError:
            if lines is None:
                return None
            big = [i for i in present if not -2**63 <= int(uniq[i]) < 2**63]
            r = _first_row(codes, big)
            raise DataError(f"code {uniq[codes[r]]} out of range", path=spath, line=lines[r],
                            column=column_label(names, j)) from None
        out = value[codes]
        if out.size and out.min() < 0:
            if lines is None:
                return None
            r = int(np.argmin(out))
            raise DataError(f"negative code {out[r]}", path=spath, line=lines[r],
                            column=column_label(names, j))
        cols.append(out)
        label_sets.append(None)
    if row_line is None:
        assert lines is not None  # the caller gives one or the other
        row_line = lines.__getitem__
    return RawTable(spath, names, declared, cols, label_sets, miss if miss.any() else None,
                    row_line)


def _parse_text(path: Path, header: bool | None, labels: LabelPolicy,
                missing: MissingPolicy) -> RawTable:
    spath = str(path)
    text = read_text(path, newline="")
    buf = io.StringIO(text, newline="")
    comma = base_suffix(path) == ".csv" or "," in buf.readline()
    buf.seek(0)
    records = _records(buf, comma, 1)
    first = next(records, None)
    if first is None:
        raise DataError("empty file", path=spath)
    dat = base_suffix(path) == ".dat"
    names: list[str] | None = None
    declared = None
    if dat:
        names = first[1]
        ar = next(records, None)
        if ar is None:
            raise DataError("a .dat file needs a names line and an arities line", path=spath)
        if len(ar[1]) != len(names) or not all(_is_int(t) for t in ar[1]):
            raise DataError(f"expected {len(names)} integer arities", path=spath, line=ar[0])
        bad = next((j for j, t in enumerate(ar[1]) if not 1 <= int(t) <= MAX_STATES), None)
        if bad is not None:  # a huge one overflowed int64; 0 or -1 failed every code
            raise DataError(f"arity {ar[1][bad]} not in 1..{MAX_STATES}", path=spath,
                            line=ar[0], column=column_label(names, bad))
        declared = np.array([int(t) for t in ar[1]], dtype=np.int64)
    else:
        if header is None:
            header = _is_names_line(first[1])
        if header:
            names = first[1]
    if names is not None and len(set(names)) != len(names):
        dup = next(s for s in names if names.count(s) > 1)
        raise DataError(f"duplicate variable name {dup!r}", path=spath, line=1)
    if names is None:  # the first record is data: read it again
        buf.seek(0)
        records = _records(buf, comma, 1)
    start = buf.tell()
    ends = text.count("\n", 0, start) + text.count("\r", 0, start) - text.count("\r\n", 0, start)
    body_line = ends + 1  # where the data records start (CR-only line ends counted too)
    width = len(names) if names is not None else len(first[1])
    if labels == "auto":
        allow_labels = names is not None and not dat
    else:
        allow_labels = labels == "always"

    # Fast path: a clean integer table (where labels may be, of codes as written).
    if labels != "always":
        arr = _int_table(buf, comma, width)
        if arr is not None and allow_labels and _has_non_code(text, start):
            arr = None  # "01", "+1": labels where labels may be
        if arr is not None:
            return RawTable(spath, names, declared, [arr[:, j] for j in range(width)],
                            [None] * width, None, _line_finder(text, start, comma, body_line))
        buf.seek(start)
        records = _records(buf, comma, body_line)

    settings: dict[str, Any] = {"spath": spath, "names": names, "labels": labels,
                                "allow_labels": allow_labels, "missing": missing,
                                "declared": declared}
    # Labels, missing values: a comma-separated table is read by pandas' C parser.
    if comma:
        buf.seek(start)
        table = _str_table(buf, width)
        raw = None if table is None else _columns(
            table, None, row_line=_line_finder(text, start, comma, body_line), **settings)
        if raw is not None:
            return raw
        buf.seek(start)
        records = _records(buf, comma, body_line)

    # Record by record: find the exact problem, or read white-space separated text.
    rows: list[list[str]] = []
    lines: list[int] = []
    for line, toks in records:
        if len(toks) != width:
            raise DataError(f"expected {width} fields, found {len(toks)}", path=spath, line=line)
        rows.append(toks)
        lines.append(line)
    if not rows:
        raise DataError("no data rows", path=spath)
    cells = np.array(rows, dtype=object)
    raw = _columns([_factorize(cells[:, j]) for j in range(width)], lines, **settings)
    assert raw is not None  # with lines, a problem raises
    return raw


def _parse(path: str | os.PathLike[str], header: bool | None, labels: LabelPolicy,
           missing: MissingPolicy) -> RawTable:
    return reader_for(path).parse(Path(path), header, labels, missing)


def _label_order(labels: set[str]) -> list[str]:
    """Sorted labels ("", a missing cell's, left out); numerically when all are integers."""
    uniq = sorted(labels - {""})
    if uniq and all(is_plain_int(u) for u in uniq):
        uniq.sort(key=int)
    return uniq


def _as_labels(raw: RawTable, j: int) -> _Factorized:
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


def _peek_text(p: Path) -> tuple[int, int]:
    opener = gzip.open if p.name.endswith(".gz") else open
    with opener(p, "rb") as f:
        first = f.readline()
        end = b"\r" if b"\n" not in first and b"\r" in first else b"\n"  # CR-only files
        line = first.split(end)[0].decode("utf-8-sig").strip()
        if not line:
            raise ValueError("no first line")
        toks = ([t.strip() for t in line.split(",")] if "," in line or base_suffix(p) == ".csv"
                else line.split())
        ends, last = first.count(end), first
        while block := f.read(1 << 20):
            ends += block.count(end)
            last = block
    lines = ends + (not last.endswith(end))  # a last line without its line end
    heading = 2 if base_suffix(p) == ".dat" else int(_is_names_line(toks))
    return len(toks), max(0, lines - heading)


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
            if ks and all(_is_code(str(lab[k])) for k in ks):
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


register_reader(Reader("text", (".csv", ".data", ".dat", ".txt"), _parse_text, _peek_text))
