"""One record schema for every grid cell: :class:`CellResult`, and :class:`CellFailure`.

A result is one row of Parquet with a fixed Arrow schema (so records written by
different workers, runs or versions concatenate); a failure is a separate JSON record
with its status and traceback, never a result.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import pandas as pd
import pyarrow as pa

from bnsl_dist.graph.dag import DAG
from bnsl_dist.results.columns import (
    KIND_COLUMN_NAMES,
    KIND_COLUMNS,
    from_arrow_value,
    from_extra,
    to_arrow_value,
)
from bnsl_dist.search.base import AnytimeTrace, Incumbent

__all__ = ["CellResult", "CellFailure", "RESULT_SCHEMA", "records_to_table",
           "conform_table", "records_frame", "without_empty_kind_columns",
           "FAILURE_STATUSES"]

#: Status values of a failure record.
FAILURE_STATUSES = ("error", "no-solution", "killed")


@dataclass(frozen=True, slots=True)
class CellResult:
    """The record of one finished grid cell.

    Scores are log-scores (higher is better). ``checkpoint_scores[i]`` is the best score
    found within ``checkpoints[i]`` seconds (NaN when nothing was found by then), and
    likewise for iteration checkpoints. ``trace_*`` hold every incumbent of the run, for
    anytime curves; only incumbents found within the budget are kept, so the best score
    is the best at the budget. ``incumbent_dags`` (JSON: trace index -> parent lists)
    holds the DAG of every other incumbent that is the best at some checkpoint; the
    best's DAG is ``dag_json`` alone (at :meth:`best_index`), so :meth:`trace` gives
    each checkpoint's DAG. ``iterations`` is the iteration count
    run; ``elapsed`` the seconds the run took (optimizer stream only), ``wall_seconds``
    the whole cell (data, cache and run). Cells with ``k`` carry a treewidth
    certificate of the best DAG: an elimination order (``treewidth_order``) of width
    ``treewidth_bound``. Provenance: ``versions`` (package and dependencies, JSON),
    ``commit`` and ``dirty`` (when run from a git checkout), ``hostname``, ``cpus`` (its
    logical core count) and ``spec``
    (the fully resolved cell, JSON). ``params`` is JSON text. ``outputs``: the
    kind-specific results (solver statistics, screening, holdout, inference answers, SEM
    accuracies, replay), one typed column each
    (:data:`~bnsl_dist.results.columns.KIND_COLUMNS`), by column name; a column the
    cell has no value for is left out.
    """

    key: str
    grid: str
    dataset: str
    split: str
    algorithm: str
    label: str
    params: str
    k: int | None
    seed: int
    budget_seconds: float | None
    budget_iterations: int | None
    best_score: float
    dag_json: str
    n_vars: int
    n_samples: int
    status: str = "ok"
    bound: float | None = None
    iterations: int = 0
    elapsed: float = 0.0
    wall_seconds: float = 0.0
    cache_key: str = ""
    cache_seconds: float = 0.0
    n_parent_sets: int = 0
    data_hash: str = ""
    treewidth_bound: int | None = None
    checkpoints: tuple[float, ...] = ()
    checkpoint_scores: tuple[float, ...] = ()
    iteration_checkpoints: tuple[int, ...] = ()
    iteration_checkpoint_scores: tuple[float, ...] = ()
    trace_elapsed: tuple[float, ...] = ()
    trace_scores: tuple[float, ...] = ()
    trace_iterations: tuple[int, ...] = ()
    outputs: Mapping[str, Any] = field(default_factory=dict)
    versions: str = "{}"
    hostname: str = ""
    finished_at: str = ""
    incumbent_dags: str = "{}"
    treewidth_order: tuple[int, ...] = ()
    commit: str | None = None
    dirty: bool | None = None
    spec: str = "{}"
    cpus: int | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.outputs) - set(KIND_COLUMN_NAMES))
        if unknown:
            raise ValueError(f"not kind-specific result columns: {', '.join(unknown)}")

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        for name in _LIST_FIELDS:
            row[name] = list(row[name])
        outputs = row.pop("outputs")
        for name in KIND_COLUMN_NAMES:
            row[name] = to_arrow_value(name, outputs.get(name))
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> CellResult:
        """Inverse of :meth:`to_row` (tolerates missing optional columns)."""
        kw: dict[str, Any] = {"outputs": {
            name: from_arrow_value(name, row[name]) for name in KIND_COLUMN_NAMES
            if row.get(name) is not None}}
        for f in fields(cls):
            if f.name not in row or f.name == "outputs":
                continue
            val = row[f.name]
            if f.name in _LIST_FIELDS:
                val = tuple(val) if val is not None else ()
            elif _is_missing(val):
                val = None
            kw[f.name] = val
        return cls(**kw)

    def best_index(self) -> int | None:
        """The trace index of the best incumbent (the DAG of ``dag_json``): the first of
        the highest score, as :attr:`AnytimeTrace.best` picks it; None without a trace."""
        s = self.trace_scores
        return max(range(len(s)), key=s.__getitem__) if s and self.dag_json else None

    def incumbent_dag(self, i: int) -> DAG:
        """The DAG of incumbent ``i``, one whose DAG the record keeps (the best at a
        checkpoint of the cell, or overall): ``dag_json`` for the best, else its parent
        lists in ``incumbent_dags`` (as :meth:`trace` makes them, for one incumbent).

        Raises
        ------
        KeyError
            The record does not keep incumbent ``i``'s DAG.
        """
        best_json = json.loads(self.dag_json)
        if i == self.best_index():
            return DAG.from_json_dict(best_json, source="dag_json")
        return DAG.from_parents(json.loads(self.incumbent_dags)[str(i)],
                                tuple(best_json["nodes"]))

    def trace(self) -> AnytimeTrace:
        """The incumbents whose DAG the record keeps (the best at each checkpoint and
        overall): ``best_at`` / ``best_at_iteration`` of this trace equal the full run's at every
        checkpoint of the cell, and its ``best`` the run's best. The best incumbent's DAG
        is ``dag_json``; records written before it was left out of ``incumbent_dags``
        hold it there too, and give the same trace."""
        best_json = json.loads(self.dag_json) if self.dag_json else None
        names = tuple(best_json["nodes"]) if best_json is not None else None
        dags = {int(i): DAG.from_parents(ps, names)
                for i, ps in json.loads(self.incumbent_dags or "{}").items()}
        best = self.best_index()
        if best is not None and best not in dags and best_json is not None:
            dags[best] = DAG.from_json_dict(best_json, source="dag_json")
        incs = [Incumbent(elapsed=self.trace_elapsed[i], score=self.trace_scores[i],
                          dag=dags[i], iterations=self.trace_iterations[i],
                          bound=self.bound if i == len(self.trace_scores) - 1 else None)
                for i in sorted(dags)]
        return AnytimeTrace(incs, self.iterations, self.elapsed)


def _is_missing(val: Any) -> bool:
    return val is None or (isinstance(val, float) and math.isnan(val))


_LIST_FIELDS = {"checkpoints", "checkpoint_scores", "iteration_checkpoints",
                "iteration_checkpoint_scores", "trace_elapsed", "trace_scores",
                "trace_iterations", "treewidth_order"}

#: The Arrow schema of a result row (nullable where the record field is optional).
RESULT_SCHEMA = pa.schema([
    ("key", pa.string()), ("grid", pa.string()), ("dataset", pa.string()),
    ("split", pa.string()), ("algorithm", pa.string()), ("label", pa.string()),
    ("params", pa.string()), ("k", pa.int64()), ("seed", pa.int64()),
    ("budget_seconds", pa.float64()), ("budget_iterations", pa.int64()),
    ("best_score", pa.float64()), ("dag_json", pa.string()), ("n_vars", pa.int64()),
    ("n_samples", pa.int64()), ("status", pa.string()), ("bound", pa.float64()),
    ("iterations", pa.int64()), ("elapsed", pa.float64()), ("wall_seconds", pa.float64()),
    ("cache_key", pa.string()), ("cache_seconds", pa.float64()),
    ("n_parent_sets", pa.int64()), ("data_hash", pa.string()),
    ("treewidth_bound", pa.int64()),
    ("checkpoints", pa.list_(pa.float64())), ("checkpoint_scores", pa.list_(pa.float64())),
    ("iteration_checkpoints", pa.list_(pa.int64())),
    ("iteration_checkpoint_scores", pa.list_(pa.float64())),
    ("trace_elapsed", pa.list_(pa.float64())), ("trace_scores", pa.list_(pa.float64())),
    ("trace_iterations", pa.list_(pa.int64())),
    *((c.name, c.type) for c in KIND_COLUMNS), ("versions", pa.string()), ("hostname", pa.string()),
    ("finished_at", pa.string()), ("incumbent_dags", pa.string()),
    ("treewidth_order", pa.list_(pa.int64())), ("commit", pa.string()),
    ("dirty", pa.bool_()), ("spec", pa.string()), ("cpus", pa.int64()),
])


def records_to_table(records: Iterable[CellResult]) -> pa.Table:
    """Rows of :class:`CellResult` as an Arrow table with :data:`RESULT_SCHEMA`."""
    rows = [r.to_row() for r in records]
    return pa.Table.from_pylist(rows, schema=RESULT_SCHEMA)


def without_empty_kind_columns(table: pa.Table) -> pa.Table:
    """``table`` less the kind-specific columns that no row has a value in: what a file
    stores (a file of one search cell does not carry the inference and SEM columns' 40
    leaves; :func:`conform_table` adds them back as nulls)."""
    empty = [c for c in KIND_COLUMN_NAMES
             if c in table.column_names and table.column(c).null_count == table.num_rows]
    return table.drop_columns(empty)


def result_schema(columns: Sequence[str] | None = None) -> pa.Schema:
    """:data:`RESULT_SCHEMA`, or its fields named in ``columns`` in that order.

    Raises
    ------
    ValueError
        A name that is not a result column.
    """
    if columns is None:
        return RESULT_SCHEMA
    unknown = [c for c in columns if c not in RESULT_SCHEMA.names]
    if unknown:
        raise ValueError(f"not result columns: {', '.join(unknown)}")
    return pa.schema([RESULT_SCHEMA.field(c) for c in columns])


def conform_table(table: pa.Table, columns: Sequence[str] | None = None) -> pa.Table:
    """``table`` with exactly the columns of :data:`RESULT_SCHEMA` (or those named in
    ``columns``), in its order and types; columns an older schema lacked are added as
    nulls, and the ``extra`` JSON of records written before the kind-specific columns
    is read into them (:func:`~bnsl_dist.results.columns.from_extra`)."""
    schema = result_schema(columns)
    table = from_extra(table)
    for f in schema:
        if f.name not in table.column_names:
            table = table.append_column(f, pa.nulls(table.num_rows, type=f.type))
    return table.select(schema.names).cast(schema)


def records_frame(table: pa.Table) -> pd.DataFrame:
    """Result rows (:data:`RESULT_SCHEMA`) as a DataFrame, one row per cell; each
    kind-specific column holds the records' Python values (dicts and lists, ``solver``
    a dict of scalars; None where a cell has none), as :attr:`CellResult.outputs` does."""
    frame = table.to_pandas()
    for name in KIND_COLUMN_NAMES:
        if name in table.column_names:
            frame[name] = pd.Series([from_arrow_value(name, v)
                                     for v in table.column(name).to_pylist()],
                                    index=frame.index, dtype=object)
    return frame


@dataclass(frozen=True, slots=True)
class CellFailure:
    """A cell that produced no result: an exception, no DAG within the budget, or a
    worker that died too often. Kept apart from results; a rerun retries the cell."""

    key: str
    grid: str
    dataset: str
    split: str
    algorithm: str
    label: str
    k: int | None
    seed: int
    status: str
    error: str
    traceback: str = ""
    finished_at: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status not in FAILURE_STATUSES:
            raise ValueError(f"failure status must be one of {FAILURE_STATUSES}, got "
                             f"{self.status!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CellFailure:
        obj = json.loads(text)
        return cls(**{f.name: obj[f.name] for f in fields(cls) if f.name in obj})
