"""Imputation study (k-MAX/SEM paper §7): SEM-kMAX vs missForest under MCAR.

For each data set, missingness level and repetition: mask cells completely at random,
impute with SEM-kMAX (serial; default budgets from ``bnsl_dist.sem.sem_budgets``) and
with missForest, and record imputation accuracy and time. Writes results.json, a markdown
table, the accuracy and time ratio plots (Figures 7-8 of the paper) and the time vs data
size plot (§7.3, linear scaling) to ``workflows/results/imputation/``.

Run (the configuration whose figures are in the closing note of issue 9; its budgets,
the defaults then, are given explicitly):
    python -m workflows.imputation_study --datasets nltcs,plants --rows 2000 \
        --levels 0.05,0.1,0.2,0.3 --reps 2 --rf-trees 30 --scores-per-variable 300 \
        --search-iterations 500 --max-iterations 5
Needs scikit-learn for missForest: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import CacheSpec
from bnsl_dist.data import read_data
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.search import Budget
from bnsl_dist.sem import imputation_accuracy, mode_impute, structural_em
from workflows.benchmarks._common import SHARED_DATA, machine
from workflows.missforest import missforest_impute

OUT = Path(__file__).resolve().parent / "results" / "imputation"


def _load(name: str, rows: int | None, seed: int):
    d = read_data(SHARED_DATA / "twenty" / name / "train.csv.gz")
    if rows is not None and rows < d.n_samples:
        idx = np.sort(np.random.default_rng(seed).choice(d.n_samples, rows, replace=False))
        d = d.take_rows(idx)
    return d


def _sem(masked, args, seed):
    """SEM-kMAX with its default budgets (work counts derived from n and N), or the
    budgets given: scores or seconds per variable, k-MAX iterations or seconds."""
    cache = None
    if args.seconds_per_variable is not None:
        cache = CacheSpec(seconds_per_variable=args.seconds_per_variable)
    elif args.scores_per_variable is not None:
        cache = CacheSpec(scores_per_variable=args.scores_per_variable)
    budget = None
    if args.search_seconds is not None or args.search_iterations is not None:
        budget = Budget(seconds=args.search_seconds, max_iterations=args.search_iterations)
    t0 = time.perf_counter()
    res = structural_em(masked, k=args.k, rng=seed, max_iterations=args.max_iterations,
                        cache=cache, search_budget=budget)
    steps = {k: float(sum(h.seconds[k] for h in res.history)) for k in res.history[0].seconds}
    return res.completed, time.perf_counter() - t0, len(res.history), steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="nltcs,plants")
    ap.add_argument("--rows", type=int, default=2000, help="rows sampled from train")
    ap.add_argument("--levels", default="0.05,0.1,0.2,0.3")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("-k", type=int, default=4)
    ap.add_argument("--max-iterations", type=int, default=10)
    ap.add_argument("--scores-per-variable", type=int, default=None,
                    help="cache budget per variable in exact scores (default: "
                         "bnsl_dist.sem.sem_budgets)")
    ap.add_argument("--search-iterations", type=int, default=None,
                    help="k-MAX iterations per SEM iteration (default: sem_budgets)")
    ap.add_argument("--seconds-per-variable", type=float, default=None,
                    help="wall-clock cache budget instead (the paper: 1 s)")
    ap.add_argument("--search-seconds", type=float, default=None,
                    help="wall-clock k-MAX budget instead (the paper: n/10 s)")
    ap.add_argument("--rf-trees", type=int, default=50)
    ap.add_argument("--scaling-rows", default="1000,2000,4000,8000",
                    help="row counts for the time-vs-size study on the first data set")
    args = ap.parse_args()
    levels = [float(x) for x in args.levels.split(",")]
    records = []
    for name in args.datasets.split(","):
        for level in levels:
            for rep in range(args.reps):
                seed = 1000 * rep + int(level * 100)
                truth = _load(name, args.rows, seed)
                masked = mask_mcar(truth, level, np.random.default_rng(seed))
                sem_data, t_sem, iters, _ = _sem(masked, args, seed)
                t0 = time.perf_counter()
                mf = missforest_impute(masked, n_estimators=args.rf_trees, seed=seed)
                t_mf = time.perf_counter() - t0
                rec = {"dataset": name, "n_vars": truth.n_vars, "rows": truth.n_samples,
                       "missing": level, "rep": rep,
                       "acc_sem": imputation_accuracy(truth, masked, sem_data),
                       "acc_missforest": imputation_accuracy(truth, masked, mf),
                       "acc_mode": imputation_accuracy(truth, masked, mode_impute(masked)),
                       "time_sem": t_sem, "time_missforest": t_mf, "sem_iterations": iters}
                records.append(rec)
                print(json.dumps(rec))
    first = args.datasets.split(",")[0]
    scaling = []
    for rows in (int(x) for x in args.scaling_rows.split(",")):
        truth = _load(first, rows, 0)
        masked = mask_mcar(truth, 0.1, np.random.default_rng(0))
        _, t, iters, steps = _sem(masked, args, 0)
        scaling.append({"rows": truth.n_samples, "time_sem": t, "iterations": iters,
                        "time_per_iteration": t / max(iters, 1),
                        **{f"seconds_{k}": v / max(iters, 1) for k, v in steps.items()}})
        print(json.dumps(scaling[-1]))
    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT / "results.json", json.dumps(
        {"machine": machine(), "settings": vars(args), "records": records,
         "scaling": scaling}, indent=1) + "\n")
    _table(records, levels)
    _plots(records, levels, scaling)


def _table(records, levels):
    lines = ["| dataset | missing | acc SEM-kMAX | acc missForest | acc mode | time SEM (s) "
             "| time missForest (s) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in sorted({r["dataset"] for r in records}):
        for lv in levels:
            rs = [r for r in records if r["dataset"] == name and r["missing"] == lv]
            m = {k: float(np.mean([r[k] for r in rs])) for k in
                 ("acc_sem", "acc_missforest", "acc_mode", "time_sem", "time_missforest")}
            lines.append(f"| {name} | {lv:.0%} | {m['acc_sem']:.4f} | {m['acc_missforest']:.4f}"
                         f" | {m['acc_mode']:.4f} | {m['time_sem']:.1f} | "
                         f"{m['time_missforest']:.1f} |")
    atomic_write_text(OUT / "table.md", "\n".join(lines) + "\n")
    print("\n".join(lines))


def _plots(records, levels, scaling):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for key, fname, title in [("acc", "accuracy_ratio.png", "imputation accuracy ratio"),
                              ("time", "time_ratio.png", "execution time ratio")]:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        data = [[r[f"{key}_sem"] / max(r[f"{key}_missforest"], 1e-12) for r in records
                 if r["missing"] == lv] for lv in levels]
        ax.boxplot(data, tick_labels=[f"{lv:.0%}" for lv in levels])
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("missing cells (MCAR)")
        ax.set_ylabel("SEM-kMAX / missForest")
        ax.set_title(title)
        if key == "time":
            ax.set_yscale("log")
        fig.tight_layout()
        fig.savefig(OUT / fname, dpi=120)
        plt.close(fig)
    if scaling:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        rows = [s["rows"] for s in scaling]
        ax.plot(rows, [s["time_per_iteration"] for s in scaling], "o-", label="total")
        for key in ("e_step", "cache", "search"):
            ax.plot(rows, [s[f"seconds_{key}"] for s in scaling], ".--", label=key)
        ax.legend()
        ax.set_xlabel("rows")
        ax.set_ylabel("seconds per SEM iteration")
        ax.set_title("SEM-kMAX time vs data size")
        fig.tight_layout()
        fig.savefig(OUT / "scaling.png", dpi=120)
        plt.close(fig)


if __name__ == "__main__":
    main()
