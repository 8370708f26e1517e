"""Plots are written as PNG files (atomically) from result frames."""

from __future__ import annotations

import pandas as pd
import pytest

from bnsl_dist.reporting.plots import plot_anytime, plot_anytime_summary, plot_delta_histogram

PNG = b"\x89PNG\r\n\x1a\n"


def _frame():
    rows = []
    for ds in ("a", "b"):
        for lab, off in (("x", 0.0), ("y", 5.0)):
            rows.append({"grid": "g", "dataset": ds, "split": "train", "label": lab, "k": None,
                         "seed": 0, "best_score": -100.0 - off, "budget_seconds": 10.0,
                         "trace_elapsed": [0.01, 0.5, 3.0],
                         "trace_scores": [-300.0 - off, -150.0 - off, -100.0 - off]})
    return pd.DataFrame(rows)


def test_plots_are_pngs(tmp_path):
    for p in (plot_delta_histogram([-30, -3, 0.5, 4, 12, 400], tmp_path / "h.png", a="x", b="y"),
              plot_delta_histogram([], tmp_path / "empty.png"),
              plot_anytime(_frame()[_frame().dataset == "a"], tmp_path / "a.png", title="a"),
              plot_anytime_summary(_frame(), tmp_path / "s.png", labels=["x", "y"])):
        assert p.read_bytes().startswith(PNG)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.png", "empty.png", "h.png", "s.png"]


def test_anytime_summary_pairs_unbounded_with_each_treewidth(tmp_path, monkeypatch):
    # an unbounded ILP (final -10) beside TWILP at k = 2 (final -15) and k = 3 (-12):
    # each treewidth's experiment has the ILP's -10 as its best final score, so TWILP
    # ends 0.5 and 0.2 below it (median 0.35) and the ILP at 0 in both experiments
    import bnsl_dist.reporting.plots as P

    figs = []
    monkeypatch.setattr(P, "save_figure", lambda fig, path, dpi=110: figs.append(fig) or path)

    def row(label, k, score):
        return {"grid": "g", "dataset": "d", "split": "train", "label": label, "k": k,
                "seed": 0, "best_score": score, "budget_seconds": 10.0,
                "trace_elapsed": [0.5], "trace_scores": [score]}

    f = pd.DataFrame([row("ilp", None, -10.0), row("twilp", 2, -15.0),
                      row("twilp", 3, -12.0)])
    P.plot_anytime_summary(f, tmp_path / "s.png", labels=["ilp", "twilp"])
    lines = {ln.get_label(): ln.get_ydata() for ln in figs[0].axes[0].get_lines()}
    assert set(lines) == {"ilp (2 experiments)", "twilp (2 experiments)"}
    assert lines["twilp (2 experiments)"][-1] == pytest.approx(0.35)
    assert lines["ilp (2 experiments)"][-1] == pytest.approx(1e-9)  # drawn at the floor


def test_curve_of_unbounded_vs_bounded_shows_both(tmp_path, monkeypatch):
    # the score-vs-time figure of the largest paired experiment of "unbounded" (ILP, no
    # k) vs "twilp" (k = 2) on d1 draws both runs, not only the k = 2 one
    import bnsl_dist.reporting.plots as P
    from bnsl_dist.cli.tables import _comparison_plots
    from bnsl_dist.reporting.tables import Comparison
    from bnsl_dist.results import records_to_table
    from bnsl_dist.results.records import records_frame
    from tests.results import synthetic as S

    drawn = []
    monkeypatch.setattr(P, "plot_anytime",
                        lambda sel, path, title="": drawn.append((sel, title)) or path)
    frame = records_frame(records_to_table(S.records()))
    _comparison_plots(frame, [Comparison("unbounded", "twilp", columns=("k",), grid=S.GRID)],
                      tmp_path, None)
    (sel, title), = drawn
    assert sorted(sel["label"]) == ["twilp", "unbounded"] and "k=2" in title
