"""Benchmark: exact structure learning by ILP on OR-Tools (``ilp``, ``twilp``).

Part 1 (encodings). The three encodings of ``ilp`` on the same caches and the same
time limit: SCIP branch-and-cut with lazy cluster constraints ("lazy"), CP-SAT
re-solved with cluster cuts added between solves ("cuts"), and CP-SAT with an order
encoding ("order"): final score, proven bound, gap, proof, time to the final score.

Part 2 (the shape of Table 1 of the TWILP paper). BDeu (ESS 1) caches with at most 3
parents (sequential exploration, dominance-pruned) on data sampled from asia, alarm,
insurance, water and hailfinder at N = 100 / 1,000 / 10,000 (one sample each, seed 1):
score and gap for k = 2, 3 (``twilp``) and unbounded (``ilp``). The paper gave CPLEX
12 h per instance; we give each solver seconds (see ``--twilp-seconds`` and
``--ilp-seconds``), so most gaps stay open: read the figures as "where each solver
stands after that long". Gap = |score - bound| / |score|, as in the paper.

Part 3 (ILP vs ASOBS-ENT at equal budget) on the smallest Twenty Datasets: BLIP's
caches of nltcs, plants, dna and book (``shared/data/jkl/blip-is``) and our own
independence-selection caches of msnbc and kdd (train splits). Who wins: ΔBIC =
ILP - ASOBS-ENT, |ΔBIC| < 2 a tie (Raftery).

Run: ``python -m workflows.benchmarks.ilp`` (writes out/ilp.json and out/ilp.md; about
15 minutes of CPU with the default limits; ``--quick`` for a one-minute smoke run).
Built caches are kept in out/caches/ and reused. Wall time exceeds CPU time on a shared
machine: both are recorded, and the load average at the start.

References
----------
P. Parviainen, H. S. Farahani, J. Lagergren, AISTATS 2014, §5.3 and Table 1.
M. Scanagatta et al., "Approximate structure learning for large Bayesian networks",
Machine Learning 107, 2018, Table 2 (exact solver vs ASOBS-ENT).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import ParentSetCache, build_cache, read_jkl, write_jkl
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.search import Budget, make_optimizer
from workflows.benchmarks._common import OUT_DIR, SHARED_DATA, write_result

NETWORKS = ("asia", "alarm", "insurance", "water", "hailfinder")
SIZES = (100, 1000, 10000)
TWENTY_BLIP = ("nltcs", "plants", "dna", "book")
TWENTY_OURS = ("msnbc", "kdd")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------- caches
def network_cache(net: str, n_samples: int, seed: int = 1) -> ParentSetCache:
    """BDeu (ESS 1), <= 3 parents, sequential exploration (complete, dominance-pruned)."""
    from bnsl_dist.model.bif import read_bif
    from bnsl_dist.model.sampling import sample

    path = OUT_DIR / "caches" / f"ilp_{net}_{n_samples}_s{seed}.bdeu3.jkl"
    if path.exists():
        return read_jkl(path)
    data = sample(read_bif(SHARED_DATA / "bif" / f"{net}.bif.gz"), n_samples, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    cache = build_cache(data, method="sequential", score="bdeu", ess=1.0, max_indegree=3)
    cache = cache.prune_dominated()
    log(f"built {path.name}: {cache} in {time.perf_counter() - t0:.0f} s "
        f"({time.process_time() - c0:.0f} s CPU)")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jkl(cache, path)
    return cache


def twenty_cache(name: str, seconds_per_variable: float) -> ParentSetCache:
    """Independence selection (BIC) on the train split."""
    from bnsl_dist.data.io import read_dataset

    path = OUT_DIR / "caches" / f"ilp_{name}.train.is{seconds_per_variable:g}.jkl"
    if path.exists():
        return read_jkl(path)
    folder = SHARED_DATA / "twenty" / name
    ds = read_dataset(name, {s: folder / f"{s}.csv.gz" for s in ("train", "valid", "test")})
    t0 = time.perf_counter()
    cache = build_cache(ds["train"], method="independence",
                        seconds_per_variable=seconds_per_variable)
    log(f"built {path.name}: {cache} in {time.perf_counter() - t0:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jkl(cache, path)
    return cache


# ---------------------------------------------------------------------------- runs
def solve(cache: ParentSetCache, algo: str, seconds: float, seed: int = 0,
          **params: Any) -> dict[str, Any]:
    opt = make_optimizer(algo, **params)
    t0, c0 = time.perf_counter(), time.process_time()
    incs = list(opt.run(cache, Budget(seconds=seconds), np.random.default_rng(seed)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    last = incs[-1]
    gap = None if last.bound is None else abs(last.score - last.bound) / abs(last.score)
    return {"score": last.score, "bound": last.bound, "gap": gap,
            "optimal": bool(last.info.get("optimal", False)), "t_best": last.elapsed,
            "first_score": incs[0].score, "n_incumbents": len(incs), "wall": wall, "cpu": cpu}


def part_encodings(seconds: float, caches: dict[str, ParentSetCache]) -> list[dict[str, Any]]:
    rows = []
    for cname, cache in caches.items():
        for enc in ("lazy", "cuts", "order"):
            r = solve(cache, "ilp", seconds, encoding=enc)
            rows.append({"cache": cname, "n_vars": cache.n_vars, "n_sets": cache.n_sets,
                         "encoding": enc, **r})
            log(f"encodings {cname} {enc}: {r['score']:.4f} bound {r['bound']:.4f} "
                f"optimal={r['optimal']} best at {r['t_best']:.1f} s, wall {r['wall']:.1f} s")
    return rows


def part_table1(nets: tuple[str, ...], sizes: tuple[int, ...], tw_seconds: float,
                ilp_seconds: float) -> list[dict[str, Any]]:
    rows = []
    for net in nets:
        for n_samples in sizes:
            cache = network_cache(net, n_samples)
            row: dict[str, Any] = {"network": net, "N": n_samples, "n_vars": cache.n_vars,
                                   "n_sets": cache.n_sets}
            for k in (2, 3):
                row[f"k{k}"] = solve(cache, "twilp", tw_seconds, k=k)
            row["unbounded"] = solve(cache, "ilp", ilp_seconds)
            rows.append(row)
            log(f"table1 {net} N={n_samples}: " + ", ".join(
                f"{key} {row[key]['score']:.2f} gap {row[key]['gap']:.4f}"
                for key in ("k2", "k3", "unbounded")))
    return rows


def part_vs_asobs(seconds: float, blip_names: tuple[str, ...], our_names: tuple[str, ...],
                  is_seconds: float) -> list[dict[str, Any]]:
    rows = []
    caches: list[tuple[str, str, ParentSetCache]] = []
    for name in blip_names:
        caches.append((name, "BLIP is, 1 s/var",
                       read_jkl(SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz")))
    for name in our_names:
        caches.append((name, f"ours is, {is_seconds:g} s/var", twenty_cache(name, is_seconds)))
    for name, origin, cache in caches:
        ilp = solve(cache, "ilp", seconds)
        asobs = solve(cache, "asobs-ent", seconds)
        delta = ilp["score"] - asobs["score"]
        winner = "ILP" if delta >= 2 else ("ASOBS-ENT" if delta <= -2 else "tie")
        rows.append({"dataset": name, "cache": origin, "n_vars": cache.n_vars,
                     "n_sets": cache.n_sets, "ilp": ilp, "asobs_ent": asobs,
                     "delta_bic": delta, "winner": winner})
        log(f"vs asobs {name} (n={cache.n_vars}): ILP {ilp['score']:.2f} (gap {ilp['gap']:.4f}) "
            f"ASOBS-ENT {asobs['score']:.2f} -> {winner}")
    return rows


# ---------------------------------------------------------------------------- report
def _g(x: float | None) -> str:
    return "—" if x is None else ("OPT" if x == 0 else f"{x:.4f}")


def markdown(res: dict[str, Any]) -> str:
    out = ["# ILP benchmark (`python -m workflows.benchmarks.ilp`)", "",
           f"Load average at start: {res['load_average']}; limits: {res['limits']}.", ""]
    if res.get("encodings"):
        out += ["## Encodings of `ilp` (same time limit)", "",
                "| cache | n | sets | encoding | score | bound | gap | proved | best at (s) | "
                "wall (s) |", "|---|---:|---:|---|---:|---:|---:|---|---:|---:|"]
        for r in res["encodings"]:
            out.append(f"| {r['cache']} | {r['n_vars']} | {r['n_sets']} | {r['encoding']} | "
                       f"{r['score']:.4f} | {r['bound']:.4f} | {_g(r['gap'])} | "
                       f"{'yes' if r['optimal'] else 'no'} | {r['t_best']:.2f} | "
                       f"{r['wall']:.2f} |")
        out.append("")
    if res.get("table1"):
        out += ["## Table 1 shape: TWILP k = 2, 3 and unbounded ILP (BDeu, <= 3 parents)", "",
                "| network | N | n | sets | k=2 score | gap | k=3 score | gap | unbounded | gap |",
                "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in res["table1"]:
            cells = []
            for key in ("k2", "k3", "unbounded"):
                c = r[key]
                cells += [f"{c['score']:.2f}", "OPT" if c["optimal"] else _g(c["gap"])]
            out.append(f"| {r['network']} | {r['N']} | {r['n_vars']} | {r['n_sets']} | "
                       + " | ".join(cells) + " |")
        out.append("")
    if res.get("vs_asobs"):
        out += ["## ILP vs ASOBS-ENT, equal budget", "",
                "| data set | cache | n | sets | ILP | ILP gap | ASOBS-ENT | ΔBIC | winner |",
                "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for r in res["vs_asobs"]:
            il, a = r["ilp"], r["asobs_ent"]
            out.append(f"| {r['dataset']} | {r['cache']} | {r['n_vars']} | {r['n_sets']} | "
                       f"{il['score']:.2f} | {'OPT' if il['optimal'] else _g(il['gap'])} | "
                       f"{a['score']:.2f} | {r['delta_bic']:.2f} | {r['winner']} |")
        out.append("")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="1,2,3", help="comma-separated: 1 encodings, "
                    "2 Table 1 shape, 3 ILP vs ASOBS-ENT")
    ap.add_argument("--encoding-seconds", type=float, default=15.0)
    ap.add_argument("--twilp-seconds", type=float, default=10.0)
    ap.add_argument("--ilp-seconds", type=float, default=15.0)
    ap.add_argument("--compare-seconds", type=float, default=15.0)
    ap.add_argument("--is-seconds", type=float, default=0.5,
                    help="independence selection budget per variable (msnbc, kdd)")
    ap.add_argument("--quick", action="store_true", help="a one-minute smoke run")
    args = ap.parse_args(argv)
    parts = {int(p) for p in args.parts.split(",") if p}
    nets, sizes, blip_names, our_names = NETWORKS, SIZES, TWENTY_BLIP, TWENTY_OURS
    if args.quick:
        nets, sizes, blip_names, our_names = ("asia",), (1000,), ("nltcs",), ()
        for a in ("encoding_seconds", "twilp_seconds", "ilp_seconds", "compare_seconds"):
            setattr(args, a, 3.0)
    res: dict[str, Any] = {"load_average": list(os.getloadavg()),
                           "limits": {"encoding_seconds": args.encoding_seconds,
                                      "twilp_seconds": args.twilp_seconds,
                                      "ilp_seconds": args.ilp_seconds,
                                      "compare_seconds": args.compare_seconds,
                                      "is_seconds_per_variable": args.is_seconds}}
    t0, c0 = time.perf_counter(), time.process_time()
    if 1 in parts:
        caches = {"wine.BIC.3": read_jkl(bundled_path("jkl/wine.BIC.3.jkl.gz"))}
        if not args.quick:
            caches["child-5000.blip"] = read_jkl(bundled_path("jkl/child-5000.blip.jkl.gz"))
            caches["asia N=10000"] = network_cache("asia", 10000)
            caches["insurance N=1000"] = network_cache("insurance", 1000)
        res["encodings"] = part_encodings(args.encoding_seconds, caches)
    if 2 in parts:
        res["table1"] = part_table1(nets, sizes, args.twilp_seconds, args.ilp_seconds)
    if 3 in parts:
        res["vs_asobs"] = part_vs_asobs(args.compare_seconds, blip_names, our_names,
                                        args.is_seconds)
    res["total_wall"] = time.perf_counter() - t0
    res["total_cpu"] = time.process_time() - c0
    name = "ilp_quick" if args.quick else "ilp"
    path = write_result(name, res)
    atomic_write_text(OUT_DIR / f"{name}.md", markdown(res))
    log(f"wrote {path} and {name}.md (wall {res['total_wall']:.0f} s, "
        f"CPU {res['total_cpu']:.0f} s)")
    return path


if __name__ == "__main__":
    main()
