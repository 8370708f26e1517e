"""workflows/kmax_budget_held.py: each k-MAX/k-G record held to its budget from its
stored trace, and the committed table against its regeneration from the records."""

from __future__ import annotations

import math

import pandas as pd

from bnsl_dist.results.export import load_records
from workflows.kmax_budget_held import OUT, held_scores, markdown


def test_held_score_is_the_best_improvement_within_the_budget_less_the_setup():
    f = pd.DataFrame({"budget_seconds": [3.6, 3.6, 3.6],
                      "elapsed": [6.1, 3.5, 5.0],  # setups of 2.5 s, none, 1.4 s
                      "trace_elapsed": [[0.5, 1.0, 1.2, 3.0], [0.1, 3.59], [2.5]],
                      "trace_scores": [[-10.0, -9.0, -8.0, -7.0], [-3.0, -2.0], [-1.0]]})
    got = held_scores(f)
    assert got["held_at"].round(9).tolist() == [1.1, 3.6, 2.2]
    assert got["held_score"].tolist() == [-9.0, -2.0, -math.inf]


def test_committed_table_regenerates_from_the_records():
    frame = load_records(OUT / "records.parquet").frame()
    assert (OUT / "budget_held.md").read_text(encoding="utf-8") == markdown(frame)
