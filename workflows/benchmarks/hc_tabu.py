"""Benchmark: hc-tabu (greedy hill climbing with a tabu list on a parent-set cache) as
the number of variables grows, side by side with other checkouts.

For each ``--n-vars`` a random network (max in-degree 3, seed 0) is sampled to 500
rows and its independence-selection cache built with 200 exact scores per variable
(written once to ``out/hc_tabu_data/``); then each tree (this checkout and every
``--tree``) runs hc-tabu for ``--iterations`` climbs from the empty DAG, seed 0, in a
process of its own (the kernels warmed by one climb on the same cache first). The
trees alternate ``--repeat`` times; the JSON records each run's seconds, score and a
digest of its DAG (equal digests: the same climb).

Run: ``python -m workflows.benchmarks.hc_tabu [--n-vars 3000 10000] [--tree DIR]
[--iterations 1] [--repeat 2]``; writes out/hc_tabu.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from workflows.benchmarks._common import OUT_DIR, tree_env, write_result

HERE = Path(__file__).resolve().parents[2]

_MAKE = """
import sys
import numpy as np
from bnsl_dist.cache import build_cache, write_jkl
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.sampling import sample
n = int(sys.argv[1])
net = random_network(n, max_indegree=3, rng=np.random.default_rng(0))
write_jkl(build_cache(sample(net, 500, rng=1), method="independence",
                      scores_per_variable=200), sys.argv[2])
"""

_RUN = """
import hashlib, json, sys, time
import numpy as np
from bnsl_dist.cache import read_jkl
from bnsl_dist.search.base import Budget, make_optimizer
c = read_jkl(sys.argv[1])
list(make_optimizer("hc-tabu").run(c, Budget(max_iterations=1), np.random.default_rng(0)))
t = time.perf_counter()
incs = list(make_optimizer("hc-tabu").run(c, Budget(max_iterations=int(sys.argv[2])),
                                          np.random.default_rng(0)))
dt = time.perf_counter() - t
dag = json.dumps([list(map(int, p)) for p in incs[-1].dag.parents])
print(json.dumps({"seconds": dt, "score": incs[-1].score,
                  "dag_md5": hashlib.md5(dag.encode()).hexdigest()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-vars", type=int, nargs="+", default=[3000, 10000])
    ap.add_argument("--tree", action="append", default=[])
    ap.add_argument("--iterations", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    trees = [HERE, *(Path(t).resolve() for t in args.tree)]
    folder = OUT_DIR / "hc_tabu_data"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in args.n_vars:
        cache = folder / f"random{n}.jkl"
        if not cache.is_file():
            subprocess.run([sys.executable, "-c", _MAKE, str(n), str(cache)],
                           env=tree_env(HERE), check=True, cwd=folder)
        for r in range(args.repeat):
            for tree in (trees if r % 2 == 0 else trees[::-1]):
                out = subprocess.run([sys.executable, "-c", _RUN, str(cache),
                                      str(args.iterations)], env=tree_env(tree), check=True,
                                     cwd=folder, capture_output=True, text=True).stdout
                row = {"n_vars": n, "tree": str(tree), "repeat": r,
                       **json.loads(out.splitlines()[-1])}
                rows.append(row)
                print(f"n={n} {tree.name}: {row['seconds']:.2f} s, score "
                      f"{row['score']:,.2f}, dag {row['dag_md5'][:8]}", flush=True)
    print(write_result("hc_tabu", {"settings": vars(args), "runs": rows}))


if __name__ == "__main__":
    main()
