"""The SEM-kMAX imputation study (Scanagatta et al., IJAR 2018, §7, Figures 6–10) from
stored records: per data set, missing rate and learner, over the repetitions (seeds),
the mean and standard deviation of the imputation accuracy (the fraction of the hidden
cells restored) of the best network's completion by each cell's posterior-marginal
argmax, the mean accuracy of the same network's joint-MPE completion of each record
(the paper's) and of the baseline filling each cell with its variable's most frequent
observed state, the EM iterations run, the share of runs that converged and the mean
seconds per run; and a figure of the accuracy against the missing rate per data set.

Records written before a figure was recorded leave its cells empty.

References
----------
M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang, "Efficient learning of
bounded-treewidth Bayesian networks from complete and incomplete data sets",
IJAR 95, 2018, §7.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist.reporting.text import fmt_float, write_text_table

__all__ = ["imputation_frame", "imputation_table", "write_imputation_tables"]

_CELL_COLUMNS = ["dataset", "split", "n_vars", "label", "k", "seed", "missing_rate",
                 "accuracy", "accuracy_mpe", "accuracy_mode", "em_iterations", "converged",
                 "seconds"]


def imputation_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per imputation cell of ``frame`` (those whose ``extra`` has an
    ``imputation_accuracy``), with the columns the tables read."""
    rows: list[dict[str, Any]] = []
    for r in frame.itertuples(index=False):
        ex = json.loads(r.extra or "{}")
        if "imputation_accuracy" not in ex:
            continue
        rows.append({
            "dataset": r.dataset, "split": r.split, "n_vars": int(r.n_vars),
            "label": r.label, "k": r.k, "seed": int(r.seed),
            "missing_rate": float(ex["missing_rate"]),
            "accuracy": float(ex["imputation_accuracy"]),
            "accuracy_mpe": float(ex.get("imputation_accuracy_mpe", np.nan)),
            "accuracy_mode": float(ex.get("imputation_accuracy_mode", np.nan)),
            "em_iterations": int(ex.get("em_iterations", r.iterations)),
            "converged": bool(ex.get("converged", False)),
            "seconds": float(r.wall_seconds)})
    return pd.DataFrame(rows, columns=_CELL_COLUMNS)


def imputation_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The study's table (strings), one row per (data set, split, learner, k, missing
    rate), sorted by data set, learner and rate."""
    out: list[dict[str, str]] = []
    keys = ["dataset", "split", "n_vars", "label", "k", "missing_rate"]
    for key, g in cells.groupby(keys, sort=True, dropna=False):
        ds, split, n, label, k, rate = key
        acc = g["accuracy"].to_numpy()
        kk = "" if k is None or (isinstance(k, float) and np.isnan(k)) else str(int(k))
        out.append({
            "data set": str(ds), "split": str(split), "n": str(int(n)),
            "learner": str(label) + (f" k={kk}" if kk else ""),
            "missing": f"{100 * rate:g}%", "runs": str(len(g)),
            "accuracy": fmt_float(acc.mean(), ".4f"),
            "sd": fmt_float(acc.std(ddof=1) if len(acc) > 1 else np.nan, ".4f"),
            # pandas' means skip the records without a figure (NaN when none has it)
            "MPE (paper's)": fmt_float(g["accuracy_mpe"].mean(), ".4f"),
            "marginal − MPE": fmt_float(round((g["accuracy"] - g["accuracy_mpe"]).mean(), 4)
                                        or 0.0, "+.4f"),  # no "-0.0000"
            "mode baseline": fmt_float(g["accuracy_mode"].mean(), ".4f"),
            "EM iterations": fmt_float(g["em_iterations"].mean(), ".1f"),
            "converged": f"{int(g['converged'].sum())}/{len(g)}",
            "seconds": fmt_float(g["seconds"].mean(), ".1f")})
    return pd.DataFrame(out)


def _figure(cells: pd.DataFrame, path: Path, title: str) -> Path:
    from bnsl_dist.reporting.plots import plt, save_figure

    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, (ds, g) in enumerate(cells.groupby("dataset", sort=True)):
        by = g.groupby("missing_rate")
        rates = 100 * np.asarray(sorted(g["missing_rate"].unique()))
        color = f"C{i % 10}"
        ax.errorbar(rates, by["accuracy"].mean().to_numpy(),
                    yerr=by["accuracy"].std(ddof=1).fillna(0.0).to_numpy(),
                    color=color, marker="o", ms=3, capsize=2, label=str(ds))
        mode = by["accuracy_mode"].mean().to_numpy()
        if np.isfinite(mode).any():
            ax.plot(rates, mode, color=color, ls=":", lw=1)
    ax.set_xlabel("missing cells (%)")
    ax.set_ylabel("imputation accuracy")
    ax.set_title(f"{title}\nSEM-kMAX (solid, ± sd over runs) and mode baseline (dotted)",
                 fontsize=8)
    ax.legend(fontsize=6, ncol=3)
    return save_figure(fig, path)


def write_imputation_tables(frame: pd.DataFrame, out_dir: str | Path, grid: str, *,
                            title: str, plots: bool = True) -> list[Path]:
    """Write ``<grid>__imputation.md`` / ``.csv`` and, with ``plots``,
    ``<grid>__imputation.png`` for the imputation cells of ``frame``; nothing when it has
    none. Returns the paths written."""
    cells = imputation_frame(frame)
    if cells.empty:
        return []
    notes = ["Imputation accuracy: the fraction of the hidden cells restored, mean (and sd) "
             "over the runs (seeds) of the best network's completion by each cell's "
             "posterior-marginal argmax; MPE: the same network's joint-MPE completion "
             "of each record (the paper's), its difference paired per run; mode: each "
             "variable's most frequent observed state."]
    written = write_text_table(imputation_table(cells), out_dir, f"{grid}__imputation",
                               f"SEM-kMAX imputation ({title})", notes)
    if plots:
        written.append(_figure(cells, Path(out_dir) / f"{grid}__imputation.png", title))
    return written
