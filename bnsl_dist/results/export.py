"""One records file per results folder: every result row, the stored grids and the
failures, in a single compact Parquet file that regenerates every table.

Layout of a records file (Parquet, zstd):

* the rows of every ``results/<key>.parquet``, sorted by key, with the columns of
  :data:`~bnsl_dist.results.records.RESULT_SCHEMA` — except that a provenance column
  whose value is the same in every row (``versions``, ``hostname``, ``commit``,
  ``dirty``) is stored once, in the metadata;
* key-value metadata: ``bnsl_dist.records`` (the format), ``bnsl_dist.grids`` (each
  stored ``grids/<name>.json``, by name), ``bnsl_dist.failures`` (every failure record
  without a result), ``bnsl_dist.constants`` (the columns stored once) and, where the
  folder kept them, ``bnsl_dist.caches`` (the cache records of the rows' caches: build
  seconds and each variable's exploration seconds, ``caches/<key>.times.json``).

The same folder gives the same bytes (sorted rows, canonical JSON, no timestamps), so a
committed records file changes only when a record does.

A records file over a size limit (``export_records(max_bytes=)``, ``grid export
--max-mb``) is written in parts: ``records.parquet``, ``records.2.parquet``, ... each a
records file of consecutive keys with a ``bnsl_dist.part`` metadata entry (its number,
the count, the first part's name and ``set``, a digest of the whole export, so that parts
of two exports are never read as one); the failures are in the first. Reading any part
reads them all, and a missing or foreign part is an error naming it.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bnsl_dist._io import atomic_write_bytes
from bnsl_dist._json import canonical_json
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.results.legacy import revise_grids, revise_table
from bnsl_dist.results.records import (
    RESULT_SCHEMA,
    CellFailure,
    CellResult,
    conform_table,
    records_frame,
    without_empty_kind_columns,
)
from bnsl_dist.results.store import ResultStore

__all__ = ["RecordSet", "RECORDS_FORMAT", "export_records", "import_records", "read_records",
           "load_records", "part_paths", "records_files"]

#: The value of the ``bnsl_dist.records`` metadata key of files this module writes.
RECORDS_FORMAT = "bnsl_dist.records/1"
_META_FORMAT = b"bnsl_dist.records"
_META_GRIDS = b"bnsl_dist.grids"
_META_FAILURES = b"bnsl_dist.failures"
_META_CONSTANTS = b"bnsl_dist.constants"
_META_PART = b"bnsl_dist.part"
_META_CACHES = b"bnsl_dist.caches"
#: Columns stored once in the metadata when every row has the same value.
_CONSTANT_CANDIDATES = ("versions", "hostname", "commit", "dirty", "cpus")


@dataclass
class RecordSet:
    """Every result row (:data:`RESULT_SCHEMA`, sorted by key), the stored grids (name ->
    the grid as a JSON object) and the failures of a results folder or records file."""

    table: pa.Table
    grids: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[CellFailure] = field(default_factory=list)
    #: The cache records of the rows' caches (cache key -> build seconds and each
    #: variable's exploration seconds), where the folder kept them.
    caches: dict[str, Any] = field(default_factory=dict)

    def frame(self) -> pd.DataFrame:
        """The results as a DataFrame, one row per cell."""
        return records_frame(self.table)

    def results(self) -> list[CellResult]:
        return [CellResult.from_row(r) for r in self.table.to_pylist()]


def _sorted_by_key(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[("key", "ascending")]))


def _folder_records(root: Path) -> RecordSet:
    store = ResultStore(root)
    table = _sorted_by_key(store.read_table(revise=False))
    return _revised(RecordSet(table, store.read_grids(),
                              sorted(store.read_failures(), key=lambda f: f.key),
                              store.read_cache_times(set(table.column("cache_key").to_pylist()))))


def _revised(recs: RecordSet) -> RecordSet:
    """``recs`` with records of an earlier meaning of their algorithm's name, and the
    grids stored with them, read under that meaning's name now (:mod:`.legacy`)."""
    table, renamed = revise_table(recs.table)
    if not renamed and table is recs.table:
        return recs
    return replace(recs, table=table, grids=revise_grids(recs.grids, renamed))


