"""Benchmark: merging the seeds' records of a ``learn`` into one result
(:meth:`bnsl_dist.pipeline.learn.LearnResult.merge`), the client's serial step after the
seeds' tasks (2.9 s for 16 seeds on r10's 10,000 variables on the 16-core device,
``device20-learn-r10-w16-phases.json``).

Records of ``--seeds`` seeds on a random DAG of ``--vars`` variables (each with up to
three parents among the earlier ones) are made with ``run_cell``'s own trace fields
(:func:`bnsl_dist.pipeline.run.trace_fields`: each seed's trace of ``--incumbents`` DAGs,
the best at each checkpoint kept), then merged by
``LearnResult.merge`` and, side by side in the same process, by the way it merged before
session 20 (each record's ``trace()``, which makes every kept DAG, then
``AnytimeTrace.merge``'s ``best_at`` per checkpoint): the seconds of each (best of
``--repeats``) and whether both give the same checkpoints and best DAG.

Run: ``python -m workflows.benchmarks.merge_seeds [--vars 10000 --seeds 16]``; writes
``out/merge_seeds.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

from workflows.benchmarks._common import write_result


def _records(n: int, seeds: int, incumbents: int, checkpoints: list[float]
             ) -> tuple[list[Any], list[Any]]:
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.pipeline.cell import canonical_json
    from bnsl_dist.pipeline.learn import learn_cells
    from bnsl_dist.pipeline.run import trace_fields
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec
    from bnsl_dist.results.records import CellResult
    from bnsl_dist.search.base import AnytimeTrace, Incumbent

    budget = checkpoints[-1]
    search = SearchSpec(algorithm="asobs", budget={"seconds": budget,
                                                   "checkpoints": checkpoints})
    cells = learn_cells(None, CacheSpec(path="unused.jkl"), search, seeds)
    names = tuple(f"X{i}" for i in range(n))
    rng = np.random.default_rng(0)
    records = []
    for c in cells:
        incs = []
        for j in range(incumbents):
            parents = [rng.choice(v, size=min(v, int(rng.integers(0, 4))), replace=False)
                       if v else () for v in range(n)]
            incs.append(Incumbent(elapsed=budget * (j + 1) / (incumbents + 1),
                                  score=-1e7 + 1e3 * j + float(rng.normal()),
                                  dag=DAG.from_parents(parents, names), iterations=j + 1))
        trace = AnytimeTrace(incs, incumbents, budget)
        best = trace.best
        assert best is not None
        records.append(CellResult(
            key=c.key, grid=c.grid, dataset="synthetic", split="train", algorithm="asobs",
            label="asobs", params="{}", k=None, seed=c.seed, budget_seconds=budget,
            budget_iterations=None, best_score=best.score,
            dag_json=canonical_json(best.dag.to_json_dict()), n_vars=n, n_samples=1,
            **trace_fields(trace, search.budget)))
    return cells, records


def _before(cells: list[Any], records: list[Any], checkpoints: list[float]
            ) -> tuple[list[Any], Any]:
    """The merge as it was: every kept DAG made, then the merged trace's best_at."""
    from bnsl_dist.search.base import AnytimeTrace

    merged = AnytimeTrace.merge([r.trace() for r in records])
    rows = []
    for cp in checkpoints:
        inc = merged.best_at(cp)
        rows.append(None if inc is None else
                    (inc.score, cells[inc.info["run"]].seed, inc.dag.to_json_dict()))
    best = merged.best
    assert best is not None
    return rows, best.dag.to_json_dict()


def main() -> None:
    from bnsl_dist.pipeline.learn import LearnResult

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vars", type=int, default=10_000)
    ap.add_argument("--seeds", type=int, default=16)
    ap.add_argument("--incumbents", type=int, default=4, help="DAGs in each seed's trace")
    ap.add_argument("--checkpoints", type=float, nargs="+", default=[10.0, 30.0, 60.0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--name", default="merge_seeds")
    args = ap.parse_args()
    cells, records = _records(args.vars, args.seeds, args.incumbents, args.checkpoints)
    before, after = [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        rows, best_dag = _before(cells, records, args.checkpoints)
        before.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = LearnResult.merge(cells, records)
        after.append(time.perf_counter() - t0)
    same = ([None if c.score is None else (c.score, c.seed, c.dag) for c in res.checkpoints]
            == rows and res.dag == best_dag)
    out = {"settings": vars(args),
           "kept_dags": sum(1 + len(json.loads(r.incumbent_dags)) for r in records),
           "before_seconds": round(min(before), 4), "after_seconds": round(min(after), 4),
           "speedup": round(min(before) / min(after), 1), "same_result": same}
    print(out, flush=True)
    print(write_result(args.name, out))


if __name__ == "__main__":
    main()
