"""Benchmark: ``learn --time-limit`` on a first run (an empty numba cache) and after.

A fresh environment, or an upgrade, compiles the numba kernels before any work: tens of
seconds. This runs ``bnsl-dist learn CSV --time-limit L`` twice in a new process per
run, the first with an empty ``NUMBA_CACHE_DIR`` (cold), the second with the cache the
first wrote (warm), and records the wall time of the process, the result's score and
arcs and its ``compile_seconds`` (absent before the limit stopped counting compilation).
``--tree`` adds the same two runs with another checkout's package (e.g. a worktree of an
earlier commit), side by side.

The data: a seeded sample of ``--network`` (default alarm, 2,000 rows) written by
``bnsl-dist data sample``.

Run: ``python -m workflows.benchmarks.cold_start [--time-limit 10] [--tree DIR]
[--workers N]`` (default ``--serial``); writes out/cold_start.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import tree_env, write_result

HERE = Path(__file__).resolve().parents[2]
_CLI = "from bnsl_dist.cli import main; main()"


def _learn(tree: Path, csv: Path, limit: float, cache_dir: Path, out: Path,
           workers: int | None) -> dict[str, Any]:
    env = tree_env(tree)
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    mode = ["--serial"] if workers is None else ["--workers", str(workers)]
    cmd = [sys.executable, "-c", _CLI, "learn", str(csv), "--time-limit",
           f"{limit:g}", *mode, "-q", "-o", str(out)]
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, cwd=out.parent)
    wall = time.perf_counter() - t
    r = json.loads(out.read_text())
    return {"process_seconds": wall, "wall_seconds": r["wall_seconds"],
            "compile_seconds": r.get("compile_seconds"), "score": r["score"],
            "arcs": sum(len(p) for p in r["dag"]["parents"].values())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--network", default="alarm")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--tree", action="append", default=[],
                    help="another checkout to run beside this one (repeatable)")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args()
    trees = [HERE, *(Path(t).resolve() for t in args.tree)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / f"{args.network}.csv"
        subprocess.run([sys.executable, "-c", _CLI, "data", "sample", args.network,
                        "-n", str(args.rows), "--seed", "0", "-o", str(csv)],
                       env=tree_env(HERE), check=True, capture_output=True)
        for i, tree in enumerate(trees):
            cache_dir = Path(tmp) / f"numba-{i}"
            for run in ("cold", "warm"):
                r = _learn(tree, csv, args.time_limit, cache_dir, Path(tmp) / f"r{i}.json",
                           args.workers)
                rows.append({"tree": str(tree), "run": run, **r})
                print(f"{tree.name:>12} {run}: {r['process_seconds']:6.1f} s, score "
                      f"{r['score']:,.1f}, {r['arcs']} arcs, compiling "
                      f"{r['compile_seconds']}", flush=True)
    path = write_result("cold_start", {"network": args.network, "rows": args.rows,
                                       "time_limit": args.time_limit,
                                       "workers": args.workers, "runs": rows})
    print(path)


if __name__ == "__main__":
    main()
