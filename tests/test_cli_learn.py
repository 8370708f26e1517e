"""`bnsl-dist learn`: result JSON checked against the cache, exports, one-line errors."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import bundled_path
from tests.naive import load_jkl

WINE = str(bundled_path("jkl/wine.BIC.3.jkl.gz"))
WINE_OPT = -1258.4459086


@pytest.fixture()
def runner():
    return CliRunner()


def _rescore(cache, dag_json):
    pos = {name: i for i, name in enumerate(dag_json["nodes"])}
    return sum(cache.score_of(pos[v], [pos[p] for p in ps])
               for v, ps in dag_json["parents"].items())


def test_learn_from_a_cache_serial(runner, tmp_path):
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", WINE, "--algorithm", "asobs-ent", "--iterations",
                               "300", "--serial", "--seeds", "2", "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    for key in ("dag", "score", "checkpoints", "iterations", "algorithm", "parameters",
                "seeds", "budget", "versions"):
        assert key in r
    cache = load_jkl(WINE)
    assert r["score"] == pytest.approx(_rescore(cache, r["dag"]), abs=1e-6)
    assert r["score"] == pytest.approx(WINE_OPT, abs=1e-3)
    assert r["budget"] == {"seconds": None, "max_iterations": 300}
    assert [c["budget"] for c in r["checkpoints"]] == [1, 10, 100, 300]
    assert len(r["seeds"]) == 2 and len(r["iterations"]) == 2


def test_learn_from_data_with_exports(runner, tmp_path):
    from bnsl_dist.model.bif import read_bif

    out = tmp_path / "r.json"
    args = ["learn", "nltcs", "--algorithm", "asobs", "--param", "local_search=window",
            "--iterations", "5", "--serial", "--scores-per-variable", "30",
            "--max-indegree", "2", "-o", str(out), "-q"]
    res = runner.invoke(main, args + ["--export", "bif"])
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    assert r["parameters"] == {"local_search": "window"}
    assert r["input"]["kind"] == "data"
    net = read_bif(tmp_path / "r.bif")
    assert sorted(net.dag.arcs()) == sorted(
        (r["dag"]["nodes"].index(p), r["dag"]["nodes"].index(v))
        for v, ps in r["dag"]["parents"].items() for p in ps)
    res = runner.invoke(main, args + ["--export", "graphml"])
    assert res.exit_code == 0, res.output
    import networkx as nx

    g = nx.read_graphml(tmp_path / "r.graphml")
    assert g.number_of_edges() == sum(len(ps) for ps in r["dag"]["parents"].values())


@pytest.mark.parametrize("args", [
    ["--seconds", "1", "--iterations", "3"],
    ["--algorithm", "nope"],
    ["--param", "bogus=1"],
    ["--param", "novalue"],
    ["--serial", "--workers", "2"],
    ["--export", "bif"],  # a cache has no data for CPTs
])
def test_learn_errors_are_one_line_and_write_nothing(runner, tmp_path, args):
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", WINE, "--serial", "-o", str(out)] + args
                        if "--serial" not in args else ["learn", WINE, "-o", str(out)] + args)
    assert res.exit_code == 2
    assert res.output.strip().startswith("error:") and res.output.strip().count("\n") == 0
    assert not out.exists()


def test_learn_missing_input(runner, tmp_path):
    res = runner.invoke(main, ["learn", str(tmp_path / "none.jkl"), "--serial",
                               "-o", str(tmp_path / "r.json")])
    assert res.exit_code == 2


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_learn_on_dask_equals_serial(runner, tmp_path):
    common = [WINE, "--algorithm", "asobs", "--iterations", "50", "--seeds", "3", "-q"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    res = runner.invoke(main, ["learn", *common, "--serial", "-o", str(a)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["learn", *common, "--workers", "1", "-o", str(b)])
    assert res.exit_code == 0, res.output
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["dag"] == rb["dag"] and ra["score"] == rb["score"]
    assert [c["score"] for c in ra["checkpoints"]] == [c["score"] for c in rb["checkpoints"]]
