"""Delimited text data files (the default reader), compressed with gzip when the name
ends in ``.gz``:

* headerless integer tables (``.data``/``.csv``, comma or white-space separated);
* CSV with a header row of names, integer or string states (strings map to codes in
  sorted order); ``.csv`` files, and others whose first line holds a comma, are read by
  a CSV parser (quoted fields, CRLF, a UTF-8 byte-order mark); white space around fields
  and blank lines (empty or white space only) are ignored;
* GOBNILP/BLIP ``.dat``: white-space separated, line 1 names, line 2 arities.

A clean integer table is read by pandas' C parser in one pass, a comma-separated table of
labels too; anything else record by record, which finds the line and column of the first
problem.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._io import is_plain_int, read_text
from bnsl_dist.data.dataset import MAX_STATES
from bnsl_dist.data.readers import (
    MISSING_TOKENS,
    Factorized,
    LabelPolicy,
    MissingPolicy,
    RawTable,
    Reader,
    base_suffix,
    column_label,
    is_code,
    register_reader,
)
from bnsl_dist.exceptions import DataError, MissingValueError

__all__ = ["is_names_line"]


def _is_int(tok: str) -> bool:
    return is_plain_int(tok, plus=False)


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


def is_names_line(toks: Sequence[str]) -> bool:
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
    import pandas as pd  # not at the top: only a text table needs it (start-up)

    try:
        df = pd.read_csv(buf, header=None, sep="," if comma else r"\s+", dtype=np.int64,
                         engine="c", na_filter=False, low_memory=False)
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError, OverflowError):
        return None
    arr = df.to_numpy()
    return arr if df.shape[1] == width and arr.size and arr.min() >= 0 else None


def _factorize(col: Any) -> Factorized:
    """``col``'s tokens as codes into their distinct values, white space stripped."""
    import pandas as pd

    codes, uniq = pd.factorize(col)
    raw = [str(u) for u in uniq]
    stripped = [u.strip() for u in raw]
    if stripped != raw:  # tokens equal once stripped share one value
        merged, uniq2 = pd.factorize(np.asarray(stripped, dtype=object))
        return merged[codes], [str(u) for u in uniq2]
    return codes, stripped


def _str_table(buf: io.StringIO, width: int) -> list[Factorized] | None:
    """The rest of a comma-separated ``buf`` as factorised columns, read by pandas' C
    parser; None if its rows are not all ``width`` fields long (the record loop then
    finds the line). In one pass (``low_memory=False``): by default the parser makes
    every column anew for each chunk of about 2**20 / width rows, O(N width²) in all."""
    import pandas as pd

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


def _columns(table: list[Factorized], lines: list[int] | None, *, spath: str,
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
        if labels == "always" or (allow_labels and not all(is_code(uniq[i]) for i in present)):
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
            header = is_names_line(first[1])
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
    heading = 2 if base_suffix(p) == ".dat" else int(is_names_line(toks))
    return len(toks), max(0, lines - heading)


register_reader(Reader("text", (".csv", ".data", ".dat", ".txt"), _parse_text, _peek_text))
