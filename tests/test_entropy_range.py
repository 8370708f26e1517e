"""workflows/entropy_range.py (the ASOBS-ENT paper's Fig. 1): the range statistic and
the choice of the variables at both ends of the entropy scale, against sets listed by
hand; the committed table against its redrawing from the committed JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnsl_dist.cache import ParentSetCache
from workflows.entropy_range import OUT, ends, markdown, ranges, variable_row

SETS = [
    [((), -50.0), ((1,), -20.0), ((2,), -35.0), ((1, 2), -18.0)],
    [((), -10.0), ((0,), -9.0)],
    [((), -30.0)],
    [((), -40.0), ((0,), -39.5), ((2,), -41.0)],  # a set worse than the empty one
]


def test_ranges_are_each_sets_gain_over_the_worst():
    cache = ParentSetCache.from_lists(SETS, names=list("ABCD"))
    for v, sets in enumerate(SETS):
        worst = min(s for _, s in sets)
        assert sorted(ranges(cache, v).tolist()) == sorted(s - worst for _, s in sets)
    row = variable_row(cache, 0, 0.5)
    # the ranges of A are 0, 15, 30, 32: quartiles by linear interpolation
    assert (row["sets"], row["min"], row["q1"], row["median"], row["q3"], row["max"]) == \
        (4, 0.0, 11.25, 22.5, 30.5, 32.0)


def test_ends_are_the_least_and_most_entropic_ties_by_index():
    cache = ParentSetCache.from_lists(SETS, names=list("ABCD"))
    low, high = ends(cache, np.array([0.3, 0.1, 0.1, 0.6]), k=2)
    assert [x["variable"] for x in low] == ["B", "C"]
    assert [x["variable"] for x in high] == ["A", "D"]  # most entropic last
    assert high[1]["max"] == pytest.approx(1.5)


def test_committed_table_is_drawn_from_the_committed_json():
    rows = json.loads((OUT / "entropy_range.json").read_text(encoding="utf-8"))["rows"]
    assert (OUT / "entropy_range.md").read_text(encoding="utf-8") == markdown(rows)
