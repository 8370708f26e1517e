"""Benchmark: SEM-kMAX against random-forest imputation (mRF / missForest), the
comparison of Scanagatta et al., IJAR 95 (2018), §7.2, Figures 6-8.

:func:`mrf_impute` is an mRF imputer (Tang & Ishwaran 2017) for categorical data, made
with scikit-learn's ``RandomForestClassifier`` (multi-output classification: one forest
for a group of responses, the multivariate forests of mRF):

1. every missing cell starts at its variable's most frequent observed state (mode);
2. each iteration splits the variables having missing cells at random into mutually
   exclusive groups of ``round(alpha x n)`` variables (``alpha`` -> 1/n is missForest);
   each group in turn is regressed on all the other variables (their current
   imputation) by one multi-output forest, trained on the rows where every variable of
   the group is observed, and the group's missing cells take the forest's predictions;
3. it stops when the fraction of imputed cells changed by an iteration stops
   decreasing, and then returns the imputation before that iteration (missForest's
   rule), or after ``max_iterations``.

Unlike randomForestSRC's mRF (the paper's), whose forests grow on every row and impute
missing responses inside the nodes, the forests here learn from the rows complete in
their group: small groups (``alpha``) keep those rows many at high missing rates. On wide
data a group of ``alpha x n`` variables can leave no complete row (bbc: 53 variables, 20%
missing), so the group size is also capped at ``floor(ln(min_complete) / ln(1 - p))``,
``p`` the fraction of missing cells: groups of that size are complete, on average, in at
least ``min_complete`` of the rows (default 0.1: no cap on the 64-180-variable data sets
of the grid, 10-53 variables on bbc).

The benchmark expands ``configs/grids/sem-imputation-2018-reduced.yaml`` into its cells
(:func:`bnsl_dist.pipeline.grid.expand_grid`), rebuilds each cell's masked data exactly
as the SEM cell did (:func:`bnsl_dist.pipeline.tasks.sem.sem_cell_inputs`: same seeds, same
hidden cells), imputes it with mRF and records per cell key the accuracy
(:func:`bnsl_dist.sem.imputation_accuracy`), wall and CPU seconds and iterations. Each
cell is paired with the SEM record of the same key (``--records``: a records file or a
results folder); the table gives per data set and missing rate the mean accuracy of
SEM-kMAX (posterior-marginal completion and joint MPE, the paper's), mRF and the mode,
the accuracy ratio SEM (MPE) / mRF (Fig. 7) and the time ratio SEM / mRF (Fig. 8), and
the figure SEM against mRF accuracy per cell (Fig. 6 left). SEM's wall seconds are
those the grid recorded (2 workers, other load); mRF's are measured here: the time ratio
is indicative only.

Needs scikit-learn (``pip install -e .[bench]``). Writes ``out/mrf.json``, ``out/mrf.md``
and ``out/mrf.png`` (``--out`` another folder).

Run: ``python -m workflows.benchmarks.impute_mrf [--datasets kdd,plants] [--seeds 0,1]
[--missing-rates 0.01,0.2] [--n-estimators 20] [--alpha 0.05] [--max-iterations 5]
[--max-samples 2000] [--records PATH] [--out DIR] [--append]``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.sem import imputation_accuracy, mode_impute
from workflows.benchmarks import _common
from workflows.benchmarks._common import write_result

GRID = Path(__file__).resolve().parents[2] / "configs" / "grids" / "sem-imputation-2018-reduced.yaml"
RECORDS = (Path(__file__).resolve().parents[1] / "results" / "sem-imputation-2018-reduced"
           / "records.parquet")


def _forest_class() -> Any:
    try:
        from sklearn.ensemble import RandomForestClassifier
    except ImportError:  # pragma: no cover - depends on the environment
        raise SystemExit("impute_mrf needs scikit-learn: pip install -e .[bench]") from None
    return RandomForestClassifier


def mrf_impute(data: CategoricalData, *, n_estimators: int = 100, alpha: float = 0.1,
               min_complete: float = 0.1,
               max_iterations: int = 10, seed: int = 0, n_jobs: int = 1,
               max_samples: int | None = None, min_samples_leaf: int = 1
               ) -> tuple[CategoricalData, dict[str, Any]]:
    """Impute the missing cells of ``data`` by mRF (see the module docstring).

    Parameters
    ----------
    data : CategoricalData
        Data with missing cells (``data.missing``); not modified.
    n_estimators : int
        Trees per forest.
    min_complete : float
        In (0, 1): groups are no larger than the size complete, on average, in this
        fraction of the rows (see the module docstring).
    alpha : float
        Fraction of the variables per group, in (0, 1]; at most 1/n gives one variable
        per group (missForest).
    max_iterations : int
        Most iterations.
    seed : int
        Randomness of the groups and of the forests; the same seed, the same result.
    n_jobs : int
        Threads of each forest.
    max_samples : int or None
        Training rows of each forest at most, drawn at random from the rows complete in
        its group (None: all of them); its trees bootstrap from those.
    min_samples_leaf : int
        Rows per leaf at least.

    Returns
    -------
    (CategoricalData, dict)
        The completed data (no missing cells) and facts of the run: ``iterations``,
        ``changed`` (fraction of imputed cells changed, per iteration), ``group_size``,
        ``min_train_rows`` (the fewest rows complete in a group) and ``stop``
        (``"stopped_decreasing"``, ``"converged"``, ``"max_iterations"`` or
        ``"no_missing"``).
    """
    forest = _forest_class()
    if not 0 < alpha <= 1 or max_iterations < 1 or not 0 < min_complete < 1:
        raise ValueError(f"alpha must be in (0, 1], min_complete in (0, 1) and "
                         f"max_iterations at least 1, got {alpha}, {min_complete} and "
                         f"{max_iterations}")
    if data.missing is None or not data.missing.any():
        return mode_impute(data), {"iterations": 0, "changed": [], "group_size": 0,
                                   "min_train_rows": data.n_samples, "stop": "no_missing"}
    miss = data.missing
    codes = mode_impute(data).codes.astype(np.int64)
    rng = np.random.default_rng(seed)
    targets = np.flatnonzero(miss.any(axis=0))
    size = max(1, round(alpha * data.n_vars))
    p = float(miss.mean())
    if p < 1.0:  # the cap: (1 - p) ** size >= min_complete
        size = min(size, max(1, math.floor(math.log(min_complete) / math.log1p(-p))))
    changed: list[float] = []
    min_rows = data.n_samples
    stop = "max_iterations"
    for _ in range(max_iterations):
        new = codes.copy()
        order = rng.permutation(targets)
        for group in (order[i:i + size] for i in range(0, order.size, size)):
            others = np.setdiff1d(np.arange(data.n_vars), group)
            hole = miss[:, group]
            rows = hole.any(axis=1)  # the rows to predict; the others train
            train = np.flatnonzero(~rows)
            min_rows = min(min_rows, train.size)
            if train.size == 0 or others.size == 0:
                continue  # nothing to learn from: the cells keep their imputation
            if max_samples is not None and train.size > max_samples:
                train = np.sort(rng.choice(train, max_samples, replace=False))
            rf = forest(n_estimators=n_estimators, n_jobs=n_jobs,
                        min_samples_leaf=min_samples_leaf,
                        random_state=int(rng.integers(2**31 - 1)))
            y = new[np.ix_(train, group)]
            rf.fit(new[np.ix_(train, others)], y[:, 0] if group.size == 1 else y)
            # the current imputation of the other variables predicts the group's holes
            got = np.asarray(rf.predict(new[np.ix_(rows, others)])).reshape(-1, group.size)
            block = new[np.ix_(rows, group)]
            block[hole[rows]] = got[hole[rows]]
            new[np.ix_(rows, group)] = block
        frac = float((new[miss] != codes[miss]).mean())
        changed.append(frac)
        if len(changed) > 1 and frac > changed[-2]:
            stop = "stopped_decreasing"  # missForest: keep the imputation before
            break
        codes = new
        if frac == 0:
            stop = "converged"
            break
    return data.with_codes(codes, None), {
        "iterations": len(changed), "changed": changed, "group_size": size,
        "min_train_rows": min_rows, "stop": stop}


# ---------------------------------------------------------------------------- benchmark
def mrf_cells(datasets: list[str], seeds: list[int] | None = None,
              rates: list[float] | None = None) -> list[Cell]:
    """The SEM cells that mRF imputes: the grid's on ``datasets`` (and ``seeds``,
    ``rates`` when given) at the paper's M-step budgets (×1; the tuning study's other
    scales hide the same cells)."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid

    return [c for c in expand_grid(load_grid(GRID)) if c.dataset in datasets
            and c.sem is not None and c.sem.budget_scale == 1.0
            and (seeds is None or c.seed in seeds)
            and (rates is None or c.sem.missing_rate in rates)]


