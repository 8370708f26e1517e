"""The inference study's Table 5 and Figure 7 (Scanagatta et al., MLJ 2018, §6.3) from
the records of a ``kind: inference`` grid alone; k-MAX's Figs. 4-5 (Scanagatta et al.,
IJAR 2018, §5: mae and time of P(e) of bounded models against the true networks) from a
grid without a reference learner.

Each cell stores its model's answers to its data set's queries (its ``inference`` column,
:func:`bnsl_dist.pipeline.run.run_cell`); one cell of a data set with a known network
(the reference learner's, else the grid's first model's) stores the true network's
answers too (``truth``). Errors are computed here, per cell:

* real data: mae of P(e) against the reference learner's answers (the paper's "assumed
  ground truth");
* data of a known network: mae of P(e) and of the marginals against the true network's;
  relative mae = mae of the cell / mae of the reference learner's cell on the same data
  set, split and seed (Figure 7).

References
----------
M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate structure learning
for large Bayesian networks", Machine Learning 107, 2018, §6.3, Figures 5-7, Table 5.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist._io import atomic_write_text
from bnsl_dist.exceptions import DataError
from bnsl_dist.inference.study import mae_marginals, mae_pe

__all__ = ["inference_frame", "inference_table", "inference_tables", "figs45_table",
           "TRUE_NETWORK"]

_GROUP = ["grid", "dataset", "split", "seed"]

#: The label and model of the rows of the true networks' own answers (their width, exact
#: or not, and time per query: the papers' inference times of the true networks).
TRUE_NETWORK = "true network"


def _model(label: str, k: Any) -> str:
    return label if k is None or (isinstance(k, float) and math.isnan(k)) else \
        f"{label} k={int(k)}"


def inference_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per inference cell of ``frame`` (records of
    :meth:`~bnsl_dist.results.store.ResultStore.read_frame`; other cells are ignored):
    grid, dataset, split, seed, label, k, model, known_network, reference, exact, width,
    ms_pe, ms_marginal, mae_pe, mae_marginals, relative_mae_pe, relative_mae_marginals
    (NaN where there is no reference answer); plus, per data set, split and seed with a
    known network, a row of the true network's own answers (label and model
    :data:`TRUE_NETWORK`, no errors).

    Raises
    ------
    DataError
        Two cells of one data set, split and seed answered different queries, or two
        hold its reference learner's answers or its true network's (records of different
        code versions or grids mixed in one folder).
    """
    rows: list[dict[str, Any]] = []
    for rec in frame.to_dict("records"):
        inf = rec.get("inference")
        if inf is None:
            continue
        k = rec.get("k")
        k = None if k is None or (isinstance(k, float) and math.isnan(k)) else int(k)
        row = {"grid": rec["grid"], "dataset": rec["dataset"], "split": rec["split"],
               "seed": int(rec["seed"]), "label": rec["label"], "k": k,
               "model": _model(rec["label"], k), "inf": inf}
        rows.append({**row, "group": tuple(row[c] for c in _GROUP)})
    cols = ["grid", "dataset", "split", "seed", "label", "k", "model", "known_network",
            "reference", "exact", "width", "ms_pe", "ms_marginal", "mae_pe",
            "mae_marginals", "relative_mae_pe", "relative_mae_marginals"]
    if not rows:
        return pd.DataFrame(columns=cols)
    # per data set, split and seed: the row holding the reference learner's answers,
    # and the row holding the true network's
    refs: dict[tuple[Any, ...], dict[str, Any]] = {}
    truths: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        group = r["group"]
        for role, table, holds in (
                ("the reference learner's answers", refs, r["inf"]["reference"]),
                ("the true network's answers", truths, r["inf"].get("truth") is not None)):
            if not holds:
                continue
            if group in table:
                raise DataError(f"{r['grid']}: {r['dataset']}/{r['split']} seed "
                                f"{r['seed']}: two cells hold {role}, "
                                f"{table[group]['model']} and {r['model']} (records "
                                f"of two runs mixed in one folder: set one aside)")
            table[group] = r

    def ms(x: float | None) -> float:
        return math.nan if x is None else 1e3 * float(x)

    out = []
    for r in rows:
        inf, group = r["inf"], r["group"]
        ref, holder = (t[group]["inf"] if group in t else None for t in (refs, truths))
        for other, role in ((ref, "the reference cell"),
                            (holder, "the cell holding the true network's answers")):
            if other is not None and (other["evidence"], other["marginal_vars"]) != \
                    (inf["evidence"], inf["marginal_vars"]):
                raise DataError(f"{r['grid']}: {r['dataset']}/{r['split']} seed "
                                f"{r['seed']}: {r['model']} answered other queries than "
                                f"{role}")
        truth = (None if holder is None else holder["truth"]) if inf["known_network"] \
            else ref
        e_pe = e_m = math.nan
        if truth is not None and inf["log_pe"] and truth["log_pe"]:
            e_pe = mae_pe(inf["log_pe"], truth["log_pe"])
        if truth is not None and inf["marginals"] and truth["marginals"]:
            e_m = mae_marginals(inf["marginals"], truth["marginals"])
        out.append({**{c: r[c] for c in ("grid", "dataset", "split", "seed", "label", "k",
                                         "model", "group")},
                    "known_network": bool(inf["known_network"]),
                    "reference": bool(inf["reference"]), "exact": bool(inf["exact"]),
                    "width": math.nan if inf["width"] is None else int(inf["width"]),
                    "ms_pe": ms(inf["pe_seconds_per_query"]),
                    "ms_marginal": ms(inf["marginal_seconds_per_query"]),
                    "mae_pe": e_pe, "mae_marginals": e_m})
    for group, row in truths.items():
        t = row["inf"]["truth"]
        out.append({**dict(zip(_GROUP, group, strict=True)), "group": group,
                    "label": TRUE_NETWORK,
                    "k": None, "model": TRUE_NETWORK, "known_network": True,
                    "reference": False, "exact": bool(t["exact"]),
                    "width": math.nan if t["width"] is None else int(t["width"]),
                    "ms_pe": ms(t["pe_seconds_per_query"]),
                    "ms_marginal": ms(t["marginal_seconds_per_query"]),
                    "mae_pe": math.nan, "mae_marginals": math.nan})
    ref_err = {r["group"]: r for r in out if r["reference"]}
    for r in out:
        ref_row = ref_err.get(r["group"])
        for what in ("pe", "marginals"):
            b = math.nan if ref_row is None else ref_row[f"mae_{what}"]
            r[f"relative_mae_{what}"] = r[f"mae_{what}"] / b \
                if r["known_network"] and b > 0 else math.nan
    res = pd.DataFrame(out, columns=cols)
    return res.sort_values(["grid", "dataset", "split", "seed", "label", "k"],
                           na_position="first", kind="mergesort").reset_index(drop=True)


