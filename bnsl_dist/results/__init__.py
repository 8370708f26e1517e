"""Results: one record schema per grid cell, and a folder of atomic per-cell Parquet
files that grids resume from."""

from bnsl_dist.results.records import (
    FAILURE_STATUSES,
    RESULT_SCHEMA,
    CellFailure,
    CellResult,
    records_to_table,
)
from bnsl_dist.results.store import ResultStore, StoreStatus

__all__ = ["CellFailure", "CellResult", "FAILURE_STATUSES", "RESULT_SCHEMA", "ResultStore",
           "StoreStatus", "records_to_table"]
