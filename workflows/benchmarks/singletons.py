"""Benchmark: the singleton floor of independence selection, state bitsets against rows.

Independence selection scores ∅ and every singleton of a variable before anything else,
whatever its budget: n - 1 scores of N rows each. For the first ``--vars`` variables of
a data set (default r10: 10,000 variables, N = 5,000), only that part
(``max_scores = n``) is timed, alternately with the data set's state bitsets
(:meth:`bnsl_dist.scores.LocalScorer.state_bitsets`, the default) and without them
(``LocalScorer(..., bitsets=False)``: every singleton counted from the rows), in
one process, ``--rounds`` rounds; the two lists of each variable are checked equal.

Run: ``python -m workflows.benchmarks.singletons [--data r10] [--vars 40] [--rounds 3]``
(writes ``out/<--name>.json``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import numpy as np

from workflows.benchmarks._common import train_data, write_result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="r10", help="registered data set (recipes are made)")
    ap.add_argument("--vars", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--name", default="singletons")
    args = ap.parse_args()
    from bnsl_dist.cache.independence import explore_independence
    from bnsl_dist.scores import LocalScorer

    data = train_data(args.data)
    n = data.n_vars
    t0 = time.perf_counter()
    bitsets = LocalScorer(data, "bic").state_bitsets()
    build = time.perf_counter() - t0
    variables = list(range(min(args.vars, n)))
    explore_independence(LocalScorer(data, "bic"), 0, max_scores=2)  # compiled
    per_var: dict[str, list[float]] = {"bitsets": [], "rows": []}
    for _ in range(args.rounds):
        lists = {}
        for kind, use in (("bitsets", True), ("rows", False)):
            scorer = LocalScorer(data, "bic", bitsets=use)
            t0 = time.perf_counter()
            lists[kind] = [explore_independence(scorer, v, max_scores=n)[0] for v in variables]
            per_var[kind].append((time.perf_counter() - t0) / len(variables))
        if lists["bitsets"] != lists["rows"]:
            raise RuntimeError("the bitsets changed a variable's sets or scores")
    med = {k: statistics.median(v) for k, v in per_var.items()}
    payload: dict[str, Any] = {
        "settings": vars(args), "n_vars": n, "n_samples": data.n_samples,
        "arities": np.bincount(data.arities).tolist(),
        "bitset_build_seconds": round(build, 4),
        "bitset_mbytes": round(bitsets[0].nbytes / 2**20, 2),
        "ms_per_variable": {k: [round(1000 * x, 3) for x in v] for k, v in per_var.items()},
        "median_ms_per_variable": {k: round(1000 * v, 3) for k, v in med.items()},
        "rows_over_bitsets": round(med["rows"] / med["bitsets"], 2),
        "same_sets": True, "load_average": os.getloadavg()}
    print(payload)
    print(write_result(args.name, payload))


if __name__ == "__main__":
    main()
