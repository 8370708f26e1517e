"""Inference with bounded vs unbounded treewidth (Scanagatta et al. 2018, ML 107, §6.3):
a small, serial run of the ``kind: inference`` grid, with synthetic networks made on the
fly.

The paper's study is a grid like every other: ``configs/grids/inference-2018.yaml``
(paper budgets) and ``inference-2018-reduced.yaml``, run with
``bnsl-dist grid run GRID.yaml --results DIR`` (resumable, one record per cell) and
tabulated by :func:`bnsl_dist.reporting.inference.inference_tables`. What a cell does
(learn with the grid's cache and search, fit CPTs with a Dirichlet prior α = 1, answer
the data set's queries, the reference learner's cell answering on the true network too)
is :func:`bnsl_dist.pipeline.run.run_cell`; queries, engines and errors are
:mod:`bnsl_dist.inference.study`. See :class:`bnsl_dist.pipeline.tasks.inference.InferenceConfig`.

This script builds such a grid from its options — k-G_ENT at each k, ASOBS-ENT as the
reference; real Twenty Datasets (training split) and ``--networks`` random networks of
``--n-vars`` variables registered as sampled data sets in a registry written beside the
shipped one (``$BNSL_DATASETS`` for this process) — runs its cells one by one through
``run_cell`` into ``OUT/records`` (a rerun skips stored cells), and writes the tables:

* real data: P(e) queries of ``--evidence`` random variables in random states; mae of
  P(e) against the unbounded model (the paper's "assumed ground truth");
* synthetic networks: marginal queries on the leaves of the true network (then parents
  of leaves) and P(e) queries, against the true network (exact when its junction tree
  fits, else likelihood weighting); relative mae = mae / mae of the unbounded model.

Run (the configuration of issue 8's note):
    python -m workflows.inference_study --real nltcs,plants,dna --networks 4 --n-vars 150 \\
        --truth-pe-samples 50000 --lw-samples 10000
(a smoke run: ``--real nltcs --networks 1 --n-vars 30 --queries 20 --iterations 50``).
Outputs under workflows/results/inference/ (``--out``): records/ (the resumable working
folder, one Parquet file per cell; not committed), records.parquet (this run's cells,
``bnsl-dist grid export``), and from it (``bnsl-dist tables records.parquet``)
inference_table5.md/.csv, inference_cells.csv, inference_fig7_relative_mae.png.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bnsl_dist.cli.tables import write_all_tables
from bnsl_dist.datasets.catalog import catalog_dir
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.results.export import export_records, load_records
from bnsl_dist.results.store import ResultStore

OUT = Path(__file__).resolve().parent / "results" / "inference"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def register_networks(folder: Path, args: argparse.Namespace) -> list[str]:
    """Copy the shipped registry into ``folder`` and add ``synthetic-j`` (a random
    network and ``--rows`` rows sampled from it) for each of ``--networks``."""
    for f in catalog_dir().iterdir():
        if f.name.endswith(".yaml"):
            (folder / f.name).write_text(f.read_text(encoding="utf-8"), encoding="utf-8")
    names = [f"synthetic-{j}" for j in range(args.networks)]
    body: dict[str, Any] = {
        "collection": "inference-study",
        "networks": {n: {"kind": "random", "n_vars": args.n_vars,
                         "max_indegree": args.max_indegree, "seed": 1000 * args.seed + j}
                     for j, n in enumerate(names)},
        "datasets": {n: {"kind": "sampled", "network": n, "splits": {"train": {
            "n_samples": args.rows, "seed": 1000 * args.seed + 500 + j}}}
            for j, n in enumerate(names)}}
    (folder / "zz-inference-study.yaml").write_text(yaml.safe_dump(body), encoding="utf-8")
    return names


def study_grid(args: argparse.Namespace, synthetic: list[str]) -> GridConfig:
    real = [x for x in args.real.split(",") if x]
    return GridConfig.model_validate({
        "name": "inference-study", "kind": "inference", "seed": args.seed,
        "datasets": [{"name": n} for n in real + synthetic],
        "cache": {"method": "independence", "score": "bic",
                  "scores_per_variable": args.scores_per_variable},
        "algorithms": [{"name": "kg-ent", "k": args.ks}, {"name": "asobs-ent"}],
        "budget": {"iterations": args.iterations},
        "inference": {"reference": "asobs-ent", "queries": args.queries,
                      "evidence_vars": args.evidence, "marginal_queries": args.queries,
                      "lw_samples": args.lw_samples, "truth_samples": args.truth_samples,
                      "truth_pe_samples": args.truth_pe_samples,
                      "memory_gib": args.memory_gib, "alpha": 1.0}})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", default="nltcs",
                    help="comma-separated Twenty Datasets (nltcs is bundled; others from "
                         "$BNSL_SHARED_DATA/twenty); empty for none")
    ap.add_argument("--networks", type=int, default=3, help="synthetic networks")
    ap.add_argument("--n-vars", type=int, default=60)
    ap.add_argument("--max-indegree", type=int, default=3)
    ap.add_argument("--rows", type=int, default=5000, help="rows sampled per network")
    ap.add_argument("--ks", default="2,4,6,8")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--evidence", type=int, default=5)
    ap.add_argument("--scores-per-variable", type=int, default=300)
    ap.add_argument("--iterations", type=int, default=300, help="optimizer iterations")
    ap.add_argument("--memory-gib", type=float, default=2.0)
    ap.add_argument("--lw-samples", type=int, default=20_000,
                    help="likelihood-weighting particles per query for learned models")
    ap.add_argument("--truth-samples", type=int, default=1_000_000,
                    help="particles for the true network's marginals when it is too wide")
    ap.add_argument("--truth-pe-samples", type=int, default=100_000,
                    help="particles per P(e) query on the true network when it is too "
                         "wide (0: no P(e) queries on synthetic networks)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    args.ks = [int(k) for k in args.ks.split(",")]
    registry = Path(tempfile.mkdtemp(prefix="bnsl-inference-registry-"))
    try:
        synthetic = register_networks(registry, args)
        os.environ["BNSL_DATASETS"] = str(registry)
        grid = study_grid(args, synthetic)
        store = ResultStore(args.out / "records")
        store.save_text(f"grids/{grid.name}.json", grid.model_dump_json(indent=1) + "\n")
        cells = expand_grid(grid)
        for i, cell in enumerate(cells):
            if store.has_result(cell.key):
                continue
            log(f"[{i + 1}/{len(cells)}] {cell.describe()}")
            store.write_result(run_cell(cell))
    finally:
        shutil.rmtree(registry, ignore_errors=True)
    records = export_records(store.root, args.out / "records.parquet",
                             keys=[c.key for c in cells])  # this run's cells only
    for p in write_all_tables(load_records(records), args.out, plots=True):
        log(f"wrote {p}")
    print((args.out / "inference_table5.md").read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