def export_records(results: str | os.PathLike[str] | RecordSet,
                   out: str | os.PathLike[str], *, keys: Iterable[str] | None = None,
                   dags: str = "all", max_bytes: int | None = None) -> Path:
    """Write the records file of the results folder ``results`` (or of the records
    already read, a :class:`RecordSet`) to ``out`` (atomically: a failed export leaves
    any older file in place); with ``keys``, only those cells' results and failures.
    ``dags="best"`` keeps each cell's best DAG (``dag_json``) and drops the DAGs of its
    earlier checkpoint incumbents (``incumbent_dags`` becomes ``{}``, so
    :meth:`CellResult.trace` holds the best incumbent alone): no table reads them, and
    on grids of thousands of variables they are most of the file. Rows of either layout
    (the best's DAG in ``incumbent_dags`` too, or only in ``dag_json``) are written as
    they are. With ``max_bytes``, a file over that size is written in parts of at most
    that size (see the module's docstring); the parts after the first are written first,
    and parts left by an earlier export beyond the new count are removed. Returns the
    (first) file.

    Raises
    ------
    DataError
        ``results`` is not a folder, or holds an unreadable record, or one record alone
        is over ``max_bytes``.
    """
    if dags not in ("all", "best"):
        raise InvalidConfigError(f"dags must be 'all' or 'best', got {dags!r}")
    if max_bytes is not None and max_bytes < 1:
        raise InvalidConfigError(f"max_bytes must be >= 1, got {max_bytes}")
    if isinstance(results, RecordSet):
        recs = replace(results, table=_sorted_by_key(results.table))
    else:
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
    base = {_META_FORMAT: RECORDS_FORMAT.encode(),
            _META_GRIDS: canonical_json(recs.grids).encode(),
            _META_CONSTANTS: canonical_json(constants).encode()}
    caches = {k: v for k, v in recs.caches.items()
              if k in set(table.column("cache_key").to_pylist())}
    if caches:  # folders without cache records export the bytes they did before
        base[_META_CACHES] = canonical_json(caches).encode()
    target = Path(out)

    def encode(rows: pa.Table, fails: list[CellFailure],
               part: dict[str, Any] | None = None) -> bytes:
        meta = {**base, _META_FAILURES: canonical_json([asdict(f) for f in fails]).encode()}
        if part is not None:
            meta[_META_PART] = canonical_json(part).encode()
        buf = io.BytesIO()
        pq.write_table(without_empty_kind_columns(rows).replace_schema_metadata(meta), buf,
                       compression="zstd",
                       compression_level=_ZSTD_LEVEL)
        return buf.getvalue()

    blobs = [encode(table, failures)]
    if max_bytes is not None and len(blobs[0]) > max_bytes:
        blobs = _split_parts(table, failures, encode, len(blobs[0]), max_bytes, target,
                             hashlib.sha256(blobs[0]).hexdigest()[:16])
    paths = part_paths(target, len(blobs))
    for path, blob in reversed(list(zip(paths, blobs, strict=True))):  # the first last
        atomic_write_bytes(path, blob)
    for stale in records_files(target)[1:]:
        if stale not in paths:
            stale.unlink()
    return target


def import_records(source: str | os.PathLike[str] | RecordSet,
                   results: str | os.PathLike[str]) -> dict[str, int]:
    """Write a records file's results, failures and grids into the results folder
    ``results`` (``source``: its path, or the file already read), cell by cell: the
    inverse of :func:`export_records`, so that ``grid
    run`` on that folder skips those cells (a grid resumed on another machine from its
    committed records). A result already in the folder is kept, not replaced; a failure
    is written only for a cell with neither a result nor a failure there; each grid of
    the file is written as ``grids/<name>.json`` (replacing the folder's of that name,
    which ``grid run`` rewrites with the grid it runs). Every write is atomic. Returns
    the counts ``results``, ``kept``, ``failures`` and ``grids`` written or kept.

    Raises
    ------
    DataError
        ``source`` is not a records file (see :func:`read_records`).
    """
    recs = source if isinstance(source, RecordSet) else read_records(source)
    store = ResultStore(results)
    done, failed = store.done_keys(), store.failed_keys()
    counts = {"results": 0, "kept": 0, "failures": 0, "grids": 0}
    for r in recs.results():
        if r.key in done:
            counts["kept"] += 1
            continue
        store.write_result(r)
        done.add(r.key)
        counts["results"] += 1
    for f in recs.failures:
        if f.key not in done and f.key not in failed:
            store.write_failure(f)
            counts["failures"] += 1
    for name, grid in sorted(recs.grids.items()):
        store.save_grid(name, json.dumps(grid, indent=1) + "\n")
        counts["grids"] += 1
    return counts


def part_paths(first: str | os.PathLike[str], count: int) -> list[Path]:
    """The files of a records file written in ``count`` parts, the first being ``first``
    (``records.parquet`` -> ``records.2.parquet``, ``records.3.parquet``, ...)."""
    p = Path(first)
    return [p] + [p.with_name(f"{p.stem}.{i}{p.suffix}") for i in range(2, count + 1)]


def records_files(first: str | os.PathLike[str]) -> list[Path]:
    """``first`` and the numbered part files beside it (``<stem>.<n><suffix>``, n >= 2,
    by number), whether or not they are of its set."""
    p = Path(first)
    pat = re.compile(re.escape(p.stem) + r"\.([2-9]|[1-9]\d+)" + re.escape(p.suffix))
    found = sorted((int(m.group(1)), q) for q in
                   (p.parent.iterdir() if p.parent.is_dir() else ())
                   if (m := pat.fullmatch(q.name)))
    return [p, *(q for _, q in found)]


