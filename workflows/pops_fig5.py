"""Fan, Malone & Yuan 2014's Fig. 5: the scores of one variable's potentially optimal
parent sets (POPS) on Hailfinder, and whether most variables have the same shape.

The paper plots the POPS of X_37 sorted by score and observes that the first four are
much better than the rest, and that "most of the other variables behaved similarly", so
that a small p already holds the parent sets of the optimal network (§7). Here the POPS
are every variable's complete BIC cache of our 500-row Hailfinder sample (the top-p
grid's data; sequential exploration without a budget: every set better than all its
subsets, so the same on any machine). For each variable with at least two POPS, from
the best down: the largest drop between consecutive scores, after how many sets it
comes, and its share of the whole range (best − worst POPS). X_37 is the column so named
in the sample (0-based); the paper's numbering and sample are not given, so the shape
over all variables is the comparison.

Run (about 2.2 minutes for all 56 variables; ``--variables 0-27`` and then ``28-55``
compute and merge the two halves)::

    python -m workflows.pops_fig5 [--variables A-B]

Writes ``workflows/results/pops-2014-top-p-reduced/pops_fig5.{json,md,png}``; the
markdown and the figure are drawn from the JSON alone (``--from-json``), which
``tests/test_pops_fig5.py`` checks.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text

OUT = Path(__file__).resolve().parent / "results" / "pops-2014-top-p-reduced"
DATA = "bnsamples/hailfinder500.csv.gz"
FOCUS = "X37"
#: The paper's "first 4 scores are much better than the remaining ones".
TOP = 4


def drop_profile(scores: list[float]) -> dict[str, Any]:
    """Scores best first: the largest drop between consecutive ones, the number of sets
    above it (``after``), and its share of the range (best − worst); None for fewer
    than two sets."""
    s = np.sort(np.asarray(scores, dtype=float))[::-1]
    if s.size < 2:
        return {"after": None, "drop": None, "share": None}
    d = s[:-1] - s[1:]
    i = int(np.argmax(d))  # the first of equal drops
    span = float(s[0] - s[-1])
    return {"after": i + 1, "drop": round(float(d[i]), 4),
            "share": round(float(d[i]) / span, 4) if span > 0 else None}


def compute(lo: int, hi: int) -> dict[str, list[float]]:
    """Each variable's POPS scores (best first), variables ``lo`` .. ``hi``."""
    from bnsl_dist.cache import build_cache
    from bnsl_dist.data import resolve_data

    data = resolve_data(Path(os.environ["BNSL_SHARED_DATA"]) / DATA)
    out = {}
    for v in range(lo, min(hi, data.n_vars - 1) + 1):
        cache = build_cache(data, method="sequential", score="bic", variables=[v])
        out[data.names[v]] = [round(s, 4) for _, s in cache.sets_of(v)]
    return out


def markdown(pops: dict[str, list[float]]) -> str:
    prof = {v: drop_profile(s) for v, s in pops.items()}
    more = [v for v in pops if len(pops[v]) > TOP]
    early = [v for v in more if prof[v]["after"] <= TOP]
    f = pops[FOCUS]
    lines = ["### Fig. 5: the POPS of X37 on Hailfinder (our 500-row sample), best first", "",
             f"BIC of each of X37's {len(f)} POPS: " + ", ".join(f"{s:,.2f}" for s in f)
             + f". Largest drop after set {prof[FOCUS]['after']} "
             f"({prof[FOCUS]['drop']:,.2f}, {prof[FOCUS]['share']:.0%} of the range).", "",
             f"All variables: {sum(map(len, pops.values()))} POPS over {len(pops)} variables; "
             f"{len(more)} have more than {TOP}, and for {len(early)} of those the largest "
             f"drop comes within the first {TOP} sets.", "",
             "| variable | POPS | best | worst | largest drop after | drop | share of range |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for v, s in pops.items():
        p = prof[v]
        lines.append(f"| {v} | {len(s)} | {s[0]:,.2f} | {s[-1]:,.2f} | "
                     f"{'' if p['after'] is None else p['after']} | "
                     f"{'' if p['drop'] is None else format(p['drop'], ',.2f')} | "
                     f"{'' if p['share'] is None else format(p['share'], '.2f')} |")
    return "\n".join(lines) + "\n"


def plot(pops: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    f = pops[FOCUS]
    a.plot(range(1, len(f) + 1), f, "o-")
    a.set_xlabel("rank of the POPS (best first)")
    a.set_ylabel("BIC")
    a.set_title("X37's POPS (cf. Fan et al. 2014, Fig. 5)")
    after = [drop_profile(s)["after"] for s in pops.values() if len(s) >= 2]
    b.hist(after, bins=np.arange(0.5, max(after) + 1.5), edgecolor="black")
    b.set_xlabel("sets above the largest drop")
    b.set_ylabel("variables")
    b.set_title("all variables with 2+ POPS")
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variables", default="0-55", help="A-B: compute these, merge")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--from-json", action="store_true")
    a = ap.parse_args(argv)
    path = a.out / "pops_fig5.json"
    stored = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    pops: dict[str, list[float]] = stored.get("pops", {})
    if not a.from_json:
        lo, hi = (int(x) for x in a.variables.split("-"))
        pops = {**pops, **compute(lo, hi)}
        pops = dict(sorted(pops.items(), key=lambda kv: int(kv[0].lstrip("X"))))
        atomic_write_text(path, json.dumps({"data": DATA, "score": "bic", "pops": pops},
                                           indent=1) + "\n")
    if FOCUS in pops and len(pops) == 56:
        atomic_write_text(a.out / "pops_fig5.md", markdown(pops))
        plot(pops, a.out / "pops_fig5.png")
        print(markdown(pops))
    else:
        print(f"{len(pops)} of 56 variables computed; run the others")


if __name__ == "__main__":
    main()
