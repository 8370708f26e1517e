"""Benchmark: SEM-kMAX imputation accuracy of the default budgets against a long-budget
reference, over seeds and data sets (3,000 x 60-sized problems, 10% MCAR).

Per data set and repetition ``r`` (0..reps-1) the cells are hidden with seed ``r`` and
SEM runs with seed ``r`` in each variant, on the same masked data (paired):

* ``default`` — :func:`bnsl_dist.sem.structural_em` with its defaults (carried
  families, budgets of :func:`bnsl_dist.sem.structural_em.sem_budgets`);
* ``long`` — the same with 4x both M-step budgets (exact scores per variable, k-MAX
  iterations) and 2x ``max_iterations``;
* ``no_carry`` — the defaults with ``carry=False`` (k-MAX's DAG taken as it is, the
  M-step of the previous version).

Data sets: ``random60`` (the data of ``workflows/benchmarks/impute.py``: 3,000 rows of
``random_network(60, 3, rng=1)``), ``plants`` (3,000 random rows of the first 60
variables of twenty/plants train), ``nltcs`` (3,000 random rows, 16 variables).
Accuracy is the fraction of hidden cells restored; the JSON holds every run (accuracy,
completed-data BIC of the returned network, iterations, stop reason, CPU seconds) and
per variant mean and sd; the paired difference ``default - long`` has its mean and sd.
Accuracies are machine-independent (work-count budgets); CPU seconds are under load.

Run: ``python -m workflows.benchmarks.impute_accuracy [--datasets random60,plants,nltcs]
[--reps 5]`` (writes out/impute_accuracy[_<datasets>].json; ``--merge A.json B.json``
writes the combined file and its table).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data import read_data
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.sampling import sample
from bnsl_dist.search import Budget
from bnsl_dist.sem import imputation_accuracy, structural_em
from bnsl_dist.sem.structural_em import sem_budgets
from workflows.benchmarks._common import SHARED_DATA, write_result

ROWS = 3000


def load(name: str) -> CategoricalData:
    """The complete data set ``name`` (see the module docstring)."""
    if name == "random60":
        return sample(random_network(60, 3, rng=1), ROWS, np.random.default_rng(2))
    d = read_data(SHARED_DATA / "twenty" / name / "train.csv.gz")
    idx = np.sort(np.random.default_rng(0).choice(d.n_samples, ROWS, replace=False))
    d = d.take_rows(idx)
    return d.select(list(range(min(60, d.n_vars))))


def variants(data: CategoricalData) -> dict[str, dict[str, Any]]:
    scores, iterations = sem_budgets(data.n_vars, data.n_samples)
    return {"default": {},
            "long": {"cache": CacheSpec(scores_per_variable=4 * scores),
                     "search_budget": Budget(max_iterations=4 * iterations),
                     "max_iterations": 20},
            "no_carry": {"carry": False}}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per data set and variant: mean and sd of accuracy; paired default - long."""
    out: dict[str, Any] = {}
    for ds in sorted({r["dataset"] for r in runs}):
        sub = [r for r in runs if r["dataset"] == ds]
        row: dict[str, Any] = {}
        for var in sorted({r["variant"] for r in sub}):
            acc = np.array([r["accuracy"] for r in sub if r["variant"] == var])
            cpu = np.array([r["cpu_seconds"] for r in sub if r["variant"] == var])
            row[var] = {"n": int(acc.size), "accuracy_mean": float(acc.mean()),
                        "accuracy_sd": float(acc.std(ddof=1)) if acc.size > 1 else 0.0,
                        "cpu_seconds_mean": float(cpu.mean())}
        by = {(r["variant"], r["rep"]): r["accuracy"] for r in sub}
        diff = np.array([by[("default", k)] - by[("long", k)] for v, k in by
                         if v == "default" and ("long", k) in by])
        if diff.size:
            row["default_minus_long"] = {
                "n": int(diff.size), "mean": float(diff.mean()),
                "sd": float(diff.std(ddof=1)) if diff.size > 1 else 0.0}
        out[ds] = row
    return out


def table(summary: dict[str, Any]) -> str:
    lines = ["| data set | default | long (4x budgets, 2x iterations) | no carry |"
             " default - long (paired) | CPU s default / long |",
             "|---|---:|---:|---:|---:|---:|"]

    def ms(d: dict[str, Any] | None) -> str:
        return "—" if d is None else f"{d['accuracy_mean']:.4f} ± {d['accuracy_sd']:.4f}"

    for ds, row in summary.items():
        dl = row.get("default_minus_long")
        diff = "—" if dl is None else f"{dl['mean']:+.4f} ± {dl['sd']:.4f} (n={dl['n']})"
        cpu = "/".join(f"{row[v]['cpu_seconds_mean']:.0f}" for v in ("default", "long")
                       if v in row)
        lines.append(f"| {ds} | {ms(row.get('default'))} | {ms(row.get('long'))} | "
                     f"{ms(row.get('no_carry'))} | {diff} | {cpu} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="random60,plants,nltcs")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--missing", type=float, default=0.1)
    ap.add_argument("--variants", default="default,long,no_carry")
    ap.add_argument("--merge", nargs="*", default=None,
                    help="combine these result files instead of running")
    args = ap.parse_args()
    if args.merge:
        merged = [r for p in args.merge for r in json.loads(Path(p).read_text())["runs"]]
        summary = summarise(merged)
        path = write_result("impute_accuracy", {"runs": merged, "summary": summary,
                                                "merged": args.merge})
        print(table(summary))
        print(f"wrote {path}")
        return
    names = args.datasets.split(",")
    runs: list[dict[str, Any]] = []
    tag = "impute_accuracy_" + "_".join(names)
    for name in names:
        truth = load(name)
        for rep in range(args.reps):
            masked = mask_mcar(truth, args.missing, np.random.default_rng(rep))
            for var, kw in variants(truth).items():
                if var not in args.variants.split(","):
                    continue
                c0 = time.process_time()
                res = structural_em(masked, k=4, rng=rep, **kw)
                runs.append({"dataset": name, "rep": rep, "variant": var,
                             "accuracy": imputation_accuracy(truth, masked, res.completed),
                             "score": res.history[res.best_iteration - 1].score,
                             "iterations": len(res.history), "stop": res.stop_reason,
                             "cpu_seconds": time.process_time() - c0})
                print(json.dumps(runs[-1]), flush=True)
                write_result(tag, {"settings": vars(args), "runs": runs,
                                   "summary": summarise(runs)})
    print(table(summarise(runs)))


if __name__ == "__main__":
    main()
