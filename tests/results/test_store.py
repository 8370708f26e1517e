"""ResultStore: atomic per-cell Parquet files, failures apart, status, old schemas."""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bnsl_dist.exceptions import DataError
from bnsl_dist.results import RESULT_SCHEMA, CellFailure, CellResult, ResultStore
from bnsl_dist.results import store as store_mod


def _rec(key: str, score: float = -10.0, k: int | None = 2) -> CellResult:
    return CellResult(key=key, grid="g", dataset="d", split="train", algorithm="kg",
                      label="kg", params="{}", k=k, seed=0, budget_seconds=None,
                      budget_iterations=5, best_score=score, dag_json="{}", n_vars=3,
                      n_samples=10, checkpoints=(1.0, 2.0),
                      checkpoint_scores=(math.nan, score), trace_elapsed=(0.5,),
                      trace_scores=(score,), trace_iterations=(1,))


def _fail(key: str) -> CellFailure:
    return CellFailure(key=key, grid="g", dataset="d", split="train", algorithm="kg",
                       label="kg", k=2, seed=0, status="error", error="ValueError: x",
                       traceback="Traceback ...")


def test_schema_matches_record_fields():
    from dataclasses import fields

    from bnsl_dist.results.columns import KIND_COLUMN_NAMES

    names = [f.name for f in fields(CellResult)]
    i = names.index("outputs")  # the kind-specific columns, in its place
    assert [*names[:i], *KIND_COLUMN_NAMES, *names[i + 1:]] == RESULT_SCHEMA.names


def test_roundtrip(tmp_path):
    st = ResultStore(tmp_path)
    a, b = _rec("a", -1.5), _rec("b", -2.5, k=None)
    st.write_result(a)
    st.write_result(b)
    assert st.done_keys() == {"a", "b"}
    back = {r.key: r for r in st.read_results()}
    assert back["a"].best_score == -1.5 and back["b"].k is None
    assert back["a"].checkpoints == (1.0, 2.0)
    assert math.isnan(back["a"].checkpoint_scores[0])
    ra, rb = back["a"].to_row(), a.to_row()
    ra.pop("checkpoint_scores"), rb.pop("checkpoint_scores")
    assert ra == rb
    frame = st.read_frame()
    assert sorted(frame["key"]) == ["a", "b"] and len(frame.columns) == len(RESULT_SCHEMA)


def test_failures_are_not_results(tmp_path):
    st = ResultStore(tmp_path)
    st.write_failure(_fail("x"))
    st.write_result(_rec("y"))
    s = st.status(["x", "y", "z"])
    assert s.done == ("y",) and s.failed == ("x",) and s.pending == ("z",)
    assert s.counts() == {"done": 1, "failed": 1, "pending": 1, "total": 3}
    assert [f.key for f in st.read_failures()] == ["x"]
    assert st.read_failures()[0].traceback == "Traceback ..."
    assert st.done_keys() == {"y"}
    st.write_result(_rec("x"))  # a later success replaces the failure
    assert not st.failure_path("x").exists() and st.status(["x"]).done == ("x",)


def test_failure_status_checked():
    with pytest.raises(ValueError, match="failure status"):
        CellFailure(key="k", grid="g", dataset="d", split="s", algorithm="a", label="a",
                    k=None, seed=0, status="ok", error="")


def test_killed_writer_leaves_nothing(tmp_path, monkeypatch):
    st = ResultStore(tmp_path)

    def boom(table, fh):
        fh.write(b"PAR1 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(store_mod.pq, "write_table", boom)
    with pytest.raises(KeyboardInterrupt):
        st.write_result(_rec("a"))
    assert not st.has_result("a")
    assert list(st.results_dir.iterdir()) == []


def test_temp_files_ignored(tmp_path):
    st = ResultStore(tmp_path)
    st.results_dir.mkdir(parents=True)
    (st.results_dir / ".a.parquet.123.tmp").write_bytes(b"partial")
    (st.results_dir / ".b.parquet").write_bytes(b"partial")
    assert st.done_keys() == set()
    assert st.read_table().num_rows == 0


def test_older_schema_gets_null_columns(tmp_path):
    st = ResultStore(tmp_path)
    full = pa.Table.from_pylist([_rec("old").to_row()], schema=RESULT_SCHEMA)
    st.results_dir.mkdir(parents=True)
    pq.write_table(full.drop_columns(["treewidth_bound", "hostname"]), st.result_path("old"))
    (r,) = st.read_results()
    assert r.key == "old" and r.treewidth_bound is None and r.hostname is None


def test_columns_read_alone(tmp_path):
    """Some columns only: the full table's columns, an older file's missing one as nulls,
    and the same schema with no result at all."""
    st = ResultStore(tmp_path)
    for key, score in (("b", -2.0), ("a", -1.0)):
        st.write_result(_rec(key, score))
    full = pa.Table.from_pylist([_rec("old", -3.0).to_row()], schema=RESULT_SCHEMA)
    pq.write_table(full.drop_columns(["hostname"]), st.result_path("old"))
    cols = ["best_score", "key", "hostname"]
    got = st.read_table(columns=cols)
    assert got.column_names == cols
    assert got.equals(st.read_table().select(cols))
    assert got.to_pylist()[2] == {"best_score": -3.0, "key": "old", "hostname": None}
    assert st.read_table(["a"], columns=["key"]).to_pylist() == [{"key": "a"}]
    assert ResultStore(tmp_path / "none").read_table(columns=cols).schema == got.schema
    with pytest.raises(ValueError, match="not result columns: score"):
        st.read_table(columns=["key", "score"])


def test_corrupt_file_named(tmp_path):
    st = ResultStore(tmp_path)
    st.results_dir.mkdir(parents=True)
    st.result_path("bad").write_bytes(b"not parquet")
    with pytest.raises(DataError, match="bad.parquet"):
        st.read_table()
