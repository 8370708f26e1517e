"""Records files (`grid export`): every row of a results folder and its grids and
failures in one Parquet file, read back equal, same bytes twice, written atomically,
and a clear error naming a file that is not one."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

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


def test_records_already_read_export_as_their_folder_does(tmp_path):
    """A RecordSet (read from a file, its rows in any order) exports the bytes its folder
    exports: the rows sorted by key, the grids, failures and constants alike."""
    S.write_store(tmp_path / "res", S.records()[::-1])
    a = export_records(tmp_path / "res", tmp_path / "a.parquet")
    recs = read_records(a)
    shuffled = dataclasses.replace(recs, table=recs.table.take(
        list(range(recs.table.num_rows))[::-1]))
    b = export_records(shuffled, tmp_path / "b.parquet")
    assert b.read_bytes() == a.read_bytes()
    keys = [S.records()[0].key]
    assert export_records(recs, tmp_path / "c.parquet", keys=keys).read_bytes() == \
        export_records(tmp_path / "res", tmp_path / "d.parquet", keys=keys).read_bytes()


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


def _bulky(recs: list, seed: int = 0) -> list:
    """The records with incompressible 20 kB treewidth certificates (a large grid's
    rows), so that a size limit splits the file."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [dataclasses.replace(r, treewidth_order=tuple(int(x) for x in
                                                         rng.permutation(5_000)))
            for r in recs]


def test_records_over_the_limit_written_in_parts(tmp_path):
    """Every part is under the limit and the parts read back (from any of them) equal
    the whole file's rows, failures and grids; the tables are the same; a re-export
    that fits removes the parts it no longer needs."""
    from bnsl_dist.cli.tables import write_all_tables

    S.write_store(tmp_path / "res", _bulky(S.records()))
    whole = export_records(tmp_path / "res", tmp_path / "whole" / "records.parquet")
    size = whole.stat().st_size
    limit = size // 2  # each file also carries ~11 kB of schema and metadata
    first = export_records(tmp_path / "res", tmp_path / "p" / "records.parquet",
                           max_bytes=limit)
    files = export_mod.records_files(first)
    assert [p.name for p in files] == ["records.parquet"] + [
        f"records.{i}.parquet" for i in range(2, len(files) + 1)]
    assert len(files) >= 2 and all(p.stat().st_size <= limit for p in files)
    want = read_records(whole)
    for part in files:
        back = read_records(part)
        assert _rows(back.table) == _rows(want.table)
        assert back.failures == want.failures and back.grids == want.grids
    # each part holds consecutive keys; the failures are in the first
    metas = [json.loads(pq.ParquetFile(p).schema_arrow.metadata[b"bnsl_dist.part"])
             for p in files]
    digest = hashlib.sha256(whole.read_bytes()).hexdigest()[:16]  # the set: the whole file
    assert metas == [{"part": i, "of": len(files), "first": "records.parquet", "set": digest}
                     for i in range(1, len(files) + 1)]
    keys = [pq.read_table(p, columns=["key"]).column("key").to_pylist() for p in files]
    assert sum(keys, []) == sorted(r.key for r in S.records())
    assert json.loads(pq.ParquetFile(files[1]).schema_arrow.metadata[b"bnsl_dist.failures"]) \
        == []
    names = {p.name for p in write_all_tables(load_records(first), tmp_path / "t1", plots=False)}
    write_all_tables(load_records(whole), tmp_path / "t2", plots=False)
    for name in names:
        assert (tmp_path / "t1" / name).read_bytes() == (tmp_path / "t2" / name).read_bytes()
    # the same folder twice: the same bytes in every part
    again = export_mod.records_files(export_records(tmp_path / "res", tmp_path / "q" /
                                                    "records.parquet", max_bytes=limit))
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in files]
    # a re-export that fits in one file leaves no stale part beside it
    export_records(tmp_path / "res", first, max_bytes=10 * size)
    assert export_mod.records_files(first) == [first]
    assert _rows(read_records(first).table) == _rows(want.table)


