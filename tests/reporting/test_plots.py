"""Plots are written as PNG files (atomically) from result frames."""

from __future__ import annotations

import pandas as pd

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
