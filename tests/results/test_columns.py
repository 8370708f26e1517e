"""The kind-specific result columns: typed on write and read, and the ``extra`` JSON of
older records (every committed records file) read into them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bnsl_dist.results import CellResult, ResultStore
from bnsl_dist.results.columns import KIND_COLUMN_NAMES, KIND_COLUMNS
from bnsl_dist.results.export import export_records, read_records, records_files
from bnsl_dist.results.records import RESULT_SCHEMA, conform_table, records_frame
from tests.results import synthetic as S

RESULTS = Path(__file__).resolve().parents[2] / "workflows" / "results"

#: The keys of a SEM cell's ``extra`` (its own, not under a name) in older records.
_NAMED = ("solver", "screening", "holdout", "inference", "replay")

OUTPUTS = {
    "solver": {"nodes_expanded": 40, "proved_optimal": True, "stopped": None,
               "epsilon": 1.25, "algorithm": "astar"},
    "screening": {"epsilon": 0.1, "n_roots": 2, "roots": [0, 2], "forest_parent": [-1, 0, -1],
                  "forest_score": -3.5, "seconds": 0.25},
    "holdout": {"split": "test", "total": -120.5, "mean": -1.205, "n_rows": 100},
    "inference": {"reference": True, "known_network": True, "evidence_vars": 2, "queries": 2,
                  "evidence": [[[0, 1], [2, 0]], []], "marginal_vars": [1],
                  "log_pe": [-1.5, 0.0], "marginals": [[0.25, 0.75]],
                  "pe_seconds_per_query": 0.001, "marginal_seconds_per_query": None,
                  "exact": True, "width": 2, "seconds": 0.5,
                  "truth": {"log_pe": [-1.4, 0.0], "marginals": [[0.3, 0.7]],
                            "pe_seconds_per_query": 0.002,
                            "marginal_seconds_per_query": 0.003, "exact": True,
                            "width": None, "seconds": 0.1}},
    "sem": {"missing_rate": 0.1, "max_em_iterations": 10,
            "search_seconds_per_variable": None, "cache_budget": "data", "budget_scale": 2.0,
            "imputation": "marginal", "imputation_accuracy": 0.75,
            "imputation_accuracy_mpe": 0.7, "imputation_accuracy_mode": 0.5,
            "missing_cells": 30, "converged": True, "em_iterations": 3,
            "cache_scores_per_variable": 100, "search_iterations": None},
    "replay": {"records": "r.parquet", "speed": 10.0, "seconds_from": "record"},
}


def _full(name: str, value: object) -> object:
    """``value`` with the fields of its column it lacks as None (Arrow's reading)."""
    typ = RESULT_SCHEMA.field(name).type
    if not isinstance(value, dict) or not pa.types.is_struct(typ):
        return value
    out = {typ.field(i).name: None for i in range(typ.num_fields)}
    out.update(value)
    return out


def test_every_kind_column_round_trips_with_its_types(tmp_path):
    """Written and read back, each column holds exactly what was given: an int stays an
    int, a bool a bool, a statistic of None stays (as None), nested lists as lists."""
    st = ResultStore(tmp_path)
    rec = S.record("x", "astar", -1.0, outputs=OUTPUTS)
    st.write_result(rec)
    back = st.read_results()[0]
    assert back.outputs == OUTPUTS
    solver = back.outputs["solver"]
    assert [type(solver[k]) for k in ("nodes_expanded", "proved_optimal", "epsilon",
                                      "algorithm")] == [int, bool, float, str]
    frame = st.read_frame()  # the same Python values in a frame
    for name, value in OUTPUTS.items():
        assert frame[name].iloc[0] == value, name


def test_a_cell_file_stores_only_its_own_kind_columns(tmp_path):
    st = ResultStore(tmp_path)
    st.write_result(S.record("x", "astar", -1.0, outputs={"sem": OUTPUTS["sem"]}))
    stored = pq.read_schema(st.result_path("d1-x-None-0")).names
    assert [c for c in KIND_COLUMN_NAMES if c in stored] == ["sem"]
    back = st.read_table()
    assert back.schema.equals(RESULT_SCHEMA) and back.column("inference").null_count == 1


def test_unknown_fields_are_refused():
    with pytest.raises(ValueError, match="not kind-specific result columns: foo"):
        S.record("x", "astar", -1.0, outputs={"foo": {}})
    rec = S.record("x", "astar", -1.0, outputs={"sem": {**OUTPUTS["sem"], "typo": 1}})
    with pytest.raises(TypeError, match="sem: no typed column for typo"):
        rec.to_row()
    rec = S.record("x", "astar", -1.0, outputs={
        "inference": {**OUTPUTS["inference"],
                      "truth": {**OUTPUTS["inference"]["truth"], "extra_answer": 1}}})
    with pytest.raises(TypeError, match="inference.truth: no typed column for extra_answer"):
        rec.to_row()
    with pytest.raises(TypeError, match="a solver statistic must be"):
        S.record("x", "astar", -1.0, outputs={"solver": {"cert": [1, 2]}}).to_row()


def _old_layout(rec: CellResult, extra: dict) -> pa.Table:
    """``rec``'s row as records were written before the typed columns: ``extra`` JSON."""
    row = {k: v for k, v in rec.to_row().items() if k not in KIND_COLUMN_NAMES}
    row["extra"] = json.dumps(extra)
    return pa.Table.from_pylist([row])


def test_an_old_extra_is_read_into_the_typed_columns():
    sem = {k: v for k, v in OUTPUTS["sem"].items() if k != "budget_scale"}  # x1: unwritten
    extra = {**{n: OUTPUTS[n] for n in _NAMED}, **sem}
    back = CellResult.from_row(conform_table(_old_layout(S.record("x", "a", -1.0), extra))
                               .to_pylist()[0])
    assert back.outputs == {**{n: OUTPUTS[n] for n in _NAMED}, "sem": {**sem,
                                                                       "budget_scale": 1.0}}
    empty = conform_table(_old_layout(S.record("x", "a", -1.0), {}))
    assert all(empty.column(n).null_count == 1 for n in KIND_COLUMN_NAMES)
    with pytest.raises(ValueError, match="'extra' keys that no typed column reads: zz"):
        conform_table(_old_layout(S.record("x", "a", -1.0), {"zz": 1}))


def test_an_old_results_folder_reads_by_columns_too(tmp_path):
    """A result file of the old layout read for some columns only (``grid plan``'s
    replay reads ``sem`` so) gets them from its ``extra``."""
    st = ResultStore(tmp_path)
    table = _old_layout(S.record("x", "a", -1.0), {"missing_rate": 0.2})
    st.results_dir.mkdir(parents=True)
    pq.write_table(table, st.result_path(table.column("key")[0].as_py()))
    got = st.read_table(columns=["key", "sem"]).column("sem").to_pylist()[0]
    assert got["missing_rate"] == 0.2 and got["budget_scale"] == 1.0


def _committed() -> list[Path]:
    """The committed records files still in the old layout (``extra`` in every part):
    a file re-exported since is in the typed layout, which the tests of the export and
    tests/test_committed_results.py (its tables regenerate) cover."""
    files = sorted(RESULTS.glob("*/records.parquet"))
    assert files, f"{RESULTS}: no committed records"
    old = [f for f in files
           if all("extra" in pq.read_schema(p).names for p in records_files(f))]
    assert len(old) >= 5, "the old layout's reading needs committed files to test it on"
    return old


@pytest.mark.parametrize("records", _committed(), ids=lambda p: p.parent.name)
def test_every_committed_records_file_reads_into_the_typed_columns(records):
    """The oracle is the file's own ``extra`` JSON, parsed here: each key of it is in its
    column (a SEM cell's keys in ``sem``), every other field of the column is null, and
    a SEM cell's ``budget_scale`` is 1 where it was left out."""
    raw = pa.concat_tables(
        pq.read_table(io.BytesIO(p.read_bytes()), columns=["key", "extra"])
        for p in records_files(records))
    want = dict(zip(raw.column("key").to_pylist(),
                    (json.loads(e or "{}") for e in raw.column("extra").to_pylist()),
                    strict=True))
    got = {r.key: r.outputs for r in read_records(records).results()}
    assert set(got) == set(want)
    for key, extra in want.items():
        expect = {n: extra[n] for n in _NAMED if n in extra}
        sem = {k: v for k, v in extra.items() if k not in _NAMED}
        if sem:
            expect["sem"] = {"budget_scale": 1.0, **sem}
        assert got[key] == {n: _full(n, v) for n, v in expect.items()}, key


def test_a_records_file_is_written_in_the_typed_layout(tmp_path):
    S.write_store(tmp_path / "res", [S.record("x", "astar", -1.0, outputs=OUTPUTS)])
    out = export_records(tmp_path / "res", tmp_path / "records.parquet")
    names = pq.read_schema(out).names
    assert "extra" not in names and set(KIND_COLUMN_NAMES) <= set(names)
    assert read_records(out).results()[0].outputs == OUTPUTS
    assert records_frame(read_records(out).table)["solver"].iloc[0] == OUTPUTS["solver"]


def test_each_column_declares_how_older_records_held_it():
    assert len(KIND_COLUMN_NAMES) == len(set(KIND_COLUMN_NAMES))
    for col in KIND_COLUMNS:
        assert col.legacy_keys and col.legacy({}) is None, col.name


@pytest.mark.slow
@pytest.mark.parametrize("grid", ["qds-2018-tenth", "inference-2018-reduced"])
def test_committed_records_rewritten_in_the_typed_layout_give_the_same_tables(grid, tmp_path):
    """A committed records file (``extra`` layout) imported as a results folder and
    exported again is written in the typed layout, and its tables are the committed
    ones: nothing of a kind's results is lost in the typed columns."""
    from bnsl_dist.cli.tables import write_all_tables
    from bnsl_dist.results.export import import_records, load_records

    import_records(RESULTS / grid / "records.parquet", tmp_path / "res")
    out = export_records(tmp_path / "res", tmp_path / "records.parquet")
    assert "extra" not in pq.read_schema(out).names
    for p in write_all_tables(load_records(out), tmp_path / "tables", plots=False):
        assert p.read_text(encoding="utf-8") == \
            (RESULTS / grid / p.name).read_text(encoding="utf-8"), p.name
