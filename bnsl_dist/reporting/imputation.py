"""The SEM-kMAX imputation study (Scanagatta et al., IJAR 2018, §7, Figures 6–10) from
stored records: per data set, missing rate and learner, over the repetitions (seeds),
the mean and standard deviation of the imputation accuracy (the fraction of the hidden
cells restored) of the best network's completion by each cell's posterior-marginal
argmax, the mean accuracy of the same network's joint-MPE completion of each record
(the paper's) and of the baseline filling each cell with its variable's most frequent
observed state, the EM iterations run, the share of runs that converged and the mean
seconds per run; and a figure of the accuracy against the missing rate per data set.

With several M-step budget scales (the paper's tuning study, §7.4), the table gets a
column for the scale, the figure shows the scale-1 runs, and a tuning table and two
figures compare the scales: Figure 9's seconds per run against the data set's size and
Figure 10's accuracy of each scale against the next smaller one, paired per repetition.

Records written before a figure was recorded leave its cells empty.

References
----------
M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang, "Efficient learning of
bounded-treewidth Bayesian networks from complete and incomplete data sets",
IJAR 95, 2018, §7.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist.reporting.tables import binomial_two_sided_p
from bnsl_dist.reporting.text import fmt_float, write_text_table

__all__ = ["imputation_frame", "imputation_table", "tuning_table", "write_imputation_tables"]

_CELL_COLUMNS = ["dataset", "split", "n_vars", "n_samples", "label", "k", "seed",
                 "missing_rate", "budget_scale", "accuracy", "accuracy_mpe", "accuracy_mode",
                 "em_iterations", "converged", "seconds"]
#: What pairs the runs of one repetition at different budget scales.
_REPETITION = ["dataset", "split", "label", "k", "missing_rate", "seed"]


def imputation_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per imputation cell of ``frame`` (those whose ``sem`` column has an
    ``imputation_accuracy``), with the columns the tables read."""
    rows: list[dict[str, Any]] = []

    def given(v: Any, default: Any) -> Any:
        return default if v is None else v

    for r in frame.itertuples(index=False):
        sem = getattr(r, "sem", None) or {}
        if sem.get("imputation_accuracy") is None:
            continue
        rows.append({
            "dataset": r.dataset, "split": r.split, "n_vars": int(r.n_vars),
            "n_samples": int(r.n_samples), "label": r.label, "k": r.k, "seed": int(r.seed),
            "missing_rate": float(sem["missing_rate"]),
            "budget_scale": float(given(sem.get("budget_scale"), 1.0)),
            "accuracy": float(sem["imputation_accuracy"]),
            "accuracy_mpe": float(given(sem.get("imputation_accuracy_mpe"), np.nan)),
            "accuracy_mode": float(given(sem.get("imputation_accuracy_mode"), np.nan)),
            "em_iterations": int(given(sem.get("em_iterations"), r.iterations)),
            "converged": bool(given(sem.get("converged"), False)),
            "seconds": float(r.wall_seconds)})
    return pd.DataFrame(rows, columns=_CELL_COLUMNS)


def imputation_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The study's table (strings), one row per (data set, split, learner, k, missing
    rate and, when the cells have several, budget scale), sorted by data set, learner,
    rate and scale."""
    out: list[dict[str, str]] = []
    scaled = cells["budget_scale"].nunique() > 1
    keys = ["dataset", "split", "n_vars", "label", "k", "missing_rate", "budget_scale"]
    for key, g in cells.groupby(keys, sort=True, dropna=False):
        ds, split, n, label, k, rate, scale = key
        acc = g["accuracy"].to_numpy()
        row = {"data set": str(ds), "split": str(split), "n": str(int(n)),
               "learner": _learner(label, k), "missing": f"{100 * rate:g}%"}
        if scaled:
            row["budget ×"] = f"{scale:g}"
        out.append({
            **row, "runs": str(len(g)),
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


def _learner(label: Any, k: Any) -> str:
    kk = "" if k is None or (isinstance(k, float) and np.isnan(k)) else str(int(k))
    return str(label) + (f" k={kk}" if kk else "")


def _scales(cells: pd.DataFrame) -> list[float]:
    """The budget scales of ``cells``, ascending."""
    return sorted(float(x) for x in cells["budget_scale"].unique())


def _reference_scale(cells: pd.DataFrame) -> float:
    """The scale the main figure shows: 1 when run, else the median one."""
    scales = _scales(cells)
    return 1.0 if 1.0 in scales else scales[len(scales) // 2]


def _scale_pairs(scales: list[float]) -> list[tuple[float, float]]:
    """Each scale with the next larger one."""
    return list(zip(scales[:-1], scales[1:], strict=True))


def tuned_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells of the data sets run at every budget scale of ``cells`` (the tuning
    study's; a data set run at some scales only, as a grid stored in pieces can hold,
    stays out of it)."""
    n = cells["budget_scale"].nunique()
    full = cells.groupby("dataset")["budget_scale"].nunique()
    return cells[cells["dataset"].isin(full.index[full == n])]


