"""Where ASOBS-ENT gains and loses against ASOBS: the first pass, per entropy quintile.

On each synthetic network r0-r14 of the ASOBS-ENT grid (the caches its run built, found
through the records of that run), the same number of uniform orders (ASOBS) and
entropy-weighted orders processing high-entropy variables last (``asobs-ent-last``,
the direction the grid's records of that time ran as ASOBS-ENT; the paper's ASOBS-ENT
processes them first) go through the bare ASOBS pass (no local search: the grid's first
incumbents). For every variable the pass's *constraint loss* is recorded: the score of
its best cached set minus the score of the set it got (its best sets were blocked by
descendants). Reported per network and per quintile of the variables' entropies (of the
data the cache was built from): the mean DAG score of each sampler, the loss of each
quintile under each sampler, the mean relative position of each quintile in the
entropy orders (0 = first in the order = processed last), the slope of the loss on the
relative position under uniform orders (how much a variable of that quintile loses per
unit of position), and the variables' mean arity.

Deterministic (seeded orders, no timing). Needs the grid's results folder, which holds
the caches (``caches/<key>.jkl.gz``) and the records naming them:

    bnsl-dist grid run configs/grids/asobs-ent-2018-reduced.yaml --results runs/asobs-ent-2018 ...
    python -m workflows.entropy_study --results runs/asobs-ent-2018 [--orders 20]

Writes ``workflows/results/asobs-ent-2018-reduced/entropy_study.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import read_jkl
from bnsl_dist.datasets.catalog import load_registered
from bnsl_dist.results.export import load_records
from bnsl_dist.scores import LocalScorer
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering.obs import obs_masks
from bnsl_dist.search.ordering.samplers import entropy_orders, entropy_weights, uniform_orders
from workflows.benchmarks._common import machine

OUT = Path(__file__).resolve().parent / "results" / "asobs-ent-2018-reduced"
QUINTILES = 5


def _passes(fc: Any, orders: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(scores (R,), constraint losses (R, n)) of the bare ASOBS pass on each order."""
    masks = obs_masks(fc)
    max_size = int(fc.sizes.max())
    score, chosen, walk = np.empty(1), np.empty(fc.n, np.int64), np.empty(fc.n, np.int64)
    best = fc.scores[fc.offsets[:-1]]  # each variable's sets are stored best first
    scores, losses = [], []
    for o in np.ascontiguousarray(orders, dtype=np.int64):
        K.run_orders_masked(o[None, :], True, False, 1, fc.offsets, fc.par_offsets,
                            fc.par_flat, *masks, max_size, fc.scores, score,
                            chosen, walk, K.CLOSURE_SEARCH)
        scores.append(score[0])
        losses.append(best - fc.scores[chosen])
    return np.array(scores), np.array(losses)


def study(name: str, cache_file: Path, n_orders: int, seed: int) -> dict[str, Any]:
    cache = read_jkl(cache_file)
    data = load_registered(name)
    fc = cache.flat
    n = fc.n
    ent = np.asarray(LocalScorer(data, "ll").entropies(), dtype=np.float64)
    quint = np.digitize(ent, np.quantile(ent, np.linspace(0, 1, QUINTILES + 1)[1:-1]))
    weights, _ = entropy_weights(cache, ent)
    rng = np.random.default_rng(seed)
    row: dict[str, Any] = {"network": name, "n": n, "sets": int(fc.offsets[-1]),
                           "orders": n_orders,
                           "arity_by_quintile": [float(data.arities[quint == b].mean())
                                                 for b in range(QUINTILES)]}
    for sampler in ("uniform", "entropy"):
        orders = (uniform_orders(rng, n_orders, n) if sampler == "uniform"
                  else entropy_orders(rng, n_orders, weights, "last"))
        scores, losses = _passes(fc, orders)
        rel = np.empty_like(losses)
        for r, o in enumerate(orders):
            rel[r, o] = np.arange(n) / n
        qs = np.broadcast_to(quint, losses.shape)
        row[sampler] = {
            "mean_score": float(scores.mean()),
            "loss_by_quintile": [float(losses[qs == b].sum() / n_orders)
                                 for b in range(QUINTILES)],
            "position_by_quintile": [float(rel[qs == b].mean()) for b in range(QUINTILES)],
            "slope_by_quintile": [float(np.polyfit(rel[qs == b], losses[qs == b], 1)[0])
                                  for b in range(QUINTILES)]}
    row["entropy_minus_uniform"] = row["entropy"]["mean_score"] - row["uniform"]["mean_score"]
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["### ASOBS-ENT against ASOBS on r0-r14: the first pass, by entropy quintile",
             "",
             "Constraint loss = best cached score − chosen score, summed over the variables "
             "of a quintile (Q1: lowest entropy), mean over the orders. ENT − UNI: mean DAG "
             "score of the entropy orders minus that of the uniform ones (higher: "
             "ASOBS-ENT better) = (gain on Q1-Q2) − (extra loss on Q4-Q5) ± Q3. "
             "Loss/var: the uniform orders' loss per variable.", "",
             "| net | n | ENT − UNI | gain Q1-Q2 | extra loss Q4-Q5 | loss/var | "
             "loss UNI Q1..Q5 | loss ENT Q1..Q5 | position ENT Q1..Q5 | arity Q1..Q5 |",
             "|---|---:|---:|---:|---:|---:|---|---|---|---|"]
    for r in rows:
        def f(xs: list[float], fmt: str = "{:.0f}") -> str:
            return " / ".join(fmt.format(x) for x in xs)
        uni, ent = r["uniform"]["loss_by_quintile"], r["entropy"]["loss_by_quintile"]
        gain = uni[0] + uni[1] - ent[0] - ent[1]
        extra = ent[3] + ent[4] - uni[3] - uni[4]
        lines.append(f"| {r['network']} | {r['n']} | {r['entropy_minus_uniform']:+.0f} | "
                     f"{gain:.0f} | {extra:.0f} | {sum(uni) / r['n']:.0f} | {f(uni)} | "
                     f"{f(ent)} | {f(r['entropy']['position_by_quintile'], '{:.2f}')} | "
                     f"{f(r['arity_by_quintile'], '{:.2f}')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True,
                    help="the ASOBS-ENT grid's results folder (records and caches/)")
    ap.add_argument("--networks", default=",".join(f"r{i}" for i in range(15)))
    ap.add_argument("--orders", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    results = Path(args.results)
    frame = load_records(results).frame()
    keys = dict(zip(frame["dataset"], frame["cache_key"], strict=True))
    rows = []
    for name in args.networks.split(","):
        if not re.fullmatch(r"r\d+", name) or name not in keys:
            raise SystemExit(f"{results}: no records of network {name!r}")
        rows.append(study(name, results / "caches" / f"{keys[name]}.jkl.gz", args.orders,
                          args.seed))
        print(f"{name}: ENT - UNI {rows[-1]['entropy_minus_uniform']:+.0f}", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "entropy_study.json",
                      json.dumps({"machine": machine(), "settings": vars(args), "rows": rows},
                                 indent=1))
    atomic_write_text(out / "entropy_study.md", markdown(rows))


if __name__ == "__main__":
    main()
