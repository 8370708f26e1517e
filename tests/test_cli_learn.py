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
    for key in ("schema_version", "spec", "dag", "score", "best", "unit", "checkpoints",
                "runs", "cache", "screening", "treewidth", "provenance"):
        assert key in r
    cache = load_jkl(WINE)
    assert r["score"] == pytest.approx(_rescore(cache, r["dag"]), abs=1e-6)
    assert r["score"] == pytest.approx(WINE_OPT, abs=1e-3)
    budget = r["spec"]["search"]["budget"]
    assert (budget["seconds"], budget["iterations"]) == (None, 300)
    assert [c["budget"] for c in r["checkpoints"]] == [1, 10, 100, 300]
    assert r["checkpoints"][-1]["score"] == r["score"]  # the budget's row is the best
    assert r["spec"]["seeds"] == [0, 1] and len(r["runs"]) == 2
    assert r["spec"]["cache"]["path"].endswith("wine.BIC.3.jkl.gz")


def test_learn_from_data_with_exports(runner, tmp_path):
    from bnsl_dist.model.bif import read_bif

    out = tmp_path / "r.json"
    args = ["learn", "nltcs", "--algorithm", "asobs", "--param", "local_search=window",
            "--iterations", "5", "--serial", "--scores-per-variable", "30",
            "--max-indegree", "2", "-o", str(out), "-q"]
    res = runner.invoke(main, args + ["--export", "bif"])
    assert res.exit_code == 0, res.output
    r = json.loads(out.read_text())
    assert r["spec"]["search"]["params"] == {"local_search": "window"}
    assert r["spec"]["data"]["name"] == "nltcs"
    assert r["spec"]["cache"]["scores_per_variable"] == 30
    prov = r["provenance"]
    assert {"version", "commit", "dirty", "versions", "hostname", "cpus"} <= set(prov)
    assert {"numpy", "pydantic", "python"} <= set(prov["versions"])
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
    ["--algorithm", "nope"],
    ["--param", "bogus=1"],
    ["--param", "max_window=many"],
    ["--param", "novalue"],
    ["--serial", "--workers", "2"],
    ["--export", "bif"],  # a cache has no data for CPTs
    ["--algorithm", "kmax", "-k", "0"],
    ["--algorithm", "kmax"],  # no k
    ["-k", "2"],  # memetic (the default) takes no k
    ["--seeds", "0"],
    ["--seed", "-1"],  # the base seed of the SeedSequence streams: non-negative
    ["--workers", "0"],
    ["--seconds", "-1"],
    ["--max-indegree", "-1"],
    ["--epsilon", "0.1"],  # screening needs data
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


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_small_learn_on_local_threads_equals_serial(runner, tmp_path):
    """A tiny job (exact budgets) runs on a local cluster of threads, with the result of
    the serial run; a cache file's job still gets worker processes."""
    common = ["nltcs/test", "--iterations", "20", "--scores-per-variable", "40",
              "--seeds", "2"]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    res = runner.invoke(main, ["learn", *common, "-q", "--serial", "-o", str(a)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(main, ["learn", *common, "--workers", "2", "-o", str(b)])
    assert res.exit_code == 0, res.output
    assert "Dask cluster: 2 workers (threads); no dashboard" in res.output
    ra, rb = json.loads(a.read_text()), json.loads(b.read_text())
    assert ra["dag"] == rb["dag"] and ra["score"] == rb["score"]
    res = runner.invoke(main, ["learn", WINE, "--iterations", "5", "--workers", "1",
                               "-o", str(b)])
    assert res.exit_code == 0, res.output
    assert "Dask cluster: 1 workers; dashboard: http://127.0.0.1:" in res.output


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_iteration_budget_without_seeds_is_the_same_on_any_number_of_workers(runner, tmp_path):
    """With no --seeds a Dask run took one seed per worker, serially one: an iteration
    budget (and exact-score cache) gave another result on 2 workers than serially or on
    1 worker. Such a run now has one seed wherever it runs."""
    common = ["nltcs/test", "--iterations", "20", "--scores-per-variable", "40", "--seed", "3",
              "-q"]
    outs = []
    for where in (["--serial"], ["--workers", "1"], ["--workers", "2"]):
        out = tmp_path / f"r{len(outs)}.json"
        res = runner.invoke(main, ["learn", *common, *where, "-o", str(out)])
        assert res.exit_code == 0, res.output
        outs.append(json.loads(out.read_text()))
    for r in outs[1:]:
        assert [x["seed"] for x in r["runs"]] == [x["seed"] for x in outs[0]["runs"]]
        assert (r["dag"], r["score"]) == (outs[0]["dag"], outs[0]["score"])


def test_learn_accepts_registered_names_and_rejects_unknown_ones(runner, tmp_path):
    res = runner.invoke(main, ["learn", "nltcs-nope", "--serial", "-o",
                               str(tmp_path / "r.json")])
    assert res.exit_code == 2 and "data list" in res.output
    from bnsl_dist.pipeline.specs import DataRef, dataset_names

    assert "asia-s5000" in dataset_names()
    DataRef.parse("asia-s5000").check()  # a name `data list` shows is accepted


def _learn_serial(runner, tmp_path, *args):
    """``learn WINE ARGS --serial``: the result JSON."""
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", WINE, *args, "--serial", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text())


def test_learn_bounded_treewidth_carries_a_certificate(runner, tmp_path):
    import itertools

    from bnsl_dist.graph.dag import DAG

    r = _learn_serial(runner, tmp_path, "--algorithm", "kmax", "-k", "2",
                      "--iterations", "20")
    tw = r["treewidth"]
    dag = DAG.from_json_dict(r["dag"])
    assert sorted(tw["order"]) == list(range(dag.n_vars))
    assert tw["width"] <= 2
    adj = [set() for _ in range(dag.n_vars)]  # moral graph, then naive elimination
    for v, ps in enumerate(dag.parents):
        for a, b in itertools.combinations([v, *ps], 2):
            adj[a].add(b)  # child-parent arcs and married parents
            adj[b].add(a)
    width = 0
    for v in tw["order"]:
        nb = adj[v]
        width = max(width, len(nb))
        for a, b in itertools.combinations(nb, 2):
            adj[a].add(b)
            adj[b].add(a)
        for u in nb:
            adj[u].discard(v)
        adj[v] = set()
    assert width == tw["width"]  # the order certifies the width


def test_readme_reads_the_registry_and_the_result_schema(runner):
    """The README's optimizer list is `bnsl-dist algorithms` (the registry), and its
    result table names every field of LearnResult."""
    import dataclasses
    from pathlib import Path

    from bnsl_dist.pipeline.learn import SCHEMA_VERSION, LearnResult

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    res = runner.invoke(main, ["algorithms"])
    assert res.exit_code == 0 and res.output in readme
    assert f"### Result JSON (schema version {SCHEMA_VERSION})" in readme
    table = readme.split("### Result JSON")[1].split("###")[0]
    for f in dataclasses.fields(LearnResult):
        assert f"`{f.name}`" in table, f.name


def test_learn_checkpoints_are_resolved_into_the_spec(runner, tmp_path):
    r = _learn_serial(runner, tmp_path, "--algorithm", "asobs", "--iterations", "100",
                      "--checkpoints", "50,5,1000")
    assert r["spec"]["search"]["budget"]["iteration_checkpoints"] == [5, 50, 100]
    assert [c["budget"] for c in r["checkpoints"]] == [5, 50, 100]
    scores = [c["score"] for c in r["checkpoints"] if c["score"] is not None]
    assert scores == sorted(scores) and r["checkpoints"][-1]["score"] == r["score"]


@pytest.mark.parametrize("budget,checkpoints,bad", [
    (["--iterations", "3"], "2,2.5", "'2.5' is not a whole number"),  # was reported as 2
    (["--iterations", "3"], "1_0", "'1_0' is not a positive number"),  # was 10
    (["--seconds", "2"], "nan,1", "'nan' is not a positive number"),  # was dropped
    (["--seconds", "2"], "0,1", "'0' is not a positive number"),
    (["--iterations", "3"], "-1", "'-1' is not a positive number"),
])
def test_learn_refuses_checkpoints_it_cannot_report(runner, tmp_path, budget, checkpoints,
                                                    bad):
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", WINE, "--serial", "-q", *budget, "--checkpoints",
                               checkpoints, "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert bad in res.output and "--checkpoints" in res.output
    assert not out.exists()


@pytest.mark.parametrize("args", [
    ["-o", "{d}/net.bif", "--export", "bif"],  # the BIF was written over the result
    ["-o", "{d}/r.json", "--save-cache", "{d}/r.json"],  # the cache over the result
    ["-o", "{d}/r.json", "--save-cache", "{d}/r.bif", "--export", "bif"],
])
@pytest.mark.parametrize("budget", [["--iterations", "3"], ["--time-limit", "2"]])
def test_learn_outputs_are_distinct_files(runner, tmp_path, args, budget):
    """Each of --output, --save-cache and --export is its own file: one naming another's
    was written over it (exit 0, the result JSON gone)."""
    argv = [a.format(d=tmp_path) for a in args]
    res = runner.invoke(main, ["learn", "nltcs/test", "--serial", *budget, *argv])
    assert res.exit_code == 2, res.output
    assert res.output.strip().startswith("error:") and "the same file as" in res.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("source", ["{d}/none.csv", "sub/none.csv"])
@pytest.mark.parametrize("cmd", [["learn", "--iterations", "2", "--serial"],
                                 ["learn", "--time-limit", "2"], ["impute", "--serial"]])
def test_a_data_file_that_is_not_there_is_named(runner, tmp_path, source, cmd):
    """DATA that is neither a file nor NAME[/SPLIT] was read as NAME/SPLIT: ``/x/none.csv``
    gave "name: String should have at least 1 character; split: 'x/none.csv' is not a
    valid name", ``sub/none.csv`` "'sub': no such file, bundled or registered data set"."""
    src = source.format(d=tmp_path)
    out = tmp_path / "out"
    res = runner.invoke(main, [cmd[0], src, *cmd[1:], "-o", str(out)])
    text = res.output.strip()
    assert res.exit_code == 2 and text.startswith("error:") and text.count("\n") == 0
    assert src in text and "no such file" in text and not out.exists()


def test_cache_option_help_states_each_commands_defaults():
    """The cache options' help gave CacheSpec's defaults for every command: `impute
    --help` said --expand-dominated [True] where impute runs without (EXPAND_DOMINATED)
    and --seconds-per-variable "no budget: 1" where it scales exact scores with the
    data; `learn --help` left out --iterations' cache of 2,000 scores and --time-limit's
    expand_dominated (learn_within's default)."""
    import inspect

    import click

    from bnsl_dist.cache.spec import ITERATION_CACHE_SCORES, CacheSpec
    from bnsl_dist.pipeline.tasks.within import learn_within
    from bnsl_dist.sem.budgets import (
        CACHE_ROW_SCORES,
        CACHE_SCORES_RANGE,
        EXPAND_DOMINATED,
    )

    def helps(cmd):
        return {p.opts[0]: p.help for p in main.commands[cmd].params
                if isinstance(p, click.Option)}

    imp, lrn = helps("impute"), helps("learn")
    assert imp["--expand-dominated"].endswith(f"[{EXPAND_DOMINATED}]")
    lo, hi = CACHE_SCORES_RANGE
    assert f"[{CACHE_ROW_SCORES / 1e7:g}e7/rows within {lo:,}-{hi:,}]" \
        in imp["--scores-per-variable"]
    assert "no budget: 1" not in imp["--seconds-per-variable"]
    within = inspect.signature(learn_within).parameters["expand_dominated"].default
    assert lrn["--expand-dominated"].endswith(
        f"[{CacheSpec().expand_dominated}; with --time-limit: {within}]")
    assert f"[{ITERATION_CACHE_SCORES:,} with --iterations and no cache budget]" \
        in lrn["--scores-per-variable"]
    assert f"[{CacheSpec().candidate_limit}]" in imp["--candidate-limit"]  # the others stay


@pytest.mark.parametrize("cmd,args,named", [
    ("learn", ["--ess", "0"], "--ess:"),  # was "ess: Input should be greater than 0"
    ("learn", ["--max-indegree", "-1"], "--max-indegree:"),
    ("learn", ["--cache-method", "sequential", "--candidate-limit", "0"],
     "--candidate-limit:"),
    ("learn", ["--root-fraction", "2"], "--root-fraction:"),
    ("learn", ["--epsilon", "0.1", "--root-fraction", "0.5"], "--epsilon/--root-fraction:"),
    ("learn", ["--algorithm", "kmax"], "-k: algorithm 'kmax' needs"),  # was "(top level)"
    ("learn", ["--algorithm", "asobs", "-k", "2"], "-k: algorithm 'asobs' takes no"),
    ("learn", ["--algorithm", "asobs-entt"], "--algorithm: unknown algorithm 'asobs-entt'"),
    ("learn", ["--param", "foo=1"], "--param: algorithm 'memetic' has no parameter 'foo'"),
    ("learn", ["--time-limit", "5", "--ess", "0"], "--ess:"),
    ("impute", ["--scores-per-variable", "0"], "--scores-per-variable:"),
])
def test_spec_errors_name_the_option_typed(runner, tmp_path, cmd, args, named):
    """A value the spec models refuse is reported under its option (``--ess``), not the
    model's field (``ess``, ``(top level)``)."""
    out = tmp_path / "out"
    res = runner.invoke(main, [cmd, "nltcs/test", *args, "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"error: {named}"), res.output
    assert not out.exists()


@pytest.mark.parametrize("algorithm,param", [
    ("asobs-ent", "max_window=0"), ("asobs", "local_search=windw"),
    ("winasobs", "sampler=bogus"), ("obs", "max_sweeps=0"), ("hc-tabu", "tabu_length=0"),
    ("hc-tabu", "max_no_improve=0"), ("tabu-data", "start_fraction=1.5"),
    ("tabu-data", "start=asobs-entt"), ("tabu-data", "ess=-1"),
])
def test_parameter_values_are_checked_before_any_data(runner, tmp_path, algorithm, param):
    """README: the spec models check every parameter's value "before any data are read
    or a cluster starts"; these were accepted and failed in each run, after the cache
    build (on Dask, with the worker's traceback)."""
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", str(tmp_path / "absent.csv"), "--algorithm",
                               algorithm, "--param", param, "--serial", "-o", str(out)])
    assert res.exit_code == 2, res.output
    assert res.output.startswith(f"error: --param: algorithm {algorithm!r}"), res.output
    assert param.split("=")[0] in res.output and "absent.csv" not in res.output
