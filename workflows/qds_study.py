"""Quasi-determinism screening study (Rahier et al. 2018, §4, Table 1 and Figures 3-6).

1. msnbc (train split, 291,326 rows × 17): the inner learner alone ("sota") vs qds-BNSL
   at ε_0.5, over several seeds: time (cache build + search), BDeu of the learned DAG on
   the training data, held-out log-likelihood per row (learned on train, CPTs fitted on
   train, averaged over the valid and test splits: our stand-in for the paper's CVLL)
   and the number of arcs.
2. The curves over ε (0 .. max_i H(X_i)) of the same four criteria (Figures 3-6).
3. The same comparison on a data set with real determinism: a sample of alarm with
   deterministic many-to-one recodings and copies appended, as in relational/IoT
   metadata (each derived column is a function of one earlier column).

Run (the configuration reported in the closing note of issue 11):
    python -m workflows.qds_study --seeds 20 --inner hc-tabu
Outputs under workflows/results/qds/: results.json, table.md, curves.png.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import build_cache
from bnsl_dist.data import CategoricalData, bundled_path, read_dataset
from bnsl_dist.model import fit_cpts
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.scores import LocalScorer
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.qds import qds_learn
from workflows.benchmarks._common import SHARED_DATA, machine

OUT = Path(__file__).resolve().parent / "results" / "qds"


def _builder(args):
    def build(d: CategoricalData):
        return build_cache(d, method=args.cache_method, score="bdeu",
                           max_indegree=args.max_indegree,
                           scores_per_variable=args.scores_per_variable)
    return build


def _evaluate(dag, train, held_out, elapsed):
    bdeu = float(LocalScorer(train, "bdeu").score_parents(dag.parents).sum())
    net = fit_cpts(dag, train)
    ll = float(np.mean([net.log_prob_rows(h.codes).mean() for h in held_out]))
    return {"time": elapsed, "bdeu": bdeu, "heldout_ll": ll, "arcs": dag.n_arcs}


def run_sota(train, held_out, args, seed, cache_time, cache):
    t0 = time.perf_counter()
    best = None
    for inc in make_optimizer(args.inner).run(cache, Budget(max_iterations=args.iterations),
                                               np.random.default_rng(seed)):
        best = inc
    return _evaluate(best.dag, train, held_out, cache_time + time.perf_counter() - t0)


def run_qds(train, held_out, args, seed, **eps):
    res = qds_learn(train, Budget(max_iterations=args.iterations), seed,
                    cache_builder=_builder(args), inner=args.inner, score="bdeu", **eps)
    out = _evaluate(res.dag, train, held_out, res.seconds["total"])
    out.update({"epsilon": res.epsilon, "n_roots": len(res.roots)})
    return out


def _mean(rows, key):
    return float(np.mean([r[key] for r in rows]))


def compare(name, train, held_out, args, variants=None):
    t0 = time.perf_counter()
    cache = _builder(args)(train)
    cache_time = time.perf_counter() - t0
    sota = [run_sota(train, held_out, args, s, cache_time, cache) for s in range(args.seeds)]
    summary = {"dataset": name, "n_vars": train.n_vars, "rows": train.n_samples,
               "seeds": args.seeds,
               "sota": {k: _mean(sota, k) for k in ("time", "bdeu", "heldout_ll", "arcs")}}
    variants = variants or {f"qds eps_{args.root_fraction:g}":
                            {"root_fraction": args.root_fraction}}
    for label, kw in variants.items():
        qds = [run_qds(train, held_out, args, s, **kw) for s in range(args.seeds)]
        summary[label] = {k: _mean(qds, k) for k in ("time", "bdeu", "heldout_ll", "arcs")}
        summary[label].update(epsilon=qds[0]["epsilon"], n_roots=qds[0]["n_roots"],
                              speedup=summary["sota"]["time"] / summary[label]["time"])
    print(json.dumps(summary))
    return summary


def curves(train, held_out, args):
    top = float(LocalScorer(train, "ll").entropies().max())
    rows = []
    for eps in np.linspace(0.0, top, args.curve_points):
        per = [run_qds(train, held_out, args, s, epsilon=float(eps))
               for s in range(args.curve_seeds)]
        rows.append({"epsilon": float(eps), "n_roots": per[0]["n_roots"],
                     **{k: _mean(per, k) for k in ("time", "bdeu", "heldout_ll", "arcs")}})
        print(json.dumps(rows[-1]))
    return rows


def determinism_data(seed=0, n_rows=5000, n_derived=20):
    """alarm sample + deterministic recodings (many-to-one maps) of earlier columns."""
    net = read_bif(bundled_path("bif/alarm.bif.gz"))
    d = sample(net, 3 * n_rows, np.random.default_rng(seed))
    rng = np.random.default_rng(seed + 1)
    cols = [d.codes[:, j].astype(np.int64) for j in range(d.n_vars)]
    ar = list(d.arities)
    names = list(d.names)
    for t in range(n_derived):
        src = int(rng.integers(0, len(cols)))
        r_out = int(rng.integers(1, ar[src])) if ar[src] > 2 and rng.random() < 0.6 else ar[src]
        table = rng.integers(0, max(r_out, 1), size=ar[src])
        table[: min(r_out, ar[src])] = np.arange(min(r_out, ar[src]))  # onto
        cols.append(table[cols[src]])
        ar.append(int(table.max()) + 1)
        names.append(f"derived{t}_of_{names[src]}")
    x = np.stack(cols, axis=1)
    full = CategoricalData.from_array(x, arities=ar, names=names)
    return (full.take_rows(np.arange(n_rows)),
            [full.take_rows(np.arange(n_rows, 2 * n_rows)),
             full.take_rows(np.arange(2 * n_rows, 3 * n_rows))])


def _plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    eps = [r["epsilon"] for r in rows]
    for ax, key, label in zip(axes, ("time", "bdeu", "heldout_ll", "arcs"),
                              ("time (s)", "BDeu (train)", "held-out LL per row", "arcs"),
                              strict=True):
        ax.plot(eps, [r[key] for r in rows], "o-")
        ax.set_xlabel("ε (nats)")
        ax.set_title(label)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--inner", default="hc-tabu")
    ap.add_argument("--iterations", type=int, default=10,
                    help="inner learner's iteration budget (hc-tabu: restarts)")
    ap.add_argument("--max-indegree", type=int, default=3)
    ap.add_argument("--cache-method", default="independence",
                    choices=["independence", "sequential"])
    ap.add_argument("--scores-per-variable", type=int, default=400,
                    help="exact scores per variable in the cache build (reproducible)")
    ap.add_argument("--root-fraction", type=float, default=0.5)
    ap.add_argument("--curve-points", type=int, default=10)
    ap.add_argument("--curve-seeds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=None, help="subsample msnbc train rows")
    args = ap.parse_args()
    root = SHARED_DATA / "twenty" / "msnbc"
    ds = read_dataset("msnbc", {s: root / f"{s}.csv.gz" for s in ("train", "valid", "test")})
    train = ds["train"]
    if args.rows:
        train = train.take_rows(np.arange(min(args.rows, train.n_samples)))
    held = [ds["valid"], ds["test"]]
    msnbc = compare("msnbc", train, held, args)
    rows = curves(train, held, args)
    det_train, det_held = determinism_data()
    det = compare("alarm+determinism", det_train, det_held, args,
                  variants={"qds eps=0": {"epsilon": 0.0},
                            f"qds eps_{args.root_fraction:g}":
                            {"root_fraction": args.root_fraction}})
    OUT.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT / "results.json", json.dumps(
        {"machine": machine(), "settings": vars(args), "msnbc": msnbc, "curves": rows,
         "determinism": det}, indent=1) + "\n")
    lines = ["| data set | method | time (s) | BDeu | held-out LL/row | arcs |",
             "|---|---|---:|---:|---:|---:|"]
    for s in (msnbc, det):
        for m, r in s.items():
            if not isinstance(r, dict):
                continue
            lines.append(f"| {s['dataset']} | {m} | {r['time']:.2f} | {r['bdeu']:.1f} | "
                         f"{r['heldout_ll']:.4f} | {r['arcs']:.1f} |")
    atomic_write_text(OUT / "table.md", "\n".join(lines) + "\n")
    print("\n".join(lines))
    _plot(rows, OUT / "curves.png")


if __name__ == "__main__":
    main()