def tuning_table(cells: pd.DataFrame) -> pd.DataFrame:
    """The tuning study's table (strings; §7.4, Figures 9–10): per data set (by size,
    then an "all" row), the mean seconds per run and the mean accuracy of the joint-MPE
    completion (the paper's) at each budget scale, and for each scale against the next
    smaller one the mean accuracy gain paired per repetition, the repetitions it raises
    and lowers and the two-sided sign-test p-value (ties dropped).

    Examples
    --------
    >>> c = pd.DataFrame({"dataset": "d", "split": "train", "n_vars": 4, "n_samples": 9,
    ...     "label": "sem", "k": 4, "missing_rate": 0.1, "seed": [0, 1, 0, 1],
    ...     "budget_scale": [1.0, 1.0, 2.0, 2.0], "accuracy_mpe": [0.5, 0.6, 0.7, 0.6],
    ...     "seconds": [1.0, 1.0, 3.0, 2.0]})
    >>> tuning_table(c).iloc[0][["seconds ×2", "gain ×1→×2", "up/down ×1→×2"]].tolist()
    ['2.5', '+0.1000', '1/0']
    """
    scales = _scales(cells)
    pairs = _scale_pairs(scales)
    size = cells.groupby("dataset")[["n_vars", "n_samples"]].first()
    order = sorted(size.index, key=lambda d: (int(size.loc[d, "n_vars"]) *
                                              int(size.loc[d, "n_samples"]), str(d)))
    out: list[dict[str, str]] = []
    for ds in [*order, None]:
        g = cells if ds is None else cells[cells["dataset"] == ds]
        row = {"data set": "all" if ds is None else str(ds),
               "n": "" if ds is None else str(int(size.loc[ds, "n_vars"])),
               "N": "" if ds is None else str(int(size.loc[ds, "n_samples"]))}
        for b in scales:
            at = g[g["budget_scale"] == b]
            row[f"seconds ×{b:g}"] = fmt_float(at["seconds"].mean(), ".1f")
            row[f"MPE ×{b:g}"] = fmt_float(at["accuracy_mpe"].mean(), ".4f")
        for a, b in pairs:
            wide = g[g["budget_scale"].isin([a, b])].pivot_table(
                index=_REPETITION, columns="budget_scale", values="accuracy_mpe",
                aggfunc="first").dropna()
            gain = (wide[b] - wide[a]).to_numpy() if len(wide) else np.zeros(0)
            up, down = int((gain > 0).sum()), int((gain < 0).sum())
            name = f"×{a:g}→×{b:g}"
            row[f"gain {name}"] = fmt_float(gain.mean() if gain.size else np.nan, "+.4f")
            row[f"up/down {name}"] = f"{up}/{down}"
            row[f"p {name}"] = fmt_float(binomial_two_sided_p(up, up + down), ".2g")
        out.append(row)
    return pd.DataFrame(out)