def _split_parts(table: pa.Table, failures: list[CellFailure],
                 encode: Callable[[pa.Table, list[CellFailure], dict[str, Any]], bytes],
                 size: int, max_bytes: int, first: Path, digest: str) -> list[bytes]:
    """The parts of ``table`` (consecutive rows, balanced by their DAG and certificate
    text) that each encode to at most ``max_bytes``, each naming the set ``digest``;
    more parts are tried until they fit."""
    weight = (pc.binary_length(table.column("dag_json")).to_numpy(zero_copy_only=False)
              + pc.binary_length(table.column("incumbent_dags")).to_numpy(zero_copy_only=False)
              + 6 * pc.list_value_length(table.column("treewidth_order"))
              .to_numpy(zero_copy_only=False) + 1_000).astype(float)
    cum = np.cumsum(weight)
    parts = max(2, math.ceil(size / (0.9 * max_bytes)))
    while parts <= table.num_rows:
        cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts) + 1
        bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, table.num_rows - 1),
                                           [table.num_rows]]))
        blobs = [encode(table.slice(a, b - a), failures if i == 0 else [],
                        {"part": i + 1, "of": len(bounds) - 1, "first": first.name,
                         "set": digest})
                 for i, (a, b) in enumerate(itertools.pairwise(bounds))]
        if all(len(b) <= max_bytes for b in blobs):
            return blobs
        parts += 1
    raise DataError(f"a single record is over the size limit of {max_bytes} bytes",
                    path=str(first))


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
    """Read a records file written by :func:`export_records`; a file written in parts is
    read whole from any of its parts.

    Raises
    ------
    DataError
        Naming the file: missing, not Parquet, or a Parquet file that is not a records
        file (no ``bnsl_dist.records`` metadata, another format, missing columns), or a
        part of a set that is missing or not of the set.
    """
    given = Path(path)
    recs, part = _read_one(given)
    if part is None:
        return _revised(recs)
    first = given.with_name(str(part["first"]))
    sets: list[RecordSet] = []
    for i, p in enumerate(part_paths(first, int(part["of"])), start=1):
        if not p.is_file():
            raise DataError(f"part {i} of {part['of']} of the records file {first.name} "
                            "is missing", path=str(p))
        one, got = (recs, part) if p == given else _read_one(p)  # each file read once
        want = {"part": i, "of": part["of"], "first": first.name,
                **({"set": part["set"]} if "set" in part else {})}  # older sets: none
        if got != want:
            raise DataError(f"not part {i} of {part['of']} of {first.name} "
                            f"(its part entry: {got})", path=str(p))
        sets.append(one)
    return _revised(RecordSet(pa.concat_tables([r.table for r in sets]), sets[0].grids,
                              [f for r in sets for f in r.failures],
                              {k: v for r in sets for k, v in r.caches.items()}))


def _read_one(p: Path) -> tuple[RecordSet, dict[str, Any] | None]:
    """One records file, and its part entry (None when it is whole)."""
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
    part = _meta_json(meta, _META_PART, p) if _META_PART in meta else None
    if part is not None and not (isinstance(part, dict)
                                 and set(part) - {"set"} == {"part", "of", "first"}
                                 and isinstance(part.get("set", ""), str)
                                 and isinstance(part["first"], str)
                                 and Path(part["first"]).name == part["first"]
                                 and isinstance(part["of"], int)
                                 and isinstance(part["part"], int)
                                 and 1 <= part["part"] <= part["of"]):
        raise DataError(f"records file with a bad part entry: {part}", path=str(p))
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
    if not isinstance(grids, dict) or not all(isinstance(g, dict) for g in grids.values()):
        raise DataError("records file whose 'bnsl_dist.grids' is not an object of grids",
                        path=str(p))
    # keys and grid names become file names in a results folder (grid import)
    for what, names in (("cell key", table.column("key").to_pylist()),
                        ("failure's cell key", [f.key for f in failures]),
                        ("grid name", list(grids))):
        bad = next((n for n in names if not (isinstance(n, str) and _FILE_NAME.fullmatch(n))),
                   _GOOD)
        if bad is not _GOOD:
            raise DataError(f"records file with a {what} that is not a file name: {bad!r}",
                            path=str(p))
    caches = _meta_json(meta, _META_CACHES, p) if _META_CACHES in meta else {}
    return RecordSet(table, dict(grids), failures, dict(caches)), part


#: What a cell key or grid name must look like (it names a file of a results folder).
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")
_GOOD = object()


def load_records(source: str | os.PathLike[str]) -> RecordSet:
    """The records of a results folder (``grid run --results``) or of a records file."""
    p = Path(source)
    if p.is_dir():
        return _folder_records(p)
    return read_records(p)
