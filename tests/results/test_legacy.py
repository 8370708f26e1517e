"""Records of ``asobs-ent`` from before it was the paper's variant (high-entropy
variables processed last) are read as ``asobs-ent-last``, never as ``asobs-ent``; a grid
resumed over them reruns the paper's variant (its keys differ)."""

from __future__ import annotations

import json
from pathlib import Path

from bnsl_dist.pipeline.config import GridConfig, load_grid
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.results import ResultStore
from bnsl_dist.results.export import export_records, load_records, read_records
from bnsl_dist.results.legacy import revise_grids
from tests.results import synthetic as S

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "workflows" / "results"


def test_committed_asobs_ent_records_name_their_direction():
    """The ASOBS-ENT grid's records after the rerun of all 75 experiments (the 60 real
    ones and r0-r9 at 68ba326, r10-r14 later at 9e57c73 and 41bcdba): every ASOBS-ENT row
    names its direction, and no row of the first run's ASOBS-ENT is left."""
    recs = read_records(RESULTS / "asobs-ent-2018-reduced" / "records.parquet")
    f = recs.frame()
    assert len(f) == 1425
    ent = f[f.algorithm.str.startswith("asobs-ent")]
    assert (ent.algorithm == ent.label).all()
    direction = ent.params.map(lambda p: json.loads(p)["high_entropy"])
    assert set(direction[ent.label == "asobs-ent"]) == {"first"}
    assert set(direction[ent.label == "asobs-ent-last"]) == {"last"}
    paper = ent[ent.label == "asobs-ent"]
    assert len(paper) == 75  # every experiment
    rerun = {"68ba326a29670263605591ddd184bfa354ea5304",
             "9e57c7331fea3da3cc7d45ae71781fc973dfc332",
             "41bcdba8bca47436069c6f1afdb0fc4ed9d95625"}
    assert set(paper.commit) == rerun
    late = paper[paper.commit != "68ba326a29670263605591ddd184bfa354ea5304"]
    assert sorted(late.dataset, key=lambda d: int(d[1:])) == [f"r{i}" for i in range(10, 15)]
    last = ent[ent.label == "asobs-ent-last"]
    assert len(last) == 75 and set(last.commit) == rerun
    grid = recs.grids["asobs-ent-2018-reduced"]
    assert {"asobs-ent", "asobs-ent-last"} <= {a["name"] for a in grid["algorithms"]}
    GridConfig.model_validate(grid)


def test_a_resumed_grid_reruns_only_what_the_records_lack():
    """The cells of the current grid: those of unchanged meaning (asobs, ilp, k-G) and
    the paper's variant where it ran (real data, r0-r9) have the committed records' keys
    (a resume skips them); the paper's variant on r10-r14, and asobs-ent-last where its
    row is one of the old meaning, would not: since r10-r14's rerun there is none (a
    resume runs nothing of the ASOBS family)."""
    keys = set(read_records(RESULTS / "asobs-ent-2018-reduced" / "records.parquet")
               .table.column("key").to_pylist())
    cells = expand_grid(load_grid(REPO / "configs/grids/asobs-ent-2018-reduced.yaml"))
    stored: dict[tuple[str, bool], list[bool]] = {}
    for c in cells:
        synthetic = c.dataset.startswith("r") and c.dataset[1:].isdigit()
        stored.setdefault((c.label, synthetic), []).append(c.key in keys)
    for label in ("asobs", "ilp", "kg", "kg-ent", "kg-ent-late"):
        assert all(stored[(label, False)]) and all(stored[(label, True)]), label
    assert len(stored[("asobs-ent", False)]) == 60 and all(stored[("asobs-ent", False)])
    assert all(stored[("asobs-ent-last", False)])
    assert len(stored[("asobs-ent", True)]) == 15 and all(stored[("asobs-ent", True)])
    assert len(stored[("asobs-ent-last", True)]) == 15 and all(stored[("asobs-ent-last", True)])


def test_committed_inference_records_name_the_last_variant():
    recs = read_records(RESULTS / "inference" / "records.parquet")
    f = recs.frame()
    assert "asobs-ent" not in set(f.label) and (f.label == "asobs-ent-last").any()
    for grid in recs.grids.values():
        assert grid["inference"]["reference"] == "asobs-ent-last"
        assert "asobs-ent-last" in {a["name"] for a in grid["algorithms"]}