def _tuning_figures(cells: pd.DataFrame, out_dir: Path, grid: str, title: str
                    ) -> list[Path]:
    """Figure 9 (seconds per run against n·N, one series per scale) and Figure 10: the
    paper plots the accuracy of each scale against the next smaller one, where every
    point sits on the diagonal at these differences; here the paired gain over the next
    smaller scale against the smaller one's accuracy, per data set and rate."""
    from bnsl_dist.reporting.plots import plt, save_figure

    scales = _scales(cells)
    fig, ax = plt.subplots(figsize=(6.0, 4.0))
    for i, b in enumerate(scales):
        at = cells[cells["budget_scale"] == b]
        per = at.groupby("dataset").agg(n=("n_vars", "first"), N=("n_samples", "first"),
                                        s=("seconds", "mean"))
        per = per.assign(size=per["n"] * per["N"]).sort_values("size")
        ax.plot(per["size"], per["s"], marker="o", ms=3, color=f"C{i}",
                label=f"budgets ×{b:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("data set size n·N (variables × rows)")
    ax.set_ylabel("seconds per run (mean over rates and seeds)")
    ax.set_title(f"{title}\nSEM-kMAX run time by M-step budget (cf. Fig. 9)", fontsize=8)
    ax.legend(fontsize=7)
    paths = [save_figure(fig, out_dir / f"{grid}__sem_tuning_time.png")]

    pairs = _scale_pairs(scales)
    fig, axes = plt.subplots(1, len(pairs), figsize=(4.6 * len(pairs), 4.0), squeeze=False,
                             sharey=True, layout="constrained")
    for ax, (a, b) in zip(axes[0], pairs, strict=True):
        # the gain of each repetition (paired: the same hidden cells), then its mean per
        # data set and rate: on the accuracy scale every point sits on the diagonal
        wide = cells[cells["budget_scale"].isin([a, b])].pivot_table(
            index=_REPETITION, columns="budget_scale", values="accuracy_mpe",
            aggfunc="first").dropna()
        gain = (wide[b] - wide[a]).rename("gain").to_frame().assign(base=wide[a])
        per = gain.groupby(["dataset", "missing_rate"])[["base", "gain"]].mean()
        for j, rate in enumerate(sorted(per.index.get_level_values("missing_rate").unique())):
            at = per.xs(rate, level="missing_rate")
            ax.scatter(at["base"], at["gain"], s=14, color=f"C{j}",
                       label=f"{100 * rate:g}% missing")
        ax.axhline(0.0, color="grey", lw=0.8)
        up, down = int((gain["gain"] > 0).sum()), int((gain["gain"] < 0).sum())
        ax.set_title(f"×{a:g} → ×{b:g}: {up} repetitions up, {down} down "
                     f"(sign test p = {binomial_two_sided_p(up, up + down):.2g})", fontsize=8)
        ax.set_xlabel(f"accuracy (MPE), budgets ×{a:g}")
        ax.set_ylabel("accuracy gain (MPE), mean over seeds")
        ax.legend(fontsize=6)
    fig.suptitle(f"{title}: gain of each budget over the next smaller one, per data set "
                 f"and rate (cf. Fig. 10)", fontsize=8)
    paths.append(save_figure(fig, out_dir / f"{grid}__sem_tuning_accuracy.png"))
    return paths


def _figure(cells: pd.DataFrame, path: Path, title: str) -> Path:
    """Per data set against the missing rate: SEM-kMAX's accuracy (± sd over runs) with
    the mode baseline's, and its gain over the mode (what the accuracies' spread across
    data sets hides); one colour per data set (tab20, up to 20 apart)."""
    from bnsl_dist.reporting.plots import plt, save_figure

    fig, (acc, gain) = plt.subplots(1, 2, figsize=(10.0, 4.2), layout="constrained")
    colors = [plt.get_cmap("tab20")(j) for j in range(20)]
    rates_all = 100 * np.asarray(sorted(cells["missing_rate"].unique()))
    for i, (ds, g) in enumerate(cells.groupby("dataset", sort=True)):
        by = g.groupby("missing_rate")
        rates = 100 * np.asarray(sorted(g["missing_rate"].unique()))
        color = colors[i % len(colors)]
        mean = by["accuracy"].mean().to_numpy()
        acc.errorbar(rates, mean, yerr=by["accuracy"].std(ddof=1).fillna(0.0).to_numpy(),
                     color=color, marker="o", ms=3, capsize=2, label=str(ds))
        mode = by["accuracy_mode"].mean().to_numpy()
        if np.isfinite(mode).any():
            acc.plot(rates, mode, color=color, ls=":", lw=1)
            gain.plot(rates, mean - mode, color=color, marker="o", ms=3)
    gain.axhline(0.0, color="grey", lw=0.8)
    for ax in (acc, gain):
        ax.set_xlabel("missing cells (%)")
        ax.set_xticks(rates_all)
    acc.set_ylabel("imputation accuracy")
    acc.set_title("SEM-kMAX (solid, ± sd over runs) and the mode (dotted)", fontsize=8)
    gain.set_ylabel("accuracy − the mode's (mean over runs)")
    gain.set_title("SEM-kMAX's gain over the mode", fontsize=8)
    fig.suptitle(title, fontsize=8)
    fig.legend(*acc.get_legend_handles_labels(), fontsize=6, loc="outside right upper")
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
    scaled = cells["budget_scale"].nunique() > 1
    if scaled:
        notes.append("budget ×: the factor on both M-step budgets (the paper's tuning "
                     "study, §7.4); the figure shows the runs at "
                     f"×{_reference_scale(cells):g}.")
    written = write_text_table(imputation_table(cells), out_dir, f"{grid}__imputation",
                               f"SEM-kMAX imputation ({title})", notes)
    if plots:
        ref = cells[cells["budget_scale"] == _reference_scale(cells)]
        written.append(_figure(ref, Path(out_dir) / f"{grid}__imputation.png", title))
    tuned = tuned_cells(cells)
    if scaled and not tuned.empty:
        written += write_text_table(
            tuning_table(tuned), out_dir, f"{grid}__sem_tuning",
            f"SEM-kMAX M-step budgets (§7.4, Figures 9–10; {title})",
            ["Per data set run at every scale (by size n·N) and over them all: mean "
             "seconds per run and mean "
             "joint-MPE imputation accuracy (the paper's) at each budget scale; for each "
             "scale against the next smaller one, the mean accuracy gain paired per "
             "repetition (data set, rate, seed: the same hidden cells), the repetitions it "
             "raises/lowers and the two-sided sign-test p (ties dropped)."])
        if plots:
            written += _tuning_figures(tuned, Path(out_dir), grid, title)
    return written
