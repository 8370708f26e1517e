"""Benchmark: batched junction-tree inference on bounded-treewidth networks of 1,000+
variables.

Networks are grown inside a random k-tree (docs/ALGORITHMS.md §5): the first k+1 variables
form a clique, each later variable joins a random k-clique and draws its parents inside
it, so every family lies in a (k+1)-clique and the reverse insertion order is a perfect
elimination order of width k. CPT rows ~ Dirichlet(1).

Measured per k (default 2, 4, 8; 1,000 binary variables):
* building the junction tree from the certificate order;
* P(e) queries per second: each query sets 5 random variables to random states,
  queries answered in batches;
* MPE records per second: records sampled from the network with 20 % of the cells
  hidden (the SEM E-step workload), most probable completion by max-product;
* posterior-marginal rows per second (all variables' marginals, 5 evidence variables);
* single-query latency (a batch of one) for P(e).

Run: ``python -m workflows.benchmarks.inference`` (writes out/inference.json).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from bnsl_dist.graph import DAG
from bnsl_dist.inference import build_junction_tree
from bnsl_dist.model import BayesianNetwork
from bnsl_dist.model.sampling import sample
from workflows.benchmarks._common import write_result


def ktree_network(n_vars: int, k: int, arity: int, rng: np.random.Generator,
                  max_parents: int | None = None) -> tuple[BayesianNetwork, list[int]]:
    """A random network inside a random k-tree, and its perfect elimination order."""
    cap = k if max_parents is None else min(k, max_parents)
    parents: list[list[int]] = []
    for v in range(min(k + 1, n_vars)):
        m = int(rng.integers(0, min(v, cap) + 1))
        parents.append(sorted(int(x) for x in rng.choice(v, size=m, replace=False)) if m else [])
    kcliques = [tuple(u for u in range(k + 1) if u != x) for x in range(k + 1)]
    for v in range(k + 1, n_vars):
        kc = kcliques[int(rng.integers(len(kcliques)))]
        m = int(rng.integers(0, cap + 1))
        parents.append(sorted(int(x) for x in rng.choice(kc, size=m, replace=False)))
        kcliques.extend(tuple(sorted((set(kc) - {x}) | {v})) for x in kc)
    dag = DAG.from_parents(parents)
    cpts = tuple(rng.dirichlet(np.ones(arity), size=arity ** len(parents[v]))
                 for v in range(n_vars))
    states = tuple(tuple(str(s) for s in range(arity)) for _ in range(n_vars))
    return BayesianNetwork(dag, states, cpts), list(range(n_vars))[::-1]


def _rate(fn: Any, arg: Any, rows: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(arg)
        best = min(best, time.perf_counter() - t)
    return rows / best


def bench_k(k: int, args: argparse.Namespace, rng: np.random.Generator) -> dict[str, Any]:
    net, order = ktree_network(args.n_vars, k, args.arity, rng)
    t = time.perf_counter()
    jt = build_junction_tree(net, order)
    build = time.perf_counter() - t
    n = net.n_vars
    ev = np.full((args.queries, n), -1, dtype=np.int64)
    for i in range(args.queries):
        vs = rng.choice(n, size=5, replace=False)
        ev[i, vs] = rng.integers(0, args.arity, size=5)
    data = sample(net, args.records, rng=rng)
    rec = data.codes.astype(np.int64)
    rec[rng.random(rec.shape) < 0.2] = -1
    jt.log_prob_evidence(ev[:2])  # warm-up: kernel dispatch
    jt.mpe(rec[:2])
    jt.posterior(ev[:2])
    pe = _rate(jt.log_prob_evidence, ev, args.queries, args.repeat)
    mpe = _rate(jt.mpe, rec, args.records, args.repeat)
    post = _rate(jt.posterior, ev[:args.marginal_rows], args.marginal_rows, args.repeat)
    single = min(_timeit(jt.log_prob_evidence, ev[i:i + 1]) for i in range(20))
    return {"k": k, "n_vars": n, "arity": args.arity, "width": jt.width,
            "n_cliques": len(jt.cliques), "table_entries": jt.n_entries,
            "build_seconds": build, "pe_queries_per_second": pe,
            "mpe_records_per_second": mpe, "marginal_rows_per_second": post,
            "pe_single_query_ms": single * 1e3}


def _timeit(fn: Any, arg: Any) -> float:
    t = time.perf_counter()
    fn(arg)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ks", default="2,4,8")
    ap.add_argument("--n-vars", type=int, default=1000)
    ap.add_argument("--arity", type=int, default=2)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--marginal-rows", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=2, help="best of this many runs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    rows = []
    for k in (int(x) for x in args.ks.split(",")):
        r = bench_k(k, args, rng)
        rows.append(r)
        print(f"k={k} width={r['width']} entries={r['table_entries']:,} "
              f"build {r['build_seconds']:.2f}s  P(e) {r['pe_queries_per_second']:.0f} q/s  "
              f"MPE {r['mpe_records_per_second']:.0f} rec/s  marginals "
              f"{r['marginal_rows_per_second']:.0f} rows/s  single P(e) "
              f"{r['pe_single_query_ms']:.2f} ms", flush=True)
    path = write_result("inference", {"config": vars(args), "results": rows})
    print(path)


if __name__ == "__main__":
    main()
