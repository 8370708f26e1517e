"""ΔBIC categories, the sign test (vs scipy), and tables from hand-made records."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

from bnsl_dist.reporting.tables import (
    CATEGORIES,
    SIZE_CLASSES,
    Comparison,
    binomial_two_sided_p,
    default_comparisons,
    delta_table,
    experiment_scores,
    paired_deltas,
    raftery_category,
    sign_test,
    size_class,
    write_tables,
)


@pytest.mark.parametrize("n", [0, 1, 2, 5, 10, 17, 40, 75])
def test_binomial_p_matches_scipy(n):
    for w in range(n + 1):
        ours = binomial_two_sided_p(w, n)
        ref = 1.0 if n == 0 else binomtest(w, n, 0.5, alternative="two-sided").pvalue
        assert ours == pytest.approx(ref, rel=1e-12, abs=1e-300), (w, n)


def test_binomial_p_bad_input():
    with pytest.raises(ValueError):
        binomial_two_sided_p(5, 3)


@pytest.mark.parametrize("delta, cat", [
    (10.0001, "extremely positive"), (10.0, "strongly positive"), (6.0001, "strongly positive"),
    (6.0, "positive"), (2.0, "positive"), (1.9999, "neutral"), (0.0, "neutral"),
    (-1.9999, "neutral"), (-2.0, "negative"), (-6.0, "negative"), (-6.5, "strongly negative"),
    (-10.0, "strongly negative"), (-10.5, "extremely negative"), (1e6, "extremely positive"),
])
def test_raftery_boundaries(delta, cat):
    assert raftery_category(delta) == cat


def test_category_agrees_with_sign_test():
    rng = np.random.default_rng(0)
    for d in np.concatenate([rng.normal(0, 8, 300), [2.0, -2.0, 1.999, -1.999]]):
        st = sign_test([d])
        cat = raftery_category(float(d))
        assert (st.wins_a == 1) == (cat in CATEGORIES[:3])
        assert (st.wins_b == 1) == (cat in CATEGORIES[4:])
    with pytest.raises(ValueError):
        raftery_category(math.nan)


def test_sign_test_drops_ties():
    st = sign_test([12.0, 3.0, 2.0, 1.0, -1.5, -2.0])
    assert (st.wins_a, st.wins_b, st.ties) == (3, 1, 2)
    assert st.p_value == pytest.approx(binomtest(3, 4).pvalue)
    st = sign_test([20.0] * 10)
    assert st.p_value == pytest.approx(2 / 1024) and st.significant
    assert not sign_test([20.0] * 6).significant  # 2/64 > 0.01


def test_size_classes():
    assert [size_class(n) for n in (16, 200, 201, 1999, 2000, 10000)] == \
        [SIZE_CLASSES[0], SIZE_CLASSES[0], SIZE_CLASSES[1], SIZE_CLASSES[1], SIZE_CLASSES[2],
         SIZE_CLASSES[2]]


def _row(dataset, split, label, k, seed, n_vars, score, elapsed=(0.1, 5.0), scores=None):
    scores = scores if scores is not None else (score - 50.0, score)
    return {"grid": "g", "dataset": dataset, "split": split, "label": label, "k": k,
            "seed": seed, "n_vars": n_vars, "best_score": score,
            "trace_elapsed": list(elapsed), "trace_scores": list(scores),
            "budget_seconds": 10.0}


def _frame():
    rows = []
    # small data set, two splits: A beats B by 12 and by 3 (train), ties on valid
    rows += [_row("s", "train", "A", None, 0, 50, -100.0), _row("s", "train", "B", None, 0, 50, -112.0)]
    rows += [_row("s", "valid", "A", None, 0, 50, -100.0), _row("s", "valid", "B", None, 0, 50, -101.0)]
    # large data set: B beats A by 7; two seeds for A (median -> -207)
    rows += [_row("l", "train", "A", None, 0, 500, -206.0), _row("l", "train", "A", None, 1, 500, -208.0),
             _row("l", "train", "B", None, 0, 500, -200.0)]
    # very large: only A (unpaired, left out)
    rows += [_row("v", "train", "A", None, 0, 3000, -1.0)]
    return pd.DataFrame(rows)


def test_paired_deltas_by_hand():
    d = paired_deltas(_frame(), "A", "B")
    got = {(r.dataset, r.split): r.delta for r in d.itertuples()}
    assert got == {("s", "train"): 12.0, ("s", "valid"): 1.0, ("l", "train"): -7.0}
    assert set(d["size"]) == {SIZE_CLASSES[0], SIZE_CLASSES[1]}


def test_scores_at_checkpoint_from_trace():
    s = experiment_scores(_frame(), at=1.0)
    a = s[(s.dataset == "s") & (s.split == "train") & (s.label == "A")]
    assert float(a["score"].iloc[0]) == -150.0  # only the first incumbent (0.1 s) counts
    d = paired_deltas(_frame(), "A", "B", at=0.01)
    assert d.empty  # nothing found within 10 ms


def test_checkpoint_median_counts_runs_without_a_network():
    # at 1 s A's three runs stand at: nothing yet (its first network comes at 5 s), -90,
    # -100; their median is -100 (the run with nothing is the worst), not the median
    # -95 of the two runs that had one
    rows = [_row("d", "train", "A", None, 0, 10, -80.0, elapsed=(5.0,), scores=(-80.0,)),
            _row("d", "train", "A", None, 1, 10, -90.0, elapsed=(0.1,), scores=(-90.0,)),
            _row("d", "train", "A", None, 2, 10, -100.0, elapsed=(0.1,), scores=(-100.0,)),
            _row("d", "train", "B", None, 0, 10, -97.0, elapsed=(0.1,), scores=(-97.0,))]
    d = paired_deltas(pd.DataFrame(rows), "A", "B", at=1.0)
    assert d["score_a"].tolist() == [-100.0] and d["delta"].tolist() == [-3.0]
    assert sign_test(d["delta"]).wins_b == 1  # B wins at 1 s (A was counted a win)
    # at the end of the budget: -80, -90, -100 -> -90
    assert paired_deltas(pd.DataFrame(rows), "A", "B")["delta"].tolist() == [7.0]
    # with half the runs or more without a network there is no score: no pair
    s = experiment_scores(pd.DataFrame(rows[:2] + rows[3:]), at=1.0)
    assert math.isnan(float(s.loc[s["label"] == "A", "score"].iloc[0]))
    assert paired_deltas(pd.DataFrame(rows[:2] + rows[3:]), "A", "B", at=1.0).empty


def test_delta_table_by_size_by_hand():
    t = delta_table(paired_deltas(_frame(), "A", "B"), Comparison("A", "B", columns=("size",)))
    c = t.counts
    assert list(c.columns) == list(SIZE_CLASSES)
    assert c.loc["extremely positive", SIZE_CLASSES[0]] == 1
    assert c.loc["neutral", SIZE_CLASSES[0]] == 1
    assert c.loc["strongly negative", SIZE_CLASSES[1]] == 1
    assert int(c.values.sum()) == 3
    small = t.tests[SIZE_CLASSES[0]]
    assert (small.wins_a, small.wins_b, small.ties, small.p_value) == (1, 0, 1, 1.0)
    assert t.tests[SIZE_CLASSES[2]].n == 0
    md = t.to_markdown()
    assert "| extremely positive | 1 | 0 | 0 |" in md
    assert "A wins (ΔBIC ≥ 2)" in md and "**" not in md


def test_delta_table_by_k_significant_bold():
    rows = []
    for i in range(10):
        for k in (2, 4):
            rows.append(_row(f"d{i}", "train", "kmax", k, 0, 100, -100.0))
            rows.append(_row(f"d{i}", "train", "kg", k, 0, 100, -100.0 - (20.0 if k == 2 else 0.5)))
    t = delta_table(paired_deltas(pd.DataFrame(rows), "kmax", "kg"),
                    Comparison("kmax", "kg", columns=("k",)))
    assert list(t.counts.columns) == ["k=2", "k=4"]
    assert t.counts.loc["extremely positive", "k=2"] == 10
    assert t.counts.loc["neutral", "k=4"] == 10
    assert t.tests["k=2"].p_value == pytest.approx(binomtest(10, 10).pvalue)
    assert t.tests["k=2"].significant and not t.tests["k=4"].significant
    assert "**0.002**" in t.to_markdown()


def test_unbounded_vs_bounded_pairs_on_dataset():
    rows = [_row("d", "train", "ilp", None, 0, 10, -10.0),
            _row("d", "train", "twilp", 2, 0, 10, -15.0),
            _row("d", "train", "twilp", 3, 0, 10, -12.0)]
    d = paired_deltas(pd.DataFrame(rows), "ilp", "twilp")
    assert sorted(zip(d["k"], d["delta"], strict=True)) == [(2, 5.0), (3, 2.0)]


def test_write_tables_and_defaults(tmp_path):
    comps = default_comparisons(["asobs", "asobs-ent", "kg", "kmax"])
    assert [(c.a, c.b) for c in comps] == [("asobs-ent", "asobs"), ("kmax", "kg")]
    paths = write_tables(_frame(), [Comparison("A", "B", "T")], tmp_path)
    names = {p.name for p in paths}
    assert {"A_vs_B.md", "A_vs_B.csv", "A_vs_B.deltas.csv", "tables.md"} <= names
    back = pd.read_csv(tmp_path / "A_vs_B.csv", index_col=0)
    assert float(back.loc["extremely positive", SIZE_CLASSES[0]]) == 1.0
    deltas = pd.read_csv(tmp_path / "A_vs_B.deltas.csv")
    assert sorted(deltas["delta"]) == [-7.0, 1.0, 12.0]