def test_missing_or_foreign_part_named(tmp_path):
    S.write_store(tmp_path / "res", _bulky(S.records()))
    S.write_store(tmp_path / "other", _bulky(S.records(), seed=1))
    size = export_records(tmp_path / "res", tmp_path / "w.parquet").stat().st_size
    first = export_records(tmp_path / "res", tmp_path / "a" / "records.parquet",
                           max_bytes=size // 2)
    files = export_mod.records_files(first)
    n = len(files)
    last = files[-1]
    saved = last.read_bytes()
    last.unlink()
    for entry in (first, files[1]):
        with pytest.raises(DataError, match=f"part {n} of {n} .* is missing") as err:
            read_records(entry)
        assert str(last) in str(err.value)
    # a part of another set of another name in its place
    other = export_records(tmp_path / "other", tmp_path / "b" / "recs.parquet",
                           max_bytes=size // 2)
    last.write_bytes(export_mod.records_files(other)[-1].read_bytes())
    with pytest.raises(DataError, match=f"not part {n} of {n} of records.parquet") as err:
        read_records(first)
    assert str(last) in str(err.value)
    last.write_bytes(saved)
    assert read_records(first).table.num_rows == len(S.records())
    with pytest.raises(DataError, match="single record is over"):
        export_records(tmp_path / "res", tmp_path / "c.parquet", max_bytes=1_000)
    with pytest.raises(InvalidConfigError, match="max_bytes"):
        export_records(tmp_path / "res", tmp_path / "c.parquet", max_bytes=0)
    assert not (tmp_path / "c.parquet").exists()


def test_parts_of_two_exports_are_never_read_as_one_set(tmp_path, monkeypatch):
    """A re-export in as many parts that dies after writing some of its parts (the last
    first) leaves new parts beside old ones: reading them is an error naming a foreign
    part, not a silent mix of two exports. (Here the mix read as one set: the old parts
    1-3 and the new part 4, with d1-sota-None-2 in neither.)"""
    recs = _bulky(S.records())
    S.write_store(tmp_path / "res", recs)
    size = export_records(tmp_path / "res", tmp_path / "w.parquet").stat().st_size
    first = export_records(tmp_path / "res", tmp_path / "a" / "records.parquet",
                           max_bytes=size // 2)
    files = export_mod.records_files(first)
    assert len(files) == 4
    before = [p.read_bytes() for p in files[:3]]
    # one small result more, last by key: the new export cuts the rows elsewhere
    extra = dataclasses.replace(recs[0], key="zz", treewidth_order=())
    S.ResultStore(tmp_path / "res").write_result(extra)
    real = export_mod.atomic_write_bytes

    def dies_on_part_3(path, data):
        if path == files[2]:
            raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(export_mod, "atomic_write_bytes", dies_on_part_3)
    with pytest.raises(KeyboardInterrupt):
        export_records(tmp_path / "res", first, max_bytes=size // 2)
    monkeypatch.undo()
    assert export_mod.records_files(first) == files
    assert [p.read_bytes() for p in files[:3]] == before  # part 4 is the new export's
    with pytest.raises(DataError, match="not part 4 of 4 of records.parquet") as err:
        read_records(first)
    assert str(files[3]) in str(err.value)
    # the export run again reads back as the folder
    export_records(tmp_path / "res", first, max_bytes=size // 2)
    assert [r.key for r in read_records(first).results()] == sorted(
        [r.key for r in recs] + [extra.key])


def test_cli_export_in_parts(tmp_path):
    S.write_store(tmp_path / "res", _bulky(S.records()))
    whole = export_records(tmp_path / "res", tmp_path / "w.parquet").stat().st_size
    out = tmp_path / "x" / "records.parquet"
    r = CliRunner().invoke(main, ["grid", "export", str(tmp_path / "res"), "--out", str(out),
                                  "--max-mb", str(whole / 2.5e6)])
    assert r.exit_code == 0, r.output
    assert "records.2.parquet" in r.output and f"{len(S.records())} results" in r.output
    r = CliRunner().invoke(main, ["tables", str(out), "--no-plots"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("value", ["nan", "-5", "0"])
def test_cli_tables_at_must_be_positive(tmp_path, value):
    # were tables of no experiment, exit 0 ("Experiments per column: all: 0")
    S.write_store(tmp_path / "res")
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "res"), "--no-plots", "--at", value])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "--at" in r.output and not (tmp_path / "res" / "tables").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "1e305"])
def test_cli_export_max_mb_must_be_finite(tmp_path, value):
    # click's FloatRange takes nan and inf: int(MB * 1e6) was a ValueError/OverflowError
    # traceback (exit 1)
    S.write_store(tmp_path / "res", S.records())
    out = tmp_path / "records.parquet"
    r = CliRunner().invoke(main, ["grid", "export", str(tmp_path / "res"), "--out", str(out),
                                  "--max-mb", value])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert "--max-mb must be a finite number" in r.output and not out.exists()


def test_import_is_the_inverse_of_export(tmp_path):
    """A records file written into an empty folder exports to the same rows, failures and
    grids; a result already in the folder is kept; a grid run sees the cells as done."""
    from bnsl_dist.results.export import import_records
    from bnsl_dist.results.store import ResultStore

    recs = S.records()
    S.write_store(tmp_path / "res", recs)
    first = export_records(tmp_path / "res", tmp_path / "a.parquet")
    c = import_records(first, tmp_path / "new")
    assert c == {"results": len(recs), "kept": 0, "failures": 1, "grids": 1}
    again = read_records(export_records(tmp_path / "new", tmp_path / "b.parquet"))
    orig = read_records(first)
    assert _rows(again.table) == _rows(orig.table)
    assert again.failures == orig.failures and again.grids == orig.grids
    assert ResultStore(tmp_path / "new").done_keys() == {r.key for r in recs}
    # a result already there is not replaced, and its cell's failure is not written back
    mine = dataclasses.replace(recs[0], best_score=-1.0)
    other = tmp_path / "other"
    ResultStore(other).write_result(mine)
    c = import_records(first, other)
    assert c["kept"] == 1 and c["results"] == len(recs) - 1
    kept = {r.key: r for r in load_records(other).results()}[mine.key]
    assert kept.best_score == -1.0


@pytest.mark.parametrize("where", ["key", "failure", "grid"])
@pytest.mark.parametrize("bad", ["", "../../escaped", "sub/dir", None])
def test_import_refuses_names_that_are_not_file_names(tmp_path, where, bad):
    """Cell keys and grid names become file names (results/<key>.parquet,
    failures/<key>.json, grids/<name>.json): a records file with one that is empty, null
    or holds a path is refused naming the file and the name, before anything is written.
    (import wrote '../../escaped' two folders above the results folder, '' as a hidden
    results/.parquet no run sees, and counted both as written.)"""
    from bnsl_dist.results.export import import_records

    S.write_store(tmp_path / "res")
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    table = pq.read_table(out)
    meta = dict(table.schema.metadata)
    if where == "key":
        keys = table.column("key").to_pylist()
        keys[3] = bad
        table = table.set_column(0, table.schema.field(0), pa.array(keys, pa.string()))
    elif where == "failure":
        (fail,) = json.loads(meta[b"bnsl_dist.failures"])
        meta[b"bnsl_dist.failures"] = json.dumps([{**fail, "key": bad}]).encode()
    elif bad is not None:
        grids = json.loads(meta[b"bnsl_dist.grids"])
        meta[b"bnsl_dist.grids"] = json.dumps({bad: grids[S.GRID]}).encode()
    else:
        meta[b"bnsl_dist.grids"] = b"[]"  # not a name -> grid object
    pq.write_table(table.replace_schema_metadata(meta), out)
    with pytest.raises(DataError) as err:
        import_records(out, tmp_path / "new" / "dest")
    assert str(out) in str(err.value)
    if bad is not None:
        assert repr(bad) in str(err.value)
    assert not (tmp_path / "new").exists()


def test_cli_import(tmp_path):
    S.write_store(tmp_path / "res")
    out = export_records(tmp_path / "res", tmp_path / "r.parquet")
    r = CliRunner().invoke(main, ["grid", "import", str(out), "--results", str(tmp_path / "n")])
    assert r.exit_code == 0, r.output
    assert f"{len(S.records())} results written, 0 already there, 1 failures" in r.output
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    r = CliRunner().invoke(main, ["grid", "import", str(bad), "--results", str(tmp_path / "m")])
    assert r.exit_code != 0 and str(bad) in r.output and "not a records file" in r.output
    assert not (tmp_path / "m").exists()
    # a bad file among several: none is written in
    r = CliRunner().invoke(main, ["grid", "import", str(out), str(bad), "--results",
                                  str(tmp_path / "m")])
    assert r.exit_code != 0 and str(bad) in r.output and not (tmp_path / "m").exists()


def _quickstart_store(root, *, grid_yaml=None):
    """A results folder as `grid run configs/grids/quickstart.yaml` leaves it (two data
    sets, hand-set scores), under the shipped grid (or ``grid_yaml``)."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.results import ResultStore

    yaml = grid_yaml or Path(__file__).resolve().parents[2] / "configs/grids/quickstart.yaml"
    grid = load_grid(yaml)
    st = ResultStore(root)
    scores = {("d1", "asobs-ent"): -50.0, ("d1", "kmax"): -80.0,
              ("d2", "asobs-ent"): -70.0, ("d2", "kmax"): -60.0}
    for (dataset, label), score in scores.items():
        k = 3 if label == "kmax" else None
        params = {"high_entropy": "first"} if label == "asobs-ent" else None  # as run now
        st.write_result(dataclasses.replace(
            S.record(label, label, score, dataset=dataset, k=k, params=params),
            grid=grid.name))
    st.save_text(f"grids/{grid.name}.json", grid.model_dump_json(indent=1) + "\n")
    return scores


def test_cli_tables_of_the_quickstart_grid(tmp_path):
    """configs/grids/quickstart.yaml says `bnsl-dist tables runs/quickstart` after its
    run: its labels (asobs-ent, kmax) have none of the papers' default comparisons, so it
    wrote nothing and said nothing (exit 0). The grid now names its comparison."""
    import pandas as pd

    scores = _quickstart_store(tmp_path / "res")
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "res"), "--no-plots"])
    assert r.exit_code == 0, r.output
    deltas = next((tmp_path / "res" / "tables").glob("*.deltas.csv"))
    got = pd.read_csv(deltas).set_index("dataset")["delta"].to_dict()
    assert got == {d: scores[(d, "asobs-ent")] - scores[(d, "kmax")] for d in ("d1", "d2")}


def test_cli_tables_that_apply_to_nothing_say_so(tmp_path):
    """Records with no comparison, failure or table of their kind: one error line naming
    the labels and what to add (was exit 0 with nothing written)."""
    grid = tmp_path / "g.yaml"
    shipped = Path(__file__).resolve().parents[2] / "configs/grids/quickstart.yaml"
    grid.write_text(shipped.read_text().split("comparisons:")[0])
    _quickstart_store(tmp_path / "res", grid_yaml=grid)
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "res"), "--out",
                                  str(tmp_path / "t")])
    assert r.exit_code == 2
    assert r.output.startswith("error:") and len(r.output.strip().splitlines()) == 1
    assert "asobs-ent, kmax" in r.output and "comparisons" in r.output
    assert not (tmp_path / "t").exists()


def test_a_stored_comparison_whose_label_did_not_run_gets_no_table(tmp_path):
    """A grid run for some labels only (`--labels`): its stored comparisons that name a
    label without records get no (empty) table; the others still do, and no paper default
    replaces them."""
    from bnsl_dist.cli.tables import write_all_tables

    name = f"{S.GRID}__unbounded_vs_twilp.md"
    S.write_store(tmp_path / "all")
    assert name in {p.name for p in write_all_tables(load_records(tmp_path / "all"),
                                                     tmp_path / "t_all", plots=False)}
    S.write_store(tmp_path / "part", [r for r in S.records() if r.label != "twilp"])
    written = {p.name for p in write_all_tables(load_records(tmp_path / "part"),
                                                tmp_path / "t_part", plots=False)}
    assert name not in written and not any("_vs_" in n for n in written)
    assert f"{S.GRID}__exact.md" in written  # the kind's tables are unaffected
