"""Benchmark: SEM-kMAX imputation accuracy of the default budgets against a long-budget
reference, over seeds and data sets (3,000 x 60-sized problems, 10% MCAR).

Per data set and repetition ``r`` (0..reps-1) the cells are hidden with seed ``r`` and
SEM runs with seed ``r`` in each variant, on the same masked data (paired):

* ``default`` — :func:`bnsl_dist.sem.structural_em` with its defaults (carried
  families, budgets of :func:`bnsl_dist.sem.budgets.sem_budgets`);
* ``long`` — the same with 4x both M-step budgets (exact scores per variable, k-MAX
  iterations) and 2x ``max_iterations``;
* ``scaled`` / ``scaled_long`` — ``--scale S,I`` times the default exact scores and
  k-MAX iterations (``--cache-options`` added to their cache spec), and 4x that with
  2x ``max_iterations``: a candidate default and its reference;
* ``no_carry`` — the defaults with ``carry=False`` (k-MAX's DAG taken as it is, the
  M-step of the previous version);
* ``no_accumulate`` — the defaults with ``accumulate=False`` (each M-step's cache its own
  build, the M-step before issue 18 item 5), and ``long_no_accumulate`` its 4x.

Every run also records the accuracy of both completions of its returned network
(``accuracy_mpe``: joint MPE, the paper's; ``accuracy_marginal``: each cell's
posterior-marginal argmax, the default), paired within the run.

``--merge FILE::old=new ...`` renames variants while combining files, so runs of an
earlier revision's defaults can stand beside this one's as ``main`` / ``main_long``.

Data sets: ``random60`` (the data of ``workflows/benchmarks/impute.py``: 3,000 rows of
``random_network(60, 3, rng=1)``), ``plants`` (3,000 random rows of the first 60
variables of twenty/plants train), ``nltcs`` (3,000 random rows, 16 variables).
Accuracy is the fraction of hidden cells restored; the JSON holds every run (accuracy,
completed-data BIC of the returned network, iterations, stop reason, CPU seconds) and
per variant mean and sd; the paired differences default - long, main - main_long and
default - main have their mean and sd.
Accuracies are machine-independent (work-count budgets); CPU seconds are under load.

Run: ``python -m workflows.benchmarks.impute_accuracy [--datasets random60,plants,nltcs]
[--reps 5] [--first-rep 0] [--variants ...] [--scale S,I] [--tag T]`` (writes
out/impute_accuracy_<datasets>[_<tag>].json; ``--merge A.json B.json::x=y`` writes the
combined file and its table).
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
from bnsl_dist.sem import imputation_accuracy, impute, structural_em
from bnsl_dist.sem.budgets import EXPAND_DOMINATED, sem_budgets
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


def variants(data: CategoricalData, scale: str = "1,1",
             cache_options: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The SEM keyword arguments of each variant; ``scale`` ("S,I") multiplies the
    default exact scores (S) and k-MAX iterations (I) in the ``scaled`` variants, whose
    cache specs also get ``cache_options``."""
    scores, iterations = sem_budgets(data.n_vars, data.n_samples)
    s, i = (float(x) for x in scale.split(","))

    def budgets(sc: float, it: float, opts: dict[str, Any] | None = None) -> dict[str, Any]:
        spec = {"expand_dominated": EXPAND_DOMINATED, **(opts or {})}
        return {"cache": CacheSpec(scores_per_variable=round(sc * scores), **spec),
                "search_budget": Budget(max_iterations=round(it * iterations))}

    return {"default": {},
            "long": {**budgets(4, 4), "max_iterations": 20},
            "scaled": budgets(s, i, cache_options),
            "scaled_long": {**budgets(4 * s, 4 * i, cache_options), "max_iterations": 20},
            "no_carry": {"carry": False},
            "no_accumulate": {"accumulate": False},
            "long_no_accumulate": {**budgets(4, 4), "max_iterations": 20, "accumulate": False}}


