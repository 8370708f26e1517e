"""Held-out log-likelihood of qds grids: a grid with a screening stage and a test split
scores each learned DAG on the test split (checked against a naive count-based oracle),
and the screening table reports its mean per row (checked by hand)."""

from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import load_data, run_cell
from bnsl_dist.reporting.screening import screening_frame, screening_table
from bnsl_dist.results import records_to_table
from bnsl_dist.results.records import records_frame
from tests.results import synthetic as S


def _naive_holdout(dag_json: str, train, test, ess: float) -> float:
    """sum over test rows of ln P(row), CPTs from train counts + ess/(q r) per cell."""
    idx = {n: i for i, n in enumerate(train.names)}
    parents = {idx[v]: [idx[p] for p in ps] for v, ps in json.loads(dag_json)["parents"].items()}
    a, b = np.asarray(train.codes).tolist(), np.asarray(test.codes).tolist()
    total = 0.0
    for v in range(train.n_vars):
        ps = parents.get(v, [])
        r = int(train.arities[v])
        q = math.prod(int(train.arities[p]) for p in ps)
        n_jk = Counter((tuple(row[p] for p in ps), row[v]) for row in a)
        n_j = Counter(tuple(row[p] for p in ps) for row in a)
        for row in b:
            j = tuple(row[p] for p in ps)
            total += math.log((n_jk[j, row[v]] + ess / (q * r)) / (n_j[j] + ess / q))
    return total


def test_qds_cells_score_their_dag_on_the_test_split():
    grid = GridConfig.model_validate({
        "name": "q", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["train", "test"]}],
        "cache": {"method": "sequential", "score": "bdeu", "ess": 2.0, "max_indegree": 2},
        "algorithms": [{"name": "hc-tabu", "label": "sota"},
                       {"name": "hc-tabu", "label": "qds", "screening": {"epsilon": 0.3}}],
        "budget": {"iterations": 5}})
    cells = expand_grid(grid)
    assert [(c.label, c.split, c.holdout is not None) for c in cells] == \
        [("sota", "train", True), ("qds", "train", True),
         ("sota", "test", False), ("qds", "test", False)]
    train, test = load_data(cells[0].data), load_data(cells[0].holdout)
    for cell in cells[:2]:
        rec = run_cell(cell)
        held = rec.outputs["holdout"]
        assert held["split"] == "test" and held["n_rows"] == test.n_samples
        assert held["total"] == pytest.approx(_naive_holdout(rec.dag_json, train, test, 2.0),
                                              rel=1e-10)
        assert held["mean"] == pytest.approx(held["total"] / test.n_samples, rel=1e-12)
    assert "holdout" not in run_cell(cells[3]).outputs
    # grids without screening: no held-out scoring (their cells and keys unchanged)
    plain = GridConfig.model_validate({**grid.model_dump(), "algorithms": [
        {"name": "hc-tabu", "label": "sota"}]})
    assert all(c.holdout is None and "holdout" not in c.json_dict()
               for c in expand_grid(plain))


def test_screening_table_reports_the_mean_holdout_per_row():
    frame = records_frame(records_to_table(S.records()))
    assert "test LL/row" not in screening_frame(frame).columns  # no record has one
    values = iter([-1.0, -2.0, -4.0, -0.5, -1.5, -1.0])
    held = [{"split": "test", "mean": next(values), "total": 0.0, "n_rows": 1}
            if alg == "hc-tabu" else None for alg in frame["algorithm"]]
    with_held = frame.assign(holdout=pd.Series(held, index=frame.index, dtype=object))
    f = screening_frame(with_held)
    by_label = dict(zip(f["label"], f["test LL/row"], strict=True))
    # the hc-tabu records in table order: three of sota, three of qds-eps0.1
    labels = frame.loc[frame["algorithm"] == "hc-tabu", "label"].tolist()
    vals = [-1.0, -2.0, -4.0, -0.5, -1.5, -1.0]
    want = {lab: np.mean([v for v, l2 in zip(vals, labels, strict=True) if l2 == lab])
            for lab in set(labels)}
    assert by_label == pytest.approx(want)
    t = screening_table(with_held)
    assert t["test LL/row"].tolist() == [f"{want[lab]:.4f}" for lab in t["label"]]
