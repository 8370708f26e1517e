"""A results folder: one Parquet file per finished cell, one JSON file per failure.

Layout of ``root``::

    results/<cell key>.parquet     one CellResult row, written atomically
    failures/<cell key>.json       one CellFailure (status, error, traceback)
    caches/<cache key>.jkl.gz      score caches built by the grid, reused by reruns
    caches/<cache key>.parts/      the finished batches of a build cut off, until its
                                   cache is written (bnsl_dist.cache.parts)
    grids/<grid name>.json         the validated grid that wrote here
    reports/                       Dask performance reports

Every file is written to a temp file beside its target and renamed into place
(:func:`bnsl_dist._io.atomic_writer`), so a killed writer leaves no half-written
result: a cell has a result file exactly when it finished. Resuming means skipping the
cells whose result file exists.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bnsl_dist._io import atomic_write_text, atomic_writer
from bnsl_dist.exceptions import DataError
from bnsl_dist.results.columns import KIND_COLUMN_NAMES
from bnsl_dist.results.legacy import revise_table
from bnsl_dist.results.records import (
    CellFailure,
    CellResult,
    conform_table,
    records_frame,
    records_to_table,
    result_schema,
    without_empty_kind_columns,
)

__all__ = ["ResultStore", "StoreStatus"]


@dataclass(frozen=True, slots=True)
class StoreStatus:
    """Cells of a plan by state."""

    done: tuple[str, ...]
    failed: tuple[str, ...]
    pending: tuple[str, ...]

    def counts(self) -> dict[str, int]:
        return {"done": len(self.done), "failed": len(self.failed),
                "pending": len(self.pending), "total": len(self.done) + len(self.failed)
                + len(self.pending)}


class ResultStore:
    """Per-cell result files under ``root`` (created on first write).

    Examples
    --------
    >>> import tempfile
    >>> store = ResultStore(tempfile.mkdtemp())
    >>> store.has_result("abc")
    False
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    # ------------------------------------------------------------------ paths
    @property
    def results_dir(self) -> Path:
        return self.root / "results"

    @property
    def failures_dir(self) -> Path:
        return self.root / "failures"

    @property
    def caches_dir(self) -> Path:
        return self.root / "caches"

    @property
    def reports_dir(self) -> Path:
        return self.root / "reports"

    def result_path(self, key: str) -> Path:
        return self.results_dir / f"{key}.parquet"

    def failure_path(self, key: str) -> Path:
        return self.failures_dir / f"{key}.json"

    def cache_path(self, cache_key: str) -> Path:
        return self.caches_dir / f"{cache_key}.jkl.gz"

    def read_cache_times(self, keys: Iterable[str] | None = None) -> dict[str, Any]:
        """The cache records stored here (``caches/<key>.times.json``, written beside
        each cache a grid builds: its build seconds and each variable's exploration
        seconds), by cache key; with ``keys``, those only. An unreadable one is skipped
        (a record of timings, never of results)."""
        wanted = None if keys is None else set(keys)
        out: dict[str, Any] = {}
        folder = self.caches_dir
        for p in sorted(folder.glob("*.times.json")) if folder.is_dir() else []:
            key = p.name[:-len(".times.json")]
            if wanted is not None and key not in wanted:
                continue
            try:
                out[key] = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
        return out

    # ------------------------------------------------------------------ queries
    def has_result(self, key: str) -> bool:
        return self.result_path(key).is_file()

    @staticmethod
    def _keys(folder: Path, suffix: str) -> set[str]:
        if not folder.is_dir():
            return set()
        return {p.name[: -len(suffix)] for p in folder.iterdir()
                if p.name.endswith(suffix) and not p.name.startswith(".")}

    def done_keys(self) -> set[str]:
        return self._keys(self.results_dir, ".parquet")

    def failed_keys(self) -> set[str]:
        """Cells with a failure record and no result."""
        return self._keys(self.failures_dir, ".json") - self.done_keys()

    def status(self, keys: Iterable[str]) -> StoreStatus:
        """Which of ``keys`` are done, failed (and not done since), or pending."""
        done_all, failed_all = self.done_keys(), self.failed_keys()
        done: list[str] = []
        failed: list[str] = []
        pending: list[str] = []
        for k in keys:
            (done if k in done_all else failed if k in failed_all else pending).append(k)
        return StoreStatus(tuple(done), tuple(failed), tuple(pending))

    def save_grid(self, name: str, text: str) -> None:
        """Store the grid ``name`` (its JSON ``text``) as ``grids/<name>.json``,
        replacing the one stored under that name (atomic)."""
        self.save_text(f"grids/{name}.json", text)

    def read_grids(self) -> dict[str, dict[str, Any]]:
        """The grids stored here (``grids/<name>.json``): name -> the grid as a JSON
        object."""
        out: dict[str, dict[str, Any]] = {}
        folder = self.root / "grids"
        for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                obj = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise DataError(f"unreadable stored grid: {exc}", path=str(p)) from None
            if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
                raise DataError("a stored grid must be a JSON object with a 'name'",
                                path=str(p))
            out[obj["name"]] = obj
        return out

    # ------------------------------------------------------------------ writing
    def write_result(self, record: CellResult) -> Path:
        """Write one result atomically; a failure record of the same cell is removed."""
        table = without_empty_kind_columns(records_to_table([record]))
        path = self.result_path(record.key)

        def write(fh: IO[bytes]) -> None:
            pq.write_table(table, fh)

        atomic_writer(path, write)
        try:
            self.failure_path(record.key).unlink()
        except FileNotFoundError:
            pass
        return path

    def write_failure(self, failure: CellFailure) -> Path:
        """Write one failure record atomically (replacing an older one of that cell)."""
        path = self.failure_path(failure.key)
        atomic_write_text(path, failure.to_json() + "\n")
        return path

    def save_text(self, relative: str, text: str) -> Path:
        path = self.root / relative
        atomic_write_text(path, text)
        return path

    # ------------------------------------------------------------------ reading
    def read_table(self, keys: Iterable[str] | None = None,
                   columns: Sequence[str] | None = None, *, revise: bool = True) -> pa.Table:
        """All (or the given) results as one Arrow table with the result schema (only
        the ``columns`` named, read alone: a fifth of the time when the DAGs are left
        on disk). Records of an earlier meaning of their algorithm's name are read under
        its name now (:func:`~bnsl_dist.results.legacy.revise_table`; ``revise=False``:
        as stored)."""
        schema = result_schema(columns)
        wanted = sorted(self.done_keys() if keys is None else set(keys) & self.done_keys())
        read = None if columns is None else list(dict.fromkeys(
            [*columns, *(("algorithm", "params") if revise and {"algorithm", "label",
                         "params", "spec"} & set(columns) else ())]))
        tables = [self._read_one(self.result_path(k), read) for k in wanted]
        if not tables:
            return schema.empty_table()
        table = pa.concat_tables(tables)
        if revise:
            table = revise_table(table)[0]
        return table if columns is None else table.select(list(columns))

    @staticmethod
    def _read_one(path: Path, columns: Sequence[str] | None = None) -> pa.Table:
        try:
            f = pq.ParquetFile(io.BytesIO(path.read_bytes()))
            have = f.schema_arrow.names
            read = None if columns is None else [c for c in columns if c in have]
            if read is not None and "extra" in have and \
                    set(columns or ()) & set(KIND_COLUMN_NAMES):  # an older record's layout
                read.append("extra")
            t = f.read(columns=read, use_threads=False)
        except (OSError, pa.ArrowInvalid) as exc:
            raise DataError(f"unreadable result file: {exc}", path=str(path)) from None
        return conform_table(t, columns)

    def read_frame(self) -> pd.DataFrame:
        """All results as a DataFrame (one row per cell)."""
        return records_frame(self.read_table())

    def read_results(self, keys: Iterable[str] | None = None) -> list[CellResult]:
        return [CellResult.from_row(r) for r in self.read_table(keys).to_pylist()]

    def read_failures(self) -> list[CellFailure]:
        out = []
        for k in sorted(self.failed_keys()):
            path = self.failure_path(k)
            try:
                out.append(CellFailure.from_json(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                raise DataError(f"unreadable failure record: {exc}", path=str(path)) from None
        return out
