"""Benchmark: the best network within a total time limit (issue 17 targets), one core.

Side by side in one run, every DAG scored by one BIC (nats) computed here with plain
numpy (not bnsl_dist's kernels):

* **alarm**, N = 5,000 rows sampled from ``bif/alarm.bif.gz`` by bnsl_dist's sampler:
  :func:`bnsl_dist.within.learn_within` with ``--alarm-seconds`` (default 10) against
  pyAgrum's tabu search and, with ``--ges``, causal-learn's GES with BDeu (target:
  BIC >= GES's);
* **random 500**: a BNGenerator network (pyAgrum, 500 variables, 750 arcs, <= 4
  states, fixed seed), N = 5,000: pyAgrum's tabu search on one thread, then
  ``learn_within`` with pyAgrum's wall time (target: a higher BIC).

pyAgrum and causal-learn are benchmark-only dependencies (``pip install pyagrum
causal-learn``). Run: ``python -m workflows.benchmarks.time_limit [--ges] [--skip-500]``
(writes out/time_limit.json).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.data import read_data
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.data.io import write_csv
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.within import learn_within
from workflows.benchmarks._common import SHARED_DATA, write_result


def bic(codes: np.ndarray, arities: np.ndarray, parents: list[list[int]]) -> float:
    """BIC in nats of a DAG (ALGORITHMS.md §2), counted with numpy.unique."""
    n_rows = codes.shape[0]
    total = 0.0
    for v, ps in enumerate(parents):
        keys = np.zeros(n_rows, dtype=np.int64)
        for p in sorted(ps):
            _, keys = np.unique(keys * int(arities[p]) + codes[:, p], return_inverse=True)
        _, joint = np.unique(keys * int(arities[v]) + codes[:, v], return_counts=True)
        _, marg = np.unique(keys, return_counts=True)
        ll = float(np.sum(joint * np.log(joint)) - np.sum(marg * np.log(marg)))
        q = math.prod(int(arities[p]) for p in ps)
        total += ll - 0.5 * math.log(n_rows) * (int(arities[v]) - 1) * q
    return total


def _parents_from_arcs(names: tuple[str, ...], arcs: list[tuple[str, str]]) -> list[list[int]]:
    idx = {nm: i for i, nm in enumerate(names)}
    par: list[list[int]] = [[] for _ in names]
    for a, b in arcs:
        par[idx[b]].append(idx[a])
    return par


def pyagrum_tabu(csv: Path, data: CategoricalData) -> dict[str, Any]:
    import pyagrum as gum

    t = time.perf_counter()
    learner = gum.BNLearner(str(csv))
    learner.useScoreBIC()
    learner.useSmoothingPrior(1e-6)  # BIC refuses unseen parent configurations without it
    learner.useLocalSearchWithTabuList()
    learner.setNumberOfThreads(1)
    bn = learner.learnBN()
    wall = time.perf_counter() - t
    arcs = [(bn.variable(a).name(), bn.variable(b).name()) for a, b in bn.arcs()]
    par = _parents_from_arcs(data.names, arcs)
    return {"tool": "pyAgrum tabu (1 thread)", "seconds": round(wall, 2),
            "bic": bic(np.asarray(data.codes, dtype=np.int64), data.arities, par),
            "arcs": len(arcs)}


def ges_bdeu(data: CategoricalData) -> dict[str, Any]:
    from causallearn.search.ScoreBased.GES import ges
    from causallearn.utils.PDAG2DAG import pdag2dag

    x = np.asarray(data.codes, dtype=float)
    t = time.perf_counter()
    graph = pdag2dag(ges(x, score_func="local_score_BDeu")["G"]).graph
    wall = time.perf_counter() - t
    n = x.shape[1]
    par = [[i for i in range(n) if graph[j, i] == 1 and graph[i, j] == -1] for j in range(n)]
    return {"tool": "causal-learn GES (BDeu)", "seconds": round(wall, 2),
            "bic": bic(np.asarray(data.codes, dtype=np.int64), data.arities, par),
            "arcs": sum(map(len, par))}


def ours(data: CategoricalData, seconds: float, seed: int,
         peer_bic: float | None = None) -> dict[str, Any]:
    """``learn_within(seconds)``; with ``peer_bic``, also when its incumbent first
    scored above it (``first_above_peer_s``, seconds from the call)."""
    # compile (or load) every kernel for this data's array layout before the clock starts
    learn_within(data, None, seed, scores_per_variable=data.n_vars + 20, search_iterations=2,
                 polish_iterations=1, polish_from="both", polish_candidates="cache")
    t = time.perf_counter()
    res = learn_within(data, seconds, seed)
    wall = time.perf_counter() - t
    par = [list(p) for p in res.dag.parents]
    above = [i.elapsed for i in res.trace.incumbents
             if peer_bic is not None and i.score > peer_bic]
    return {"tool": f"bnsl_dist learn_within({seconds:.1f} s)", "seconds": round(wall, 2),
            "first_above_peer_s": round(above[0], 2) if above else None,
            "bic": bic(np.asarray(data.codes, dtype=np.int64), data.arities, par),
            "own_score": res.score, "arcs": res.dag.n_arcs,
            "stages": {k: round(v, 2) for k, v in res.seconds.items()},
            "cache_sets": res.cache.n_sets, "exact_scores": res.exact_scores,
            "incumbents": [[round(i.elapsed, 2), round(i.score, 1), i.info.get("stage")]
                           for i in res.trace.incumbents][-5:]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--alarm-seconds", type=float, default=10.0)
    ap.add_argument("--ges", action="store_true", help="also run causal-learn GES (slow)")
    ap.add_argument("--skip-500", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import pyagrum as gum

    out: dict[str, Any] = {"pyagrum": gum.__version__,
                           "load_average_start": os.getloadavg(), "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        net = read_bif(SHARED_DATA / "bif" / "alarm.bif.gz")
        alarm = sample(net, 5000, rng=args.seed)
        csv = Path(tmp) / "alarm.csv"
        write_csv(alarm, csv)
        true_bic = bic(np.asarray(alarm.codes, dtype=np.int64), alarm.arities,
                       [list(p) for p in net.dag.parents])
        row: dict[str, Any] = {"data": "alarm", "n_vars": 37, "n_samples": 5000,
                               "generating_dag_bic": true_bic,
                               "results": [ours(alarm, args.alarm_seconds, args.seed),
                                           pyagrum_tabu(csv, alarm)]}
        if args.ges:
            row["results"].append(ges_bdeu(alarm))
        out["rows"].append(row)
        print(row, flush=True)
        if not args.skip_500:
            gum.initRandom(17)
            bn = gum.BNGenerator().generate(500, 750, 4)
            gen = gum.BNDatabaseGenerator(bn)
            gen.drawSamples(5000)
            csv = Path(tmp) / "r500.csv"
            gen.toCSV(str(csv))
            data = read_data(csv)
            peer = pyagrum_tabu(csv, data)
            row = {"data": "BNGenerator 500 vars, 750 arcs, <= 4 states (pyAgrum seed 17)",
                   "n_vars": 500, "n_samples": 5000,
                   "results": [peer, ours(data, peer["seconds"], args.seed, peer["bic"])]}
            out["rows"].append(row)
            print(row, flush=True)
    out["load_average_end"] = os.getloadavg()
    print(write_result("time_limit", out))


if __name__ == "__main__":
    main()
