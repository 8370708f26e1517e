"""Benchmark: independence selection on the Twenty Datasets (one core; 2-worker cluster).

For the train splits of twenty/{dna,book,ad} (default) at 1 s per variable: exact
scores per second inside independence selection, parent sets kept per variable and
wall time, serially on one core and on a local Dask cluster of two single-threaded
workers (through the one route of a cache on Dask,
``orchestrate.explore.cache_of_held``). ``--max-vars M`` explores only the first M
variables of each data set, serially only (the Dask route explores every variable; a
full run takes n seconds per data set serially: 180 + 500 + 1556 s).

Run: ``python -m workflows.benchmarks.cache [--max-vars 40]`` (writes out/cache.json).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import numpy as np

from bnsl_dist.cache import build_cache
from bnsl_dist.cache.build import warm_up
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data import read_data
from workflows.benchmarks._common import SHARED_DATA, write_result


def summarize(cache: ParentSetCache, variables: list[int], wall: float) -> dict[str, Any]:
    st = cache.meta["stats"]
    exact = np.asarray(st["exact_scores"], dtype=np.float64)
    secs = np.asarray(st["seconds"], dtype=np.float64)
    kept = np.asarray([cache.n_sets_of(v) for v in variables], dtype=np.float64)
    best_size = [len(cache.parents_at(int(cache.offsets[v]))) for v in variables]
    return {
        "wall_seconds": round(wall, 3),
        "variables": len(variables),
        "exact_scores": int(exact.sum()),
        "exact_scores_per_second": round(float(exact.sum() / secs.sum()), 1),
        "exact_scores_per_variable": {"mean": round(float(exact.mean()), 1),
                                      "min": int(exact.min()), "max": int(exact.max())},
        "sets_kept_per_variable": {"mean": round(float(kept.mean()), 2),
                                   "median": float(np.median(kept)),
                                   "min": int(kept.min()), "max": int(kept.max())},
        "mean_size_of_best_set": round(float(np.mean(best_size)), 2),
        "sum_of_best_scores": float(sum(cache.best_score(v) for v in variables)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["dna", "book", "ad"])
    ap.add_argument("--seconds-per-variable", type=float, default=1.0)
    ap.add_argument("--max-vars", type=int, default=None,
                    help="explore only the first M variables of each data set")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-dask", action="store_true", help="serial runs only")
    ap.add_argument("--name", default="cache", help="output file out/<name>.json")
    args = ap.parse_args()

    warm_up()
    load_start = os.getloadavg()
    runs = []
    client_cm = None
    client = None
    if not args.no_dask:
        from bnsl_dist.orchestrate.cluster import connect

        client_cm = connect(workers=args.workers, announce=False, dashboard=False)
        client = client_cm.__enter__()
        client.run(warm_up)
    try:
        for name in args.datasets:
            data = read_data(SHARED_DATA / "twenty" / name / "train.csv.gz")
            m = data.n_vars if args.max_vars is None else min(args.max_vars, data.n_vars)
            variables = list(range(m))
            kw: dict[str, Any] = {"method": "independence", "score": "bic",
                                  "seconds_per_variable": args.seconds_per_variable,
                                  "variables": variables}
            t0 = time.perf_counter()
            cache = build_cache(data, **kw)
            serial = summarize(cache, variables, time.perf_counter() - t0)
            row: dict[str, Any] = {"dataset": f"twenty/{name}/train", "n_samples": data.n_samples,
                                   "n_vars": data.n_vars, "explored_vars": m,
                                   "seconds_per_variable": args.seconds_per_variable,
                                   "one_core": serial}
            print(f"{name:>5} n={data.n_vars} N={data.n_samples} vars={m}  one core: "
                  f"{serial['exact_scores_per_second']:.0f} scores/s, "
                  f"{serial['sets_kept_per_variable']['mean']:.1f} sets/var, "
                  f"wall {serial['wall_seconds']:.1f} s", flush=True)
            if client is not None and m == data.n_vars:  # the route explores them all
                from bnsl_dist.cache import CacheSpec
                from bnsl_dist.orchestrate.explore import cache_of_held

                spec = CacheSpec(**{k: v for k, v in kw.items() if k != "variables"})
                t0 = time.perf_counter()
                dcache = cache_of_held(client, data, spec)
                dist = summarize(dcache, variables, time.perf_counter() - t0)
                row[f"dask_{args.workers}_workers"] = dist
                print(f"{'':>5} {args.workers} workers: {dist['exact_scores_per_second']:.0f} "
                      f"scores/s per worker, {dist['sets_kept_per_variable']['mean']:.1f} "
                      f"sets/var, wall {dist['wall_seconds']:.1f} s", flush=True)
            runs.append(row)
    finally:
        if client_cm is not None:
            client_cm.__exit__(None, None, None)
    path = write_result(args.name, {
        "benchmark": "independence selection (BIC), exact scores per second, sets kept, wall",
        "command": "python -m workflows.benchmarks.cache "
                   + (f"--max-vars {args.max_vars} " if args.max_vars else "")
                   + f"--seconds-per-variable {args.seconds_per_variable}",
        "load_average_1_5_15min": {"start": [round(x, 2) for x in load_start],
                                   "end": [round(x, 2) for x in os.getloadavg()]},
        "results": runs})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
