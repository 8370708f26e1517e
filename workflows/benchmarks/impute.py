"""Benchmark: `bnsl-dist impute` (SEM-kMAX) time and accuracy, new defaults vs the old.

Data: ``--rows`` rows sampled from a seeded random network of ``--vars`` variables
(max in-degree 3, 2-4 states), cells hidden completely at random with probability
``--missing``; the same masked file for every variant. Variants, run one after the other
in this process's run (so their ratios are comparable; absolute times depend on load):

* ``cli`` — ``bnsl-dist impute DATA -o OUT`` with its defaults (at 3,000 x 60 it runs
  serially: :func:`bnsl_dist.sem.budgets.prefer_serial`; process start, import and
  file I/O included in the time);
* ``cli_base`` — ``bnsl-dist impute`` given, as options, the default budgets
  (``sem_budgets``) of ``--base-rev`` (only with that option): the defaults of another
  revision, side by side with this one's; ``cli_base_xS_I`` (``--scales S,I ...``) the
  same with S times its exact scores and I times its k-MAX iterations;
* ``cli_prev`` (with ``--base-rev``) — ``bnsl-dist impute`` given ``--base-rev``'s
  budgets and ``--imputation mpe --no-accumulate --expand-dominated true``: the
  defaults before issue 18 item 5 (joint-MPE imputation, each M-step's cache its own
  build, dominated sets expanded), side by side with ``cli``;
* ``cli_dask`` — ``bnsl-dist impute DATA -o OUT --workers W`` (a local Dask cluster,
  its start included; same completion as ``cli`` for the same seed);
* ``new`` — :func:`bnsl_dist.sem.structural_em` with its defaults, serial, in process;
* ``old`` — ``structural_em`` as it was at ``--old-rev`` (default 2308c65, before the
  budgets were derived from the data and the stopping rules added: cache 1 s per
  variable, k-MAX n/10 s per M-step, 10 EM iterations unless the DAG repeats the
  previous one, the last network returned), loaded from git, with its defaults, serial,
  in process (``--old-rev none`` skips it: it takes ~10 minutes on 3,000 x 60).

Per variant: wall and CPU seconds (under load, CPU seconds are the steadier figure;
the old variant's budgets are wall-clock, so its wall time is fixed and its CPU time is
what it got), imputation accuracy (fraction of hidden cells restored),
EM iterations and stopping reason; the JSON also holds the mode-imputation and the
true network's MPE accuracy, and the load average before and after.

Run: ``python -m workflows.benchmarks.impute [--base-rev REV] [--old-rev REV]
[--workers 2] [--skip cli_dask,new] [--repeats R]`` (``--repeats``: the CLI variants
run R rounds, interleaved; round i > 0 is stored as ``NAME#i``)
(writes out/impute.json; the old variant runs only when ``--old-rev`` is given). The figures quoted in reports were taken under load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.data import read_data, write_csv
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.sampling import sample
from bnsl_dist.sem import imputation_accuracy, impute, mode_impute, structural_em
from workflows.benchmarks._common import write_result

REPO = Path(__file__).resolve().parents[2]


def _cli(args: list[str]) -> tuple[float, float, dict[str, Any]]:
    """Run ``bnsl-dist impute ARGS``: wall seconds, CPU seconds of it and its Dask
    workers (reaped children), and its JSON summary."""
    cmd = [sys.executable, "-c", "import sys; from bnsl_dist.cli import main; "
           "sys.argv[0] = 'bnsl-dist'; main()", "impute", *args]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
    return wall, cpu, json.loads(proc.stdout[proc.stdout.index("{"):])


def _old_module(rev: str) -> types.ModuleType:
    """``bnsl_dist/sem/structural_em.py`` at git revision ``rev``, as a module."""
    src = subprocess.run(["git", "show", f"{rev}:bnsl_dist/sem/structural_em.py"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    mod = types.ModuleType(f"_structural_em_{rev}")
    sys.modules[mod.__name__] = mod  # dataclasses look their module up
    exec(compile(src, f"{rev}:bnsl_dist/sem/structural_em.py", "exec"), mod.__dict__)
    return mod


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=3000)
    ap.add_argument("--vars", type=int, default=60)
    ap.add_argument("--missing", type=float, default=0.1)
    ap.add_argument("--net-seed", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0, help="SEM seed (both variants)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--old-rev", default="none", help="e.g. 2308c65 (~11 minutes)")
    ap.add_argument("--base-rev", default="none",
                    help="also run the CLI with the default budgets (sem_budgets) of this "
                         "revision, e.g. a59cec3")
    ap.add_argument("--scales", nargs="*", default=[],
                    help="with --base-rev: also the CLI given S,I times those budgets")
    ap.add_argument("--repeats", type=int, default=1,
                    help="rounds of the CLI variants, interleaved")
    ap.add_argument("--skip", default="", help="variants not to run, e.g. cli_dask,new")
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

        completions = {}
        runs: list[tuple[str, list[str]]] = [("cli", [])]
        if args.base_rev != "none":
            scores, its = _old_module(args.base_rev).sem_budgets(truth.n_vars, truth.n_samples)
            runs.append(("cli_prev", ["--scores-per-variable", str(scores),
                                      "--search-iterations", str(its), "--imputation", "mpe",
                                      "--no-accumulate", "--expand-dominated", "true"]))
            for scale in ["1,1", *args.scales]:
                a, b = (float(x) for x in scale.split(","))
                runs.append(("cli_base" if scale == "1,1" else f"cli_base_x{a:g}_{b:g}",
                             ["--scores-per-variable", str(round(a * scores)),
                              "--search-iterations", str(round(b * its))]))
        runs.append(("cli_dask", ["--workers", str(args.workers)]))
        rounds = [(name if i == 0 else f"{name}#{i}", extra)
                  for i in range(args.repeats) for name, extra in runs
                  if name not in args.skip.split(",")]
        for name, extra in rounds:
            dst = Path(tmp) / f"{name}.csv"
            wall, cpu, summary = _cli([str(src), "-o", str(dst), "--seed", str(args.seed),
                                       *extra])
            done = read_data(dst)  # same rows; map its state labels to the truth's codes
            codes = np.empty_like(truth.codes)
            for v in range(truth.n_vars):
                code_of = {truth.state_label(v, c): c for c in range(int(truth.arities[v]))}
                lut = np.array([code_of[done.state_label(v, c)]
                                for c in range(int(done.arities[v]))])
                codes[:, v] = lut[done.codes[:, v]]
            completions[name] = codes
            out["variants"][name] = {
                "how": " ".join(["bnsl-dist impute DATA -o OUT --seed", str(args.seed), *extra]),
                "mode": summary["mode"], "seconds": wall, "cpu_seconds": cpu,
                "accuracy": float((codes[masked.missing] == truth.codes[masked.missing]).mean()),
                "iterations": summary["iterations"], "converged": summary["converged"],
                "stop_reason": summary["stop_reason"]}
            print(json.dumps({name: out["variants"][name]}), flush=True)
    if "cli_dask" in completions:
        out["cli_equals_cli_dask"] = bool(np.array_equal(completions["cli"],
                                                         completions["cli_dask"]))
    variants: list[tuple[str, str, Callable[..., Any]]] = [
        ("new", "structural_em, defaults, serial", structural_em)]
    if args.old_rev != "none":
        variants.append(("old", f"structural_em at {args.old_rev}, defaults, serial",
                         _old_module(args.old_rev).structural_em))
    for name, how, fn in variants:
        if name in args.skip.split(","):
            continue
        t0, c0 = time.perf_counter(), time.process_time()
        res = fn(masked, k=4, rng=args.seed)
        out["variants"][name] = {
            "how": how, "seconds": time.perf_counter() - t0,
            "cpu_seconds": time.process_time() - c0,
            "accuracy": imputation_accuracy(truth, masked, res.completed),
            "iterations": len(res.history), "converged": res.converged,
            "scores": [h.score for h in res.history],
            "step_seconds": {k: sum(h.seconds[k] for h in res.history)
                             for k in res.history[0].seconds}}
        print(json.dumps({name: out["variants"][name]}), flush=True)
    out["load_after"] = os.getloadavg()
    print(f"wrote {write_result('impute', out)}")


if __name__ == "__main__":
    main()
