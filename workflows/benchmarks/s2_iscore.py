"""Diagnostic: does S2's informative score pick good k-trees? (Iteration counts, no timing.)

For each cache and k, ``--trees`` labelled k-trees are drawn by S2's uniform sampler and
each gets both its informative score I(T) and the score of its DAG (the one S2 learns in
a chosen k-tree). Reported: the rank correlation of the two (Spearman), the DAG of the
k-tree of best I(T) (S2's answer after that many iterations), the best DAG of all the
trees (what learning a DAG in every tree would give), their median, and k-G_ENT's best
score after as many iterations on the same cache (seed 0). A high correlation with a
large gap to k-G_ENT says the gap comes from uniform sampling of k-trees, not from the
score that ranks them.

Run: ``python -m workflows.benchmarks.s2_iscore [--caches nltcs plants dna book] [--k 2 4]
[--trees 2000]`` (caches: BLIP's, ``$BNSL_SHARED_DATA/jkl/blip-is/``, or NAME=PATH);
writes out/s2_iscore.json and out/s2_iscore.md.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from bnsl_dist.cache import ParentSetCache, read_jkl
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.treewidth import _kernels as K
from bnsl_dist.search.treewidth import _s2_kernels as S
from bnsl_dist.search.treewidth._driver import CacheArrays
from bnsl_dist.search.treewidth.s2 import pair_gains
from workflows.benchmarks._common import cache_path, write_report


def tree_scores(cache: ParentSetCache, k: int, trees: int, seed: int = 0
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per sampled k-tree (iterations 0..trees-1 of S2's stream for ``seed``): its
    informative score and its DAG's score."""
    n = cache.n_vars
    a = CacheArrays.of(cache, k, None)
    off, other, gain = pair_gains(cache)
    state = np.zeros(1, dtype=np.uint64)
    ws = S.sampler_workspace(n)
    ins, attach = np.empty(n, np.int64), np.empty(n, np.int64)
    # the k-tree and the DAG step's arrays, reused from tree to tree as in s2_batch
    cl, head, nxt, cnt, in_tree, adj = K.ktree_arrays(n, k, True)
    pos, mark, chosen = np.full(n, -1, np.int64), np.full(n, -1, np.int64), np.empty(n, np.int64)
    info, dag = np.empty(trees), np.empty(trees)
    for it in range(trees):
        K.seed_state(np.uint64(seed), it, state)
        S.uniform_ktree(state, n, k, *ws, ins, attach)
        K.build_ktree(ins, attach, k, cl, head, nxt, cnt, in_tree, adj, True)
        info[it] = S.informative_score(a.offsets, a.scores, a.par_offsets, a.par_flat,
                                       a.sizes, a.max_size, off, other, gain, adj)
        dag[it] = S.dag_in_ktree(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, k,
                                 a.max_size, ins, attach, cl, pos, mark, chosen)
        K.clear_ktree(ins, n, k, cl, head, nxt, cnt, in_tree, adj, True)
    return info, dag


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--caches", nargs="+", default=["nltcs", "plants", "dna", "book"])
    ap.add_argument("--k", nargs="+", type=int, default=[2, 4])
    ap.add_argument("--trees", type=int, default=2000)
    args = ap.parse_args()
    rows: list[dict[str, Any]] = []
    for name in args.caches:
        label, path = cache_path(name)
        cache = read_jkl(path)
        for k in args.k:
            info, dag = tree_scores(cache, k, args.trees)
            incs = list(make_optimizer("kg-ent", k=k).run(
                cache, Budget(max_iterations=args.trees), 0))
            rows.append({"cache": label, "n_vars": cache.n_vars, "k": k, "trees": args.trees,
                         "spearman": float(spearmanr(info, dag).statistic),
                         "dag_of_best_info": float(dag[int(np.argmax(info))]),
                         "best_dag": float(dag.max()), "median_dag": float(np.median(dag)),
                         "kg_ent": float(incs[-1].score)})
            print(rows[-1], flush=True)
    lines = ["# S2's informative score against the DAGs of the same k-trees", "",
             f"{args.trees} k-trees per row, drawn by S2's sampler (seed 0); k-G_ENT: "
             "its best after as many iterations (orders).", "",
             "| cache | n | k | Spearman(I, DAG) | DAG of best I (S2) | best DAG of all | "
             "median DAG | k-G_ENT | k-G_ENT − S2 |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['cache']} | {r['n_vars']} | {r['k']} | {r['spearman']:.3f} | "
              f"{r['dag_of_best_info']:,.1f} | {r['best_dag']:,.1f} | {r['median_dag']:,.1f} | "
              f"{r['kg_ent']:,.1f} | {r['kg_ent'] - r['dag_of_best_info']:+,.1f} |" for r in rows]
    print(write_report("s2_iscore", {"trees": args.trees, "rows": rows}, lines))


if __name__ == "__main__":
    main()