def _fmt(x: float, spec: str) -> str:
    return "–" if x is None or not np.isfinite(x) else format(x, spec)


def inference_table(cells: pd.DataFrame) -> pd.DataFrame:
    """Table 5 per grid and model: mean width, exact cells, mean ms per P(e) query and
    per marginal query, mean mae of P(e) on real data (vs the reference learner) and on
    known networks (vs the truth), mean mae of the marginals, median relative mae of
    the marginals (Figure 7) — over data sets, splits and seeds."""
    rows = []
    order = cells.drop_duplicates(["grid", "model"]).sort_values(
        ["grid", "label", "k"], na_position="first", kind="mergesort")
    for grid, model in zip(order["grid"], order["model"], strict=True):
        g = cells[(cells["grid"] == grid) & (cells["model"] == model)]
        real, known = g[~g["known_network"]], g[g["known_network"]]
        rows.append({"grid": grid, "model": model, "cells": len(g),
                     "width": g["width"].mean(), "exact": f"{int(g['exact'].sum())}/{len(g)}",
                     "ms_pe": g["ms_pe"].mean(), "ms_marginal": g["ms_marginal"].mean(),
                     "mae_pe_real": real["mae_pe"].mean(),
                     "mae_pe_known": known["mae_pe"].mean(),
                     "mae_marginals_known": known["mae_marginals"].mean(),
                     "relative_mae_median": known["relative_mae_marginals"].median()})
    return pd.DataFrame(rows)


