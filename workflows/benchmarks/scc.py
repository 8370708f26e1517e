"""Benchmark: strongly connected components on 1,000-node graphs.

``bnsl_dist.graph.strongly_connected_components`` (scipy.sparse.csgraph, then the
condensation's topological order) against the iterative Tarjan that
``search/exact/pops.py`` carried before it (kept below as the baseline) and networkx's
``strongly_connected_components`` (components only, no order). Graphs are random parent
lists over 1,000 nodes at a few mean in-degrees (the POPS parent relation graphs of the
A* benchmarks have 2-30 potential parents per variable). Timings alternate between the
implementations within each repeat; each figure is the best of ``--repeats``. The
components are checked to agree.

Run: ``python -m workflows.benchmarks.scc`` (writes out/scc.json).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx
import numpy as np

from bnsl_dist.graph import strongly_connected_components
from workflows.benchmarks._common import write_result


def tarjan_baseline(parents: Sequence[Sequence[int]]) -> list[list[int]]:
    """The iterative Tarjan of search/exact/pops.py before this change (the baseline)."""
    n = len(parents)
    index = np.full(n, -1, dtype=np.int64)
    low = np.zeros(n, dtype=np.int64)
    on_stack = np.zeros(n, dtype=bool)
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        while work:
            v, i = work[-1]
            ps = parents[v]
            if i < len(ps):
                work[-1] = (v, i + 1)
                w = int(ps[i])
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def networkx_components(parents: Sequence[Sequence[int]]) -> list[list[int]]:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(parents)))
    g.add_edges_from((p, v) for v, ps in enumerate(parents) for p in ps)
    return [sorted(c) for c in nx.strongly_connected_components(g)]


def random_parents(n: int, mean_indegree: float, rng: np.random.Generator) -> list[list[int]]:
    out = []
    for v in range(n):
        k = min(n - 1, int(rng.poisson(mean_indegree)))
        cand = rng.choice(n - 1, size=k, replace=False)
        out.append(sorted(int(u) + (u >= v) for u in cand))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--indegrees", type=float, nargs="*", default=[0.5, 1.0, 3.0, 10.0, 30.0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    impls: dict[str, Callable[[Sequence[Sequence[int]]], list[list[int]]]] = {
        "tarjan_before": tarjan_baseline, "scipy_now": strongly_connected_components,
        "networkx": networkx_components}
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(0)
    for d in args.indegrees:
        parents = random_parents(args.n, d, rng)
        best = dict.fromkeys(impls, float("inf"))
        results = {}
        for _ in range(args.repeats):
            for name, fn in impls.items():
                t0 = time.perf_counter()
                results[name] = fn(parents)
                best[name] = min(best[name], time.perf_counter() - t0)
        sets = {name: sorted(map(tuple, r)) for name, r in results.items()}
        assert sets["scipy_now"] == sets["tarjan_before"] == sets["networkx"]
        row = {"n": args.n, "mean_indegree": d, "arcs": sum(map(len, parents)),
               "components": len(results["scipy_now"]),
               "largest": max(map(len, results["scipy_now"])),
               "same_order_as_before": results["scipy_now"] == results["tarjan_before"],
               **{f"{k}_s": v for k, v in best.items()},
               "speedup_scipy_vs_before": best["tarjan_before"] / best["scipy_now"]}
        rows.append(row)
        print(f"d={d:5.1f} arcs={row['arcs']:6d} comps={row['components']:4d} "
              f"before={best['tarjan_before'] * 1e3:7.2f} ms scipy={best['scipy_now'] * 1e3:7.2f} ms"
              f" nx={best['networkx'] * 1e3:7.2f} ms  x{row['speedup_scipy_vs_before']:.1f}")
    path = write_result("scc", {"repeats": args.repeats, "rows": rows,
                                "note": "best of repeats, implementations alternated "
                                        "within each repeat"})
    print(path)


if __name__ == "__main__":
    main()
