"""Benchmark: how ``learn_within`` should split one core's time between its stages.

On the seeded peers samples (``peers.make_csv``), :func:`bnsl_dist.pipeline.tasks.within.learn_within`
runs in this process for each ``--shares`` setting (cache, search, polish) and seed, the
settings interleaved and their order reversed every other seed; every DAG is scored by
the peers' independent BIC (``peers.bic``).

Run: ``python -m workflows.benchmarks.within_shares [--networks bn500] [--seconds 16]
[--seeds 0 1 2 3 4 5] [--shares 0.2,0.2,0.6 0.4,0.15,0.45]``; writes
``out/within_shares.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

import numpy as np
import pandas as pd

from workflows.benchmarks._common import OUT_DIR, bic_cells, write_report
from workflows.benchmarks.peers import bic, generating_dag, make_csv


def main() -> None:
    from bnsl_dist.data import read_data
    from bnsl_dist.pipeline.tasks.within import learn_within

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--networks", nargs="*", default=["bn500"])
    ap.add_argument("--seconds", type=float, nargs="*", default=[16.0])
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--shares", nargs="*", default=["0.2,0.2,0.6", "0.4,0.15,0.45"])
    ap.add_argument("--n-samples", type=int, default=5000)
    ap.add_argument("--name", default="within_shares")
    args = ap.parse_args()
    shares = [tuple(float(x) for x in s.split(",")) for s in args.shares]
    folder = OUT_DIR / "peers_data"
    rows: list[dict[str, Any]] = []
    truth: dict[str, float] = {}
    for net in args.networks:
        csv = make_csv(net, args.n_samples, 0, folder)
        df = pd.read_csv(csv, dtype=str)
        truth[net] = bic(df, generating_dag(net, args.n_samples, 0, folder))
        data = read_data(csv)
        learn_within(data, 3.0, 0)  # every stage's kernels, outside the timed runs
        for sec in args.seconds:
            for rep, seed in enumerate(args.seeds):
                for sh in shares if rep % 2 == 0 else shares[::-1]:
                    res = learn_within(data, sec, np.random.default_rng(seed), shares=sh)
                    parents = res.dag.to_json_dict()["parents"]
                    rows.append({"network": net, "seconds": sec, "seed": seed,
                                 "shares": list(sh), "bic": bic(df, parents),
                                 "reported": res.score, "n_sets": res.cache.n_sets,
                                 "stage_seconds": res.seconds,
                                 "load": os.getloadavg()[0]})
                    print(json.dumps(rows[-1]), flush=True)
    lines = ["# learn_within on one core: stage shares", "",
             f"Command: `python -m workflows.benchmarks.within_shares {' '.join(sys.argv[1:])}`",
             "", "BIC by the peers' independent scorer; settings interleaved per seed.", "",
             "| network | limit (s) | shares | median BIC | per seed | median sets | "
             "generating DAG |", "|---|---:|---|---:|---|---:|---:|"]
    for net in args.networks:
        for sec in args.seconds:
            for sh in shares:
                sel = [r for r in rows if r["network"] == net and r["seconds"] == sec
                       and tuple(r["shares"]) == sh]
                median, per_seed = bic_cells(sel)
                lines.append(f"| {net} | {sec:g} | {sh} | {median} | {per_seed} | "
                             f"{statistics.median(r['n_sets'] for r in sel):.0f} | "
                             f"{truth[net]:,.1f} |")
    print(write_report(args.name, {"settings": vars(args), "generating_bic": truth,
                                   "rows": rows}, lines))


if __name__ == "__main__":
    main()
