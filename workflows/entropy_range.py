"""The ASOBS-ENT paper's Fig. 1: the range statistic of the least and the most entropic
variables.

For a variable X_i and a cached parent set Π, range(X_i, Π) = s(X_i, Π) − min over the
cached sets Π' of X_i of s(X_i, Π'): how much the score improves over the worst choice,
usually the empty set (Scanagatta et al. 2018, §4.2, Fig. 1: the ranges of the five
least entropic variables, red, then the five most entropic, black, boxplots over all
their cached sets; high-entropy variables reach ranges up to ten times larger, and a
much larger span between the maximum and the median). Drawn here from the BIC caches
of the ASOBS-ENT grid's run (the caches its records name), for the four data sets of the
paper's Fig. 2 where present (Reuters-52 = cr52, Webkb = cwebkb, book, c20ng); entropies
of the data each cache was built from. Deterministic (reads records, caches and data).

Run (on the results folder of the grid's run, which holds the caches)::

    python -m workflows.entropy_range --results /work/runs/asobs-ent-direction \\
        [--datasets cr52,cwebkb,book,c20ng] [--split train]

Writes ``workflows/results/asobs-ent-2018-reduced/entropy_range.{json,md,png}``; the
markdown and the figure are drawn from the JSON alone (``--from-json``), which
``tests/test_entropy_range.py`` checks against the committed files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import ParentSetCache, read_jkl
from bnsl_dist.datasets.catalog import load_registered
from bnsl_dist.results.export import load_records
from bnsl_dist.scores import LocalScorer

OUT = Path(__file__).resolve().parent / "results" / "asobs-ent-2018-reduced"
#: Variables drawn at each end of the entropy scale, as in the paper.
EACH_END = 5
_QUANTILES = (0.0, 0.25, 0.5, 0.75, 1.0)


def ranges(cache: ParentSetCache, v: int) -> np.ndarray:
    """range(X_v, Π) of every cached parent set Π of ``v`` (cache order: best first)."""
    s = cache.scores[cache.offsets[v]:cache.offsets[v + 1]]
    return s - s.min()


def variable_row(cache: ParentSetCache, v: int, entropy: float) -> dict[str, Any]:
    """One boxplot: the variable, its entropy, its number of cached sets and the
    quantiles (min, q1, median, q3, max; linear interpolation) of its ranges."""
    q = np.quantile(ranges(cache, v), _QUANTILES)
    return {"variable": cache.names[v], "entropy": round(float(entropy), 6),
            "sets": int(cache.n_sets_of(v)),
            **{k: round(float(x), 4) for k, x in
               zip(("min", "q1", "median", "q3", "max"), q, strict=True)}}


def ends(cache: ParentSetCache, entropy: np.ndarray, k: int = EACH_END
         ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The ``k`` least entropic variables (lowest first) and the ``k`` most (lowest
    first, so the most entropic is last, as in the paper's panels); ties by index."""
    order = np.argsort(entropy, kind="stable")
    return ([variable_row(cache, int(v), entropy[v]) for v in order[:k]],
            [variable_row(cache, int(v), entropy[v]) for v in order[-k:]])


def data_set_row(results: Path, dataset: str, split: str) -> dict[str, Any]:
    f = load_records(results).frame()
    keys = set(f[(f.dataset == dataset) & (f.split == split) & (f.label == "asobs")]["cache_key"])
    if len(keys) != 1:
        raise SystemExit(f"{results}: {dataset}/{split}: expected the asobs cell's one cache, "
                         f"found {len(keys)}")
    cache = read_jkl(results / "caches" / f"{keys.pop()}.jkl.gz")
    ent = np.asarray(LocalScorer(load_registered(dataset, split), "ll").entropies())
    low, high = ends(cache, ent)
    return {"dataset": dataset, "split": split, "n": int(ent.size),
            "sets_per_variable": round(cache.n_sets / cache.n_vars, 2), "low": low, "high": high}


def _ratio(row: dict[str, Any]) -> float:
    return max(x["max"] for x in row["high"]) / max(max(x["max"] for x in row["low"]), 1e-12)


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["### Fig. 1: range(X_i, Π) over the cached parent sets of the five least and "
             "the five most entropic variables", "",
             "range = the set's BIC minus the lowest BIC among the variable's cached sets. "
             "Per variable: entropy (nats), cached sets, median, max and max − median of "
             "the range.", "",
             "| data set | end | variable | H | sets | median | max | max − median |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        for end in ("low", "high"):
            for x in r[end]:
                lines.append(f"| {r['dataset']}/{r['split']} | {end} | {x['variable']} | "
                             f"{x['entropy']:.4f} | {x['sets']} | {x['median']:,.1f} | "
                             f"{x['max']:,.1f} | {x['max'] - x['median']:,.1f} |")
    lines += ["", "| data set | n | cached sets per variable | largest max, high ÷ low |",
              "|---|---:|---:|---:|"]
    lines += [f"| {r['dataset']}/{r['split']} | {r['n']} | {r['sets_per_variable']} | "
              f"{_ratio(r):,.1f} |" for r in rows]
    return "\n".join(lines) + "\n"


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Boxplots from the stored quantiles (whiskers: min and max), low-entropy variables
    red, high-entropy black, one panel per data set, log scale (a range of 0 sits at
    the panel's bottom)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 3.6), squeeze=False)
    for ax, r in zip(axes[0], rows, strict=True):
        stats = [{"label": x["variable"], "whislo": x["min"], "q1": x["q1"],
                  "med": x["median"], "q3": x["q3"], "whishi": x["max"], "fliers": []}
                 for x in r["low"] + r["high"]]
        colors = ["tab:red"] * len(r["low"]) + ["black"] * len(r["high"])
        b = ax.bxp(stats, showfliers=False, patch_artist=False)
        for i, c in enumerate(colors):
            for part in ("boxes", "medians"):
                b[part][i].set_color(c)
            for part in ("whiskers", "caps"):
                for line in b[part][2 * i:2 * i + 2]:
                    line.set_color(c)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.tick_params(axis="x", labelrotation=90, labelsize=6)
        ax.set_title(f"{r['dataset']}/{r['split']} (n = {r['n']})")
    axes[0][0].set_ylabel("range(X_i, Π)")
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def write_outputs(rows: list[dict[str, Any]], out: Path, *, plots: bool = True) -> list[Path]:
    """``entropy_range.md`` (and ``.png``) from the rows of ``entropy_range.json``."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "entropy_range.md", markdown(rows))
    paths = [out / "entropy_range.md"]
    if plots:
        plot(rows, out / "entropy_range.png")
        paths.append(out / "entropy_range.png")
    return paths


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, help="the grid run's results folder")
    ap.add_argument("--datasets", default="cr52,cwebkb,book,c20ng")
    ap.add_argument("--split", default="train")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--from-json", action="store_true",
                    help="redraw the markdown and figure from OUT/entropy_range.json")
    a = ap.parse_args(argv)
    if a.from_json:
        rows = json.loads((a.out / "entropy_range.json").read_text(encoding="utf-8"))["rows"]
    else:
        if a.results is None:
            ap.error("--results is required (or --from-json)")
        rows = [data_set_row(a.results, d, a.split) for d in a.datasets.split(",")]
        a.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(a.out / "entropy_range.json", json.dumps(
            {"results": a.results.name, "split": a.split, "rows": rows}, indent=1) + "\n")
    write_outputs(rows, a.out)
    print(markdown(rows))


if __name__ == "__main__":
    main()
