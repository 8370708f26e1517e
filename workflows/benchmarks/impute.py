"""Benchmark: `bnsl-dist impute` (SEM-kMAX) time and accuracy, new defaults vs the old.

Data: ``--rows`` rows sampled from a seeded random network of ``--vars`` variables
(max in-degree 3, 2-4 states), cells hidden completely at random with probability
``--missing``; the same masked file for every variant. Variants, run one after the other
in this process's run (so their ratios are comparable; absolute times depend on load):

* ``new`` — ``bnsl-dist impute DATA -o OUT --workers W`` with its defaults (local Dask
  cluster, the cluster's start included in the time);
* ``old`` — the defaults before the budgets were derived from the data: cache 1 s per
  variable, k-MAX n/10 s per M-step, 10 EM iterations with no stopping rule but a
  repeated structure (``--old cli``: the same budgets through ``bnsl-dist impute``, the
  new stopping rules included; ``--old api``: ``structural_em`` in process, serial,
  patience = 10 and tolerance 0, today's stopping; ``--old none``: skipped).

Per variant: wall seconds, imputation accuracy (fraction of hidden cells restored),
EM iterations and stopping reason; the JSON also holds the mode-imputation and the
true network's MPE accuracy, and the load average before and after.

Run: ``python -m workflows.benchmarks.impute [--old api|cli|none] [--workers 2]``
(writes out/impute.json). The figures quoted in reports were taken under load.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.data import read_data, write_csv
from bnsl_dist.data.generate import random_network
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.data.sampling import sample
from bnsl_dist.search import Budget
from bnsl_dist.sem import imputation_accuracy, impute, mode_impute, structural_em
from workflows.benchmarks._common import write_result


def _cli(args: list[str]) -> tuple[float, dict[str, Any]]:
    cmd = [sys.executable, "-c", "import sys; from bnsl_dist.cli import main; "
           "sys.argv[0] = 'bnsl-dist'; main()", "impute", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return wall, json.loads(proc.stdout[proc.stdout.index("{"):])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--vars", type=int, default=60)
    ap.add_argument("--missing", type=float, default=0.1)
    ap.add_argument("--net-seed", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="SEM seed (both variants)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--old", choices=["api", "cli", "none"], default="api")
    args = ap.parse_args()
    net = random_network(args.vars, 3, rng=args.net_seed)
    truth = sample(net, args.rows, np.random.default_rng(args.net_seed + 1))
    masked = mask_mcar(truth, args.missing, np.random.default_rng(args.net_seed + 2))
    out: dict[str, Any] = {
        "settings": vars(args), "load_before": os.getloadavg(),
        "acc_mode": imputation_accuracy(truth, masked, mode_impute(masked)),
        "acc_true_network": imputation_accuracy(truth, masked, impute(net, masked)),
        "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "masked.csv"
        write_csv(masked, src)

        def run_cli(name: str, extra: list[str]) -> None:
            dst = Path(tmp) / f"{name}.csv"
            wall, summary = _cli([str(src), "-o", str(dst), "--seed", str(args.seed),
                                  "--workers", str(args.workers), *extra])
            done = read_data(dst)  # same rows; map its state labels to the truth's codes
            codes = np.empty_like(truth.codes)
            for v in range(truth.n_vars):
                code_of = {truth.state_label(v, c): c for c in range(int(truth.arities[v]))}
                lut = np.array([code_of[done.state_label(v, c)]
                                for c in range(int(done.arities[v]))])
                codes[:, v] = lut[done.codes[:, v]]
            acc = float((codes[masked.missing] == truth.codes[masked.missing]).mean())
            out["variants"][name] = {"how": "bnsl-dist impute " + " ".join(extra),
                                     "seconds": wall, "accuracy": acc,
                                     "iterations": summary["iterations"],
                                     "converged": summary["converged"]}
            print(json.dumps({name: out["variants"][name]}), flush=True)

        run_cli("new", [])
        old_search = str(max(1.0, args.vars / 10.0))
        if args.old == "cli":
            run_cli("old", ["--seconds-per-variable", "1", "--search-seconds", old_search,
                            "--max-iterations", "10"])
        elif args.old == "api":
            t0 = time.perf_counter()
            res = structural_em(masked, k=4, rng=args.seed, max_iterations=10,
                                cache_settings={"seconds_per_variable": 1.0},
                                search_budget=Budget(seconds=float(old_search)),
                                patience=10, tolerance=0.0)
            out["variants"]["old"] = {
                "how": "structural_em serial: cache 1 s/variable, k-MAX n/10 s, 10 "
                       "iterations, stop on a repeated structure only",
                "seconds": time.perf_counter() - t0,
                "accuracy": imputation_accuracy(truth, masked, res.completed),
                "iterations": len(res.history), "converged": res.converged,
                "stop_reason": res.stop_reason}
            print(json.dumps({"old": out["variants"]["old"]}), flush=True)
    out["load_after"] = os.getloadavg()
    print(f"wrote {write_result('impute', out)}")


if __name__ == "__main__":
    main()
