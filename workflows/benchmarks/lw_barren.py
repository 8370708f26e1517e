"""Benchmark: likelihood weighting's P(e) on the true networks, with and without its
barren variables (:class:`~bnsl_dist.inference.LikelihoodWeighting`, ``barren``).

The kmax-inference grid answers 100 queries P(e) of 5 random variables on each true
network r0-r14 (2,000-10,000 variables, too wide for a junction tree) by likelihood
weighting, 100,000 particles per query. A variable with no observed descendant sums
out of P(e), so only the evidence's ancestors need sampling. Per network: the same
queries (drawn as the grid draws them, :func:`~bnsl_dist.inference.study.random_evidence`)
answered both ways, alternately, each query's particles from one seed; reported: the
seconds of each, their ratio, the ancestors' share of the network, and the two
estimates' difference (both estimate the same ln P(e); they differ only by sampling
noise, shown beside the spread of two seeds of the full sampler). With ``--baseline
DIR`` (a checkout of an earlier commit), the same queries are also answered by that
commit's sampler in a subprocess, alternately with the two above: the kernel's own
change measured side by side, and its answers compared with the default sampler's here
(``baseline_max_abs_diff``: 0 when the two draw the same particles).

Run: ``python -m workflows.benchmarks.lw_barren --networks r0 r5 r10 --queries 10
--particles 20000`` (writes out/lw_barren.json and .md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from bnsl_dist.datasets.catalog import load_network
from bnsl_dist.inference import LikelihoodWeighting
from bnsl_dist.inference.study import random_evidence
from workflows.benchmarks._common import SHARED_DATA, write_report

_BASELINE = """
import json, sys, time
import numpy as np
from bnsl_dist.datasets.catalog import load_network
from bnsl_dist.inference import LikelihoodWeighting
from bnsl_dist.inference.study import random_evidence
name, mirror, queries, particles, seed = sys.argv[1:6]
net = load_network(name, mirror=mirror)
ev = random_evidence(net.arities, int(queries), 5, np.random.default_rng(int(seed)))
LikelihoodWeighting(net, n_samples=8, rng=0).log_prob_evidence(ev[:1])
t = time.perf_counter()
pe = LikelihoodWeighting(net, n_samples=int(particles), rng=int(seed)).log_prob_evidence(ev)
print(json.dumps([time.perf_counter() - t, pe.tolist()]))
"""


def baseline_run(src: str, name: str, args: argparse.Namespace
                 ) -> tuple[float, np.ndarray]:
    """Seconds and ln P(e) answers of the checkout ``src``'s default sampler on the same
    queries (a subprocess with ``src`` first on the path)."""
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", _BASELINE, name, str(SHARED_DATA),
                          str(args.queries), str(args.particles), str(args.seed)],
                         env=env, check=True, capture_output=True, text=True, cwd=src)
    secs, pe = json.loads(out.stdout.strip().splitlines()[-1])
    return float(secs), np.asarray(pe, dtype=np.float64)


def bench(name: str, args: argparse.Namespace) -> dict[str, Any]:
    net = load_network(name, mirror=SHARED_DATA)
    ev = random_evidence(net.arities, args.queries, 5, np.random.default_rng(args.seed))
    runs: dict[str, Any] = {}
    secs = {"barren": 0.0, "full": 0.0, "baseline": 0.0}
    base_pe = None
    LikelihoodWeighting(net, n_samples=8, rng=0).log_prob_evidence(ev[:1])  # compile
    for _rep in range(args.repeat):  # alternate, so load drifts hit both alike
        if args.baseline:
            t, base_pe = baseline_run(args.baseline, name, args)
            secs["baseline"] += t
        for label in ("full", "barren"):
            lw = LikelihoodWeighting(net, n_samples=args.particles, rng=args.seed,
                                     barren=label == "barren")
            t = time.perf_counter()
            runs[label] = lw.log_prob_evidence(ev)
            secs[label] += time.perf_counter() - t
    other = LikelihoodWeighting(net, n_samples=args.particles, rng=args.seed + 1,
                                barren=False).log_prob_evidence(ev)
    lw = LikelihoodWeighting(net, n_samples=1, rng=0)
    share = [lw._sampled(row, np.zeros(0, dtype=np.int64)).size / net.n_vars for row in ev]
    return {"network": name, "n_vars": net.n_vars, "queries": args.queries,
            "particles": args.particles, "full_seconds": secs["full"] / args.repeat,
            "barren_seconds": secs["barren"] / args.repeat,
            "speedup": secs["full"] / secs["barren"],
            "baseline": args.baseline, "baseline_seconds":
                secs["baseline"] / args.repeat if args.baseline else None,
            "baseline_max_abs_diff": None if base_pe is None else
                float(np.max(np.abs(base_pe - runs["barren"]))),
            "ancestor_share_mean": float(np.mean(share)),
            "ancestor_share_range": [float(min(share)), float(max(share))],
            "mean_abs_diff_barren_full": float(np.mean(np.abs(runs["barren"] - runs["full"]))),
            "mean_abs_diff_two_seeds_full": float(np.mean(np.abs(other - runs["full"])))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", nargs="+", default=["r0", "r5", "r10"])
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--particles", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline", help="a checkout of an earlier commit, timed alike")
    ap.add_argument("--name", default="lw_barren")
    args = ap.parse_args()
    rows = []
    lines = ["| network | variables | ancestors' share (range) | baseline s | full s "
             "| barren s | speed-up (barren over full) | max abs. Δ ln P(e), baseline − barren "
             "| mean abs. Δ ln P(e), barren − full | the same, two seeds of full |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in args.networks:
        r = bench(name, args)
        rows.append(r)
        lo, hi = r["ancestor_share_range"]
        base = "—" if r["baseline_seconds"] is None else f"{r['baseline_seconds']:.1f}"
        same = "—" if r["baseline_max_abs_diff"] is None else f"{r['baseline_max_abs_diff']:.3g}"
        lines.append(f"| {name} | {r['n_vars']:,} | {r['ancestor_share_mean']:.2f} "
                     f"({lo:.2f}-{hi:.2f}) | {base} | {r['full_seconds']:.1f} | "
                     f"{r['barren_seconds']:.1f} | {r['speedup']:.2f}× | {same} | "
                     f"{r['mean_abs_diff_barren_full']:.4f} | "
                     f"{r['mean_abs_diff_two_seeds_full']:.4f} |")
        print(lines[-1], flush=True)
    lines += ["", f"{args.queries} queries of 5 evidence variables per network, "
              f"{args.particles:,} particles each; `python -m workflows.benchmarks.lw_barren "
              f"--networks {' '.join(args.networks)} --queries {args.queries} "
              f"--particles {args.particles}"
              + (f" --baseline {args.baseline}`; baseline: that checkout's sampler "
                 "(every variable, particle-major)." if args.baseline else "`.")]
    print(write_report(args.name, {"config": vars(args), "results": rows}, lines))


if __name__ == "__main__":
    main()
