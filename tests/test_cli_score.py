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


def _bdeu_by_sums(codes, arities, child, parent, ess):
    """BDeu as sums of logs: lgamma(a + n) - lgamma(a) = sum_{i<n} log(a + i), exact to
    rounding for any a (lgamma itself loses the difference when a is huge)."""
    import math

    import numpy as np

    r, q = int(arities[child]), int(arities[parent])
    a_j, a_jk = ess / q, ess / (q * r)
    total = []
    for j in range(q):
        col = codes[codes[:, parent] == j, child]
        total += [-math.log(a_j + i) for i in range(len(col))]
        for k in range(r):
            total += [math.log(a_jk + i) for i in range(int(np.sum(col == k)))]
    return math.fsum(total)


def test_bdeu_ess_is_accurate_up_to_its_bound_and_refused_beyond(runner, tmp_path):
    """ess 1e308 printed NaN (lgamma overflows), 1e15 a score 2 nats off: up to the bound
    (1e9) the score is the exact one, past it the option is refused."""
    dag = _dag(tmp_path, {"X1": ["X0"]})
    d = resolve_data("nltcs")
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(dag), "--score", "bdeu",
                               "--ess", "1e9"])
    assert res.exit_code == 0, res.output
    got = json.loads(res.output)["per_variable"]["X1"]
    assert got == pytest.approx(_bdeu_by_sums(d.codes, d.arities, 1, 0, 1e9), abs=1e-5)
    for ess in ("1e10", "1e308", "nan"):
        res = runner.invoke(main, ["score", "nltcs", "--dag", str(dag), "--score", "bdeu",
                                   "--ess", ess])
        assert res.exit_code == 2, (ess, res.output)
        assert res.output.startswith("error:") and "ess must be a positive number up to 1e+09" \
            in res.output, res.output


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
    # a list or an object is no name (was a TypeError traceback: unhashable), nor a number
    ({"X1": [["X0"]]}, "field 'parents.X1' must be a list of names"),
    ({"X1": ["X0", {"X2": 1}]}, "field 'parents.X1' must be a list of names"),
    ({"X1": [0]}, "field 'parents.X1' must be a list of names"),
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


def test_dag_json_with_a_byte_order_mark_or_deep_nesting(runner, tmp_path):
    # a BOM (as other readers accept it) was "invalid JSON"; JSON nested beyond the
    # parser's recursion limit was a RecursionError traceback (exit 1)
    dag = _dag(tmp_path, {"X1": ["X0"]})
    bom = tmp_path / "bom.json"
    bom.write_bytes(b"\xef\xbb\xbf" + dag.read_bytes())
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(bom)])
    plain = runner.invoke(main, ["score", "nltcs", "--dag", str(dag)])
    assert res.exit_code == 0 == plain.exit_code, res.output
    assert json.loads(res.output) == json.loads(plain.output)
    deep = tmp_path / "deep.json"
    deep.write_text('{"parents": ' + "[" * 100_000 + "]" * 100_000 + "}")
    res = runner.invoke(main, ["score", "nltcs", "--dag", str(deep)])
    assert res.exit_code == 2 and "nested too deeply" in res.output, res.output
    assert res.output.count("\n") == 1