def run_cells(datasets: list[str], seeds: list[int] | None, rates: list[float] | None,
              settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The mRF run of each of :func:`mrf_cells`, one at a time; printed as they end."""
    from bnsl_dist.pipeline.tasks.sem import sem_cell_inputs

    runs = []
    for cell in mrf_cells(datasets, seeds, rates):
        assert cell.sem is not None
        truth, masked = sem_cell_inputs(cell)
        load0 = os.getloadavg()
        w0, c0 = time.perf_counter(), time.process_time()
        completed, facts = mrf_impute(masked, seed=cell.seed, **settings)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        runs.append({"key": cell.key, "dataset": cell.dataset,
                     "missing_rate": cell.sem.missing_rate, "seed": cell.seed,
                     "n_vars": truth.n_vars, "n_samples": truth.n_samples,
                     "missing_cells": int(masked.missing.sum())
                     if masked.missing is not None else 0,
                     "accuracy": imputation_accuracy(truth, masked, completed),
                     "accuracy_mode": imputation_accuracy(truth, masked, mode_impute(masked)),
                     "wall_seconds": wall, "cpu_seconds": cpu, **facts,
                     "load_before": load0, "load_after": os.getloadavg(), "nice": os.nice(0)})
        print(json.dumps(runs[-1]), flush=True)
    return runs


def pair(runs: list[dict[str, Any]], records: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Each mRF run with the SEM record of its key (``sem_*`` fields; absent when the
    records have no such key)."""
    from bnsl_dist.results.export import load_records

    frame = load_records(records).frame()
    by_key = {k: (sem, float(w))
              for k, sem, w in zip(frame["key"], frame["sem"], frame["wall_seconds"],
                                   strict=True) if sem is not None}
    out = []
    for r in runs:
        got = by_key.get(r["key"])
        if got is None:
            out.append(dict(r))
            continue
        extra, wall = got
        out.append({**r, "sem_accuracy": extra["imputation_accuracy"],
                    "sem_accuracy_mpe": extra["imputation_accuracy_mpe"],
                    "sem_accuracy_mode": extra["imputation_accuracy_mode"],
                    "sem_missing_cells": extra["missing_cells"], "sem_wall_seconds": wall})
    return out


def _stats(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Means over ``rows``; once some are paired with a SEM record, over those only, so
    that every column averages the same runs."""
    paired = [r for r in rows if "sem_accuracy" in r]
    same = paired or rows
    out: dict[str, Any] = {"n": len(rows), "n_paired": len(paired),
                           "mrf": float(np.mean([r["accuracy"] for r in same])),
                           "mode": float(np.mean([r["accuracy_mode"] for r in same])),
                           "mrf_wall_seconds": float(np.mean([r["wall_seconds"] for r in same])),
                           "mrf_cpu_seconds": float(np.mean([r["cpu_seconds"] for r in same]))}
    if paired:
        out.update({
            "sem_marginal": float(np.mean([r["sem_accuracy"] for r in paired])),
            "sem_mpe": float(np.mean([r["sem_accuracy_mpe"] for r in paired])),
            "accuracy_ratio": float(np.mean([r["sem_accuracy_mpe"] / r["accuracy"]
                                             for r in paired])),
            "accuracy_ratio_marginal": float(np.mean([r["sem_accuracy"] / r["accuracy"]
                                                      for r in paired])),
            "time_ratio": float(np.mean([r["sem_wall_seconds"] / r["wall_seconds"]
                                         for r in paired])),
            "sem_wall_seconds": float(np.mean([r["sem_wall_seconds"] for r in paired])),
            "sem_better": sum(r["sem_accuracy_mpe"] > r["accuracy"] for r in paired),
            "mrf_better": sum(r["sem_accuracy_mpe"] < r["accuracy"] for r in paired),
            "same_mask": all(r["sem_missing_cells"] == r["missing_cells"]
                             and r["sem_accuracy_mode"] == r["accuracy_mode"] for r in paired)})
    return out


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per data set and missing rate, and per missing rate over the data sets (the
    aggregation of Figs. 7 and 8): the means of :func:`_stats`. Ratios are means of the
    per-cell ratios; SEM's accuracy in them is its joint-MPE completion (the paper's)."""
    keys = sorted({(r["dataset"], r["missing_rate"]) for r in runs})
    rates = sorted({r["missing_rate"] for r in runs})
    return {"cells": [{"dataset": d, "missing_rate": m,
                       **_stats([r for r in runs if (r["dataset"], r["missing_rate"]) == (d, m)])}
                      for d, m in keys],
            "rates": [{"missing_rate": m, **_stats([r for r in runs if r["missing_rate"] == m])}
                      for m in rates]}


def table(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    """The markdown tables of :func:`summarise`, after a note on the settings."""
    same = all(s.get("same_mask", True) for s in summary["rates"])
    paired = sum(s["n_paired"] for s in summary["rates"])
    note = (f"mRF settings: {json.dumps(settings)}. Accuracy: fraction of the hidden cells "
            "restored, mean over the cells (seeds); SEM-kMAX from the grid's records "
            f"(same key, {paired} cells paired; masks "
            f"{'identical' if same else 'DIFFERENT'}: missing cells and mode accuracy equal "
            "to the records'). Ratios are means of per-cell ratios, SEM's accuracy its "
            "joint-MPE completion (the paper's). Time: wall seconds; SEM's were recorded by "
            "the grid (2 workers) and mRF's here (one process, nice 10), both on a shared, "
            "loaded 2-core machine: indicative only.")
    head = ("| {first} | missing | cells | SEM-kMAX marginal | SEM-kMAX MPE | mRF | mode | "
            "SEM/mRF accuracy | SEM better / mRF better | SEM s | mRF s | SEM/mRF time |")
    rule = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"

    def line(first: str, s: dict[str, Any]) -> str:
        sem = (f"{s['sem_marginal']:.4f} | {s['sem_mpe']:.4f}" if s["n_paired"] else "— | —")
        ratio = (f"{s['accuracy_ratio']:.4f} | {s['sem_better']} / {s['mrf_better']} | "
                 f"{s['sem_wall_seconds']:.1f} | {s['mrf_wall_seconds']:.1f} | "
                 f"{s['time_ratio']:.2f}" if s["n_paired"]
                 else f"— | — | — | {s['mrf_wall_seconds']:.1f} | —")
        return (f"| {first} | {s['missing_rate']:.0%} | {s['n']} | {sem} | {s['mrf']:.4f} | "
                f"{s['mode']:.4f} | {ratio} |")

    lines = ["### SEM-kMAX against mRF (Scanagatta et al. 2018, §7.2, Figs. 6-8)", "", note,
             "", head.format(first="data set"), rule]
    lines += [line(s["dataset"], s) for s in summary["cells"]]
    lines += ["", "Per missing rate over the data sets (Figs. 7 and 8):", "",
              head.format(first="data sets"), rule]
    lines += [line("all", s) for s in summary["rates"]]
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Per cell, SEM-kMAX (MPE) against mRF: accuracy (Fig. 6 left) and wall seconds
    (Fig. 6 right, log scales), the diagonal drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bnsl_dist._io import atomic_writer

    fig, axes = plt.subplots(1, 2, figsize=(10, 5))
    paired = [r for r in runs if "sem_accuracy_mpe" in r]
    for ax, (mrf, sem, what) in zip(axes, (("accuracy", "sem_accuracy_mpe", "accuracy"),
                                           ("wall_seconds", "sem_wall_seconds",
                                            "wall seconds")), strict=True):
        for m in sorted({r["missing_rate"] for r in paired}):
            sub = [r for r in paired if r["missing_rate"] == m]
            ax.scatter([r[mrf] for r in sub], [r[sem] for r in sub], s=12,
                       label=f"{m:.0%} missing")
        both = [r[mrf] for r in paired] + [r[sem] for r in paired]
        if both:
            ax.plot([min(both), max(both)], [min(both), max(both)], color="grey",
                    linewidth=0.8)
        ax.set_xlabel(f"mRF {what}")
        ax.set_ylabel(f"SEM-kMAX {what}" + (" (MPE)" if what == "accuracy" else ""))
        ax.legend(loc="lower right")
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].xaxis.set_minor_formatter(plt.NullFormatter())
    fig.suptitle("SEM-kMAX vs mRF, one point per cell")
    fig.tight_layout()
    atomic_writer(path, lambda fh: fig.savefig(fh, format="png", dpi=110))
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="kdd,plants,baudio,jester,bnetflix,accidents,"
                                          "tretail,pumsb_star")
    ap.add_argument("--seeds", default=None, help="e.g. 0,1 (default: the grid's)")
    ap.add_argument("--missing-rates", default=None, help="e.g. 0.01,0.2 (default: the grid's)")
    ap.add_argument("--n-estimators", type=int, default=20)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--min-complete", type=float, default=0.1)
    ap.add_argument("--max-iterations", type=int, default=5)
    ap.add_argument("--max-samples", type=int, default=2000)
    ap.add_argument("--min-samples-leaf", type=int, default=1)
    ap.add_argument("--records", default=str(RECORDS),
                    help="SEM records: a records file or a results folder")
    ap.add_argument("--out", default=None, help="output folder (default: the benchmarks' out/)")
    ap.add_argument("--append", action="store_true",
                    help="keep the runs of an existing mrf.json (those of the same key replaced)")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: pair and tabulate the runs of the existing mrf.json")
    args = ap.parse_args()
    if not args.report_only:
        _forest_class()  # the clear error before any work
    if args.out:
        _common.OUT_DIR = Path(args.out)
    settings = {"n_estimators": args.n_estimators, "alpha": args.alpha,
                "min_complete": args.min_complete,
                "max_iterations": args.max_iterations, "max_samples": args.max_samples,
                "min_samples_leaf": args.min_samples_leaf, "n_jobs": 1}
    json_path = _common.OUT_DIR / "mrf.json"
    old: list[dict[str, Any]] = []
    if args.append or args.report_only:
        if json_path.is_file():
            stored = json.loads(json_path.read_text())
            old = stored["runs"]
            if args.report_only:
                settings = stored["settings"]
            elif stored["settings"] != settings:
                raise SystemExit(f"{json_path}: its runs had other settings "
                                 f"({stored['settings']}); run without --append")
        elif args.report_only:
            raise SystemExit(f"{json_path}: no such file to report on")
    new = [] if args.report_only else run_cells(
        args.datasets.split(","),
        None if args.seeds is None else [int(x) for x in args.seeds.split(",")],
        None if args.missing_rates is None
        else [float(m) for m in args.missing_rates.split(",")], settings)
    done = {r["key"] for r in new}
    runs = pair([{k: v for k, v in r.items() if not k.startswith("sem_")}
                 for r in old if r["key"] not in done] + new, args.records)
    runs.sort(key=lambda r: (r["dataset"], r["missing_rate"], r["seed"]))
    summary = summarise(runs)
    from bnsl_dist._io import atomic_write_text

    records = Path(args.records).resolve()
    root = GRID.parents[2]  # the repository: its own records are named relative to it
    path = write_result("mrf", {"settings": settings, "grid": str(GRID.name),
                                "records": str(records.relative_to(root)
                                               if records.is_relative_to(root) else records),
                                "runs": runs,
                                "summary": summary})
    atomic_write_text(_common.OUT_DIR / "mrf.md", table(summary, settings) + "\n")
    plot(runs, _common.OUT_DIR / "mrf.png")
    print(table(summary, settings))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
