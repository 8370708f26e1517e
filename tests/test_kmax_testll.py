"""workflows/kmax_testll.py (the k-MAX paper's Fig. 3, k-MAX's side): the per-row
log-likelihood of a union of splits, and the committed table against its redrawing
from the committed JSON."""

from __future__ import annotations

import json

import pytest

from workflows.kmax_testll import OUT, markdown, union_per_row


def test_union_per_row_weights_each_split_by_its_rows():
    # totals -300 over 100 rows and -50 over 10 rows: -350 over 110
    assert union_per_row({"valid": -3.0, "test": -5.0}, {"valid": 100, "test": 10,
                                                         "train": 999}) == \
        pytest.approx(-350 / 110)


def test_table_counts_the_experiments_where_the_larger_treewidth_fits_better():
    rows = [{"dataset": d, "split": "train", "k": k, "ll_per_row": v}
            for d, k, v in [("a", 2, -2.0), ("a", 5, -1.0), ("b", 2, -3.0), ("b", 5, -3.5)]]
    md = markdown(rows)
    assert "| k = 5 vs k = 2 | 2 | 1 | 1 | 0 | +0.2500 | 0.75 |" in md


def test_committed_table_is_drawn_from_the_committed_json():
    rows = json.loads((OUT / "kmax_testll.json").read_text(encoding="utf-8"))["rows"]
    assert (OUT / "kmax_testll.md").read_text(encoding="utf-8") == markdown(rows)
