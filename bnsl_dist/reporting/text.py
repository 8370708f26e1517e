"""Deterministic text tables: a frame of pre-formatted strings written as markdown and
CSV (the same text from the same records, whatever the pandas version), and the fixed
number formats the per-kind tables use."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from bnsl_dist._io import atomic_write_text

__all__ = ["fmt_float", "fmt_value", "markdown_table", "csv_text", "write_text_table"]


def fmt_float(x: Any, spec: str) -> str:
    """``format(x, spec)``; empty for None, NaN and pandas' missing values.

    Examples
    --------
    >>> fmt_float(-1234.56789, ".3f"), fmt_float(None, ".3f"), fmt_float(float("nan"), ".2e")
    ('-1234.568', '', '')
    """
    if x is None or x is pd.NA:
        return ""
    v = float(x)
    return "" if math.isnan(v) else format(v, spec)


def fmt_value(v: Any) -> str:
    """A JSON scalar as table text: yes/no, integers as they are, floats to 6
    significant digits, missing as empty.

    Examples
    --------
    >>> [fmt_value(v) for v in (True, 12, 0.000123456789, None, "budget")]
    ['yes', '12', '0.000123457', '', 'budget']
    """
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return fmt_float(v, ".6g")
    return str(v)


def markdown_table(frame: pd.DataFrame) -> str:
    """A markdown table of the string cells of ``frame`` (its index is not printed)."""
    head = [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for row in frame.itertuples(index=False):
        lines.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |")
    return "\n".join(lines) + "\n"


def csv_text(frame: pd.DataFrame) -> str:
    """CSV of the string cells of ``frame`` (header, then rows; ``\\n`` line ends)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([str(c) for c in frame.columns])
    for row in frame.itertuples(index=False):
        w.writerow([str(v) for v in row])
    return buf.getvalue()


def write_text_table(frame: pd.DataFrame, out_dir: str | Path, name: str, title: str,
                     notes: Sequence[str] = ()) -> list[Path]:
    """Write ``<name>.md`` (title, notes, the table) and ``<name>.csv``."""
    out = Path(out_dir)
    md = "\n".join([f"### {title}", "", *[f"{n}\n" for n in notes], markdown_table(frame)])
    paths = [out / f"{name}.md", out / f"{name}.csv"]
    atomic_write_text(paths[0], md)
    atomic_write_text(paths[1], csv_text(frame))
    return paths
