"""Benchmark: how well the stored cells' wall times predict a cell's (the estimate behind
`grid status`, `grid run --dry-run`, the cell log and `--stop-at`:
:func:`bnsl_dist.pipeline.forecast.estimate_left`).

Leave one out over the committed records of a grid: each stored cell in turn is
estimated from all the others, and its relative error |estimate - wall| / wall is
recorded — by ``estimate_left`` as it is, and by the rule it had before the SEM missing
rate counted (the mean over the same data set, split, label, treewidth and budget
scale, every rate pooled). Reads the records only: nothing is run.

Run: ``python -m workflows.benchmarks.estimate_left [--grid
configs/grids/sem-imputation-2018-reduced.yaml]``; writes ``out/estimate_left.json``.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import write_result

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.forecast import estimate_left
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.results.export import read_records
    from bnsl_dist.results.store import StoreStatus

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--grid", default="configs/grids/sem-imputation-2018-reduced.yaml")
    ap.add_argument("--name", default="estimate_left")
    args = ap.parse_args()
    grid = load_grid(ROOT / args.grid)
    folder = ROOT / "workflows" / "results" / grid.name
    parts = [p for p in (folder / "records.parquet", folder / "in-progress.parquet")
             if p.is_file()]
    walls: dict[str, float] = {}
    for p in parts:  # each read whole, its numbered part files included
        t = read_records(p).table
        walls.update(zip(t.column("key").to_pylist(), t.column("wall_seconds").to_pylist(),
                         strict=True))
    by_set: dict[str, list[Any]] = {}
    for c in expand_grid(grid):
        by_set.setdefault(c.dataset, []).append(c)

    def scale(c: Any) -> float:
        return 1.0 if c.sem is None else float(c.sem.budget_scale)

    errors: dict[str, list[float]] = {"estimate_left": [], "rates_pooled": []}
    for cells in by_set.values():
        stored = [c for c in cells if c.key in walls]
        for c in stored:
            others = tuple(o.key for o in stored if o is not c)
            est = estimate_left(cells, StoreStatus(others, (), (c.key,)),
                                {k: walls[k] for k in others})[c.key]
            pooled = [walls[o.key] for o in stored if o is not c and o.split == c.split
                      and o.label == c.label and o.search.k == c.search.k
                      and scale(o) == scale(c)]
            if est is None or not pooled:
                continue
            w = walls[c.key]
            errors["estimate_left"].append(abs(est - w) / w)
            errors["rates_pooled"].append(abs(statistics.fmean(pooled) - w) / w)
    out = {rule: {"cells": len(e), "mean_relative_error": round(statistics.fmean(e), 4),
                  "median_relative_error": round(statistics.median(e), 4)}
           for rule, e in errors.items()}
    path = write_result(args.name, {"grid": args.grid, "records": [str(p.relative_to(ROOT))
                                                                   for p in parts],
                                    "rules": out})
    for rule, r in out.items():
        print(f"{rule}: {r['cells']} cells, relative error mean {r['mean_relative_error']}, "
              f"median {r['median_relative_error']}")
    print(path)


if __name__ == "__main__":
    main()
