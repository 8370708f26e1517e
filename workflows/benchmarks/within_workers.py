"""Benchmark: ``bnsl-dist learn --time-limit`` on a local cluster, source tree against tree.

The same command — ``learn CSV --time-limit S --workers W --seed B`` — runs from each
source tree (``--trees``: PYTHONPATH and working directory, as ``asobs_large``'s optimizer
part), the trees alternating and their order reversed every other repetition, on the
seeded peers samples (``peers.make_csv``: pyAgrum's BNGenerator, N = 5,000). Every DAG is
scored by the peers' independent BIC (``peers.bic``), the generating network's too.

It compares how the time of several workers is spent: each seed building its own cache
(the design before the shared cache) against one cache built in slices by every worker
and then searched by every seed (:mod:`bnsl_dist.orchestrate.execute`).

``--emulate W`` instead estimates, on one core, what W workers would reach with this
tree: the cache is built in this process with W times the cache stage's share of
``S - --startup`` (a local cluster's start; on W workers each explores n / W variables in
that share, so each variable gets the same time), then each seed searches and polishes
it in its own share of what is left (:func:`bnsl_dist.pipeline.tasks.within.learn_within` with
``cache``). Not modelled: scattering and gathering, and the best over W seeds (only the
per-seed results are reported).

Run: ``python -m workflows.benchmarks.within_workers --trees /path/to/old /path/to/new
[--networks bn500] [--seconds 30 60] [--workers 2] [--seeds 0 1 2]``, or
``--emulate 16 [--startup 3]``; writes ``out/within_workers.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd

from workflows.benchmarks._common import OUT_DIR, bic_cells, write_report
from workflows.benchmarks.peers import WARM, bic, bnsl_dist_cli, generating_dag, make_csv


def run_tree(tree: str, csv: Path, seconds: float, workers: int, seed: int,
             df: pd.DataFrame) -> dict[str, Any]:
    """One ``learn --time-limit`` from ``tree``; its DAG scored independently."""
    run = bnsl_dist_cli(csv, seconds, workers, seed, env={**os.environ, "PYTHONPATH": tree},
                        cwd=tree)
    res, wall = run["result"], run["wall"]
    parents = {c: list(ps) for c, ps in res["dag"]["parents"].items()}
    score = bic(df, parents)
    cache = res.get("cache")
    return {"tree": tree, "seconds": seconds, "workers": workers, "seed": seed,
            "bic": score, "reported": res["score"], "wall": wall,
            "shared_cache": cache is not None,
            "n_sets": cache["n_sets"] if cache else [r["n_sets"] for r in res["runs"]],
            "cache_seconds": cache["seconds"] if cache else
            [r["seconds"].get("cache") for r in res["runs"]],
            "load": os.getloadavg()[0]}


def emulate(csv: Path, seconds: float, workers: int, startup: float, seeds: list[int],
            df: pd.DataFrame) -> list[dict[str, Any]]:
    """Per seed, what ``workers`` workers would reach (see the module docstring)."""
    import numpy as np

    from bnsl_dist.cache.build import build_cache
    from bnsl_dist.data import read_data
    from bnsl_dist.pipeline.tasks.within import cache_share, cache_spec, learn_within

    data = read_data(csv)
    learn_within(data, 3.0, 0)  # every stage's kernels, outside the timed part
    run = seconds - startup
    cache_wall = run * cache_share()
    t0 = time.process_time()
    cache = build_cache(data, cache_spec(), deadline=time.time() + cache_wall * workers)
    cache_cpu = time.process_time() - t0
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
        res = learn_within(data, run - cache_wall, rng, cache=cache)
        parents = res.dag.to_json_dict()["parents"]
        rows.append({"seconds": seconds, "emulated_workers": workers, "startup": startup,
                     "seed": seed, "bic": bic(df, parents), "reported": res.score,
                     "n_sets": cache.n_sets, "cache_cpu_seconds": cache_cpu,
                     "stage_seconds": res.seconds, "load": os.getloadavg()[0]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--trees", nargs="+", default=[])
    ap.add_argument("--emulate", type=int, default=None, metavar="W",
                    help="estimate W workers on one core with this tree (no --trees)")
    ap.add_argument("--startup", type=float, default=3.0,
                    help="--emulate: seconds a local cluster takes to start")
    ap.add_argument("--networks", nargs="*", default=["bn500"])
    ap.add_argument("--seconds", type=float, nargs="*", default=[30.0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    ap.add_argument("--n-samples", type=int, default=5000)
    ap.add_argument("--name", default="within_workers")
    args = ap.parse_args()
    if (args.emulate is None) == (not args.trees):
        ap.error("give --trees or --emulate W")
    rows: list[dict[str, Any]] = []
    truth: dict[str, float] = {}
    folder = OUT_DIR / "peers_data"
    for tree in args.trees:
        subprocess.run([sys.executable, "-c", WARM], env={**os.environ, "PYTHONPATH": tree},
                       cwd=tree, check=True, capture_output=True)
    for net in args.networks:
        csv = make_csv(net, args.n_samples, 0, folder)
        df = pd.read_csv(csv, dtype=str)
        truth[net] = bic(df, generating_dag(net, args.n_samples, 0, folder))
        if args.emulate is not None:
            for sec in args.seconds:
                rows += [{"network": net, **r} for r in emulate(csv, sec, args.emulate,
                                                               args.startup, args.seeds, df)]
            continue
        for sec in args.seconds:
            for rep, seed in enumerate(args.seeds):
                for tree in args.trees if rep % 2 == 0 else args.trees[::-1]:
                    row = {"network": net, **run_tree(tree, csv, sec, args.workers, seed, df)}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
    if args.emulate is not None:
        lines = [f"# learn --time-limit on {args.emulate} workers, emulated on one core", "",
                 f"Command: `python -m workflows.benchmarks.within_workers "
                 f"{' '.join(sys.argv[1:])}`", "",
                 f"Cache built with {args.emulate} x its share of the limit less "
                 f"{args.startup:g} s of cluster start; each seed then searches and "
                 "polishes in its real share. BIC by the peers' scorer.", "",
                 "| network | limit (s) | cache sets | per seed | median | best | "
                 "generating DAG |", "|---|---:|---:|---|---:|---:|---:|"]
        for net in args.networks:
            for sec in args.seconds:
                sel = [r for r in rows if r["network"] == net and r["seconds"] == sec]
                median, per_seed = bic_cells(sel)
                lines.append(f"| {net} | {sec:g} | {sel[0]['n_sets']} | {per_seed} | "
                             f"{median} | "
                             f"{max(r['bic'] for r in sel):,.1f} | {truth[net]:,.1f} |")
        print(write_report(args.name, {"settings": vars(args), "generating_bic": truth,
                                       "rows": rows}, lines))
        return
    lines = [f"# learn --time-limit on {args.workers} local workers, tree against tree",
             "", f"Command: `python -m workflows.benchmarks.within_workers "
             f"{' '.join(sys.argv[1:])}`", "",
             "BIC in nats by the peers' independent scorer (higher is better); runs "
             "interleaved, one row per tree and limit: median over seeds "
             f"{args.seeds}.", "",
             "| network | limit (s) | tree | shared cache | median BIC | per seed | "
             "median wall (s) | generating DAG |", "|---|---:|---|---|---:|---|---:|---:|"]
    for net in args.networks:
        for sec in args.seconds:
            for tree in args.trees:
                sel = [r for r in rows if r["network"] == net and r["seconds"] == sec
                       and r["tree"] == tree]
                median, per_seed = bic_cells(sel)
                lines.append(
                    f"| {net} | {sec:g} | `{tree}` | {sel[0]['shared_cache']} | "
                    f"{median} | {per_seed} | "
                    f"{statistics.median(r['wall'] for r in sel):.1f} | {truth[net]:,.1f} |")
    print(write_report(args.name, {"settings": vars(args), "generating_bic": truth,
                                   "rows": rows}, lines))


if __name__ == "__main__":
    main()
