"""Benchmark: shortest-path exact search with POPS constraints (Fan, Malone & Yuan 2014).

Part 1, the shape of Table 2: time and nodes expanded of A* (no constraints), A* with
the POPS constraints (SCC subproblems, the paper's "A*,O"), A* with the recursive
constraints ("A*,R"), AWA* and BFBnB (both with the recursive constraints, as the paper does after
Table 2; ``--variants`` adds the unconstrained AWA*/BFBnB), static pattern databases,
on BIC caches built here from mushroom, autos, soybean, bands, spectf (``uci/``) and
insurance, water, mildew, alarm, barley (``bnsamples/<net>1000``: the 1,000-record
samples). Each run has a time limit (``--seconds``, the paper used 30 min) and a cap on
the open/closed lists; a run that hits either is reported as OT/OM with what it had.

Part 2, Figure 4: on hailfinder (1,000 records sampled from ``bif/hailfinder.bif.gz``,
seed 0), for p = 1..13: time of AWA* with recursive constraints under the top-p POPS
constraint, the suboptimality bound epsilon (a valid one; the paper's eq. 5 alongside),
the largest SCC, the density of the parent relation graph and the POPS kept.

Caches: sequential exploration (BIC, lossless dominance and penalty-bound pruning), at
most 3 parents (unbounded exploration does not finish in minutes on autos or spectf);
built once into out/caches/ and reused. Run: ``python -m workflows.benchmarks.astar``
(writes out/astar.json and out/astar.md).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bnsl_dist.cache import ParentSetCache, build_cache, read_jkl, write_jkl
from bnsl_dist.data import read_data
from bnsl_dist.graph import strongly_connected_components
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.search.base import Budget
from bnsl_dist.search.exact.astar import AStar, AWAStar, BFBnB
from bnsl_dist.search.exact.pops import (
    decompose,
    graph_density,
    parent_relation_graph,
    top_p_cache,
)
from workflows.benchmarks._common import OUT_DIR, SHARED_DATA, write_result

#: name -> data file under shared/data (Table 2 order)
DATASETS = {
    "mushroom": "uci/mushroom.csv.gz", "autos": "uci/autos.csv.gz",
    "insurance": "bnsamples/insurance1000.csv.gz", "water": "bnsamples/water1000.csv.gz",
    "mildew": "bnsamples/mildew1000.csv.gz", "soybean": "uci/soybean.csv.gz",
    "alarm": "bnsamples/alarm1000.csv.gz", "bands": "uci/bands.csv.gz",
    "spectf": "uci/spectf.csv.gz", "barley": "bnsamples/barley1000.csv.gz",
}
#: column -> (optimizer class, constraints)
VARIANTS = {
    "A*": (AStar, "off"), "A*+O": (AStar, "on"), "A*+R": (AStar, "recursive"),
    "AWA*": (AWAStar, "off"), "AWA*+R": (AWAStar, "recursive"),
    "BFBnB": (BFBnB, "off"), "BFBnB+R": (BFBnB, "recursive"),
}
DEFAULT_VARIANTS = ("A*", "A*+O", "A*+R", "AWA*+R", "BFBnB+R")
MAX_INDEGREE = 3


def log(msg: str) -> None:
    print(msg, flush=True)


def get_cache(name: str, data_fn: Any) -> tuple[ParentSetCache, int]:
    """The BIC cache of a data set, built once into out/caches/."""
    path = OUT_DIR / "caches" / f"astar.{name}.bic.d{MAX_INDEGREE}.jkl.gz"
    if path.exists():
        cache = read_jkl(path)
        return cache, int(cache.meta.get("n_samples", 0))
    data = data_fn()
    t0 = time.perf_counter()
    cache = build_cache(data, method="sequential", score="bic", max_indegree=MAX_INDEGREE,
                        seconds_per_variable=float("inf"))
    log(f"built {path.name}: {cache} in {time.perf_counter() - t0:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jkl(cache, path)
    return cache, data.n_samples


def describe(cache: ParentSetCache) -> dict[str, Any]:
    prg = parent_relation_graph(cache)
    sccs = strongly_connected_components(prg)
    subs = decompose(cache)
    return {"n_vars": cache.n_vars, "pops": cache.n_sets, "density": graph_density(prg),
            "largest_scc": max(len(s) for s in sccs),
            "largest_subproblem": max(s.m for s in subs)}


def run_one(cls: type, constraints: str, cache: ParentSetCache, seconds: float,
            memory_mb: float, **params: Any) -> dict[str, Any]:
    opt = cls(constraints=constraints, max_memory_mb=memory_mb, **params)
    t0, c0 = time.perf_counter(), time.process_time()
    trace, st = opt.solve(cache, Budget(seconds=seconds))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    best = trace.best
    return {"seconds": wall, "cpu_seconds": cpu, "nodes_expanded": st.nodes_expanded,
            "nodes_generated": st.nodes_generated, "peak_memory_bytes": st.peak_memory_bytes,
            "proved_optimal": st.proved_optimal, "stopped": st.stopped,
            "score": None if best is None else best.score, "bound": st.bound,
            "pdb_seconds": st.pdb_seconds, "pdb_bytes": st.pdb_bytes,
            "n_incumbents": len(trace.incumbents),
            "epsilon": st.epsilon, "epsilon_paper": st.epsilon_paper}


def table2(names: list[str], variants: list[str], seconds: float, memory_mb: float
           ) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        rel = DATASETS[name]
        cache, n_samples = get_cache(name, lambda rel=rel: read_data(SHARED_DATA / rel,
                                                                      header=False))
        row: dict[str, Any] = {"dataset": name, "file": rel, "N": n_samples, **describe(cache)}
        for v in variants:
            cls, constraints = VARIANTS[v]
            r = run_one(cls, constraints, cache, seconds, memory_mb)
            row[v] = r
            tag = "OT" if r["stopped"] == "budget" else "OM" if r["stopped"] == "memory" else ""
            log(f"{name:10s} {v:8s} {r['seconds']:7.2f} s ({r['cpu_seconds']:6.2f} cpu) "
                f"{r['nodes_expanded'] / 1e6:8.3f} M "
                f"{r['peak_memory_bytes'] / 2**20:7.1f} MiB {r['score']:.4f} {tag}")
        rows.append(row)
    return rows


def hailfinder_data() -> Any:
    net = read_bif(SHARED_DATA / "bif" / "hailfinder.bif.gz")
    return sample(net, 1000, 0)


def figure4(ps: list[int], seconds: float, memory_mb: float) -> list[dict[str, Any]]:
    cache, _ = get_cache("hailfinder1000", hailfinder_data)
    rows = []
    for p in ps:
        pruned = top_p_cache(cache, p)
        d = describe(pruned)
        r = run_one(AWAStar, "recursive", cache, seconds, memory_mb, p=p)
        rows.append({"p": p, **d, **r})
        log(f"hailfinder p={p:2d} {r['seconds']:7.2f} s eps={r['epsilon']:.6f} "
            f"(paper eq.5 {r['epsilon_paper']:.6f}) largest SCC {d['largest_scc']} "
            f"density {d['density']:.3f} POPS {d['pops']} "
            f"{'proved' if r['proved_optimal'] else r['stopped']}")
    return rows


def _cell(r: dict[str, Any]) -> tuple[str, str]:
    if r["stopped"] is None:
        return f"{r['seconds']:.2f}", f"{r['nodes_expanded'] / 1e6:.3f}"
    tag = "OT" if r["stopped"] == "budget" else "OM"
    return f"{tag} ({r['seconds']:.0f})", f"{tag} ({r['nodes_expanded'] / 1e6:.2f})"


def markdown(rows: list[dict[str, Any]], fig: list[dict[str, Any]], variants: list[str],
             seconds: float) -> str:
    out = [f"# Order-graph search with POPS constraints (limit {seconds:g} s per run)", "",
           "Time (s) and nodes expanded (millions); OT = out of time, OM = out of memory "
           "(what it had when stopped in parentheses).", "",
           "| dataset | n | N | POPS | density | largest SCC | | " + " | ".join(variants) + " |",
           "|---|---:|---:|---:|---:|---:|---|" + "---:|" * len(variants)]
    for row in rows:
        cells = [_cell(row[v]) for v in variants]
        head = (f"| {row['dataset']} | {row['n_vars']} | {row['N']} | {row['pops']} | "
                f"{row['density']:.2f} | {row['largest_scc']} ")
        out.append(head + "| time | " + " | ".join(c[0] for c in cells) + " |")
        out.append("| | | | | | | nodes | " + " | ".join(c[1] for c in cells) + " |")
    if fig:
        out += ["", "## Hailfinder under the top-p POPS constraint (AWA*, recursive)", "",
                "| p | time (s) | epsilon | epsilon, paper eq. 5 | largest SCC | density | "
                "POPS | proved |", "|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in fig:
            out.append(f"| {r['p']} | {r['seconds']:.2f} | {r['epsilon']:.6f} | "
                       f"{r['epsilon_paper']:.6f} | {r['largest_scc']} | {r['density']:.3f} | "
                       f"{r['pops']} | {'yes' if r['proved_optimal'] else r['stopped']} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0, help="time limit per run")
    ap.add_argument("--memory-mb", type=float, default=1024.0, help="open/closed list cap")
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help=f"columns among {', '.join(VARIANTS)}")
    ap.add_argument("--p-max", type=int, default=13, help="Figure 4: p = 1..p_max (0: skip)")
    ap.add_argument("--fig-seconds", type=float, default=30.0, help="Figure 4 limit per run")
    args = ap.parse_args()
    names = [s for s in args.datasets.split(",") if s]
    variants = [s for s in args.variants.split(",") if s]
    AStar().solve(ParentSetCache.from_lists([[((), -1.0)]]), Budget(max_iterations=1))  # JIT
    t0 = time.perf_counter()
    rows = table2(names, variants, args.seconds, args.memory_mb)
    fig = figure4(list(range(1, args.p_max + 1)), args.fig_seconds, args.memory_mb)
    payload = {"benchmark": "order-graph search with POPS constraints (Fan et al. 2014)",
               "seconds_per_run": args.seconds, "memory_mb": args.memory_mb,
               "cache": {"method": "sequential", "score": "bic", "max_indegree": MAX_INDEGREE},
               "heuristic": "static pattern databases (groups <= 16, >= 2 per subproblem)",
               "table2": rows, "figure4": fig, "total_seconds": time.perf_counter() - t0}
    path = write_result("astar", payload)
    md = Path(path).with_suffix(".md")
    md.write_text(markdown(rows, fig, variants, args.seconds))
    log(f"wrote {path} and {md}")


if __name__ == "__main__":
    main()
