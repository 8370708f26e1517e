"""One pipeline for every run: spec models, cells, ``run_cell``, ``learn``.

A run is a set of cells; a cell = (:class:`DataRef`, :class:`CacheSpec`, optional
:class:`ScreeningSpec`, :class:`SearchSpec`, seed). ``run_cell(cell) -> CellResult`` is
the one unit of work: ``grid run`` maps it over a grid, ``learn`` over one data set's
seeds, serially or with ``client.map`` (:mod:`bnsl_dist.orchestrate`). No Dask here.
A grid YAML's cells: :func:`bnsl_dist.pipeline.grid.expand_grid`.
"""

from bnsl_dist.pipeline.cell import CacheJob, Cell, SemSpec, canonical_json, code_version
from bnsl_dist.pipeline.learn import SCHEMA_VERSION, LearnResult, learn, learn_cells
from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.pipeline.run import (
    NoSolutionError,
    ensure_cache,
    failure_record,
    load_data,
    run_cell,
)
from bnsl_dist.pipeline.specs import BudgetSpec, CacheSpec, DataRef, ScreeningSpec, SearchSpec

__all__ = ["BudgetSpec", "CacheJob", "CacheSpec", "Cell", "DataRef", "LearnResult",
           "NoSolutionError", "SCHEMA_VERSION", "ScreeningSpec", "SearchSpec", "SemSpec",
           "canonical_json", "code_version", "ensure_cache", "failure_record", "learn",
           "learn_cells", "load_data", "provenance", "run_cell"]
