"""The rows of a resumable per-data-set study, kept in one JSON file.

A study script recomputes the rows of the data sets it is given and keeps those of the
others (``--datasets``; none: redraw only), so a long study runs in pieces."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bnsl_dist._io import atomic_write_text

__all__ = ["update_rows"]

Row = dict[str, Any]


def update_rows(path: Path, datasets: str, compute: Callable[[list[str]], list[Row]],
                order: Callable[[Row], Any], header: dict[str, Any] | None = None
                ) -> list[Row]:
    """The rows stored at ``path`` with those of ``datasets`` (comma-separated) replaced
    by ``compute(names)``, sorted by ``order``; the file is rewritten (atomically, with
    ``header``'s keys beside ``rows``) only when some data set was given."""
    rows: list[Row] = (json.loads(path.read_text(encoding="utf-8"))["rows"]
                       if path.is_file() else [])
    new = [d for d in datasets.split(",") if d]
    if new:
        rows = [r for r in rows if r["dataset"] not in new] + compute(new)
        rows.sort(key=order)
        atomic_write_text(path, json.dumps({**(header or {}), "rows": rows}, indent=1) + "\n")
    return rows
