"""Results: one record schema per grid cell, and a folder of atomic per-cell Parquet
files that grids resume from."""

from typing import TYPE_CHECKING, Any

from bnsl_dist.results.records import (
    FAILURE_STATUSES,
    RESULT_SCHEMA,
    CellFailure,
    CellResult,
    records_to_table,
)

if TYPE_CHECKING:
    from bnsl_dist.results.store import ResultStore, StoreStatus


def __getattr__(name: str) -> Any:
    """``ResultStore`` and ``StoreStatus`` on first use: the store imports pandas, which
    a process that only makes records (a search's cell) need not load (start-up)."""
    if name in ("ResultStore", "StoreStatus"):
        from bnsl_dist.results import store

        return getattr(store, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CellFailure", "CellResult", "FAILURE_STATUSES", "RESULT_SCHEMA", "ResultStore",
           "StoreStatus", "records_to_table"]
