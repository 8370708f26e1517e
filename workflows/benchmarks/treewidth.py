"""Benchmark: bounded-treewidth learners k-G, k-G_ENT (late / early) and k-MAX.

Part 1 (Table 4 of the k-MAX paper, on every cell): on the same cache and the same
budget, each learner's best score, iterations, iterations per second and median score
per iteration, for k in {2, 4, 5, 6, 8}; caches built by independence selection on the
Twenty Datasets' test splits and on data sampled from a 2,000-variable random network.
A sign test counts k-MAX's wins over k-G (ΔBIC >= 2).

Part 2: BLIP comparison on ``shared/data/jkl/blip-is/*.jkl.gz`` at treewidth 4, our
k <= 4 parents and, like for like with BLIP's ``-w 4``, parents capped at 3, beside
BLIP's 60 s figures ($BNSL_SHARED_DATA/README.md §5b).

Run: ``python -m workflows.benchmarks.treewidth`` (writes out/treewidth.json and
out/treewidth.md). Built caches are kept in out/caches/ and reused.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache import ParentSetCache, build_cache, read_jkl, write_jkl
from bnsl_dist.search import Budget, make_optimizer
from workflows.benchmarks._common import OUT_DIR, SHARED_DATA, write_result

#: The 18 Twenty Datasets of the k-MAX paper (all but nltcs and msnbc).
PAPER_DATASETS = ("kdd", "plants", "baudio", "jester", "bnetflix", "accidents", "tretail",
                  "pumsb_star", "dna", "kosarek", "msweb", "book", "tmovie", "cwebkb", "cr52",
                  "c20ng", "bbc", "ad")
ALGORITHMS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("k-G", "kg", {}),
    ("k-G_ENT late", "kg-ent", {"direction": "late"}),
    ("k-G_ENT early", "kg-ent", {"direction": "early"}),
    ("k-MAX", "kmax", {}),
)
#: BLIP's best scores after 60 s at -w 4 (at most 3 parents), $BNSL_SHARED_DATA/README.md §5b.
BLIP_W4_60S = {
    "nltcs": {"k-G": -99264.060, "k-G_ENT": -99282.159, "k-MAX": -99466.102},
    "plants": {"k-G": -256701.095, "k-G_ENT": -255593.061, "k-MAX": -250494.801},
    "dna": {"k-G": -131487.374, "k-G_ENT": -131398.658, "k-MAX": -130262.997},
    "book": {"k-G": -319234.937, "k-G_ENT": -318694.809, "k-MAX": -318806.363},
    "cwebkb": {"k-G": -439349.548, "k-G_ENT": -437860.434, "k-MAX": -438461.807},
}
BLIP_ALGOS = (("k-G", "kg", {}), ("k-G_ENT", "kg-ent", {"direction": "late"}),
              ("k-G_ENT early", "kg-ent", {"direction": "early"}), ("k-MAX", "kmax", {}))


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def twenty_cache(name: str, seconds_per_variable: float) -> ParentSetCache:
    from bnsl_dist.data.io import read_dataset

    path = OUT_DIR / "caches" / f"{name}.test.is{seconds_per_variable:g}.jkl.gz"
    if path.exists():
        return read_jkl(path)
    folder = SHARED_DATA / "twenty" / name
    ds = read_dataset(name, {s: folder / f"{s}.csv.gz" for s in ("train", "valid", "test")})
    data = ds["test"]
    t0 = time.perf_counter()
    cache = build_cache(data, method="independence", seconds_per_variable=seconds_per_variable)
    log(f"built {path.name}: {cache} in {time.perf_counter() - t0:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jkl(cache, path)
    return cache


def synthetic_cache(n_vars: int, seconds_per_variable: float, seed: int = 0) -> ParentSetCache:
    from bnsl_dist.model.generate import random_network
    from bnsl_dist.model.sampling import sample

    path = OUT_DIR / "caches" / f"synthetic{n_vars}.s{seed}.is{seconds_per_variable:g}.jkl.gz"
    if path.exists():
        return read_jkl(path)
    net = random_network(n_vars, 4, arity_range=(2, 4), rng=seed)
    data = sample(net, 5000, rng=seed + 1)
    t0 = time.perf_counter()
    cache = build_cache(data, method="independence", seconds_per_variable=seconds_per_variable)
    log(f"built {path.name}: {cache} in {time.perf_counter() - t0:.0f} s")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_jkl(cache, path)
    return cache


def measure(cache: ParentSetCache, algo: str, params: dict[str, Any], k: int, seconds: float,
            seed: int, max_parents: int | None = None) -> dict[str, Any]:
    opt = make_optimizer(algo, k=k, max_parents=max_parents, **params)
    cpu0 = time.process_time()
    scores, elapsed = opt.iteration_scores(cache, Budget(seconds=seconds), seed)
    cpu = time.process_time() - cpu0
    return {"iterations": int(len(scores)), "seconds": elapsed, "cpu_seconds": cpu,
            "iterations_per_second": len(scores) / elapsed if elapsed > 0 else math.nan,
            "iterations_per_cpu_second": len(scores) / cpu if cpu > 0 else math.nan,
            "best": float(scores.max()), "median": float(np.median(scores))}


def warm_up() -> None:
    cache = ParentSetCache.from_lists([[((), -1.0), ((1,), -0.5)], [((), -1.0)],
                                       [((), -1.0), ((0, 1), -0.2)]])
    for _, algo, params in ALGORITHMS:
        make_optimizer(algo, k=1, **params).iteration_scores(cache, Budget(max_iterations=2), 0)


def fmt(x: float) -> str:
    return f"{x:,.1f}"


def grid(caches: dict[str, ParentSetCache], ks: list[int], seconds: float, seed: int
         ) -> list[dict[str, Any]]:
    rows = []
    for cname, cache in caches.items():
        for k in ks:
            for label, algo, params in ALGORITHMS:
                r = measure(cache, algo, params, k, seconds, seed)
                rows.append({"cache": cname, "n_vars": cache.n_vars, "k": k, "algorithm": label,
                             **r})
                log(f"{cname} k={k} {label}: best {r['best']:.1f} median {r['median']:.1f} "
                    f"{r['iterations']} it ({r['iterations_per_second']:.1f}/s)")
    return rows


def blip(seconds: float, seed: int, names: list[str], caps: list[int | None],
         algos: list[str]) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        path = SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz"
        cache = read_jkl(path)
        for cap in caps:
            for label, algo, params in BLIP_ALGOS:
                if label not in algos:
                    continue
                r = measure(cache, algo, params, 4, seconds, seed, max_parents=cap)
                # BLIP's k-G_ENT puts high-entropy variables first ("early")
                ref = BLIP_W4_60S.get(name, {}).get(label.replace(" early", ""))
                rows.append({"cache": name, "n_vars": cache.n_vars, "k": 4, "max_parents": cap,
                             "algorithm": label, "blip_60s": ref, **r})
                log(f"blip {name} cap={cap} {label}: best {r['best']:.1f} (BLIP 60 s {ref})")
    return rows


def sign_test(rows: list[dict[str, Any]], a: str, b: str) -> dict[str, Any]:
    from scipy.stats import binomtest

    best = {(r["cache"], r["k"], r["algorithm"]): r["best"] for r in rows}
    wins = losses = ties = 0
    for (c, k, alg), s in best.items():
        if alg != a or (c, k, b) not in best:
            continue
        d = s - best[(c, k, b)]
        if d >= 2:
            wins += 1
        elif d <= -2:
            losses += 1
        else:
            ties += 1
    p = binomtest(wins, wins + losses).pvalue if wins + losses else 1.0
    return {"a": a, "b": b, "wins": wins, "losses": losses, "ties": ties, "p_value": p}


def markdown(rows: list[dict[str, Any]], brows: list[dict[str, Any]],
             signs: list[dict[str, Any]], seconds: float, blip_seconds: float) -> str:
    out = [f"# Bounded-treewidth learners ({seconds:g} s per cell, one core)", "",
           "| cache | n | k | algorithm | best | median per iteration | iterations | it/s "
           "| it/CPU-s |", "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['cache']} | {r['n_vars']} | {r['k']} | {r['algorithm']} | "
                   f"{fmt(r['best'])} | {fmt(r['median'])} | {r['iterations']:,} | "
                   f"{r['iterations_per_second']:,.1f} | {r['iterations_per_cpu_second']:,.1f} |")
    out += ["", "Sign tests (wins when ΔBIC >= 2, losses when <= -2):", ""]
    for s in signs:
        out.append(f"- {s['a']} vs {s['b']}: {s['wins']} wins, {s['losses']} losses, "
                   f"{s['ties']} ties, p = {s['p_value']:.3g}")
    if brows:
        out += ["", f"## BLIP comparison, treewidth 4, ours {blip_seconds:g} s vs BLIP 60 s", "",
                "| cache | n | parents <= | algorithm | ours | BLIP -w 4, 60 s | ours - BLIP |"
                " iterations |", "|---|---:|---:|---|---:|---:|---:|---:|"]
        for r in brows:
            ref = r["blip_60s"]
            diff = "" if ref is None else fmt(r["best"] - ref)
            out.append(f"| {r['cache']} | {r['n_vars']} | {r['max_parents'] or 4} | "
                       f"{r['algorithm']} | {fmt(r['best'])} | "
                       f"{'' if ref is None else fmt(ref)} | {diff} | {r['iterations']:,} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=10.0, help="budget per cell")
    ap.add_argument("--ks", default="2,4,5,6,8")
    ap.add_argument("--datasets", default=",".join(PAPER_DATASETS),
                    help="Twenty Datasets (test splits); empty for none")
    ap.add_argument("--cache-seconds", type=float, default=0.05,
                    help="independence selection seconds per variable")
    ap.add_argument("--synthetic", type=int, default=2000, help="variables (0: skip)")
    ap.add_argument("--blip", default="nltcs,plants,dna,book,cwebkb",
                    help="BLIP caches to compare on (empty: skip)")
    ap.add_argument("--blip-seconds", type=float, default=10.0)
    ap.add_argument("--blip-caps", default="none,3",
                    help="parent caps for the BLIP comparison ('none' = k)")
    ap.add_argument("--blip-algos", default=",".join(a for a, _, _ in BLIP_ALGOS))
    ap.add_argument("--name", default="treewidth", help="output file stem")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ks = [int(x) for x in args.ks.split(",") if x]
    warm_up()
    caches: dict[str, ParentSetCache] = {}
    for name in [d for d in args.datasets.split(",") if d]:
        caches[f"{name}.test"] = twenty_cache(name, args.cache_seconds)
    if args.synthetic:
        caches[f"synthetic{args.synthetic}"] = synthetic_cache(args.synthetic,
                                                               args.cache_seconds)
    rows = grid(caches, ks, args.seconds, args.seed)
    signs = [sign_test(rows, "k-MAX", "k-G"), sign_test(rows, "k-MAX", "k-G_ENT late"),
             sign_test(rows, "k-MAX", "k-G_ENT early"), sign_test(rows, "k-G_ENT early", "k-G"),
             sign_test(rows, "k-G_ENT late", "k-G"), sign_test(rows, "k-G_ENT late",
                                                               "k-G_ENT early")]
    caps = [None if c == "none" else int(c) for c in args.blip_caps.split(",") if c]
    brows = blip(args.blip_seconds, args.seed, [b for b in args.blip.split(",") if b], caps,
                 args.blip_algos.split(","))
    payload = {"settings": vars(args), "grid": rows, "sign_tests": signs, "blip": brows}
    path = write_result(args.name, payload)
    md = markdown(rows, brows, signs, args.seconds, args.blip_seconds)
    atomic_write_text(Path(OUT_DIR) / f"{args.name}.md", md)
    print(md)
    log(f"wrote {path}")


if __name__ == "__main__":
    main()
