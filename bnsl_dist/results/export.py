"""One records file per results folder: every result row, the stored grids and the
failures, in a single compact Parquet file that regenerates every table.

Layout of a records file (Parquet, zstd):

* the rows of every ``results/<key>.parquet``, sorted by key, with the columns of
  :data:`~bnsl_dist.results.records.RESULT_SCHEMA` — except that a provenance column
  whose value is the same in every row (``versions``, ``hostname``, ``commit``,
  ``dirty``) is stored once, in the metadata;
* key-value metadata: ``bnsl_dist.records`` (the format), ``bnsl_dist.grids`` (each
  stored ``grids/<name>.json``, by name), ``bnsl_dist.failures`` (every failure record
  without a result) and ``bnsl_dist.constants`` (the columns stored once).

The same folder gives the same bytes (sorted rows, canonical JSON, no timestamps), so a
committed records file changes only when a record does.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bnsl_dist._io import atomic_writer
from bnsl_dist._json import canonical_json
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.results.records import (
    RESULT_SCHEMA,
    CellFailure,
    CellResult,
    conform_table,
)
from bnsl_dist.results.store import ResultStore

__all__ = ["RecordSet", "RECORDS_FORMAT", "export_records", "read_records", "load_records"]

#: The value of the ``bnsl_dist.records`` metadata key of files this module writes.
RECORDS_FORMAT = "bnsl_dist.records/1"
_META_FORMAT = b"bnsl_dist.records"
_META_GRIDS = b"bnsl_dist.grids"
_META_FAILURES = b"bnsl_dist.failures"
_META_CONSTANTS = b"bnsl_dist.constants"
#: Columns stored once in the metadata when every row has the same value.
_CONSTANT_CANDIDATES = ("versions", "hostname", "commit", "dirty")


@dataclass
class RecordSet:
    """Every result row (:data:`RESULT_SCHEMA`, sorted by key), the stored grids (name ->
    the grid as a JSON object) and the failures of a results folder or records file."""

    table: pa.Table
    grids: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[CellFailure] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        """The results as a DataFrame, one row per cell."""
        return self.table.to_pandas()

    def results(self) -> list[CellResult]:
        return [CellResult.from_row(r) for r in self.table.to_pylist()]


def _read_grids(store: ResultStore) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    folder = store.root / "grids"
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            obj = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"unreadable stored grid: {exc}", path=str(p)) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            raise DataError("a stored grid must be a JSON object with a 'name'", path=str(p))
        out[obj["name"]] = obj
    return out


def _sorted_by_key(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))


def _folder_records(root: Path) -> RecordSet:
    store = ResultStore(root)
    return RecordSet(_sorted_by_key(store.read_table()), _read_grids(store),
                     sorted(store.read_failures(), key=lambda f: f.key))


def export_records(results: str | os.PathLike[str], out: str | os.PathLike[str], *,
                   keys: Iterable[str] | None = None, dags: str = "all") -> Path:
    """Write the records file of the results folder ``results`` to ``out`` (atomically:
    a failed export leaves any older file in place); with ``keys``, only those cells'
    results and failures. ``dags="best"`` keeps each cell's best DAG (``dag_json``) and
    drops the DAGs of its earlier checkpoint incumbents (``incumbent_dags`` becomes
    ``{}``, so :meth:`CellResult.trace` holds the best incumbent alone): no table reads
    them, and on grids of thousands of variables they are most of the file. Rows of
    either layout (the best's DAG in ``incumbent_dags`` too, or only in ``dag_json``)
    are written as they are.

    Raises
    ------
    DataError
        ``results`` is not a folder, or holds an unreadable record.
    """
    if dags not in ("all", "best"):
        raise InvalidConfigError(f"dags must be 'all' or 'best', got {dags!r}")
    root = Path(results)
    if not root.is_dir():
        raise DataError("not a results folder", path=str(root))
    recs = _folder_records(root)
    table = recs.table
    failures = recs.failures
    if keys is not None:
        wanted = set(keys)
        table = table.filter(pa.array([k in wanted for k in table.column("key").to_pylist()],
                                      type=pa.bool_()))
        failures = [f for f in failures if f.key in wanted]
    if dags == "best":
        i = table.schema.get_field_index("incumbent_dags")
        table = table.set_column(i, table.schema.field(i),
                                 pa.array(["{}"] * table.num_rows, type=pa.string()))
    constants: dict[str, Any] = {}
    for name in _CONSTANT_CANDIDATES:
        values = set(table.column(name).to_pylist())
        if table.num_rows and len(values) == 1:
            constants[name] = values.pop()
            table = table.drop_columns([name])
    meta = {_META_FORMAT: RECORDS_FORMAT.encode(),
            _META_GRIDS: canonical_json(recs.grids).encode(),
            _META_FAILURES: canonical_json([asdict(f) for f in failures]).encode(),
            _META_CONSTANTS: canonical_json(constants).encode()}
    table = table.replace_schema_metadata(meta)

    def write(fh: IO[bytes]) -> None:
        pq.write_table(table, fh, compression="zstd", compression_level=_ZSTD_LEVEL)

    target = Path(out)
    atomic_writer(target, write)
    return target


#: zstd level of records files: 19 writes 1,260 cells of up to 4,000 variables in ~35 s
#: (level 9: 2 s) and 27% smaller; an export is written once and read many times.
_ZSTD_LEVEL = 19


def _meta_json(meta: Mapping[bytes, bytes], key: bytes, path: Path) -> Any:
    try:
        return json.loads(meta[key])
    except (KeyError, ValueError) as exc:
        raise DataError(f"records file without valid {key.decode()!r} metadata: {exc}",
                        path=str(path)) from None


def read_records(path: str | os.PathLike[str]) -> RecordSet:
    """Read a records file written by :func:`export_records`.

    Raises
    ------
    DataError
        Naming the file: missing, not Parquet, or a Parquet file that is not a records
        file (no ``bnsl_dist.records`` metadata, another format, missing columns).
    """
    p = Path(path)
    try:
        table = pq.read_table(io.BytesIO(p.read_bytes()), use_threads=False)
    except FileNotFoundError:
        raise DataError("no such records file", path=str(p)) from None
    except (OSError, pa.ArrowException) as exc:
        raise DataError(f"not a records file (unreadable as Parquet: {exc})",
                        path=str(p)) from None
    meta = table.schema.metadata or {}
    fmt = meta.get(_META_FORMAT)
    if fmt != RECORDS_FORMAT.encode():
        got = "none" if fmt is None else repr(fmt.decode(errors="replace"))
        raise DataError(f"not a records file: metadata 'bnsl_dist.records' is {got}, "
                        f"expected {RECORDS_FORMAT!r} (write one with "
                        "'bnsl-dist grid export')", path=str(p))
    grids = _meta_json(meta, _META_GRIDS, p)
    constants = _meta_json(meta, _META_CONSTANTS, p)
    try:
        failures = [CellFailure(**f) for f in _meta_json(meta, _META_FAILURES, p)]
    except (TypeError, ValueError) as exc:
        raise DataError(f"records file with a bad failure record: {exc}", path=str(p)) from None
    table = table.replace_schema_metadata(None)
    for name, value in constants.items():
        if name in table.column_names or name not in RESULT_SCHEMA.names:
            raise DataError(f"records file: constant column {name!r} is not expected",
                            path=str(p))
        typ = RESULT_SCHEMA.field(name).type
        table = table.append_column(pa.field(name, typ),
                                    pa.array([value] * table.num_rows, type=typ))
    missing = [n for n in ("key", "grid", "label", "best_score") if n not in table.column_names]
    if missing:
        raise DataError(f"records file without the columns {missing}", path=str(p))
    try:
        table = conform_table(table)
    except (pa.ArrowException, ValueError) as exc:
        raise DataError(f"records file with columns of the wrong type: {exc}",
                        path=str(p)) from None
    return RecordSet(table, dict(grids), failures)


def load_records(source: str | os.PathLike[str]) -> RecordSet:
    """The records of a results folder (``grid run --results``) or of a records file."""
    p = Path(source)
    if p.is_dir():
        return _folder_records(p)
    return read_records(p)
