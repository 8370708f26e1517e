"""Benchmark: the seconds of one exact score in independence selection against the data's
rows — the figures behind the grid's cache estimate
(:data:`bnsl_dist.pipeline.cost.SCORE_SECONDS_PER_ROW`, which decides which caches fan
out and which start first).

For each Twenty Dataset below, the training split's first variables are explored at
``--scores`` exact scores each (one warm-up variable first), in one process, and the
seconds per variable, per score and per score and row are written.

Run: ``python -m workflows.benchmarks.score_cost [--scores 3000]``; writes
``out/score_cost.json``. Needs ``BNSL_SHARED_DATA`` (the Twenty Datasets).
"""

from __future__ import annotations

import argparse
import time

from workflows.benchmarks._common import train_data, write_result

#: (data set, variables timed): small and large numbers of rows.
DATA = (("dna", 8), ("nltcs", 8), ("book", 8), ("plants", 8), ("kosarek", 6), ("kdd", 4),
        ("msnbc", 3))


def main() -> None:
    from bnsl_dist.cache.build import as_spec, explore_batch

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scores", type=int, default=3000, help="exact scores per variable")
    ap.add_argument("--name", default="score_cost")
    args = ap.parse_args()
    spec = as_spec(None, {"method": "independence", "score": "bic",
                          "scores_per_variable": args.scores})
    rows = []
    for name, k in DATA:
        d = train_data(name)
        explore_batch(d, [0], spec)  # kernels loaded, the scorer's tables built once
        t0 = time.perf_counter()
        explore_batch(d, list(range(1, 1 + k)), spec)
        per_var = (time.perf_counter() - t0) / k
        row = {"data": name, "n_vars": d.n_vars, "rows": d.n_samples, "variables_timed": k,
               "seconds_per_variable": round(per_var, 4),
               "seconds_per_score": per_var / args.scores,
               "seconds_per_score_and_row": per_var / args.scores / d.n_samples}
        print(row, flush=True)
        rows.append(row)
    print(write_result(args.name, {"settings": vars(args), "rows": rows}))


if __name__ == "__main__":
    main()
