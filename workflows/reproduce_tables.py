"""Reproduce the ΔBIC tables of the ASOBS-ENT paper (Tables 2–4) on a reduced budget.

Takes the paper's grid (``configs/grids/asobs-ent-2018.yaml``), keeps the 60 real
experiments (20 Twenty Datasets × 3 splits; ``--with-synthetic`` adds r0–r14), shrinks
the budgets (cache seconds per variable, search seconds, treewidths), runs it on a local
Dask cluster (resumable: rerun the same command to finish an interrupted run), and
writes the tables (markdown + CSV), ΔBIC histograms and anytime curves, the reduced
grid and a README with the command and the timings into ``--out``.

Example (the run in workflows/results/asobs-ent-reduced/)::

    python workflows/reproduce_tables.py --results runs/asobs-ent-reduced \\
        --out workflows/results/asobs-ent-reduced --workers 2

Public API only: bnsl_dist.config, bnsl_dist.orchestrate, bnsl_dist.results,
bnsl_dist.reporting.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

import yaml

from bnsl_dist.config import GridConfig, load_grid
from bnsl_dist.orchestrate.cluster import connect
from bnsl_dist.orchestrate.grid import format_plan, plan_grid, run_grid
from bnsl_dist.reporting.plots import plot_anytime_summary, plot_delta_histogram
from bnsl_dist.reporting.tables import Comparison, paired_deltas, write_tables
from bnsl_dist.results.store import ResultStore

REPO = Path(__file__).resolve().parents[1]


def reduced_grid(grid: GridConfig, *, cache_seconds: float, search_seconds: float,
                 kg_seconds: float, treewidths: list[int], synthetic: bool,
                 late: bool) -> GridConfig:
    """The paper's grid with small budgets (validated like any grid)."""
    obj = grid.model_dump(mode="json")
    obj["name"] = f"{grid.name}-reduced"
    obj["description"] = (f"{grid.description} — reduced: cache {cache_seconds} s/variable, "
                          f"search {search_seconds} s (k-G {kg_seconds} s), k in "
                          f"{treewidths}")
    obj["datasets"] = [d for d in obj["datasets"]
                       if synthetic or len(d["splits"]) == 3]
    obj["cache"]["seconds_per_variable"] = cache_seconds
    obj["budget"] = {"seconds": search_seconds,
                     "checkpoints": sorted({min(1.0, search_seconds), search_seconds})}
    algs = []
    for a in obj["algorithms"]:
        if a.get("label") == "kg-ent-late" and not late:
            continue
        if a["name"] in ("kg", "kg-ent"):
            a["budget"] = {"seconds": kg_seconds,
                           "checkpoints": sorted({min(0.5, kg_seconds), kg_seconds})}
        algs.append(a)
    obj["algorithms"] = algs
    labels = {a.get("label") or a["name"] for a in algs}
    obj["comparisons"] = [c for c in obj["comparisons"] if c["a"] in labels and c["b"] in labels]
    obj["treewidths"] = treewidths
    return GridConfig.model_validate(obj)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--grid", default=str(REPO / "configs/grids/asobs-ent-2018.yaml"))
    ap.add_argument("--results", default="runs/asobs-ent-reduced")
    ap.add_argument("--out", default=str(REPO / "workflows/results/asobs-ent-reduced"))
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--cache-seconds", type=float, default=0.03)
    ap.add_argument("--search-seconds", type=float, default=4.0)
    ap.add_argument("--kg-seconds", type=float, default=1.0)
    ap.add_argument("--treewidths", default="2,5,8")
    ap.add_argument("--with-synthetic", action="store_true")
    ap.add_argument("--no-late", action="store_true",
                    help="skip k-G_ENT with direction 'late' (the default is 'early')")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)

    shared = REPO.parent / "shared" / "data"
    if shared.is_dir():  # registered data sets copy from the staged mirror (no network)
        os.environ.setdefault("BNSL_MIRROR", str(shared))
        os.environ.setdefault("BNSL_SHARED_DATA", str(shared))
    grid = reduced_grid(load_grid(args.grid), cache_seconds=args.cache_seconds,
                        search_seconds=args.search_seconds, kg_seconds=args.kg_seconds,
                        treewidths=[int(k) for k in args.treewidths.split(",")],
                        synthetic=args.with_synthetic, late=not args.no_late)
    plan = plan_grid(grid, args.results)
    print(format_plan(plan, args.workers or os.cpu_count() or 1), file=sys.stderr)
    if args.dry_run:
        return 0
    t0 = time.perf_counter()
    with connect(workers=args.workers) as client:
        n_workers = len(client.scheduler_info()["workers"])
        summary = run_grid(client, grid, args.results)
    wall = time.perf_counter() - t0
    print(summary, file=sys.stderr)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    store = ResultStore(args.results)
    frame = store.read_frame()
    frame = frame[frame["grid"] == grid.name]
    comps = [Comparison(c.a, c.b, c.title, tuple(c.columns)) for c in grid.comparisons]
    write_tables(frame, comps, out)
    for c in comps:
        d = paired_deltas(frame, c.a, c.b)
        plot_delta_histogram(d["delta"], out / f"{c.name}.hist.png", title=c.title, a=c.a,
                             b=c.b)
        plot_anytime_summary(frame, out / f"{c.name}.anytime.png", labels=[c.a, c.b],
                             title=c.title)
    (out / "grid.yaml").write_text(yaml.safe_dump(grid.model_dump(mode="json"),
                                                  sort_keys=False))
    failures = [f for f in store.read_failures() if f.grid == grid.name]
    by_status: dict[str, int] = {}
    for f in failures:
        by_status[f"{f.label} {f.status}"] = by_status.get(f"{f.label} {f.status}", 0) + 1
    cmd = "python workflows/reproduce_tables.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    stats = {"cells": summary.total, "computed_this_run": len(summary.computed),
             "skipped_already_done": summary.skipped, "failed": len(failures),
             "failures_by_algorithm_and_status": by_status, "workers": n_workers,
             "wall_seconds_this_run": round(wall, 1),
             "cache_seconds_total": round(float(frame.drop_duplicates("cache_key")
                                                ["cache_seconds"].sum()), 1)}
    (out / "run.json").write_text(json.dumps(stats, indent=1) + "\n")
    readme = [f"# {grid.name}", "", grid.description, "",
              "Made by:", "", "```", cmd, "```", "",
              f"Run stats: `{json.dumps(stats)}`", "",
              "Tables: `tables.md` (and one `.md`/`.csv`/`.deltas.csv` per comparison); "
              "figures: `*.hist.png` (ΔBIC), `*.anytime.png` (median relative gap to the "
              "best final score vs time).", ""]
    (out / "README.md").write_text("\n".join(readme))
    print(f"tables in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