def test_inference_grid_rerun_has_the_papers_reference_everywhere():
    """inference-2018-reduced after its rerun: every data set's one reference cell is
    the paper's ASOBS-ENT (high-entropy variables first), every cell of the rerun's
    commit (after 938ea80: k-G_ENT within its budget), none of the first run's
    ``asobs-ent-last``; the grid JSON names the paper's variant."""
    recs = read_records(RESULTS / "inference-2018-reduced" / "records.parquet")
    f = recs.frame()
    refs = f[f.label.str.startswith("asobs-ent")]
    assert refs.dataset.is_unique and len(refs) == f.dataset.nunique() == 35
    assert set(refs.label) == {"asobs-ent"}
    assert all(json.loads(p)["high_entropy"] == "first" for p in refs.params)
    assert set(f.commit) == {"96a635213fdd3f35e7d180cd64e0fd68e11a52cc"}
    assert (f.label == "kg-ent").sum() == 4 * 35
    for grid in recs.grids.values():
        assert grid["inference"]["reference"] == "asobs-ent"


def _grid(*algorithms: dict) -> dict:
    g = json.loads(S.grid_config().model_dump_json())
    g["algorithms"] = list(algorithms)
    g["comparisons"] = [{"a": "asobs-ent", "b": "asobs", "title": "T"}]
    return g


def test_folders_and_files_are_revised_alike(tmp_path):
    old = S.record("asobs-ent", "asobs-ent", -5.0)
    new = S.record("asobs-ent", "asobs-ent", -4.0, dataset="d2",
                   params={"high_entropy": "first"})
    win = S.record("w", "winasobs-ent", -6.0, dataset="d3")  # a label of its own: kept
    plain = S.record("asobs", "asobs", -7.0)
    st = S.write_store(tmp_path / "res", [old, new, win, plain])
    st.save_text(f"grids/{S.GRID}.json", json.dumps(_grid({"name": "asobs-ent"},
                                                          {"name": "asobs"})))
    from_folder = load_records(tmp_path / "res")
    from_file = read_records(export_records(tmp_path / "res", tmp_path / "r.parquet"))
    for recs in (from_folder, from_file):
        f = recs.frame().set_index("key")
        assert f.loc[old.key, ["algorithm", "label"]].tolist() == ["asobs-ent-last"] * 2
        assert json.loads(f.loc[old.key, "params"]) == {"high_entropy": "last"}
        assert f.loc[new.key, ["algorithm", "label"]].tolist() == ["asobs-ent"] * 2
        assert f.loc[win.key, ["algorithm", "label"]].tolist() == ["winasobs-ent-last", "w"]
        assert f.loc[plain.key, ["algorithm", "label"]].tolist() == ["asobs", "asobs"]
        g = recs.grids[S.GRID]
        assert [a["name"] for a in g["algorithms"]] == ["asobs-ent-last", "asobs"]
        assert g["comparisons"][0]["a"] == "asobs-ent-last"
    # the folder read by the store directly: the rows revised too
    t = ResultStore(tmp_path / "res").read_table(columns=["key", "label"])
    assert dict(zip(*t.to_pydict().values(), strict=True))[old.key] == "asobs-ent-last"
    assert t.column_names == ["key", "label"]
    raw = ResultStore(tmp_path / "res").read_table(columns=["label"], revise=False)
    assert "asobs-ent-last" not in raw.column("label").to_pylist()


def test_a_grid_of_the_new_meaning_keeps_its_definition():
    g = _grid({"name": "asobs-ent"}, {"name": "asobs-ent-last"}, {"name": "asobs"})
    assert revise_grids({S.GRID: g}, {S.GRID: {"asobs-ent": "asobs-ent-last"}}) == {S.GRID: g}
    old = _grid({"name": "asobs-ent"}, {"name": "asobs"})
    got = revise_grids({S.GRID: old}, {S.GRID: {"asobs-ent": "asobs-ent-last"}})[S.GRID]
    assert got["comparisons"] == [{"a": "asobs-ent-last", "b": "asobs",
                                   "title": "T [ran as asobs-ent-last]"}]
    assert old["algorithms"][0]["name"] == "asobs-ent"  # the caller's copy untouched
