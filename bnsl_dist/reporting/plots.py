"""Figures from stored results (matplotlib, Agg backend): anytime curves and ΔBIC
histograms.

References
----------
M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate structure learning
for large Bayesian networks", Machine Learning 107, 2018, §4.3 (ΔBIC evidence
categories, drawn here as the histogram's guide lines).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from bnsl_dist._io import atomic_writer  # noqa: E402

#: ``plt``: pyplot on the Agg backend set above, for the report modules that draw their own
#: figures (imported from here, so the backend is set before pyplot is).
__all__ = ["plot_delta_histogram", "plot_anytime", "plot_anytime_summary", "plot_top_p",
           "plot_sweep", "save_figure", "plt"]


def save_figure(fig: Figure, path: str | Path, dpi: int = 110) -> Path:
    """Save a PNG atomically and close the figure."""
    p = Path(path)
    try:
        atomic_writer(p, lambda fh: fig.savefig(fh, format="png", dpi=dpi,
                                                bbox_inches="tight"))
    finally:
        plt.close(fig)
    return p


def _signed_log(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.sign(x) * np.log10(1.0 + np.abs(x))
    return out


def delta_ticks(lim: float) -> list[float]:
    """The ΔBIC ticks of a signed-log axis reaching ±``lim`` (in log10(1 + |Δ|)): 0 and
    the decades within reach, every other one past five, and ±2 while at most two
    decades are shown (wider, it would crowd ±10).

    Examples
    --------
    >>> delta_ticks(2.5)
    [-100.0, -10.0, -2.0, 0.0, 2.0, 10.0, 100.0]
    >>> delta_ticks(7.2)[4:]                # seven decades: every other one
    [0.0, 10.0, 1000.0, 100000.0, 10000000.0]
    """
    decades = [10.0 ** j for j in range(1, int(lim) + 1) if math.log10(1 + 10.0 ** j) <= lim]
    if len(decades) > 5:
        decades = decades[::2]
    pos = ([2.0] if len(decades) <= 2 else []) + decades
    return [-v for v in reversed(pos)] + [0.0] + pos


def _tick_label(v: float) -> str:
    """``0``, ``2``, ``-10``, ``100``, then powers of ten (``$-10^{4}$``)."""
    if abs(v) < 1000:
        return f"{v:g}".replace("-", "\N{MINUS SIGN}")
    return f"${'-' if v < 0 else ''}10^{{{round(math.log10(abs(v)))}}}$"


def plot_delta_histogram(deltas: Sequence[float], path: str | Path, *, title: str = "",
                         a: str = "A", b: str = "B") -> Path:
    """Histogram of ΔBIC on a signed log scale, with the ±2, ±6, ±10 boundaries."""
    d = np.asarray(list(deltas), dtype=np.float64)
    d = d[np.isfinite(d)]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    if d.size:
        x = _signed_log(d)
        lim = max(1.2, float(np.abs(x).max()) * 1.05)
        ax.hist(x, bins=np.linspace(-lim, lim, 41).tolist(), color="#4477aa", edgecolor="white")
    else:
        lim = 1.2
        ax.text(0.5, 0.5, "no paired experiments", transform=ax.transAxes, ha="center")
    for edge in (2, 6, 10):
        for s in (1, -1):
            ax.axvline(s * math.log10(1 + edge), color="#999999", lw=0.8, ls="--")
    ticks = delta_ticks(lim)
    ax.set_xticks(_signed_log(np.array(ticks)))
    ax.set_xticklabels([_tick_label(v) for v in ticks])
    ax.set_xlim(-lim, lim)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"ΔBIC = BIC({a}) − BIC({b})  (signed log scale)")
    ax.set_ylabel("experiments")
    ax.set_title(title or f"{a} vs {b}: {d.size} experiments")
    return save_figure(fig, path)


def plot_anytime(frame: pd.DataFrame, path: str | Path, *, title: str = "") -> Path:
    """Score vs time, one step curve per run of ``frame`` (label, seed) — typically the
    rows of one experiment (data set, split, treewidth)."""
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for _, r in frame.sort_values(["label", "seed"]).iterrows():
        t = np.asarray(r["trace_elapsed"], dtype=np.float64)
        s = np.asarray(r["trace_scores"], dtype=np.float64)
        if t.size == 0:
            continue
        end = r["budget_seconds"] if pd.notna(r["budget_seconds"]) else max(t[-1], 1e-3)
        t = np.maximum(np.append(t, max(float(end), t[-1])), 1e-4)
        s = np.append(s, s[-1])
        ax.step(t, s, where="post", label=f"{r['label']} (seed {r['seed']})")
    ax.set_xscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel("BIC (higher is better)")
    ax.set_title(title)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def plot_anytime_summary(frame: pd.DataFrame, path: str | Path, *,
                         labels: Sequence[str] | None = None, title: str = "",
                         n_points: int = 60) -> Path:
    """Median over experiments of the relative gap to the best final score found by any
    of ``labels`` in that experiment, against time (log–log); one curve per label.

    An experiment is a data set, split and treewidth, as the ΔBIC tables pair them: the
    runs of an unbounded label beside bounded ones belong to each treewidth's
    experiment of their data set and split."""
    f = frame if labels is None else frame[frame["label"].isin(list(labels))]
    labs = sorted(f["label"].unique()) if labels is None else list(labels)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    if f.empty:
        ax.text(0.5, 0.5, "no results", transform=ax.transAxes, ha="center")
        return save_figure(fig, path)
    tmax = float(np.nanmax([max(t) if len(t) else 0.0 for t in f["trace_elapsed"]] + [1e-3]))
    grid_t = np.logspace(-3, math.log10(max(tmax, 1e-2)), n_points)
    keys = ["grid", "dataset", "split", "k"]
    f = _unbounded_beside_bounded(f.assign(k=f["k"].astype("Int64")))
    f = f.assign(k=f["k"].astype(str))
    curves: dict[str, list[np.ndarray]] = {lab: [] for lab in labs}
    for _, g in f.groupby(keys, dropna=False):
        best = float(g["best_score"].max())
        scale = max(abs(best), 1e-12)
        for lab in labs:
            rows = g[g["label"] == lab]
            if rows.empty:
                continue
            gaps = []
            for _, r in rows.iterrows():
                t = np.asarray(r["trace_elapsed"], dtype=np.float64)
                s = np.asarray(r["trace_scores"], dtype=np.float64)
                idx = np.searchsorted(t, grid_t, side="right") - 1
                cur = np.where(idx >= 0, np.maximum.accumulate(s)[np.maximum(idx, 0)], np.nan)
                gaps.append((best - cur) / scale)
            with warnings.catch_warnings():  # all-NaN columns: nothing found yet
                warnings.simplefilter("ignore", RuntimeWarning)
                curves[lab].append(np.nanmedian(np.vstack(gaps), axis=0)
                                   if len(gaps) > 1 else gaps[0])
    for lab, cs in curves.items():
        if not cs:
            continue
        arr = np.vstack(cs)
        with np.errstate(all="ignore"):
            med = np.array([np.nanmedian(col) if np.isfinite(col).any() else np.nan
                            for col in arr.T])
        ax.plot(grid_t, np.maximum(med, 1e-9), label=f"{lab} ({len(cs)} experiments)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("seconds")
    ax.set_ylabel("median relative gap to the best final score")
    ax.set_title(title or "Anytime behaviour")
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def _unbounded_beside_bounded(f: pd.DataFrame) -> pd.DataFrame:
    """``f`` with the rows of each label that has no treewidth repeated for every
    treewidth of the other labels' rows of the same grid, data set and split, when some
    labels have one and others not (as :func:`~bnsl_dist.reporting.tables.paired_deltas`
    pairs an unbounded learner with each treewidth of a bounded one)."""
    bounded = f.groupby("label")["k"].agg(lambda k: bool(k.notna().any()))
    if bounded.all() or not bounded.any():
        return f
    unb = f[f["label"].isin(bounded.index[~bounded])]
    ks = (f[f["label"].isin(bounded.index[bounded])][["grid", "dataset", "split", "k"]]
          .dropna().drop_duplicates())
    # (left: a run with no bounded counterpart stays its own experiment, as before)
    rep = unb.drop(columns="k").merge(ks, on=["grid", "dataset", "split"], how="left")
    return pd.concat([f[f["label"].isin(bounded.index[bounded])], rep], ignore_index=True)


def plot_top_p(frame: pd.DataFrame, path: str | Path, *, title: str = "") -> Path:
    """Fan et al.'s Figure 4 (top): seconds and the suboptimality bound epsilon − 1
    against p, medians over seeds, one line per data set (``frame``: the rows of
    :func:`bnsl_dist.reporting.exact.top_p_frame`)."""
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(9.6, 3.6), layout="constrained")
    for (ds, split), g in frame.groupby(["dataset", "split"], sort=True):
        m = g.groupby("p", sort=True)[["seconds", "epsilon"]].median()
        lab = f"{ds}/{split}"
        ax_t.plot(m.index, m["seconds"], "o-", label=lab)
        ax_e.plot(m.index, np.maximum(m["epsilon"] - 1.0, 1e-12), "o-", label=lab)
    for ax, ylab in ((ax_t, "seconds"), (ax_e, "epsilon − 1 (0: optimal)")):
        ax.set_xlabel("p (top-p POPS kept per variable)")
        ax.set_ylabel(ylab)
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=7)
    fig.suptitle(title or "top-p POPS constraint")
    return save_figure(fig, path)


def plot_sweep(frame: pd.DataFrame, path: str | Path, *, x: str, ys: Sequence[str],
               baseline: pd.Series | None = None, title: str = "") -> Path:
    """One panel per column of ``ys`` against ``x`` (rows of ``frame``, sorted by x),
    with ``baseline[y]`` as a dashed line where given (e.g. the unscreened learner)."""
    fig, axes = plt.subplots(1, len(ys), figsize=(4.2 * len(ys), 3.4), squeeze=False,
                             layout="constrained")
    f = frame.sort_values(x)
    for ax, y in zip(axes[0], ys, strict=True):
        ax.plot(f[x], f[y], "o-", label="sweep")
        if baseline is not None and pd.notna(baseline.get(y)):
            ax.axhline(float(baseline[y]), color="#999999", ls="--", label="baseline")
        ax.set_xlabel(x)
        ax.set_ylabel(y)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return save_figure(fig, path)
