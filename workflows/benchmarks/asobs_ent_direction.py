"""Benchmark: ASOBS-ENT's two directions at equal seconds, beside uniform orders.

``asobs-ent`` (the paper's: high-entropy variables processed first, the most parent sets)
and ``asobs-ent-last`` (processed last), and the same pair with the window local search
(``winasobs-ent``, ``winasobs-ent-last``), beside ``asobs`` and ``winasobs`` (uniform
orders), each for ``--seconds`` per run, seeds 0..``--seeds``-1, one run at a time in
this process, on BLIP's caches of child (bundled; entropies: the empty-set proxy) and of
plants, dna, book and cwebkb (``shared/data/jkl/blip-is/``; entropies of the train split
when ``shared/data/twenty`` holds it, as BLIP uses). The six algorithms of one cache and
seed run one after the other, so a change of the machine's load falls on all of them
alike; the JSON records the load average and each run's orders walked. ``--jkl`` adds
other caches (e.g. of the synthetic r0, built by ``bnsl-dist cache build r0
--seconds-per-variable 0.06 -o r0.train.bic.jkl.gz`` as the ASOBS-ENT grid builds it;
named by the file name up to its first dot; entropies: the empty-set proxy).

Reported per cache and algorithm: the BIC of the best DAG at the end (mean over the
seeds, and each seed's) and at half the budget, and for each pair the mean difference
(first minus last; and each minus its uniform-order counterpart) with the number of
seeds in which it is positive.

Run: ``nice -n 5 python -m workflows.benchmarks.asobs_ent_direction [--seconds 10]
[--seeds 3] [--caches child plants dna book cwebkb] [--jkl FILE ...]
[--name asobs_ent_direction]``;
writes ``workflows/results/benchmarks/<name>.json|md`` (``BNSL_BENCH_OUT`` or ``--out``
to change the folder).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache import ParentSetCache, read_jkl
from bnsl_dist.search import AnytimeTrace, Budget, make_optimizer

ALGORITHMS = ["asobs", "asobs-ent", "asobs-ent-last",
              "winasobs", "winasobs-ent", "winasobs-ent-last"]
CACHES = ["child", "plants", "dna", "book", "cwebkb"]
#: Each entropy variant's uniform-order counterpart.
UNIFORM = {"asobs-ent": "asobs", "asobs-ent-last": "asobs",
           "winasobs-ent": "winasobs", "winasobs-ent-last": "winasobs"}


def _cache(name: str) -> ParentSetCache:
    if name.endswith((".jkl", ".jkl.gz")):
        return read_jkl(name)
    if name == "child":
        from bnsl_dist.data.registry import bundled_path

        return read_jkl(bundled_path("jkl/child-5000.blip.jkl.gz"))
    from workflows.benchmarks._common import SHARED_DATA

    return read_jkl(SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz")


def _entropies(name: str, n: int) -> tuple[list[float] | None, str]:
    from workflows.benchmarks.search import _entropies as from_data

    if name == "child" or name.endswith((".jkl", ".jkl.gz")):
        return None, "empty-set proxy"
    return from_data(name, n)


def run(caches: list[str], seconds: float, seeds: int) -> list[dict[str, Any]]:
    rows = []
    for source in caches:
        cache = _cache(source)
        ent, src = _entropies(source, cache.n_vars)
        cname = Path(source).name.split(".")[0]
        # compile the kernels outside the timed runs
        for name in ("asobs", "winasobs"):
            list(make_optimizer(name).run(cache, Budget(max_iterations=2),
                                          np.random.default_rng(0)))
        for seed in range(seeds):
            for name in ALGORITHMS:
                params: dict[str, Any] = {"entropies": ent} if ent and "-ent" in name else {}
                load0 = os.getloadavg()[0]
                tr = AnytimeTrace.collect(make_optimizer(name, **params).run(
                    cache, Budget(seconds=seconds), np.random.default_rng(seed)))
                half = tr.best_at(seconds / 2)
                rows.append({"cache": cname, "n": cache.n_vars, "sets": cache.n_sets,
                             "algorithm": name, "seed": seed, "seconds": seconds,
                             "best": tr.best.score if tr.best else None,
                             "best_at_half": half.score if half else None,
                             "orders": tr.total_iterations, "elapsed": tr.total_seconds,
                             "entropies": src if "-ent" in name else None,
                             "load": [load0, os.getloadavg()[0]]})
                print({k: rows[-1][k] for k in ("cache", "algorithm", "seed", "best",
                                                "orders")}, flush=True)
    return rows


def summarise(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Per cache and algorithm the mean best; per pair the mean difference and wins."""
    best: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        best.setdefault((r["cache"], r["algorithm"]), []).append(r["best"])
    caches = list(dict.fromkeys(r["cache"] for r in rows))
    pairs = [("asobs-ent", "asobs-ent-last"), ("winasobs-ent", "winasobs-ent-last"),
             *UNIFORM.items()]
    out = []
    lines = ["| cache | n | " + " | ".join(ALGORITHMS) + " |",
             "|---|---:|" + "---:|" * len(ALGORITHMS)]
    for c in caches:
        n = next(r["n"] for r in rows if r["cache"] == c)
        lines.append(f"| {c} | {n} | " + " | ".join(
            f"{np.mean(best[(c, a)]):,.1f}" for a in ALGORITHMS) + " |")
    lines += ["", "Mean BIC difference (A − B) over the seeds, and in how many seeds A "
              "is ahead (ties count for neither):", "",
              "| cache | " + " | ".join(f"{a} − {b}" for a, b in pairs) + " |",
              "|---|" + "---:|" * len(pairs)]
    for c in caches:
        cells = []
        for a, b in pairs:
            d = np.array(best[(c, a)]) - np.array(best[(c, b)])
            wins, losses = int((d > 1e-6).sum()), int((d < -1e-6).sum())
            out.append({"cache": c, "a": a, "b": b, "mean_difference": float(d.mean()),
                        "a_ahead": wins, "b_ahead": losses, "seeds": len(d)})
            cells.append(f"{d.mean():+,.1f} ({wins}/{len(d)})")
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    return out, lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--caches", nargs="*", default=CACHES, choices=CACHES)
    ap.add_argument("--jkl", nargs="*", default=[], type=Path, help="other cache files")
    ap.add_argument("--name", default="asobs_ent_direction")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get(
        "BNSL_BENCH_OUT", Path(__file__).resolve().parents[1] / "results" / "benchmarks")))
    args = ap.parse_args()
    os.environ["BNSL_BENCH_OUT"] = str(args.out)
    from workflows.benchmarks import _common

    _common.OUT_DIR = args.out
    t0 = time.time()
    rows = run([*args.caches, *map(str, args.jkl)], args.seconds, args.seeds)
    summary, lines = summarise(rows)
    head = [f"# ASOBS-ENT's directions at {args.seconds:g} s, seeds 0..{args.seeds - 1}",
            "", "Mean BIC of the best DAG at the end of the budget:", ""]
    path = _common.write_report(args.name, {
        "settings": {"seconds": args.seconds, "seeds": args.seeds, "caches": args.caches,
                     "jkl": [str(p) for p in args.jkl]},
        "wall_seconds": time.time() - t0, "rows": rows, "summary": summary},
        head + lines)
    print(path)


if __name__ == "__main__":
    main()
