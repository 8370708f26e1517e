"""Benchmark: local scores per second and column bytes scanned per second (one core).

Families of 0-4 parents at N = 5,000 and N = 100,000 on binary and ternary random data,
BIC and BDeu. Run: ``python -m workflows.benchmarks.scores`` (writes out/scores.json).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from bnsl_dist.data import CategoricalData
from bnsl_dist.scores import LocalScorer
from workflows.benchmarks._common import write_result


def bench(n_rows: int, arity: int, score: str, n_parents: int, seconds: float,
          rng: np.random.Generator) -> dict:
    n_vars = 40
    d = CategoricalData.from_array(rng.integers(0, arity, size=(n_rows, n_vars)),
                                   arities=[arity] * n_vars)
    s = LocalScorer(d, score)
    fams = []
    for _ in range(256):
        vs = rng.choice(n_vars, size=n_parents + 1, replace=False)
        fams.append((int(vs[0]), np.sort(vs[1:]).astype(np.int64)))
    s.score(*fams[0])  # compile
    count = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for child, par in fams:
            s.score(child, par)
        count += len(fams)
    dt = time.perf_counter() - t0
    per = dt / count
    scanned = n_rows * (n_parents + 1) * d.codes.itemsize
    return {"n_rows": n_rows, "arity": arity, "score": score, "n_parents": n_parents,
            "scores_per_second": count / dt, "microseconds_per_score": per * 1e6,
            "column_bytes_per_second": scanned / per}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=1.0, help="time per configuration")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for n_rows in (5_000, 100_000):
        for arity in (2, 3):
            for score in ("bic", "bdeu"):
                for k in range(5):
                    r = bench(n_rows, arity, score, k, args.seconds, rng)
                    rows.append(r)
                    print(f"N={n_rows:>6} r={arity} {score:4} |P|={k}: "
                          f"{r['microseconds_per_score']:8.2f} us/score  "
                          f"{r['column_bytes_per_second'] / 1e9:6.2f} GB/s")
    path = write_result("scores", {"benchmark": "local scores, one core", "results": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
