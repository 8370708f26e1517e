"""Rahier et al. 2018's Fig. 7: held-out log-likelihood against the number of arcs for
three ways of learning sparse networks on msnbc — qds-BNSL over ε (the grid's records,
``workflows/qds_cvll.py``), sota-BNSL with a bound on the number of parents, and
sota-BNSL with a smaller equivalent sample size of BDeu (the paper: bounds 1–20, ESS
10⁻¹⁰–5).

Each point of the two sota curves: a BDeu cache of msnbc's train split built with the
point's ESS and parent bound by sequential exploration of ``SCORES`` scores per
variable (an iteration budget, so the same cache on any machine: about the 4,120 sets
of the grid's 0.6-second caches), then the grid's sota-BNSL (hill climbing with a
10-move tabu list and 10 restarts, ``hc-tabu``) from each of ``SEEDS``; each DAG's CPTs
are fitted on train with the Table-1 estimator (BDeu-spread prior, ESS 1, whatever the
point's ESS: the structure is what is compared), and its mean ln P(row) on the valid and
test splits is averaged over the seeds. Deterministic (iteration budgets, seeded
restarts).

Run (about 1.5 minutes)::

    python -m workflows.qds_fig7 [--out workflows/results/qds-2018-reduced]

Writes ``qds-2018-reduced__fig7.{json,md,png}``; the markdown and the figure are drawn
from that JSON and the committed ``qds-2018-reduced__cvll.csv`` (``--from-json``),
which ``tests/test_qds_fig7.py`` checks.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import build_cache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.search import Budget, make_optimizer
from workflows.qds_cvll import HELD_OUT, heldout_per_row

OUT = Path(__file__).resolve().parent / "results" / "qds-2018-reduced"
NAME = "qds-2018-reduced__fig7"
SCORES = 240
SEEDS = (0, 1, 2)
#: sota's climbs: the first and 10 restarts (the grid's hc-tabu).
CLIMBS = 11
ESS = (1e-10, 1e-6, 1e-3, 0.1, 0.5, 1.0, 5.0)
PARENTS = (1, 2, 3, 4, 5)


def sota_point(train: CategoricalData, held: dict[str, CategoricalData], *, ess: float,
               max_parents: int | None, scores: int = SCORES,
               seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """One point: the cache, sota from each seed, the seeds' mean held-out
    log-likelihood per row (CPTs with ESS 1), BDeu per row (at the point's ESS) and
    arcs, and the last seed's DAG."""
    cache = build_cache(train, CacheSpec(method="sequential", score="bdeu", ess=ess,
                                         max_indegree=max_parents,
                                         scores_per_variable=scores))
    runs = []
    for seed in seeds:
        best = None
        for inc in make_optimizer("hc-tabu").run(cache, Budget(max_iterations=CLIMBS),
                                                 np.random.default_rng(seed)):
            best = inc
        assert best is not None
        dag_json = json.dumps(best.dag.to_json_dict())
        runs.append({"bdeu": best.score / train.n_samples, "arcs": best.dag.n_arcs,
                     **heldout_per_row(dag_json, train, held, 1.0), "dag": dag_json})
    out: dict[str, Any] = {"ess": ess, "max_parents": max_parents, "sets": int(cache.n_sets),
                           "seeds": len(seeds)}
    for key in ("bdeu", "arcs", *held):
        out[key] = round(float(np.mean([r[key] for r in runs])), 6)
    out["dag"] = runs[-1]["dag"]
    return out


def _qds_rows(cvll_csv: Path) -> list[dict[str, str]]:
    with cvll_csv.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def markdown(points: list[dict[str, Any]]) -> str:
    lines = ["### Fig. 7: sota-BNSL with a parent bound or a smaller ESS (msnbc)", "",
             f"Cache: sequential exploration, {SCORES} BDeu scores per variable at the "
             f"point's ESS and bound; sota (hc-tabu, {CLIMBS} climbs) from seeds "
             f"{', '.join(map(str, SEEDS))}; means over the seeds. Held-out log-likelihood "
             "per row with CPTs fitted on train (ESS 1). BDeu per row at the point's ESS. "
             "`python -m workflows.qds_fig7`.", "",
             "| curve | ESS | parent bound | cached sets | arcs | valid LL/row | "
             "test LL/row | BDeu/row |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        lines.append(f"| {p['curve']} | {p['ess']:g} | "
                     f"{'' if p['max_parents'] is None else p['max_parents']} | {p['sets']} | "
                     f"{p['arcs']:.1f} | {p['valid']:.4f} | {p['test']:.4f} | "
                     f"{p['bdeu']:.4f} |")
    return "\n".join(lines) + "\n"


def plot(points: list[dict[str, Any]], qds: list[dict[str, str]], path: Path,
         split: str = "test") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    sweep = sorted((float(r["arcs"]), float(r[f"{split} LL/row"])) for r in qds
                   if r["label"].startswith("qds-eps"))
    ax.plot(*zip(*sweep, strict=True), "o-", label="qds-BNSL, ε 0–0.6 (grid records)")
    for curve, marker in (("parent bound", "s--"), ("ESS", "^")):
        pts = sorted((p["arcs"], p[split]) for p in points if p["curve"] == curve)
        ax.plot(*zip(*pts, strict=True), marker, label=f"sota-BNSL, {curve}")
    ax.set_xlabel("arcs")
    ax.set_ylabel(f"held-out log-likelihood per row ({split})")
    ax.set_title("msnbc: CVLL vs arcs (Rahier et al. 2018, Fig. 7)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def compute() -> list[dict[str, Any]]:
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.specs import DataRef

    train = load_data(DataRef(name="msnbc", split="train"))
    held = {s: load_data(DataRef(name="msnbc", split=s)) for s in HELD_OUT}
    points = [{"curve": "parent bound", **sota_point(train, held, ess=1.0, max_parents=m)}
              for m in PARENTS]
    points += [{"curve": "ESS", **sota_point(train, held, ess=e, max_parents=None)}
               for e in ESS]
    return points


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--from-json", action="store_true",
                    help=f"redraw the markdown and figure from OUT/{NAME}.json")
    a = ap.parse_args(argv)
    if a.from_json:
        points = json.loads((a.out / f"{NAME}.json").read_text(encoding="utf-8"))["points"]
    else:
        points = compute()
        a.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(a.out / f"{NAME}.json", json.dumps(
            {"scores_per_variable": SCORES, "seeds": list(SEEDS), "climbs": CLIMBS,
             "points": points}, indent=1) + "\n")
    atomic_write_text(a.out / f"{NAME}.md", markdown(points))
    plot(points, _qds_rows(a.out / "qds-2018-reduced__cvll.csv"), a.out / f"{NAME}.png")
    print(markdown(points))


if __name__ == "__main__":
    main()
