"""The mRF imputer of workflows/benchmarks/impute_mrf.py, and the SEM cell's masked data
rebuilt by ``sem_cell_inputs`` for it."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.pipeline.tasks.sem import sem_cell_inputs
from bnsl_dist.results.export import load_records
from bnsl_dist.sem import imputation_accuracy, mode_impute
from workflows.benchmarks.impute_mrf import RECORDS, mrf_cells, mrf_impute, pair, summarise, table


def copied_data(n: int = 400) -> tuple[CategoricalData, CategoricalData]:
    """``b = (a + 1) mod 3`` and ``d = c xor (a > 0)`` with ``a`` and ``c`` observed;
    ``b``, ``d`` and the noise ``e`` lose 20% of their cells."""
    rng = np.random.default_rng(3)
    a, c, e = rng.integers(0, 3, n), rng.integers(0, 2, n), rng.integers(0, 4, n)
    truth = CategoricalData.from_array(np.column_stack([a, (a + 1) % 3, c, c ^ (a > 0), e]))
    missing = np.zeros((n, 5), dtype=bool)
    missing[:, [1, 3, 4]] = rng.random((n, 3)) < 0.2
    return truth, truth.with_codes(truth.codes, missing)


def test_mrf_imputes_a_deterministic_copy_exactly_and_beats_the_mode():
    pytest.importorskip("sklearn")  # the [bench] extra
    truth, masked = copied_data()
    miss = masked.missing
    for alpha in (0.2, 0.6):  # one variable per group (missForest), then groups of 3
        completed, facts = mrf_impute(masked, n_estimators=10, alpha=alpha, seed=1)
        assert completed.missing is None and facts["group_size"] == max(1, round(5 * alpha))
        np.testing.assert_array_equal(completed.codes[~miss], truth.codes[~miss])
        for v in (1, 3):  # functions of observed variables: restored exactly
            assert (completed.codes[miss[:, v], v] == truth.codes[miss[:, v], v]).all()
        assert imputation_accuracy(truth, masked, completed) > \
            imputation_accuracy(truth, masked, mode_impute(masked)) + 0.2
    # the same seed, the same imputation
    again, _ = mrf_impute(masked, n_estimators=10, alpha=0.2, seed=1)
    np.testing.assert_array_equal(again.codes, mrf_impute(masked, n_estimators=10,
                                                          alpha=0.2, seed=1)[0].codes)
    with pytest.raises(ValueError, match="alpha"):
        mrf_impute(masked, alpha=0.0)


def test_mrf_caps_the_groups_of_wide_data_so_rows_stay_complete():
    pytest.importorskip("sklearn")  # the [bench] extra
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 2, size=(300, 60))
    truth = CategoricalData.from_array(codes)
    masked = truth.with_codes(codes, rng.random(codes.shape) < 0.2)
    p = float(masked.missing.mean())
    cap = int(np.floor(np.log(0.1) / np.log(1 - p)))  # (1 - p) ** size >= 0.1
    _, facts = mrf_impute(masked, n_estimators=2, alpha=0.5, max_iterations=1, seed=0)
    assert facts["group_size"] == cap == 10  # not 30 = 0.5 x 60
    assert facts["min_train_rows"] > 0  # with 30-variable groups: 0.8 ** 30 x 300 < 1 row
    _, facts = mrf_impute(masked, n_estimators=2, alpha=0.1, max_iterations=1, seed=0)
    assert facts["group_size"] == 6  # under the cap: alpha decides


def test_sem_cell_inputs_give_the_cells_the_sem_cell_hid(tmp_path):
    grid = GridConfig.model_validate({
        "name": "s", "kind": "sem", "seed": 4,
        "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "score": "bic"},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": [1],
        "budget": {"iterations": 100}, "sem": {"missing_rates": [0.2], "max_em_iterations": 1}})
    (cell,) = expand_grid(grid)
    rec = run_cell(cell)
    extra = rec.outputs["sem"]
    truth, masked = sem_cell_inputs(cell)
    assert masked.missing is not None and int(masked.missing.sum()) == extra["missing_cells"]
    assert extra["missing_cells"] == pytest.approx(0.2 * truth.codes.size, rel=0.05)
    assert imputation_accuracy(truth, masked, mode_impute(masked)) == \
        extra["imputation_accuracy_mode"]
    # the benchmark pairs an mRF run with the record of its key
    from bnsl_dist.results.export import export_records
    from bnsl_dist.results.store import ResultStore

    ResultStore(tmp_path / "res").write_result(rec)
    export_records(tmp_path / "res", tmp_path / "records.parquet")
    run = {"key": cell.key, "dataset": "nltcs", "missing_rate": 0.2, "seed": 1,
           "missing_cells": extra["missing_cells"], "accuracy": 0.5,
           "accuracy_mode": extra["imputation_accuracy_mode"], "wall_seconds": 2.0,
           "cpu_seconds": 1.0}
    (got,) = pair([run], tmp_path / "records.parquet")
    assert got["sem_accuracy_mpe"] == extra["imputation_accuracy_mpe"]
    (row,) = summarise([got])["cells"]
    assert row["same_mask"] and row["accuracy_ratio"] == extra["imputation_accuracy_mpe"] / 0.5
    assert row["time_ratio"] == pytest.approx(rec.wall_seconds / 2.0)
    # a run of the same cell group without a SEM record yet (another seed) is counted but
    # left out of the means, which then compare the same runs
    unpaired = {**run, "key": "no-record", "seed": 2, "accuracy": 0.9, "accuracy_mode": 0.1,
                "wall_seconds": 40.0, "cpu_seconds": 30.0}
    (row,) = summarise(pair([run, unpaired], tmp_path / "records.parquet"))["cells"]
    assert (row["n"], row["n_paired"]) == (2, 1)
    assert (row["mrf"], row["mode"], row["mrf_wall_seconds"]) == \
        (0.5, extra["imputation_accuracy_mode"], 2.0)


def test_mrf_imputes_the_cells_of_the_paper_budgets_once():
    """The grid runs each repetition at three budget scales on the same hidden cells;
    mRF imputes each repetition once, the ×1 cell's (its SEM record is the paired one)."""
    from bnsl_dist.pipeline.config import load_grid
    from workflows.benchmarks.impute_mrf import GRID

    grid = load_grid(GRID)
    assert len(grid.sem.budget_scales) > 1
    cells = mrf_cells(["kdd"], seeds=[0, 1])
    assert len(cells) == 2 * len(grid.sem.missing_rates)
    assert {c.sem.budget_scale for c in cells} == {1.0}
    assert len({(c.seed, c.sem.missing_rate) for c in cells}) == len(cells)


