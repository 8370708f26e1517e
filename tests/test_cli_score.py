"""`bnsl-dist score`: JSON output equals the library, errors are one line with exit 2."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import resolve_data
from tests.naive_scores import naive_bdeu, naive_bic


@pytest.fixture()
def runner():
    return CliRunner()


def _dag(tmp_path, parents):
    p = tmp_path / "dag.json"
    p.write_text(json.dumps({"nodes": [f"X{i}" for i in range(16)], "parents": parents}))
    return p


def test_score_bic_and_bdeu(runner, tmp_path):
    dag = _dag(tmp_path, {"X1": ["X0"], "X2": ["X0", "X1"]})
    d = resolve_data("nltcs")
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(dag)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["per_variable"]["X2"] == pytest.approx(naive_bic(d.codes, d.arities, 2, [0, 1]),
                                                      rel=1e-9)
    assert out["total"] == pytest.approx(sum(out["per_variable"].values()), rel=1e-12)
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(dag), "--score", "bdeu",
                               "--ess", "10"])
    out = json.loads(res.output)
    assert out["per_variable"]["X1"] == pytest.approx(
        naive_bdeu(d.codes, d.arities, 1, [0], 10.0), rel=1e-9)


def test_score_reads_a_learn_result(runner, tmp_path):
    """The result of `bnsl-dist learn` scores as its DAG: the total equals the score the
    search reported (from the cache) and the naive BIC of each family."""
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", "nltcs", "--serial", "--iterations", "20", "-q",
                               "-o", str(out)])
    assert res.exit_code == 0, res.output
    learned = json.loads(out.read_text())
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(out)])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)
    d = resolve_data("nltcs")
    parents = learned["dag"]["parents"]
    assert sum(map(len, parents.values())) > 0
    idx = {s: i for i, s in enumerate(d.names)}
    naive = sum(naive_bic(d.codes, d.arities, idx[v], [idx[p] for p in ps])
                for v, ps in parents.items())
    assert got["total"] == pytest.approx(naive, rel=1e-9)
    assert got["total"] == pytest.approx(learned["score"], rel=1e-9)
    learned["dag"] = {"parents": "X0"}  # still named by its field in the error
    out.write_text(json.dumps(learned))
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(out)])
    assert res.exit_code == 2 and f"{out}, field 'dag'" in res.output


@pytest.mark.parametrize("parents,match", [
    ({"X1": ["Y"]}, "unknown variable 'Y'"),
    ({"X1": ["X0"], "X0": ["X1"]}, "cycle"),
])
def test_bad_dag_is_one_line_exit_2(runner, tmp_path, parents, match):
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(_dag(tmp_path, parents))])
    assert res.exit_code == 2
    assert match in res.output
    assert res.output.count("\n") == 1


def test_bad_json_and_bad_data(runner, tmp_path):
    p = tmp_path / "dag.json"
    p.write_text("{\n  \"parents\": [\n")
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(p)])
    assert res.exit_code == 2 and "line" in res.output
    bad = tmp_path / "bad.csv"
    bad.write_text("0,1\n1\n")
    res = runner.invoke(main, ["score", str(bad), "--dag", str(_dag(tmp_path, {}))])
    assert res.exit_code == 2 and "line 2" in res.output
