"""workflows/pops_fig5.py (Fan et al. 2014, Fig. 5): the drop profile of a variable's
POPS scores, against lists worked by hand; the committed table against its redrawing
from the committed JSON."""

from __future__ import annotations

import json

from workflows.pops_fig5 import OUT, drop_profile, markdown


def test_drop_profile_finds_the_largest_gap_best_first():
    # best first: -10, -12, -40, -45 (given in any order): drops 2, 28, 5 over a range of 35
    assert drop_profile([-45.0, -10.0, -40.0, -12.0]) == \
        {"after": 2, "drop": 28.0, "share": 0.8}
    # equal drops: the first
    assert drop_profile([-1.0, -2.0, -3.0])["after"] == 1
    assert drop_profile([-5.0]) == {"after": None, "drop": None, "share": None}
    assert drop_profile([-5.0, -5.0])["share"] is None


def test_committed_table_is_drawn_from_the_committed_json():
    pops = json.loads((OUT / "pops_fig5.json").read_text(encoding="utf-8"))["pops"]
    assert (OUT / "pops_fig5.md").read_text(encoding="utf-8") == markdown(pops)
