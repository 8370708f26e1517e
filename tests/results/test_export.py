"""Records files (`grid export`): every row of a results folder and its grids and
failures in one Parquet file, read back equal, same bytes twice, written atomically,
and a clear error naming a file that is not one."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.results import export as export_mod
from bnsl_dist.results.export import export_records, load_records, read_records
from tests.results import synthetic as S


def _rows(table: pa.Table) -> list[str]:
    # JSON text compares NaN checkpoint scores equal (as the token NaN)
    return [json.dumps(r, sort_keys=True) for r in table.to_pylist()]


def test_roundtrip_equals_the_folder(tmp_path):
    recs = S.records()
    S.write_store(tmp_path / "res", recs[::-1])  # written in another order than the keys
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    back, folder = read_records(out), load_records(tmp_path / "res")
    assert _rows(back.table) == _rows(folder.table)
    assert back.table.schema.equals(folder.table.schema)
    # every record, each field as written, sorted by key
    want = sorted((r.to_row() for r in recs), key=lambda r: r["key"])
    assert _rows(back.table) == _rows(pa.Table.from_pylist(want, schema=back.table.schema))
    assert [r.key for r in back.results()] == sorted(r.key for r in recs)
    assert back.failures == [S.failure()]
    assert back.grids == {S.GRID: json.loads(S.grid_config().model_dump_json())}


def test_identical_provenance_stored_once_and_same_bytes(tmp_path):
    S.write_store(tmp_path / "res")
    a = export_records(tmp_path / "res", tmp_path / "a.parquet")
    b = export_records(tmp_path / "res", tmp_path / "b.parquet")
    assert a.read_bytes() == b.read_bytes()
    f = pq.ParquetFile(a)
    cols = f.schema_arrow.names
    assert "versions" not in cols and "hostname" not in cols and "spec" in cols
    meta = f.schema_arrow.metadata
    consts = json.loads(meta[b"bnsl_dist.constants"])
    assert consts["versions"] == '{"bnsl_dist": "0"}' and consts["hostname"] == "h"
    assert f.metadata.row_group(0).column(0).compression == "ZSTD"


def test_best_dags_only_drops_the_checkpoint_dags(tmp_path):
    recs = S.records()
    recs[0] = dataclasses.replace(recs[0], incumbent_dags='{"0": [[], [0]]}')
    S.write_store(tmp_path / "res", recs)
    out = export_records(tmp_path / "res", tmp_path / "r.parquet", dags="best")
    back = read_records(out).table
    want = sorted((r.to_row() for r in recs), key=lambda r: r["key"])
    assert any(r["incumbent_dags"] != "{}" for r in want)  # the case is exercised
    assert back.column("incumbent_dags").to_pylist() == ["{}"] * len(want)
    for r in want:
        r["incumbent_dags"] = "{}"
    assert _rows(back) == _rows(pa.Table.from_pylist(want, schema=back.schema))
    with pytest.raises(InvalidConfigError, match="dags"):
        export_records(tmp_path / "res", tmp_path / "x.parquet", dags="some")


def test_differing_provenance_kept_per_row(tmp_path):
    recs = S.records()
    recs[0] = S.record("astar", "astar", -50.0, bound=-50.0, hostname="other")
    S.write_store(tmp_path / "res", recs)
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    assert "hostname" in pq.ParquetFile(out).schema_arrow.names
    back = read_records(out)
    assert sorted(set(back.table.column("hostname").to_pylist())) == ["h", "other"]
    assert _rows(back.table) == _rows(load_records(tmp_path / "res").table)


def test_empty_folder_exports_empty_records(tmp_path):
    (tmp_path / "res").mkdir()
    back = read_records(export_records(tmp_path / "res", tmp_path / "r.parquet"))
    assert back.table.num_rows == 0 and back.failures == [] and back.grids == {}


def test_not_a_records_file_named(tmp_path):
    S.write_store(tmp_path / "res")
    text = tmp_path / "x.parquet"
    text.write_text("a,b\n1,2\n")
    result_file = next((tmp_path / "res" / "results").glob("*.parquet"))
    for bad, words in ((text, "unreadable as Parquet"), (result_file, "not a records file"),
                       (tmp_path / "missing.parquet", "no such records file")):
        with pytest.raises(DataError, match=words) as err:
            read_records(bad)
        assert str(bad) in str(err.value)
    # a records file whose metadata was damaged
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    t = pq.read_table(out)
    meta = dict(t.schema.metadata)
    meta[b"bnsl_dist.failures"] = b"[{"
    pq.write_table(t.replace_schema_metadata(meta), tmp_path / "damaged.parquet")
    with pytest.raises(DataError, match="bnsl_dist.failures"):
        read_records(tmp_path / "damaged.parquet")


def test_killed_export_leaves_the_old_file(tmp_path, monkeypatch):
    S.write_store(tmp_path / "res")
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    before = out.read_bytes()
    real = pq.write_table

    def dies(table, where, **kw):
        real(table.slice(0, 1), where, **kw)  # part of the file, then the writer dies
        raise KeyboardInterrupt

    monkeypatch.setattr(export_mod.pq, "write_table", dies)
    with pytest.raises(KeyboardInterrupt):
        export_records(tmp_path / "res", out)
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.parquet", "res"]


def test_cli_export_then_tables_from_the_file(tmp_path):
    S.write_store(tmp_path / "res")
    out = tmp_path / "w" / "records.parquet"
    r = CliRunner().invoke(main, ["grid", "export", str(tmp_path / "res"), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert f"{len(S.records())} results, 1 failures" in r.output
    r = CliRunner().invoke(main, ["tables", str(out), "--no-plots"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "w" / f"{S.GRID}__exact.md").is_file()  # default: beside the file
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    r = CliRunner().invoke(main, ["tables", str(bad), "--out", str(tmp_path / "t")])
    assert r.exit_code != 0 and str(bad) in r.output and "not a records file" in r.output
    assert not (tmp_path / "t").exists() or not any((tmp_path / "t").iterdir())
    r = CliRunner().invoke(main, ["grid", "export", str(tmp_path / "nowhere"), "--out",
                                  str(tmp_path / "z.parquet")])
    assert r.exit_code != 0 and "nowhere" in r.output


def test_export_of_some_keys(tmp_path):
    recs = S.records()
    S.write_store(tmp_path / "res", recs)
    keep = sorted(r.key for r in recs)[::2]
    out = read_records(export_records(tmp_path / "res", tmp_path / "r.parquet", keys=keep))
    assert [r.key for r in out.results()] == keep
    assert out.failures == [f for f in [S.failure()] if f.key in keep]
