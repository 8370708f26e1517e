"""workflows/qds_cvll.py: the held-out log-likelihood of the qds grid's DAGs (Rahier et
al. 2018, Table 1's CVLL and Fig. 7), checked against counts taken row by row, and the
committed table against its regeneration from the committed records."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from bnsl_dist.data.dataset import CategoricalData
from workflows.qds_cvll import RECORDS, cvll_frame, heldout_per_row, write_cvll

NAMES = ["A", "B", "C"]
ARITIES = [2, 3, 2]
#: C has both others as parents, B has A.
DAG_FULL = json.dumps({"nodes": NAMES, "parents": {"A": [], "B": ["A"], "C": ["A", "B"]}})
DAG_EMPTY = json.dumps({"nodes": NAMES, "parents": {"A": [], "B": [], "C": []}})


def _data(rng, n):
    a = rng.integers(0, 2, n)
    b = (a + rng.integers(0, 2, n)) % 3
    c = ((a + b) % 2) ^ (rng.random(n) < 0.2)
    return CategoricalData.from_array(np.column_stack([a, b, c]), arities=ARITIES,
                                      names=NAMES)


def naive_heldout(parents: dict[str, list[str]], train, test, alpha):
    """Mean over the test rows of sum_i ln (N_ijk + a/(q r)) / (N_ij + a/q), the counts
    taken by looping over the training rows."""
    col = {s: i for i, s in enumerate(NAMES)}
    rows = [tuple(int(v) for v in r) for r in np.asarray(train.codes)]
    total = 0.0
    for t in np.asarray(test.codes):
        for child, ps in parents.items():
            i, js = col[child], [col[p] for p in ps]
            r, q = ARITIES[i], math.prod(ARITIES[j] for j in js)
            match = [x for x in rows if all(x[j] == t[j] for j in js)]
            n_jk = sum(1 for x in match if x[i] == t[i])
            total += math.log((n_jk + alpha / (q * r)) / (len(match) + alpha / q))
    return total / test.n_samples


@pytest.mark.parametrize("dag", [DAG_FULL, DAG_EMPTY])
@pytest.mark.parametrize("alpha", [1.0, 0.25])
def test_heldout_per_row_is_the_counts_taken_row_by_row(dag, alpha):
    rng = np.random.default_rng(7)
    train, valid, test = _data(rng, 60), _data(rng, 15), _data(rng, 25)
    got = heldout_per_row(dag, train, {"valid": valid, "test": test}, alpha)
    parents = json.loads(dag)["parents"]
    assert got["valid"] == pytest.approx(naive_heldout(parents, train, valid, alpha), rel=1e-12)
    assert got["test"] == pytest.approx(naive_heldout(parents, train, test, alpha), rel=1e-12)


def test_cvll_frame_averages_over_seeds_unscreened_first():
    rng = np.random.default_rng(3)
    splits = {"train": _data(rng, 80), "valid": _data(rng, 20), "test": _data(rng, 20)}
    scr = {"epsilon": 0.1, "n_roots": 2}
    frame = pd.DataFrame({
        "dataset": "toy", "split": "train",
        "label": ["qds", "qds", "sota", "sota"],
        "dag_json": [DAG_FULL, DAG_EMPTY, DAG_FULL, DAG_FULL],
        "screening": [scr, scr, None, None],
        "best_score": [-160.0, -200.0, -150.0, -150.0], "n_samples": 80})
    c = cvll_frame(frame, lambda name, split: splits[split], 1.0)
    assert c["label"].tolist() == ["sota", "qds"]
    full = {s: naive_heldout(json.loads(DAG_FULL)["parents"], splits["train"], splits[s], 1.0)
            for s in ("valid", "test")}
    empty = {s: naive_heldout(json.loads(DAG_EMPTY)["parents"], splits["train"], splits[s],
                              1.0) for s in ("valid", "test")}
    sota, qds = c.iloc[0], c.iloc[1]
    assert sota["test LL/row"] == pytest.approx(full["test"]) and sota["test LL/row sd"] == 0
    assert qds["valid LL/row"] == pytest.approx((full["valid"] + empty["valid"]) / 2)
    assert qds["test LL/row sd"] == pytest.approx(abs(full["test"] - empty["test"]) / math.sqrt(2))
    assert (qds["arcs"], sota["arcs"]) == (1.5, 3.0)
    assert (qds["BDeu/row"], qds["epsilon"]) == (-2.25, 0.1)
    assert math.isnan(sota["epsilon"])


@pytest.mark.slow
@pytest.mark.parametrize("grid", ["qds-2018-reduced", "qds-2018-tenth"])
def test_committed_cvll_table_regenerates(shared_data, tmp_path, grid):
    """The committed table equals a fresh computation from the committed records and the
    staged msnbc splits (about 10 s each)."""
    records = RECORDS.parents[1] / grid / "records.parquet"
    for p in write_cvll(records, tmp_path):
        committed = records.parent / p.name
        assert committed.is_file(), f"{committed}: regenerated but not committed"
        assert committed.read_text(encoding="utf-8") == p.read_text(encoding="utf-8"), \
            f"{committed} differs from its regeneration from {records}"
