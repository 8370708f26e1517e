"""workflows/benchmarks/peers_optimum.py: the ILP optimum of a CSV's complete
in-degree-bounded cache equals the best BIC over every DAG, enumerated, scored by the
benchmark's own independent scorer (``peers.bic``)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from workflows.benchmarks.peers import bic
from workflows.benchmarks.peers_optimum import optimum


def _acyclic(parents: dict[str, tuple[str, ...]]) -> bool:
    left = dict(parents)
    while left:
        roots = [c for c, ps in left.items() if not set(ps) & left.keys()]
        if not roots:
            return False
        for c in roots:
            del left[c]
    return True


def test_optimum_is_the_best_dag_by_enumeration(tmp_path):
    rng = np.random.default_rng(5)
    n = 600
    a = rng.integers(0, 3, n)
    b = (a + (rng.random(n) < 0.2)) % 3
    c = rng.integers(0, 2, n) ^ (b > 1)
    d = (a == 0) & (rng.random(n) < 0.8) | (c == 1) & (rng.random(n) < 0.3)
    df = pd.DataFrame({"a": a, "b": b, "c": c, "d": d.astype(int)}).astype(str)
    csv = tmp_path / "toy.csv"
    df.to_csv(csv, index=False)

    cols = list(df.columns)
    root = {v: bic(df[[v]], {}) for v in cols}
    fam = {}
    for v in cols:
        others = [u for u in cols if u != v]
        for size in range(3):  # in-degree <= 2
            for ps in itertools.combinations(others, size):
                fam[v, ps] = bic(df[[v, *ps]], {v: list(ps)}) - sum(root[p] for p in ps)
    choices = [[ps for (u, ps) in fam if u == v] for v in cols]
    best = max(sum(fam[v, ps] for v, ps in zip(cols, pick, strict=True))
               for pick in itertools.product(*choices)
               if _acyclic(dict(zip(cols, pick, strict=True))))

    got = optimum(csv, max_indegree=2, seconds=60.0)
    assert got["proved_optimal"]
    assert abs(got["score"] - best) < 1e-6 * abs(best)
    assert abs(bic(df, got["parents"]) - best) < 1e-6 * abs(best)
    assert max(map(len, got["parents"].values())) <= 2