#: Paired differences reported: (a, b) -> a - b per repetition.
PAIRS = (("default", "long"), ("main", "main_long"), ("default", "main"),
         ("default", "no_accumulate"), ("no_accumulate", "long_no_accumulate"),
         ("default", "prev"), ("default", "prev_long"), ("prev", "prev_long"),
         ("prev_marginal", "prev"), ("prev_accumulate", "prev"))


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per data set and variant: mean and sd of accuracy; the paired differences of
    :data:`PAIRS` (mean, sd, n) where both variants ran."""
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
            both = [r["accuracy_marginal"] - r["accuracy_mpe"] for r in sub
                    if r["variant"] == var and "accuracy_mpe" in r]
            if both:
                for m in ("mpe", "marginal"):
                    row[var][f"{m}_mean"] = float(np.mean([
                        r[f"accuracy_{m}"] for r in sub
                        if r["variant"] == var and "accuracy_mpe" in r]))
                row[var]["marginal_minus_mpe"] = {
                    "n": len(both), "mean": float(np.mean(both)),
                    "sd": float(np.std(both, ddof=1)) if len(both) > 1 else 0.0}
        by = {(r["variant"], r["rep"]): r["accuracy"] for r in sub}
        for a, b in PAIRS:
            diff = np.array([by[(a, k)] - by[(b, k)] for v, k in by
                             if v == a and (b, k) in by])
            if diff.size:
                row[f"{a}_minus_{b}"] = {
                    "n": int(diff.size), "mean": float(diff.mean()),
                    "better": int((diff > 0).sum()), "worse": int((diff < 0).sum()),
                    "sd": float(diff.std(ddof=1)) if diff.size > 1 else 0.0}
        out[ds] = row
    return out


def table(summary: dict[str, Any]) -> str:
    """Per data set and variant: accuracy of the variant's own imputation, of the MPE
    and of the marginal completion (where recorded), CPU seconds; then the paired
    differences of :data:`PAIRS`."""
    lines = ["| data set | variant | n | accuracy | MPE | marginal | marginal − MPE (paired)"
             " | CPU s |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for ds, row in summary.items():
        for var, d in row.items():
            if "_minus_" in var:
                continue
            both = d.get("marginal_minus_mpe")
            extra = ("— | — | —" if both is None else
                     f"{d['mpe_mean']:.4f} | {d['marginal_mean']:.4f} | "
                     f"{both['mean']:+.4f} ± {both['sd']:.4f}")
            lines.append(f"| {ds} | `{var}` | {d['n']} | {d['accuracy_mean']:.4f} ± "
                         f"{d['accuracy_sd']:.4f} | {extra} | {d['cpu_seconds_mean']:.0f} |")
    lines += ["", "| data set | paired difference | mean ± sd | better / worse / n |",
              "|---|---|---:|---:|"]
    for ds, row in summary.items():
        for a, b in PAIRS:
            d = row.get(f"{a}_minus_{b}")
            if d is not None:
                lines.append(f"| {ds} | `{a}` − `{b}` | {d['mean']:+.4f} ± {d['sd']:.4f} | "
                             f"{d['better']} / {d['worse']} / {d['n']} |")
    return "\n".join(lines)


def relabelled(spec: str) -> list[dict[str, Any]]:
    """The runs of ``PATH`` or ``PATH::old=new,...`` (variants renamed; ``old=new@mpe``
    also takes the run's MPE accuracy as its accuracy; others kept)."""
    path, _, ren = spec.partition("::")
    names = dict(pair.split("=") for pair in ren.split(",")) if ren else {}
    runs: list[dict[str, Any]] = json.loads(Path(path).read_text())["runs"]
    out = []
    for r in runs:
        new, _, how = names.get(r["variant"], r["variant"]).partition("@")
        out.append({**r, "variant": new,
                    **({"accuracy": r[f"accuracy_{how}"]} if how else {})})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="random60,plants,nltcs")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--missing", type=float, default=0.1)
    ap.add_argument("--variants", default="default,long,no_carry")
    ap.add_argument("--scale", default="1,1",
                    help="'S,I': the scaled variants' multiples of the default exact "
                         "scores and k-MAX iterations")
    ap.add_argument("--cache-options", type=json.loads, default=None,
                    help='the scaled variants\' cache settings, e.g. \'{"expand_dominated": false}\'')
    ap.add_argument("--first-rep", type=int, default=0)
    ap.add_argument("--tag", default="", help="suffix of the output file name")
    ap.add_argument("--merge", nargs="*", default=None,
                    help="combine these result files instead of running; "
                         "FILE::old=new,... renames variants")
    args = ap.parse_args()
    if args.merge:
        merged = [r for spec in args.merge for r in relabelled(spec)]
        summary = summarise(merged)
        path = write_result("impute_accuracy", {"runs": merged, "summary": summary,
                                                "merged": args.merge})
        print(table(summary))
        print(f"wrote {path}")
        return
    names = args.datasets.split(",")
    runs: list[dict[str, Any]] = []
    tag = "_".join(["impute_accuracy", *names, *([args.tag] if args.tag else [])])
    for name in names:
        truth = load(name)
        for rep in range(args.first_rep, args.first_rep + args.reps):
            masked = mask_mcar(truth, args.missing, np.random.default_rng(rep))
            for var, kw in variants(truth, args.scale, args.cache_options).items():
                if var not in args.variants.split(","):
                    continue
                c0 = time.process_time()
                res = structural_em(masked, k=4, rng=rep, **kw)
                cpu = time.process_time() - c0
                both = {f"accuracy_{m}": imputation_accuracy(
                    truth, masked, impute(res.network, masked, order=res.order, method=m))
                    for m in ("mpe", "marginal")}
                runs.append({"dataset": name, "rep": rep, "variant": var,
                             "scale": args.scale if var.startswith("scaled") else "1,1",
                             "cache_options": args.cache_options
                             if var.startswith("scaled") else None,
                             "accuracy": imputation_accuracy(truth, masked, res.completed),
                             "score": res.history[res.best_iteration - 1].score,
                             **both, "iterations": len(res.history),
                             "stop": res.stop_reason, "cpu_seconds": cpu,
                             "seconds": {k: sum(h.seconds[k] for h in res.history)
                                         for k in res.history[0].seconds}})
                print(json.dumps(runs[-1]), flush=True)
                write_result(tag, {"settings": vars(args), "runs": runs,
                                   "summary": summarise(runs)})
    print(table(summarise(runs)))


if __name__ == "__main__":
    main()
