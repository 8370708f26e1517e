"""Per-kind tables on synthetic records whose numbers are checked by hand: exact solvers
(gap, optimal, failures, solver statistics), top-p (epsilon) and the screening sweep
(mean, sd, best, seconds, arcs over seeds)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from bnsl_dist.reporting.exact import exact_table, is_exact, top_p_frame, top_p_table
from bnsl_dist.reporting.screening import screening_frame, screening_table
from bnsl_dist.reporting.text import csv_text, markdown_table
from bnsl_dist.results import records_to_table
from bnsl_dist.results.records import records_frame
from tests.results import synthetic as S


@pytest.fixture
def frame() -> pd.DataFrame:
    return records_frame(records_to_table(S.records()))


def test_exactness_from_the_registry():
    assert [is_exact(a) for a in ("astar", "awastar", "bfbnb", "ilp", "twilp", "dp")] == \
        [True] * 6
    assert not any(is_exact(a) for a in ("hc-tabu", "kg", "asobs", "no-such-solver"))


def test_exact_table_by_hand(frame):
    t = exact_table(frame, [S.failure()])
    # exact cells only (6 of 12), plus the failed cell; sorted by data set, label, k, seed
    assert list(zip(t["dataset"], t["label"], strict=True)) == [
        ("d0", "astar"), ("d1", "astar"), ("d1", "awastar-p1"), ("d1", "awastar-p2"),
        ("d1", "twilp"), ("d1", "unbounded"), ("d2", "astar")]
    row = t.iloc[0]  # score -100, bound -99: gap 1/100, not optimal
    assert (row["score"], row["bound"], row["gap"], row["optimal"]) == \
        ("-100.000", "-99.000", "0.010000", "no")
    assert (row["iterations"], row["nodes_expanded"], row["stopped"]) == ("7", "40", "budget")
    assert t.iloc[1][["gap", "optimal", "status"]].tolist() == ["0.000000", "yes", "optimal"]
    assert t.iloc[2]["gap"] == f"{10 / 110:.6f}"  # (-100 - -110) / 110
    assert t.iloc[4][["k", "gap"]].tolist() == ["2", f"{3 / 60:.6f}"]
    failed = t.iloc[6]
    assert failed["status"] == "killed: worker died 3 times"
    assert failed["score"] == "" and failed["optimal"] == "no"
    # the solver's own 'optimal' and 'algorithm' are not repeated as columns
    assert list(t.columns).count("optimal") == 1 and "algorithm" not in t.columns


def test_top_p_epsilon_by_hand(frame):
    f = top_p_frame(frame)
    assert f["p"].tolist() == [1, 2]
    assert f["epsilon"].tolist() == [1.1, pytest.approx(100 / 95)]  # reported; score/bound
    assert f["epsilon_paper"].iloc[0] == 1.2 and math.isnan(f["epsilon_paper"].iloc[1])
    t = top_p_table(frame)
    assert t["epsilon"].tolist() == ["1.10000000", "1.05263158"]
    assert t["seconds"].tolist() == ["1.000", "3.000"]


def test_screening_sweep_by_hand(frame):
    f = screening_frame(frame)
    # only the screened algorithm (hc-tabu): the baseline first, then by epsilon
    assert f["label"].tolist() == ["sota", "qds-eps0.1"]
    sota, qds = f.iloc[0], f.iloc[1]
    assert math.isnan(sota["epsilon"]) and qds["epsilon"] == 0.1 and qds["n_roots"] == 2
    assert (sota["score mean"], sota["score sd"], sota["score best"]) == (-12.0, 2.0, -10.0)
    assert qds["score mean"] == -12.0 and qds["score sd"] == pytest.approx(math.sqrt(3))
    assert sota["search s"] == 3.0 and sota["total s"] == 3.5  # mean of 2, 3, 4 + cache 0.5
    assert qds["total s"] == 1.0 + 0.25 + 0.5
    assert qds["arcs"] == pytest.approx(5 / 3)  # 3, 1, 1 arcs
    t = screening_table(frame)
    assert t.iloc[1][["epsilon", "score sd", "arcs"]].tolist() == ["0.1000", "1.73", "1.7"]


def test_no_tables_without_their_cells(frame):
    plain = frame[frame["algorithm"] == "hc-tabu"]
    plain = plain[plain["label"] == "sota"]
    assert exact_table(plain).empty and top_p_frame(plain).empty
    assert screening_frame(plain).empty


def test_text_is_fixed():
    f = pd.DataFrame({"a": ["x|y", ""], "b": ["1.50", "2"]})
    assert markdown_table(f) == "| a | b |\n|---|---|\n| x\\|y | 1.50 |\n|  | 2 |\n"
    assert csv_text(f) == "a,b\nx|y,1.50\n,2\n"


def test_screening_sweep_keeps_treewidths_apart():
    # a bounded learner (k-MAX) screened and unscreened at k = 2 and k = 4, two seeds:
    # each (label, k) is its own row, over its own two seeds
    scr = {"screening": {"epsilon": 0.1, "n_roots": 2, "seconds": 0.5, "roots": [0, 1]}}
    recs = []
    for k, base, screened in ((2, (-20.0, -22.0), (-21.0, -25.0)),
                              (4, (-10.0, -12.0), (-11.0, -13.0))):
        for seed in (0, 1):
            recs.append(S.record("base", "kmax", base[seed], k=k, seed=seed))
            recs.append(S.record("qds", "kmax", screened[seed], k=k, seed=seed,
                                 outputs=scr))
    f = screening_frame(records_frame(records_to_table(recs)))
    # (the two treewidths were one row per label: 4 seeds, score mean -16 and -17.5)
    assert f["seeds"].tolist() == [2, 2, 2, 2]
    assert list(zip(f["label"], f["k"], f["score mean"], strict=True)) == [
        ("base", 2, -21.0), ("qds", 2, -23.0), ("base", 4, -11.0), ("qds", 4, -12.0)]
    assert f["score best"].tolist() == [-20.0, -21.0, -10.0, -11.0]
    t = screening_table(records_frame(records_to_table(recs)))
    assert t["label"].tolist() == ["base k=2", "qds k=2", "base k=4", "qds k=4"]
