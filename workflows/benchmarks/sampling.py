"""Benchmark: BIF parsing, forward sampling and random-network generation (one core).

* read munin.bif.gz (1,041 variables) and forward-sample 5,000 rows from it;
* generate random networks of 2,000 / 4,000 / 10,000 variables (the r0-r14 recipe:
  max in-degree 4, 2-4 states, Dirichlet(1)) and sample 5,000 rows from each.

Each timing is the best of ``--repeats`` runs (perf_counter). Run:
``python -m workflows.benchmarks.sampling`` (writes out/sampling.json).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from bnsl_dist.data import bundled_path
from bnsl_dist.model import random_network, read_bif, sample
from workflows.benchmarks._common import SHARED_DATA, write_result


def _best(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-samples", type=int, default=5000)
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 4000, 10000])
    args = ap.parse_args()
    n = args.n_samples
    rows: list[dict[str, Any]] = []

    munin = SHARED_DATA / "bif" / "munin.bif.gz"
    bif_path = munin if munin.exists() else bundled_path("bif/alarm.bif.gz")
    t_read, net = _best(lambda: read_bif(bif_path), args.repeats)
    t_sample, data = _best(lambda: sample(net, n, np.random.default_rng(1)), args.repeats)
    rows.append({"network": bif_path.name, "n_vars": net.n_vars, "n_parameters":
                 net.n_parameters(), "read_bif_seconds": t_read, "n_samples": n,
                 "sample_seconds": t_sample, "rows_per_second": n / t_sample})
    print(f"{bif_path.name}: read {t_read:.2f} s, {n} rows sampled in {t_sample:.2f} s")

    for size in args.sizes:
        t_gen, rnet = _best(lambda s=size: random_network(s, 4, (2, 4), 1.0,
                                                          np.random.default_rng(s)),
                            args.repeats)
        t_s, _ = _best(lambda r=rnet: sample(r, n, np.random.default_rng(0)), args.repeats)
        rows.append({"network": f"random-{size}", "n_vars": size, "max_indegree": 4,
                     "n_arcs": rnet.dag.n_arcs, "n_parameters": rnet.n_parameters(),
                     "generate_seconds": t_gen, "n_samples": n, "sample_seconds": t_s,
                     "rows_per_second": n / t_s})
        print(f"random {size}: generated in {t_gen:.2f} s ({rnet.dag.n_arcs} arcs), "
              f"{n} rows sampled in {t_s:.2f} s")
    path = write_result("sampling", {"benchmark": "BIF read, forward sampling, random "
                                                  "networks; one core, best of "
                                                  f"{args.repeats}", "results": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
