"""The held-out log-likelihood of the qds grid's DAGs: Rahier et al. 2018's CVLL column
of Table 1 and the qds curve of their Fig. 7 (``workflows/qds_fig7.py`` draws it), from
committed records.

Each record's DAG (``dag_json``) gets CPTs fitted on the split it was learned from with
the grid's BDeu-spread Dirichlet prior (the cache's equivalent sample size), then the
mean ``ln P(row)`` (natural log) of the held-out splits of the same data set, ``valid``
and ``test`` (msnbc as preprocessed by Davis and Domingos 2010, the paper's data) — the
definition the grid itself records for a data set that lists a test split
(``bnsl_dist.pipeline.run.holdout_loglik``). The paper names its measure
"cross-validated log-likelihood" without giving folds or estimator; a fixed held-out
split is our reading, stated in the table. Over the seeds of each label: the mean and
sd of the held-out log-likelihood per row, the BDeu per row on the learning data and the
mean number of arcs. Deterministic: reads records and data, runs no search.

Run::

    python -m workflows.qds_cvll [--records workflows/results/qds-2018-reduced/records.parquet]

Writes ``<grid>__cvll.{md,csv}`` beside the records (``--out`` elsewhere); ``tests/test_qds_cvll.py`` checks the committed table regenerates.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.graph.dag import DAG
from bnsl_dist.inference import log_likelihood
from bnsl_dist.model.fit import fit_cpts
from bnsl_dist.reporting.text import fmt_float, write_text_table
from bnsl_dist.results.export import load_records

RECORDS = (Path(__file__).resolve().parent / "results" / "qds-2018-reduced"
           / "records.parquet")
HELD_OUT = ("valid", "test")


def heldout_per_row(dag_json: str, train: CategoricalData,
                    held: dict[str, CategoricalData], alpha: float) -> dict[str, float]:
    """Mean ``ln P(row)`` of each held-out split under ``dag_json`` with CPTs fitted on
    ``train`` (BDeu-spread prior of equivalent sample size ``alpha``)."""
    dag = DAG.from_json_dict(json.loads(dag_json), names=train.names)
    net = fit_cpts(dag, train, alpha=alpha)
    return {s: float(log_likelihood(net, d).mean) for s, d in held.items()}


def _epsilon(scr: dict[str, Any] | None) -> float:
    """A record's screening threshold (its ``screening`` column; NaN without)."""
    return np.nan if scr is None else float(scr["epsilon"])


def cvll_frame(frame: pd.DataFrame, load: Callable[[str, str], CategoricalData],
               alpha: float, splits: tuple[str, ...] = HELD_OUT) -> pd.DataFrame:
    """One row per (data set, label): epsilon (median over seeds; missing without
    screening), seeds, the held-out log-likelihood per row of each split (mean and sd
    over seeds), BDeu per row on the learning split, and mean arcs. ``load(name, split)``
    gives a split's data. Sorted by data set, unscreened labels first, then epsilon."""
    rows = []
    for (ds, split), g in frame.groupby(["dataset", "split"], sort=True):
        train = load(str(ds), str(split))
        held = {s: load(str(ds), s) for s in splits}
        memo = {d: heldout_per_row(d, train, held, alpha) for d in sorted(set(g["dag_json"]))}
        for label, h in g.groupby("label", sort=True):
            ll = {s: np.array([memo[d][s] for d in h["dag_json"]]) for s in splits}
            arcs = [sum(len(p) for p in json.loads(d)["parents"].values())
                    for d in h["dag_json"]]
            eps = [_epsilon(s) for s in h["screening"]]
            row: dict[str, object] = {
                "dataset": ds, "split": split, "label": label,
                "epsilon": float(np.median(eps)), "seeds": int(len(h))}
            for s in splits:
                row[f"{s} LL/row"] = float(ll[s].mean())
                row[f"{s} LL/row sd"] = float(ll[s].std(ddof=1)) if len(h) > 1 else np.nan
            row["BDeu/row"] = float((h["best_score"] / h["n_samples"]).mean())
            row["arcs"] = float(np.mean(arcs))
            rows.append(row)
    out = pd.DataFrame(rows)
    out["_screened"] = out["epsilon"].notna()
    out = out.sort_values(["dataset", "split", "_screened", "epsilon", "label"], kind="stable")
    return out.drop(columns="_screened").reset_index(drop=True)


def cvll_table(c: pd.DataFrame) -> pd.DataFrame:
    """:func:`cvll_frame` as text: epsilon 4 decimals, log-likelihoods 4, arcs 1."""
    out = c[["dataset", "split", "label"]].astype(str)
    for col in c.columns[3:]:
        out[col] = (c[col].astype(int).astype(str) if col == "seeds"
                    else [fmt_float(v, ".1f" if col == "arcs" else ".4f") for v in c[col]])
    return out


def write_cvll(records: Path, out: Path) -> list[Path]:
    """Compute and write the table of ``records``' grid into ``out``."""
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.specs import DataRef

    rs = load_records(records)
    frame = rs.frame()
    (grid,) = sorted(set(frame["grid"]))
    alpha = float(rs.grids[grid]["cache"]["ess"])

    def load(name: str, split: str) -> CategoricalData:
        return load_data(DataRef(name=name, split=split))

    c = cvll_frame(frame, load, alpha)
    return write_text_table(
        cvll_table(c), out, f"{grid}__cvll",
        f"{grid}: held-out log-likelihood (the paper's CVLL)",
        [f"Each record's DAG with CPTs fitted on its learning split (BDeu-spread Dirichlet "
         f"prior, equivalent sample size {alpha:g}), scored on the held-out splits: mean "
         "ln P(row) per row (natural log), then mean and sd over the seeds; BDeu per row "
         "on the learning split; mean arcs. Rows without epsilon run without screening. "
         "`python -m workflows.qds_cvll`."])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=Path, default=RECORDS)
    ap.add_argument("--out", type=Path, default=None,
                    help="folder to write into (default: the records' folder)")
    a = ap.parse_args(argv)
    for p in write_cvll(a.records, a.out or a.records.parent):
        print(p)


if __name__ == "__main__":
    main()
