"""The quasi-determinism screening sweep (Rahier et al. 2018, Table 1 and Figures 3–6)
from stored records: per data set, label and treewidth (a bounded learner's k), the
screening threshold epsilon and the roots kept (the records' ``screening`` column), then over
the seeds the mean, standard
deviation and best of the score, the mean seconds (search, cache, screening, and their
sum), the mean number of arcs of the learned DAG and, when the cells scored their DAG on
a held-out split (the ``holdout`` column: a grid that lists a test split), the mean
held-out log-likelihood per row (the paper's comparison on the test set). Runs of the screened algorithms
without screening (the inner learner alone, "sota") are the baseline rows; other
algorithms are left out.

References
----------
T. Rahier, S. Marié, S. Girard, F. Forbes, "Fast Bayesian network structure learning
using quasi-determinism screening", JFRB 2018, §4.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist.reporting.text import fmt_float, write_text_table

__all__ = ["screening_frame", "screening_table", "write_screening_tables"]

_NUMERIC = ["epsilon", "n_roots", "seeds", "score mean", "score sd", "score best",
            "search s", "cache s", "screening s", "total s", "arcs"]
#: The held-out column, present when some record scored its DAG on a held-out split.
_HOLDOUT = "test LL/row"


def _arcs(dag_json: str) -> int:
    return sum(len(ps) for ps in json.loads(dag_json)["parents"].values())


def screening_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The sweep's numbers, one row per (data set, split, label, k: the treewidth of a
    bounded learner, else missing); empty when no record of ``frame`` screens. Sorted
    by data set, split, k, epsilon (the baseline first), label."""
    if frame.empty:
        return pd.DataFrame(columns=["dataset", "split", "label", "k", *_NUMERIC])
    scr = list(frame["screening"])
    if all(s is None for s in scr):
        return pd.DataFrame(columns=["dataset", "split", "label", "k", *_NUMERIC])
    screened = {a for a, x in zip(frame["algorithm"], scr, strict=True) if x is not None}
    keep = frame["algorithm"].isin(screened).to_numpy()
    frame, scr = frame[keep], [x for x, k in zip(scr, keep, strict=True) if k]
    held = list(frame["holdout"])
    f = frame.assign(
        holdout=[np.nan if h is None else float(h["mean"]) for h in held],
        epsilon=[np.nan if s is None else float(s["epsilon"]) for s in scr],
        n_roots=[np.nan if s is None else float(s["n_roots"]) for s in scr],
        screening_s=[0.0 if s is None else float(s["seconds"]) for s in scr],
        arcs=[_arcs(d) for d in frame["dag_json"]],
        k=frame["k"].astype("Int64"))
    rows: list[dict[str, Any]] = []
    for (ds, split, label, k), g in f.groupby(["dataset", "split", "label", "k"],
                                              sort=True, dropna=False):
        score = g["best_score"].astype(float).to_numpy()
        total = (g["elapsed"] + g["cache_seconds"] + g["screening_s"]).astype(float)
        rows.append({"dataset": ds, "split": split, "label": label,
                     "k": None if pd.isna(k) else int(k),
                     "epsilon": float(g["epsilon"].median()),
                     "n_roots": float(g["n_roots"].median()), "seeds": int(len(g)),
                     "score mean": float(score.mean()),
                     "score sd": float(score.std(ddof=1)) if len(score) > 1 else np.nan,
                     "score best": float(score.max()),
                     "search s": float(g["elapsed"].mean()),
                     "cache s": float(g["cache_seconds"].mean()),
                     "screening s": float(g["screening_s"].mean()),
                     "total s": float(total.mean()), "arcs": float(g["arcs"].mean()),
                     _HOLDOUT: float(g["holdout"].mean())})
    out = pd.DataFrame(rows)
    out["k"] = out["k"].astype("Int64")
    if out[_HOLDOUT].isna().all():
        out = out.drop(columns=_HOLDOUT)
    out["_base"] = out["epsilon"].notna()
    out = out.sort_values(["dataset", "split", "k", "_base", "epsilon", "label"],
                          kind="stable")
    return out.drop(columns="_base").reset_index(drop=True)


def screening_table(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`screening_frame` as text (epsilon 4 decimals, scores 2, seconds 3, arcs
    1); an empty epsilon marks a run without screening; a bounded learner's label
    names its treewidth (``label k=2``)."""
    s = screening_frame(frame)
    out = s[["dataset", "split", "label"]].copy()
    out["label"] = [str(lab) if pd.isna(k) else f"{lab} k={int(k)}"
                    for lab, k in zip(s["label"], s["k"], strict=True)]
    formats = {"epsilon": ".4f", "n_roots": ".1f", "score mean": ".2f", "score sd": ".2f",
               "score best": ".2f", "search s": ".3f", "cache s": ".3f",
               "screening s": ".3f", "total s": ".3f", "arcs": ".1f", _HOLDOUT: ".4f"}
    for col in [*_NUMERIC, *([_HOLDOUT] if _HOLDOUT in s else [])]:
        if col == "seeds":
            out[col] = s[col].astype(int).astype(str)
        else:
            out[col] = [fmt_float(v, formats[col]) for v in s[col]]
    return out


def write_screening_tables(frame: pd.DataFrame, out_dir: str | Path, name: str, *,
                           title: str = "", plots: bool = True) -> list[Path]:
    """``<name>__screening.md/.csv`` (and ``.png``: score and total seconds against
    epsilon, the unscreened mean dashed) when ``frame`` has screened runs."""
    table = screening_table(frame)
    if table.empty:
        return []
    written = write_text_table(
        table, out_dir, f"{name}__screening", f"{title or name}: screening sweep",
        ["Over the seeds: score mean, sd and best; mean seconds of the search, the cache "
         "(of the roots when screening), the screening, and their total; mean arcs"
         + ("; mean held-out log-likelihood per row of the test split (natural log; CPTs "
            "fitted on the learning split with the cache's equivalent sample size)"
            if _HOLDOUT in table else "")
         + ". Rows without epsilon run without screening."])
    if plots:
        from bnsl_dist.reporting.plots import plot_sweep

        s = screening_frame(frame)
        for (ds, split, k), g in s.groupby(["dataset", "split", "k"], sort=True,
                                           dropna=False):
            sweep, base = g[g["epsilon"].notna()], g[g["epsilon"].isna()]
            kk = "" if pd.isna(k) else f"-k{int(k)}"
            written.append(plot_sweep(
                sweep, Path(out_dir) / f"{name}__screening.{ds}-{split}{kk}.png",
                x="epsilon", ys=["score mean", "total s", "arcs"],
                baseline=base.iloc[0] if len(base) == 1 else None,
                title=f"{title or name}: {ds}/{split}"
                      + ("" if pd.isna(k) else f", k = {int(k)}")))
    return written
