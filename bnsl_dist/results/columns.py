"""The kind-specific result columns of a record: one typed Arrow column per kind of
result, null in the records of the cells that have none (docs/RECORDS.md).

===============  =====================================================================
column           written by
===============  =====================================================================
``solver``       a search whose optimizer reports statistics with its best network
``screening``    a cell with a screening stage (qds)
``holdout``      a search task with a held-out split
``inference``    an inference task: its answers to the data set's queries
``sem``          a SEM task: its settings and the imputation accuracies
``replay``       a replayed cell (``grid replay``)
===============  =====================================================================

Each column is declared once here (:data:`KIND_COLUMNS`): its Arrow type, the Python
value a record holds (a dict, or for ``solver`` the optimizer's scalar statistics by
name) and how the JSON ``extra`` column of records written before these columns holds
it. :func:`from_extra` is the one place such records are read into the typed columns
(:func:`~bnsl_dist.results.records.conform_table` calls it on every table read).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

__all__ = ["KindColumn", "KIND_COLUMNS", "KIND_COLUMN_NAMES", "kind_column", "from_extra",
           "to_arrow_value", "from_arrow_value"]

#: One scalar statistic of any type: exactly one member set (none: the value None).
_SCALAR = pa.struct([("bool", pa.bool_()), ("int", pa.int64()), ("float", pa.float64()),
                     ("str", pa.string())])

#: The answers of one model to the inference study's queries
#: (:meth:`bnsl_dist.inference.study.Answers.to_json_dict`) and their seconds.
_ANSWERS = [("log_pe", pa.list_(pa.float64())),
            ("marginals", pa.list_(pa.list_(pa.float64()))),
            ("pe_seconds_per_query", pa.float64()),
            ("marginal_seconds_per_query", pa.float64()),
            ("exact", pa.bool_()), ("width", pa.int64()), ("seconds", pa.float64())]

#: The SEM cell's fields: its settings (``pipeline.tasks.sem.SemSpec``), then what it
#: measured.
_SEM_FIELDS = [("missing_rate", pa.float64()), ("max_em_iterations", pa.int64()),
               ("search_seconds_per_variable", pa.float64()),
               ("cache_budget", pa.string()), ("budget_scale", pa.float64()),
               ("imputation", pa.string()), ("imputation_accuracy", pa.float64()),
               ("imputation_accuracy_mpe", pa.float64()),
               ("imputation_accuracy_mode", pa.float64()),
               ("missing_cells", pa.int64()), ("converged", pa.bool_()),
               ("em_iterations", pa.int64()), ("cache_scores_per_variable", pa.int64()),
               ("search_iterations", pa.int64())]


@dataclass(frozen=True)
class KindColumn:
    """One kind-specific result column: its ``name`` (also the key of the ``extra`` JSON
    that held it), Arrow ``type`` and how an ``extra`` object of an older record holds
    its value (``legacy``: the value, None when the record has none; ``legacy_keys``:
    the keys of ``extra`` it reads)."""

    name: str
    type: pa.DataType
    legacy_keys: frozenset[str]
    legacy: Callable[[Mapping[str, Any]], Any]


def _under_own_key(name: str) -> KindColumn:
    """A column whose older records kept its value in ``extra[name]``."""
    return KindColumn(name, _TYPES[name], frozenset({name}), lambda extra: extra.get(name))


def _sem_legacy(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    """A SEM cell's keys were ``extra``'s own, ``budget_scale`` left out when 1."""
    if "missing_rate" not in extra:
        return None
    return {"budget_scale": 1.0, **{k: extra[k] for k, _ in _SEM_FIELDS if k in extra}}


_TYPES: dict[str, pa.DataType] = {
    "solver": pa.map_(pa.string(), _SCALAR),
    "screening": pa.struct([("epsilon", pa.float64()), ("n_roots", pa.int64()),
                            ("roots", pa.list_(pa.int64())),
                            ("forest_parent", pa.list_(pa.int64())),
                            ("forest_score", pa.float64()), ("seconds", pa.float64())]),
    "holdout": pa.struct([("split", pa.string()), ("total", pa.float64()),
                          ("mean", pa.float64()), ("n_rows", pa.int64())]),
    "inference": pa.struct([("reference", pa.bool_()), ("known_network", pa.bool_()),
                            ("evidence_vars", pa.int64()), ("queries", pa.int64()),
                            ("evidence", pa.list_(pa.list_(pa.list_(pa.int64())))),
                            ("marginal_vars", pa.list_(pa.int64())), *_ANSWERS,
                            ("truth", pa.struct(_ANSWERS))]),
    "sem": pa.struct(_SEM_FIELDS),
    "replay": pa.struct([("records", pa.string()), ("speed", pa.float64()),
                         ("seconds_from", pa.string())]),
}

#: Every kind-specific column, in the record schema's order.
KIND_COLUMNS: tuple[KindColumn, ...] = (
    _under_own_key("solver"), _under_own_key("screening"), _under_own_key("holdout"),
    _under_own_key("inference"),
    KindColumn("sem", _TYPES["sem"], frozenset(k for k, _ in _SEM_FIELDS), _sem_legacy),
    _under_own_key("replay"))
KIND_COLUMN_NAMES: tuple[str, ...] = tuple(c.name for c in KIND_COLUMNS)
_BY_NAME = {c.name: c for c in KIND_COLUMNS}


def kind_column(name: str) -> KindColumn:
    return _BY_NAME[name]


# ------------------------------------------------------------------ Python <-> Arrow
def _scalar(v: Any) -> dict[str, Any]:
    if v is None:
        return {}
    for member, typ in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(v, typ):
            return {member: v}
    raise TypeError(f"a solver statistic must be a bool, int, float, str or None, got "
                    f"{type(v).__name__}")


def _check(value: Any, typ: pa.DataType, where: str) -> None:
    """Raise TypeError where ``value`` has a key that ``typ``'s structs do not (Arrow
    would drop it silently)."""
    if value is None:
        return
    if pa.types.is_struct(typ):
        if not isinstance(value, Mapping):
            raise TypeError(f"{where}: expected an object, got {type(value).__name__}")
        names = {typ.field(i).name: typ.field(i).type for i in range(typ.num_fields)}
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise TypeError(f"{where}: no typed column for {', '.join(unknown)}")
        for k, v in value.items():
            _check(v, names[k], f"{where}.{k}")
    elif pa.types.is_list(typ) and isinstance(value, Sequence) and \
            not isinstance(value, str):
        for v in value:
            _check(v, typ.value_type, where)


def to_arrow_value(name: str, value: Any) -> Any:
    """The Python value of column ``name`` as Arrow takes it (``solver``: a dict of
    scalars becomes its sorted entries of typed scalars).

    Raises
    ------
    TypeError
        A key the column's type has no field for, or a statistic of another type.
    """
    col = _BY_NAME[name]
    if value is None:
        return None
    if pa.types.is_map(col.type):
        return [(str(k), _scalar(v)) for k, v in sorted(value.items())]
    _check(value, col.type, name)
    return value


def from_arrow_value(name: str, value: Any) -> Any:
    """Inverse of :func:`to_arrow_value` on the value Arrow gives back (``to_pylist``)."""
    if value is None or not pa.types.is_map(_BY_NAME[name].type):
        return value
    return {k: next((s[m] for m in ("bool", "int", "float", "str") if s[m] is not None),
                    None) for k, s in value}


def from_extra(table: pa.Table) -> pa.Table:
    """``table`` (result rows) with its ``extra`` JSON column, the layout of records
    written before the typed columns, read into the kind-specific columns (those it
    already has are kept) and dropped; a table without ``extra`` as it is.

    Raises
    ------
    ValueError
        An ``extra`` that is not a JSON object, or holds a key no column reads.
    """
    if "extra" not in table.column_names:
        return table
    extras = []
    for text in table.column("extra").to_pylist():
        try:
            obj = json.loads(text or "{}")
        except ValueError as exc:
            raise ValueError(f"an 'extra' column value is not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ValueError("an 'extra' column value is not a JSON object")
        extras.append(obj)
    known = frozenset().union(*(c.legacy_keys for c in KIND_COLUMNS))
    unknown = sorted({k for e in extras for k in e} - known)
    if unknown:
        raise ValueError(f"'extra' keys that no typed column reads: {', '.join(unknown)}")
    i = table.column_names.index("extra")
    table = table.remove_column(i)
    for col in reversed(KIND_COLUMNS):
        if col.name in table.column_names:
            continue
        values = [to_arrow_value(col.name, col.legacy(e)) for e in extras]
        table = table.add_column(i, pa.field(col.name, col.type),
                                 pa.array(values, type=col.type))
    return table
