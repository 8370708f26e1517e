"""Benchmark: how far is each peer's DAG from the BIC optimum of its data?

On the CSVs of ``peers.py`` (the same sample: ``make_csv`` with the same network, N and
seed), this builds the complete cache of parent sets up to ``--max-indegree`` parents
(sequential exploration with BIC's pruning rules: every set that is not dominated by a
subset) and solves it with the exact ILP (``ilp``) to a proved optimum: the highest BIC
of any DAG whose families have at most that many parents. Each DAG of the given peers
result files (``peers*.json``: pyAgrum, GES, bnsl_dist, ...) is then placed against it,
scored by ``peers.bic`` (one independent scorer for all).

An optimum proved for in-degree <= d bounds every DAG with families of at most d parents;
a DAG with a larger family can exceed it (the table says when one has).

Run: ``python -m workflows.benchmarks.peers_optimum [--networks alarm] [--max-indegree 4]
[--seconds 600] [--peers workflows/results/benchmarks/peers-learn-within.json ...]``;
writes out/peers_optimum.json and .md (alarm, d = 4: about 45 s for the cache and 40 s
for the ILP on one core).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workflows.benchmarks._common import OUT_DIR, write_result
from workflows.benchmarks.peers import bic, make_csv


def optimum(csv: Path, max_indegree: int, seconds: float) -> dict[str, Any]:
    """The complete in-degree-bounded BIC cache of ``csv`` and its ILP optimum."""
    from bnsl_dist.cache.build import build_cache
    from bnsl_dist.data import read_data
    from bnsl_dist.search.base import Budget, make_optimizer

    data = read_data(csv)
    t0 = time.perf_counter()
    cache = build_cache(data, method="sequential", score="bic", max_indegree=max_indegree)
    cache_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    best = None
    for inc in make_optimizer("ilp").run(cache, Budget(seconds=seconds),
                                         np.random.default_rng(0)):
        best = inc
    ilp_s = time.perf_counter() - t0
    if best is None:
        raise RuntimeError(f"{csv}: the ILP found no DAG within {seconds} s")
    names = list(data.names)
    parents = {names[v]: [names[p] for p in ps] for v, ps in enumerate(best.dag.parents)}
    proved = best.bound is not None and best.bound - best.score <= 1e-6 * abs(best.score)
    return {"max_indegree": max_indegree, "n_sets": int(cache.n_sets),
            "cache_seconds": cache_s, "ilp_seconds": ilp_s, "score": float(best.score),
            "bound": best.bound, "proved_optimal": bool(proved), "parents": parents}


def markdown(result: dict[str, Any]) -> str:
    lines = ["### Each DAG against the BIC optimum of its data (nats; gap = optimum - BIC)",
             "", "| data | tool | budget (s) | wall (s) | largest family | BIC | gap |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for net, o in result["optima"].items():
        d = o["max_indegree"]
        status = "proved" if o["proved_optimal"] else f"bound {o['bound']:,.1f}"
        lines.append(f"| {net} | ILP optimum, in-degree ≤ {d} ({status}) | | "
                     f"{o['cache_seconds'] + o['ilp_seconds']:.1f} | "
                     f"{max(map(len, o['parents'].values()))} | "
                     f"{o['bic']:,.1f} | 0.0 |")
        for r in result["rows"]:
            if r["network"] != net:
                continue
            if "bic" not in r:
                lines.append(f"| {net} | {r['tool']} | {r['budget']:g} | — | — | — | "
                             f"{r.get('error', 'no DAG')} |")
                continue
            big = r["largest_family"]
            budget = "" if r.get("budget") is None else f"{r['budget']:g}"
            wall = "—" if r.get("wall") is None else f"{r['wall']:.1f}"
            lines.append(f"| {net} | {r['tool']} ({r['source']}) | {budget} | {wall} | "
                         f"{big}{' (above d)' if big > d else ''} | "
                         f"{r['bic']:,.1f} | {o['bic'] - r['bic']:,.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="*", default=["alarm"])
    ap.add_argument("--max-indegree", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=600.0, help="the ILP's budget")
    ap.add_argument("--n-samples", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--peers", nargs="*", default=[], help="peers.py result files")
    args = ap.parse_args()
    result: dict[str, Any] = {"settings": vars(args), "optima": {}, "rows": []}
    for net in args.networks:
        csv = make_csv(net, args.n_samples, args.seed, OUT_DIR / "peers_data")
        df = pd.read_csv(csv, dtype=str)
        o = optimum(csv, args.max_indegree, args.seconds)
        o["bic"] = float(bic(df, o["parents"]))  # the independent scorer agrees with the ILP's
        result["optima"][net] = o
        print({k: v for k, v in o.items() if k != "parents"}, flush=True)
        for path in args.peers:
            peers = json.loads(Path(path).read_text())
            if peers["settings"].get("n_samples") != args.n_samples or \
                    peers["settings"].get("seed") != args.seed:
                continue  # another sample
            for r in peers["rows"]:
                if r["network"] != net or (r["tool"] == "generating network"
                                           and any(x["tool"] == r["tool"] and
                                                   x["network"] == net
                                                   for x in result["rows"])):
                    continue  # the generating network once
                row = {k: v for k, v in r.items() if k not in ("parents", "load")}
                row["source"] = Path(path).name
                if "parents" in r:
                    row["bic"] = float(bic(df, r["parents"]))
                    row["largest_family"] = max(map(len, r["parents"].values()))
                result["rows"].append(row)
    path = write_result("peers_optimum", result)
    from bnsl_dist._io import atomic_write_text

    atomic_write_text(OUT_DIR / "peers_optimum.md", markdown(result))
    print(markdown(result))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
