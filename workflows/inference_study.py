"""Inference with bounded vs unbounded treewidth (Scanagatta et al. 2018, ML 107, §6.3):
the shape of Figures 5-7 and Table 5.

For each data set, networks are learned on the training data: k-G_ENT at k = 2, 4, 6, 8
(bounded; exact inference on the junction tree of their treewidth certificate) and
ASOBS-ENT (unbounded; exact inference when its min-fill junction tree fits the memory
limit, likelihood weighting otherwise). CPTs: maximum likelihood, Dirichlet prior
(α = 1, BDeu-spread).

* Real data (Figures 5-6, Table 5): 100 queries P(e), each with 5 random variables set to
  random states. The reference is the unbounded model (the paper's "assumed ground
  truth"); mae = mean |P(e) - P_k(e)| over the queries; time per query.
* Synthetic data (Figure 7, Table 5): networks from the random generator, N rows
  sampled. 100 marginal queries (no evidence) on the leaves of the true network (then
  parents of leaves), as in the paper; mae of a model = mean over queried variables of
  the mean absolute difference to the true marginal across states; relative mae = mae
  of a bounded model / mae of the unbounded model on the same network. The true
  network's marginals are exact when its junction tree fits, else likelihood weighting.
  P(e) queries are run on the synthetic networks too, against the true network.

Run (the configuration of issue 8's note, ~7 CPU minutes):
    python -m workflows.inference_study --real nltcs,plants,dna --networks 4 --n-vars 150 \
        --truth-pe-samples 50000 --lw-samples 10000
(a smoke run: ``--real nltcs --networks 1 --n-vars 30 --queries 20 --iterations 50``).
Outputs under workflows/results/inference/: results.json, table5.md,
fig5_mae_pe.png, fig6_time.png, fig7_relative_mae.png.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import build_cache
from bnsl_dist.data import CategoricalData, load_bundled_dataset, read_data
from bnsl_dist.inference import build_junction_tree, make_engine
from bnsl_dist.model import BayesianNetwork, fit_cpts
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.sampling import sample
from bnsl_dist.search import Budget, make_optimizer
from workflows.benchmarks._common import SHARED_DATA, machine

OUT = Path(__file__).resolve().parent / "results" / "inference"
UNBOUNDED = "unbounded"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _train_data(name: str) -> CategoricalData:
    if name == "nltcs":
        return load_bundled_dataset("nltcs")["train"]
    return read_data(SHARED_DATA / "twenty" / name / "train.csv.gz")


def learn_models(train: CategoricalData, args: argparse.Namespace, seed: int
                 ) -> dict[str, dict[str, Any]]:
    """{label: {"net", "order", "width", "score"}} for every k and the unbounded model."""
    cache = build_cache(train, method="independence", score="bic",
                        scores_per_variable=args.scores_per_variable)
    out: dict[str, dict[str, Any]] = {}
    runs = [(f"k={k}", "kg-ent", {"k": k}) for k in args.ks] + [(UNBOUNDED, "asobs-ent", {})]
    for label, algo, params in runs:
        best = None
        for inc in make_optimizer(algo, **params).run(
                cache, Budget(max_iterations=args.iterations), np.random.default_rng(seed)):
            best = inc
        if best is None:
            raise RuntimeError(f"{algo} returned no network")
        cert = best.info.get("certificate") if best.info else None
        out[label] = {"net": fit_cpts(best.dag, train, alpha=1.0),
                      "order": None if cert is None else list(cert.order),
                      "width": None if cert is None else int(cert.width),
                      "score": float(best.score)}
    return out


def engine_for(net: BayesianNetwork, order: list[int] | None, args: argparse.Namespace,
               n_samples: int | None = None) -> Any:
    """Junction tree (certificate order, else min-fill), or likelihood weighting when the
    tree exceeds the memory limit."""
    if order is not None:
        return build_junction_tree(net, order)
    return make_engine(net, memory_limit=int(args.memory_gib * 2**30), fallback="approximate",
                       n_samples=n_samples or args.lw_samples, rng=0)


def random_queries(net: BayesianNetwork, n_queries: int, n_evidence: int,
                   rng: np.random.Generator) -> np.ndarray:
    ev = np.full((n_queries, net.n_vars), -1, dtype=np.int64)
    ar = net.arities
    for i in range(n_queries):
        vs = rng.choice(net.n_vars, size=min(n_evidence, net.n_vars), replace=False)
        ev[i, vs] = rng.integers(0, ar[vs])
    return ev


def timed(fn: Any, *a: Any) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn(*a)
    return out, time.perf_counter() - t


def pe_study(models: dict[str, dict[str, Any]], reference: Any, ev: np.ndarray,
             args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    ref_logp = reference.log_prob_evidence(ev)
    res = {}
    for label, m in models.items():
        eng = engine_for(m["net"], m["order"], args)
        eng.log_prob_evidence(ev[:1])  # warm-up (kernel dispatch)
        logp, secs = timed(eng.log_prob_evidence, ev)
        res[label] = {"mae_pe": float(np.mean(np.abs(np.exp(logp) - np.exp(ref_logp)))),
                      "mae_log_pe": float(np.mean(np.abs(logp - ref_logp))),
                      "seconds_per_query": secs / len(ev), "exact": bool(eng.exact),
                      "width": m["width"] if m["width"] is not None else getattr(eng, "width", None)}
    return res


def query_variables(true: BayesianNetwork, n: int, rng: np.random.Generator) -> list[int]:
    """The leaves of the true network, then random parents of leaves (paper §6.3)."""
    children = true.dag.children()
    leaves = [v for v in range(true.n_vars) if not children[v]]
    rng.shuffle(leaves)
    q = leaves[:n]
    pool = sorted({p for v in leaves for p in true.dag.parents[v]} - set(q))
    rng.shuffle(pool)
    return q + pool[:max(0, n - len(q))]


def marginal_study(models: dict[str, dict[str, Any]], true: BayesianNetwork, q: list[int],
                   args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    truth_eng = engine_for(true, None, args, args.truth_samples)
    truth = truth_eng.marginals(None, q)
    res = {}
    for label, m in models.items():
        eng = engine_for(m["net"], m["order"], args)
        if eng.exact:
            eng.marginals(None, q[:1])  # warm-up (kernel dispatch)
        margs, secs = timed(eng.marginals, None, q)
        mae = float(np.mean([np.mean(np.abs(margs[v][0] - truth[v][0])) for v in q]))
        res[label] = {"mae_marginals": mae, "seconds_marginals": secs,
                      "exact": bool(eng.exact), "truth_exact": bool(truth_eng.exact)}
    for label in res:
        res[label]["relative_mae"] = res[label]["mae_marginals"] / \
            max(res[UNBOUNDED]["mae_marginals"], 1e-300)
    return res


def _plots(records: list[dict[str, Any]], labels: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bounded = [x for x in labels if x != UNBOUNDED]
    ks = [int(x.split("=")[1]) for x in bounded]
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for r in records:
        ax.plot(ks, [r["pe"][x]["mae_pe"] for x in bounded], marker="o", label=r["dataset"])
    ax.set_xlabel("treewidth bound k")
    ax.set_ylabel("mae of P(e)")
    ax.set_title("Fig. 5: P(e), 5 evidence variables")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "fig5_mae_pe.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(5, 3.4))
    means = [np.mean([r["pe"][x]["seconds_per_query"] for r in records]) for x in labels]
    ax.bar(labels, means, color=["C0"] * len(bounded) + ["C3"])
    ax.set_yscale("log")
    ax.set_ylabel("seconds per P(e) query")
    ax.set_title("Fig. 6: inference time (mean over data sets)")
    fig.tight_layout()
    fig.savefig(OUT / "fig6_time.png", dpi=120)
    plt.close(fig)

    synth = [r for r in records if "marginals" in r]
    if synth:
        fig, ax = plt.subplots(figsize=(5, 3.4))
        ax.boxplot([[r["marginals"][x]["relative_mae"] for r in synth] for x in bounded])
        ax.set_xticks(range(1, len(bounded) + 1), bounded)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_ylabel("relative mae of marginals")
        ax.set_title("Fig. 7: marginals vs the true network")
        fig.tight_layout()
        fig.savefig(OUT / "fig7_relative_mae.png", dpi=120)
        plt.close(fig)


def _table(records: list[dict[str, Any]], labels: list[str]) -> str:
    real = [r for r in records if r["kind"] == "real"]
    synth = [r for r in records if r["kind"] == "synthetic"]

    def avg(rows: list[dict[str, Any]], part: str, x: str, key: str, agg: Any = np.mean) -> float:
        vals = [r[part][x][key] for r in rows if part in r and r[part][x][key] is not None]
        return float(agg(vals)) if vals else float("nan")

    lines = ["| model | width (mean) | ms per P(e) query | mae P(e), real (vs unbounded) | "
             "mae P(e), synthetic (vs true) | ms for the marginals | mae marginals | "
             "relative mae (median) | exact inference |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in labels:
        n_exact = sum(bool(r["pe"][x]["exact"]) for r in records)
        lines.append(
            f"| {x} | {avg(records, 'pe', x, 'width'):.1f} "
            f"| {avg(records, 'pe', x, 'seconds_per_query') * 1e3:.3f} "
            f"| {avg(real, 'pe', x, 'mae_pe'):.3g} | {avg(synth, 'pe', x, 'mae_pe'):.3g} "
            f"| {avg(synth, 'marginals', x, 'seconds_marginals') * 1e3:.2f} "
            f"| {avg(synth, 'marginals', x, 'mae_marginals'):.3g} "
            f"| {avg(synth, 'marginals', x, 'relative_mae', np.median):.3f} "
            f"| {n_exact}/{len(records)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--real", default="nltcs",
                    help="comma-separated Twenty Datasets (nltcs is bundled; others from "
                         "shared/data/twenty); empty for none")
    ap.add_argument("--networks", type=int, default=3, help="synthetic networks")
    ap.add_argument("--n-vars", type=int, default=60)
    ap.add_argument("--max-indegree", type=int, default=3)
    ap.add_argument("--rows", type=int, default=5000, help="rows sampled per network")
    ap.add_argument("--ks", default="2,4,6,8")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--evidence", type=int, default=5)
    ap.add_argument("--scores-per-variable", type=int, default=300)
    ap.add_argument("--iterations", type=int, default=300, help="optimizer iterations")
    ap.add_argument("--memory-gib", type=float, default=2.0)
    ap.add_argument("--lw-samples", type=int, default=20_000,
                    help="likelihood-weighting particles per query for learned models")
    ap.add_argument("--truth-samples", type=int, default=1_000_000,
                    help="particles for the true network's marginals when it is too wide")
    ap.add_argument("--truth-pe-samples", type=int, default=100_000,
                    help="particles per P(e) query on the true network when it is too wide")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.ks = [int(k) for k in args.ks.split(",")]
    labels = [f"k={k}" for k in args.ks] + [UNBOUNDED]
    records: list[dict[str, Any]] = []
    root = np.random.SeedSequence(args.seed)
    for i, name in enumerate(x for x in args.real.split(",") if x):
        rng = np.random.default_rng(root.spawn(1)[0])
        train = _train_data(name)
        log(f"{name}: {train.n_samples} x {train.n_vars}, learning")
        models = learn_models(train, args, seed=i)
        ref = engine_for(models[UNBOUNDED]["net"], None, args)
        ev = random_queries(models[UNBOUNDED]["net"], args.queries, args.evidence, rng)
        records.append({"dataset": name, "kind": "real", "reference": "unbounded model",
                        "scores": {x: models[x]["score"] for x in labels},
                        "pe": pe_study(models, ref, ev, args)})
        log(f"{name}: done")
    for j in range(args.networks):
        child = root.spawn(1)[0]
        rng = np.random.default_rng(child)
        true = random_network(args.n_vars, args.max_indegree, rng=rng)
        train = sample(true, args.rows, rng=rng)
        name = f"synthetic-{j}"
        log(f"{name}: {args.rows} x {args.n_vars}, learning")
        models = learn_models(train, args, seed=100 + j)
        ref = engine_for(true, None, args, args.truth_pe_samples)
        ev = random_queries(true, args.queries, args.evidence, rng)
        q = query_variables(true, args.queries, rng)
        records.append({"dataset": name, "kind": "synthetic", "reference": "true network",
                        "reference_exact": bool(ref.exact),
                        "scores": {x: models[x]["score"] for x in labels},
                        "pe": pe_study(models, ref, ev, args),
                        "marginals": marginal_study(models, true, q, args)})
        log(f"{name}: done")
    OUT.mkdir(parents=True, exist_ok=True)
    payload = {"machine": machine(), "config": {k: v for k, v in vars(args).items()},
               "records": records}
    atomic_write_text(OUT / "results.json", json.dumps(payload, indent=1) + "\n")
    table = _table(records, labels)
    atomic_write_text(OUT / "table5.md", "# Table 5 (shape): inference time and accuracy\n\n"
                      + table + "\n")
    _plots(records, labels)
    print(table)


if __name__ == "__main__":
    main()