def _markdown(table: pd.DataFrame) -> str:
    lines = ["| grid | model | cells | width (mean) | exact | ms per P(e) query | "
             "ms per marginal | mae P(e), real (vs unbounded) | mae P(e), known network | "
             "mae marginals, known network | relative mae (median) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table.to_dict("records"):
        lines.append(
            f"| {r['grid']} | {r['model']} | {r['cells']} | {_fmt(r['width'], '.1f')} "
            f"| {r['exact']} | {_fmt(r['ms_pe'], '.3f')} | {_fmt(r['ms_marginal'], '.3f')} "
            f"| {_fmt(r['mae_pe_real'], '.3g')} | {_fmt(r['mae_pe_known'], '.3g')} "
            f"| {_fmt(r['mae_marginals_known'], '.3g')} "
            f"| {_fmt(r['relative_mae_median'], '.3f')} |")
    return "\n".join(lines) + "\n"


def _fig7(cells: pd.DataFrame, path: Path) -> Path | None:
    from bnsl_dist.reporting.plots import plt, save_figure

    known = cells[cells["known_network"] & ~cells["reference"]
                  & np.isfinite(cells["relative_mae_marginals"])]
    if known.empty:
        return None
    models = sorted(known["model"].unique(), key=lambda m: (len(m), m))
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    ax.boxplot([known.loc[known["model"] == m, "relative_mae_marginals"].to_numpy()
                for m in models])
    ax.set_xticks(range(1, len(models) + 1), models, rotation=20, fontsize=8)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel("relative mae of marginals")
    ax.set_title("Fig. 7: marginals vs the true network (mae / mae of the unbounded model)",
                 fontsize=8)
    return save_figure(fig, path)


def figs45_table(cells: pd.DataFrame) -> pd.DataFrame:
    """k-MAX's Figs. 4-5 (Scanagatta et al., IJAR 2018, §5) per data set, split and seed
    of the grids without a reference learner: each bounded model's mae of P(e) against
    the true network (``mae <model>``) and ms per P(e) query (``ms <model>``), and the
    true network's ms per query and whether its answers are exact. Empty when no grid of
    ``cells`` is of that kind."""
    by_grid = cells.groupby("grid")["reference"].transform("any")
    own = cells[~by_grid & cells["known_network"]]
    if own.empty:
        return pd.DataFrame()
    is_truth = own["label"] == TRUE_NETWORK
    wide = own[~is_truth].set_index(_GROUP + ["model"])[["mae_pe", "ms_pe"]].unstack("model")
    models = sorted(wide.columns.get_level_values("model").unique(),
                    key=lambda m: (len(m), m))
    truth = own[is_truth].set_index(_GROUP)
    table = pd.concat([wide["mae_pe"][models].add_prefix("mae "),
                       wide["ms_pe"][models].add_prefix("ms "),
                       truth["ms_pe"].rename(f"ms {TRUE_NETWORK}"),
                       truth["exact"].rename("true network exact")], axis=1)
    table.columns.name = None
    return table.reset_index()


def _columns(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The mae and the ms columns of a :func:`figs45_table`."""
    return ([c for c in table.columns if c.startswith("mae ")],
            [c for c in table.columns if c.startswith("ms ")])


def _figs45_markdown(table: pd.DataFrame) -> str:
    maes, mss = _columns(table)
    head = ["data set"] + [f"{c} (P(e))" for c in maes] + \
        [f"{c} per query" for c in mss] + ["true network's answers"]
    lines = ["# k-MAX's Figs. 4-5 (Scanagatta et al., IJAR 2018, §5): mae and time of "
             "P(evidence) against the true networks", "",
             "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for r in table.to_dict("records"):
        name = r["dataset"] if r["split"] == "train" and r["seed"] == 0 else \
            f"{r['dataset']}/{r['split']} seed {r['seed']}"
        exact = r["true network exact"]
        how = "–" if pd.isna(exact) else ("exact" if exact else "likelihood weighting")
        lines.append("| " + " | ".join([name] + [_fmt(r[c], ".3g") for c in maes]
                                        + [_fmt(r[c], ".3g") for c in mss] + [how]) + " |")
    return "\n".join(lines) + "\n"


def _figs45(table: pd.DataFrame, path: Path) -> Path:
    from bnsl_dist.reporting.plots import plt, save_figure

    maes, mss = _columns(table)
    x = np.arange(len(table))
    fig, axes = plt.subplots(2, 1, figsize=(8.0, 6.0), sharex=True)
    for ax, cols, ylabel in ((axes[0], maes, "mae of P(e) vs the true network"),
                             (axes[1], mss, "ms per P(e) query")):
        w = 0.8 / len(cols)
        for i, c in enumerate(cols):
            ax.bar(x + (i - (len(cols) - 1) / 2) * w, table[c].to_numpy(dtype=float), w,
                   label=c.split(" ", 1)[1])
        ax.set_yscale("log")
        ax.set_ylabel(ylabel, fontsize=8)
        ax.legend(fontsize=7, ncol=len(cols))
    axes[1].set_xticks(x, table["dataset"], rotation=45, ha="right", fontsize=7)
    axes[0].set_title("k-MAX's Figs. 4-5: P(e) of 5 evidence variables, bounded models "
                      "and the true network", fontsize=8)
    return save_figure(fig, path)


def inference_tables(frame: pd.DataFrame, out_dir: str | Path, *, plots: bool = True
                     ) -> list[Path]:
    """Write ``inference_table5.md`` / ``.csv`` (Table 5), ``inference_cells.csv`` (every
    cell's figures) and, with ``plots``, ``inference_fig7_relative_mae.png`` (Figure 7,
    when a data set with a known network has a relative mae) for the inference cells of
    ``frame``; for grids without a reference learner also ``inference_figs45.md`` /
    ``.csv`` / ``.png`` (k-MAX's Figs. 4-5, :func:`figs45_table`); nothing when it has
    no inference cell. Returns the paths written."""
    cells = inference_frame(frame)
    if cells.empty:
        return []
    out = Path(out_dir)
    table = inference_table(cells)
    written = []
    for name, text in (("inference_table5.md",
                        "# Table 5 (Scanagatta et al. 2018, §6.3): inference time and "
                        "accuracy\n\n" + _markdown(table)),
                       ("inference_table5.csv", table.to_csv(index=False,
                                                             float_format="%.6g")),
                       ("inference_cells.csv", cells.to_csv(index=False,
                                                            float_format="%.6g"))):
        atomic_write_text(out / name, text)
        written.append(out / name)
    fig = _fig7(cells, out / "inference_fig7_relative_mae.png") if plots else None
    if fig is not None:
        written.append(fig)
    f45 = figs45_table(cells)
    if not f45.empty:
        for name, text in (("inference_figs45.md", _figs45_markdown(f45)),
                           ("inference_figs45.csv", f45.to_csv(index=False,
                                                               float_format="%.6g"))):
            atomic_write_text(out / name, text)
            written.append(out / name)
        if plots:
            written.append(_figs45(f45, out / "inference_figs45.png"))
    return written
