"""``learn``: a one-data-set grid. One cell per seed, the cache built once, the per-seed
traces merged into the best DAG at each checkpoint (:class:`LearnResult`).

Serially :func:`learn` is ``map(run_seed, cells)`` (the seeds of a memetic search:
islands exchanging their best orders, :mod:`bnsl_dist.pipeline.islands`); the executor
(:func:`bnsl_dist.orchestrate.execute.execute`, what the ``learn`` command runs) is the
same in this process and ``client.map(run_seed, cells)`` on Dask: the same cells, the
same function (``run_cell``, a seed without a DAG kept as such), so with an iteration
budget (and a cache budget in exact scores) all give the same result.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.cell import Cell, SearchTask
from bnsl_dist.pipeline.run import (
    CacheBuilder,
    NoSolutionError,
    resolve_cache,
    run_cell,
    stage_data,
)
from bnsl_dist.pipeline.specs import CacheSpec, DataRef, ScreeningSpec, SearchSpec
from bnsl_dist.results.records import CellResult

__all__ = ["SCHEMA_VERSION", "Checkpoint", "SeedRun", "LearnResult", "learn_cells",
           "prepare_cache", "learn", "run_seed"]

#: Version of the result JSON's layout (README "Result JSON"); bumped on any change.
SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Checkpoint:
    """The best DAG over all seeds within ``budget`` (seconds or iterations)."""

    budget: float
    score: float | None
    seed: int | None
    dag: dict[str, Any] | None


@dataclass(frozen=True)
class SeedRun:
    """One seed's run: iterations run, seconds, incumbents (elapsed, score, iterations,
    bound) found within the budget."""

    seed: int
    iterations: int
    seconds: float
    incumbents: list[dict[str, Any]]


@dataclass(frozen=True)
class LearnResult:
    """What ``learn`` writes (schema :data:`SCHEMA_VERSION`, documented in README)."""

    spec: dict[str, Any]
    dag: dict[str, Any]
    score: float
    best: dict[str, Any]
    unit: str
    checkpoints: list[Checkpoint]
    runs: list[SeedRun]
    cache: dict[str, Any]
    screening: dict[str, Any] | None
    treewidth: dict[str, Any] | None
    provenance: dict[str, Any]
    schema_version: int = field(default=SCHEMA_VERSION)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, obj: dict[str, Any]) -> LearnResult:
        version = obj.get("schema_version")
        if version != SCHEMA_VERSION:
            raise InvalidConfigError(f"result schema version {version!r}; this version "
                                     f"reads {SCHEMA_VERSION}")
        return cls(**{**obj, "checkpoints": [Checkpoint(**c) for c in obj["checkpoints"]],
                      "runs": [SeedRun(**r) for r in obj["runs"]]})

    @classmethod
    def merge(cls, cells: Sequence[Cell],
              results: Sequence[CellResult | NoSolutionError]) -> LearnResult:
        """The seeds' records as one result: at each checkpoint (the budget last) the
        best DAG over the seeds (ties: the earlier seed), as ``best_at`` of
        :meth:`~bnsl_dist.search.base.AnytimeTrace.merge` of the seeds' traces picks it,
        but without making their DAGs. A seed that found no DAG within the budget
        (:func:`run_seed` gives its :class:`NoSolutionError`) has no incumbent.

        Raises
        ------
        NoSolutionError
            No seed found a DAG within the budget (the first seed's error).
        """
        if not cells or len(cells) != len(results):
            raise InvalidConfigError("one record per cell is needed")
        found = [r for r in results if isinstance(r, CellResult)]
        if not found:
            first = results[0]
            assert isinstance(first, NoSolutionError)
            raise first
        c0 = cells[0]
        # every seed's incumbents (run, trace index), in the order of AnytimeTrace.merge
        # (runs in order, each in time order): ``max`` keeps the first of the highest
        # score, so ties go to the earlier seed. The best of a seed at a checkpoint of
        # its cell (the cells share their budget) is one whose DAG its record keeps; the
        # winners' DAGs alone are made (making every seed's took 0.1 s a seed at 10,000
        # variables: workflows/benchmarks/merge_seeds.py).
        recs = {run: r for run, r in enumerate(results) if isinstance(r, CellResult)}
        incs = [(run, i) for run, r in recs.items() for i in range(len(r.trace_scores))]
        if not incs:  # pragma: no cover - a seed that found one has an incumbent
            raise InvalidConfigError("no DAG")

        def score(ri: tuple[int, int]) -> float:
            return recs[ri[0]].trace_scores[ri[1]]

        @functools.cache
        def dag_of(ri: tuple[int, int]) -> dict[str, Any]:
            return recs[ri[0]].incumbent_dag(ri[1]).to_json_dict()

        b = c0.search.budget
        by_time = b.seconds is not None
        cps = list(b.checkpoints if by_time else b.iteration_checkpoints)
        last = float(b.seconds if b.seconds is not None else b.iterations or 0)
        if not cps or cps[-1] != last:
            cps.append(last)  # the budget is always the last checkpoint
        rows = []
        for cp in cps:
            within = [(run, i) for run, i in incs
                      if (recs[run].trace_elapsed[i] <= cp if by_time
                          else recs[run].trace_iterations[i] <= int(cp))]
            inc = max(within, key=score, default=None)
            rows.append(Checkpoint(float(cp), None, None, None) if inc is None else
                        Checkpoint(float(cp), score(inc), cells[inc[0]].seed, dag_of(inc)))
        best_run, best_i = best = max(incs, key=score)
        top = recs[best_run]
        run_dicts = [SeedRun(c.seed, r.iterations, r.elapsed, [
            {"elapsed": e, "score": s, "iterations": i, "bound": None}
            for e, s, i in zip(r.trace_elapsed, r.trace_scores, r.trace_iterations,
                               strict=True)]) if isinstance(r, CellResult)
            else SeedRun(c.seed, r.iterations or 0, r.seconds or 0.0, [])
            for c, r in zip(cells, results, strict=True)]
        screening = top.outputs.get("screening")
        return cls(
            spec={"data": None if c0.data is None else c0.data.json_dict(),
                  "cache": c0.cache.json_dict(),
                  "screening": None if c0.screening is None
                  else c0.screening.json_dict(),
                  "search": c0.search.json_dict(),
                  "seeds": [c.seed for c in cells], "base_seed": c0.grid_seed},
            dag=dag_of(best), score=score(best),
            best={"seed": cells[best_run].seed, "elapsed": top.trace_elapsed[best_i],
                  "iterations": top.trace_iterations[best_i], "bound": top.bound},
            unit="seconds" if by_time else "iterations", checkpoints=rows, runs=run_dicts,
            cache={"key": top.cache_key, "n_vars": top.n_vars,
                   "n_sets": top.n_parent_sets, "seconds": top.cache_seconds},
            screening=screening,
            treewidth=None if top.treewidth_bound is None else {
                "width": top.treewidth_bound, "order": list(top.treewidth_order)},
            provenance=_record_provenance(top))


def _record_provenance(record: CellResult) -> dict[str, Any]:
    """The provenance of the seed run that found the best DAG, as its record carries it
    (the code its process ran, on its host), in the form of
    :func:`~bnsl_dist.pipeline.provenance.provenance`; not the merging process's, which
    may have run other code, or none."""
    versions = json.loads(record.versions or "{}")
    return {"version": versions.get("bnsl_dist"), "commit": record.commit,
            "dirty": record.dirty, "versions": versions, "hostname": record.hostname,
            "cpus": record.cpus}


def learn_cells(data: DataRef | None, cache: CacheSpec, search: SearchSpec, seeds: int, *,
                base_seed: int = 0, screening: ScreeningSpec | None = None) -> list[Cell]:
    """One cell per seed ``0 .. seeds-1``, each a child stream of ``base_seed``."""
    if seeds < 1:
        raise InvalidConfigError(f"seeds must be >= 1, got {seeds}")
    return [Cell(grid="learn", label=search.algorithm, data=data, cache=cache,
                 screening=screening, task=SearchTask(search=search), seed=s,
                 grid_seed=base_seed) for s in range(seeds)]


def prepare_cache(cell: Cell, builder: CacheBuilder | None = None) -> ParentSetCache:
    """The cache the cells of a ``learn`` share: read, or built once (with ``builder``,
    default serial)."""
    job = cell.cache_job
    _, _, target = stage_data(job)
    return resolve_cache(job, None, target, builder)[0]


def run_seed(cell: Cell, cache: ParentSetCache | str | None = None
             ) -> CellResult | NoSolutionError:
    """:func:`~bnsl_dist.pipeline.run.run_cell` of one seed of ``learn``; a seed that
    found no DAG within the budget gives its :class:`NoSolutionError` instead of
    raising it, so that the other seeds' DAGs still make the result
    (:meth:`LearnResult.merge`)."""
    try:
        return run_cell(cell, cache)
    except NoSolutionError as exc:
        return exc


def learn(cells: Sequence[Cell], cache: ParentSetCache | None = None) -> LearnResult:
    """``map(run_seed, cells)`` with one shared cache (built here unless given); the
    seeds of a memetic search as islands (:mod:`bnsl_dist.pipeline.islands`).

    Raises
    ------
    NoSolutionError
        No seed found a DAG within the budget.
    """
    from bnsl_dist.pipeline.islands import as_islands, island_cells

    shared = prepare_cache(cells[0]) if cache is None else cache
    if as_islands(cells):
        return LearnResult.merge(cells, list(island_cells(cells, shared)))
    return LearnResult.merge(cells, [run_seed(c, shared) for c in cells])