def test_committed_mrf_table_is_drawn_from_its_json_paired_with_the_committed_records():
    """The committed ``mrf.{json,md}`` beside the SEM records (the random-forest runs are
    timed, not rerun here): each run's SEM fields are those of the committed record of its
    key, the summary is that of the runs, and the markdown is drawn from the JSON, as
    ``impute_mrf --report-only`` redraws them."""
    import json

    folder = RECORDS.parent
    stored = json.loads((folder / "mrf.json").read_text(encoding="utf-8"))
    records = load_records(RECORDS).frame().set_index("key")
    for r in stored["runs"]:  # each run's SEM fields, read from its record directly
        rec, sem = records.loc[r["key"]], records.loc[r["key"], "sem"]
        assert (r["sem_accuracy"], r["sem_accuracy_mpe"], r["sem_accuracy_mode"],
                r["sem_missing_cells"], r["sem_wall_seconds"]) == (
            sem["imputation_accuracy"], sem["imputation_accuracy_mpe"],
            sem["imputation_accuracy_mode"], sem["missing_cells"], rec["wall_seconds"])
    assert summarise(stored["runs"]) == stored["summary"]
    assert (folder / "mrf.md").read_text(encoding="utf-8") == \
        table(stored["summary"], stored["settings"]) + "\n"
