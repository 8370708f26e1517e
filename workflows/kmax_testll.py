"""The k-MAX paper's Fig. 3 (upper), k-MAX's side only: the test-set log-likelihood of
the k-MAX grid's networks at each treewidth, on the 18 real data sets.

The paper learns on one of a data set's three splits and takes the union of the other
two as the test set (54 experiments), and plots the test-set log-likelihood of k-MAX's
models minus Chordalysis' per treewidth (Scanagatta et al., IJAR 2018, §5.1: k-MAX at
treewidth 2 fits about as well as Chordalysis, at 5 or 8 better). Chordalysis is not in
the project, so only k-MAX's side is measured: each record's DAG (``dag_json``, labels
``kmax``) gets CPTs fitted on its learning split (BDeu-spread prior, ESS 1: the paper
does not give its estimator), then sum ln P(row) over the rows of the other two splits,
per row. Deterministic (reads records and data, runs no search).

Run (about 1–2 minutes per half)::

    python -m workflows.kmax_testll --datasets A,B,... [--datasets ...]

Writes ``workflows/results/kmax-2018-reduced/kmax_testll.{json,md}`` (each call merges
its data sets into the JSON; the markdown is drawn from the JSON alone, which
``tests/test_kmax_testll.py`` checks).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.results.export import load_records
from workflows._rows import update_rows
from workflows.qds_cvll import heldout_per_row

OUT = Path(__file__).resolve().parent / "results" / "kmax-2018-reduced"
SPLITS = ("train", "valid", "test")


def union_per_row(means: dict[str, float], rows: dict[str, int]) -> float:
    """The per-row log-likelihood of the union of splits, from each split's per-row
    mean and row count."""
    return sum(means[s] * rows[s] for s in means) / sum(rows[s] for s in means)


def compute(datasets: list[str]) -> list[dict[str, Any]]:
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.specs import DataRef

    f = load_records(OUT / "records.parquet").frame()
    f = f[(f["label"] == "kmax") & f["dataset"].isin(datasets)]
    out = []
    for ds, g in f.groupby("dataset", sort=True):
        data = {s: load_data(DataRef(name=str(ds), split=s)) for s in SPLITS}
        rows = {s: d.n_samples for s, d in data.items()}
        for (split, k), r in g.groupby(["split", "k"], sort=True):
            (dag_json,) = r["dag_json"]
            others = {s: data[s] for s in SPLITS if s != split}
            means = heldout_per_row(dag_json, data[str(split)], others, 1.0)
            out.append({"dataset": str(ds), "split": str(split), "k": int(k),
                        "test_rows": sum(rows[s] for s in others),
                        "ll_per_row": round(union_per_row(means, rows), 6)})
    return out


def _sign_p(wins: int, losses: int) -> float:
    from scipy.stats import binomtest

    n = wins + losses
    return float(binomtest(wins, n, 0.5, alternative="greater").pvalue) if n else float("nan")


def markdown(rows: list[dict[str, Any]]) -> str:
    by = {(r["dataset"], r["split"], r["k"]): r["ll_per_row"] for r in rows}
    exps = sorted({(d, s) for d, s, _ in by})
    ks = sorted({k for _, _, k in by})
    lines = ["### Fig. 3 (upper), k-MAX's side: test-set log-likelihood per row by treewidth",
             "", f"{len(exps)} experiments (learn on one split, test on the union of the "
             "other two); CPTs fitted on the learning split (BDeu-spread prior, ESS 1). "
             "`python -m workflows.kmax_testll`.", "",
             "| comparison | experiments | higher | lower | equal | mean difference per row "
             "| sign test p (higher) |", "|---|---:|---:|---:|---:|---:|---:|"]
    for a, b in zip(ks, ks[1:], strict=False):
        d = np.array([by[(x, s, b)] - by[(x, s, a)] for x, s in exps
                      if (x, s, a) in by and (x, s, b) in by])
        w, lo = int((d > 0).sum()), int((d < 0).sum())
        lines.append(f"| k = {b} vs k = {a} | {d.size} | {w} | {lo} | {d.size - w - lo} | "
                     f"{d.mean():+.4f} | {_sign_p(w, lo):.2g} |")
    lines += ["", "| data set | split learned | " + " | ".join(f"k = {k}" for k in ks) + " |",
              "|---|---|" + "---:|" * len(ks)]
    for x, s in exps:
        lines.append(f"| {x} | {s} | "
                     + " | ".join(f"{by[(x, s, k)]:.4f}" if (x, s, k) in by else ""
                                  for k in ks) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="", help="comma-separated; none: redraw only")
    a = ap.parse_args(argv)
    rows = update_rows(OUT / "kmax_testll.json", a.datasets, compute,
                       lambda r: (r["dataset"], r["split"], r["k"]), {"label": "kmax"})
    atomic_write_text(OUT / "kmax_testll.md", markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
