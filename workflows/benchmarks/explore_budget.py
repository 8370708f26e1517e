"""Benchmark: how independence selection spends a small per-variable time budget.

At ``--seconds`` per variable (default 0.01: issue 15's r10 run gives 0.02, the
2-worker check 0.01), each of the first ``--vars`` variables of a data set (default
r10: 10,000 variables, N = 5,000) is explored and its wall time, exact scores and stop
reason recorded. The figures: the median and 90th percentile of the wall time per
variable, its median overrun past the budget (the pruning and flattening after the
deadline), and the median number of sets the search scored past ∅ and the n - 1
singletons (what the budget bought). Each round runs in a fresh process; with ``--baseline TREE``
the package of another checkout (``git worktree add --detach TREE COMMIT``) is run in
the rounds in between, so both are measured side by side under the same load.

Run: ``python -m workflows.benchmarks.explore_budget [--data r10] [--seconds 0.01]
[--vars 200] [--rounds 3] [--baseline TREE]`` (writes ``out/<--name>.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _measure(data_name: str, seconds: float, n_vars: int) -> dict[str, Any]:
    """One round in this process: per-variable wall, exact scores, stop reasons. Runs
    with another checkout's ``bnsl_dist`` and ``workflows`` too (``--baseline``), so it
    uses the package only; the data are made by the parent."""
    from bnsl_dist.cache.independence import explore_independence
    from bnsl_dist.pipeline import DataRef, load_data
    from bnsl_dist.scores import LocalScorer

    data = load_data(DataRef(name=data_name, split="train"))
    scorer = LocalScorer(data, "bic")
    scorer.state_bitsets()  # once per data set and process: not a variable's time
    explore_independence(scorer, 0, max_scores=2)  # compiled
    wall, exact, stopped = [], [], []
    for v in range(min(n_vars, data.n_vars)):
        t0 = time.perf_counter()
        _, stats = explore_independence(scorer, v, seconds=seconds)
        wall.append(time.perf_counter() - t0)
        exact.append(stats.exact_scores - data.n_vars)  # past ∅ and the singletons
        stopped.append(stats.stopped_by)
    return {"wall": wall, "exact": exact, "stopped": stopped}


def _round(tree: str | None, args: argparse.Namespace) -> dict[str, Any]:
    """One round in a fresh interpreter importing ``bnsl_dist`` from ``tree`` (default:
    the installed package)."""
    from workflows.benchmarks._common import tree_env

    env = {**os.environ} if tree is None else tree_env(tree)
    here = str(Path(__file__).resolve())
    code = (f"import json, runpy; measure = runpy.run_path({here!r})['_measure']; "
            f"print(json.dumps(measure({args.data!r}, {args.seconds!r}, {args.vars})))")
    with tempfile.TemporaryDirectory() as tmp:  # a neutral folder: no checkout on sys.path
        out = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp,
                             capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"a round of {tree or 'this tree'} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(rounds: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    wall = [w for r in rounds for w in r["wall"]]
    exact = [e for r in rounds for e in r["exact"]]
    stopped = [s for r in rounds for s in r["stopped"]]
    q90 = statistics.quantiles(wall, n=10)[-1]
    return {"median_ms": round(1e3 * statistics.median(wall), 3),
            "p90_ms": round(1e3 * q90, 3),
            "median_overrun_ms": round(1e3 * (statistics.median(wall) - seconds), 3),
            "median_search_scores": statistics.median(exact),
            "stopped_by_seconds": round(stopped.count("seconds") / len(stopped), 3),
            "median_ms_per_round": [round(1e3 * statistics.median(r["wall"]), 3)
                                    for r in rounds]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="r10", help="registered data set (recipes are made)")
    ap.add_argument("--seconds", type=float, default=0.01, help="budget per variable")
    ap.add_argument("--vars", type=int, default=200, help="the first VARS variables")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline", default=None, metavar="TREE",
                    help="another checkout, measured in the rounds in between")
    ap.add_argument("--name", default="explore_budget")
    args = ap.parse_args()
    from workflows.benchmarks._common import train_data, write_result

    train_data(args.data)  # a recipe made once, before any round
    trees: dict[str, str | None] = {"this": None}
    if args.baseline is not None:
        trees["baseline"] = args.baseline
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            rounds[label].append(_round(tree, args))
    payload: dict[str, Any] = {"settings": vars(args),
                               **{k: _summary(v, args.seconds) for k, v in rounds.items()},
                               "load_average": os.getloadavg()}
    if args.baseline is not None:
        payload["search_scores_this_over_baseline"] = round(
            payload["this"]["median_search_scores"]
            / max(1, payload["baseline"]["median_search_scores"]), 3)
    print(json.dumps({k: v for k, v in payload.items() if k != "settings"}, indent=1))
    print(write_result(args.name, payload))


if __name__ == "__main__":
    main()
