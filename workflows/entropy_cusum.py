"""The ASOBS-ENT paper's Fig. 2 for both directions: the cusum of the score gain by entropy.

For each variable X_i, ΔBIC(X_i) = the local score of the parent set ASOBS-ENT's best DAG
gave it minus that of ASOBS's best DAG, on the same cache (the grid's cells of one
experiment). With the variables sorted by decreasing entropy, the paper plots
cusum(X_i) = Σ_{H(X_j) >= H(X_i)} ΔBIC(X_j) against H(X_i) (Scanagatta et al. 2018,
§4.2, Fig. 2: a large positive cusum built on the high- and medium-entropy variables,
partly lost on the least entropic ones). Drawn here for the paper's variant
(``asobs-ent``, high-entropy variables processed first) and for ``asobs-ent-last``,
against ``asobs``, on four data sets of the grid's rerun (default: the train splits of
the paper's four, where present: Reuters-52 = cr52, Webkb = cwebkb, and book, c20ng).
Entropies of the data the cache was built from. Deterministic (reads records, caches
and data; runs nothing).

Run (on the results folder of the grid's rerun, which holds the caches)::

    python -m workflows.entropy_cusum --results /work/runs/asobs-ent-direction \\
        [--datasets cr52,cwebkb,book,c20ng] [--split train]

Writes ``workflows/results/asobs-ent-2018-reduced/entropy_cusum.{json,md,png}``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import read_jkl
from bnsl_dist.datasets.catalog import load_registered
from bnsl_dist.results.export import load_records
from bnsl_dist.scores import LocalScorer
from workflows.benchmarks._common import machine

OUT = Path(__file__).resolve().parent / "results" / "asobs-ent-2018-reduced"
VARIANTS = ("asobs-ent", "asobs-ent-last")


def _local_scores(cache: Any, dag_json: str) -> np.ndarray:
    obj = json.loads(dag_json)
    index = {name: i for i, name in enumerate(obj["nodes"])}
    return np.array([cache.score_of(index[v], [index[p] for p in obj["parents"][v]])
                     for v in obj["nodes"]])


def cusum(results: Path, dataset: str, split: str) -> dict[str, Any]:
    f = load_records(results).frame()
    rows = f[(f.dataset == dataset) & (f.split == split)].set_index("label")
    if not {"asobs", *VARIANTS} <= set(rows.index):
        raise SystemExit(f"{results}: {dataset}/{split} lacks asobs or a variant")
    keys = set(rows.loc[["asobs", *VARIANTS], "cache_key"])
    if len(keys) != 1:
        raise SystemExit(f"{dataset}/{split}: the cells' caches differ")
    cache = read_jkl(results / "caches" / f"{keys.pop()}.jkl.gz")
    ent = np.asarray(LocalScorer(load_registered(dataset, split), "ll").entropies())
    order = np.argsort(-ent, kind="stable")
    base = _local_scores(cache, rows.loc["asobs", "dag_json"])
    out: dict[str, Any] = {"dataset": dataset, "split": split, "n": int(ent.size),
                           "entropy": np.round(ent[order], 6).tolist()}
    for v in VARIANTS:
        delta = _local_scores(cache, rows.loc[v, "dag_json"]) - base
        c = np.cumsum(delta[order])
        top = max(1, ent.size // 5)
        out[v] = {"cusum": np.round(c, 2).tolist(), "total": float(c[-1]),
                  "max": float(c.max()), "top_fifth": float(c[top - 1]),
                  "dag_delta": float(rows.loc[v, "best_score"] - rows.loc["asobs", "best_score"])}
        # the per-variable scores add up to the DAGs' scores (checks the lookups)
        assert abs(out[v]["total"] - out[v]["dag_delta"]) < 1e-3 * max(1.0, abs(c[-1]))
    return out


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 3.4), squeeze=False)
    for ax, r in zip(axes[0], rows, strict=True):
        for v, style in zip(VARIANTS, ("-", "--"), strict=True):
            ax.plot(r["entropy"], r[v]["cusum"], style,
                    label=f"{v} (high-entropy {'first' if v == 'asobs-ent' else 'last'})")
        ax.axhline(0, color="grey", lw=0.5)
        ax.invert_xaxis()
        ax.set_title(f"{r['dataset']}/{r['split']} (n = {r['n']})")
        ax.set_xlabel("H(X_i)")
    axes[0][0].set_ylabel("cusum of ΔBIC vs ASOBS")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["### Fig. 2: cusum of ΔBIC(X_i) against ASOBS, variables by decreasing entropy",
             "", "| data set | n | variant | cusum at the top fifth | max | total (= ΔBIC of "
             "the DAGs) |", "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        for v in VARIANTS:
            x = r[v]
            lines.append(f"| {r['dataset']}/{r['split']} | {r['n']} | {v} | "
                         f"{x['top_fifth']:+,.1f} | {x['max']:+,.1f} | {x['total']:+,.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, type=Path)
    ap.add_argument("--datasets", default="cr52,cwebkb,book,c20ng")
    ap.add_argument("--split", default="train")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    rows = [cusum(args.results, d, args.split) for d in args.datasets.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.out / "entropy_cusum.json", json.dumps(
        {"machine": machine(), "settings": {k: str(v) for k, v in vars(args).items()},
         "rows": rows}, separators=(",", ":")) + "\n")
    atomic_write_text(args.out / "entropy_cusum.md", markdown(rows))
    plot(rows, args.out / "entropy_cusum.png")
    print(markdown(rows))


if __name__ == "__main__":
    main()
