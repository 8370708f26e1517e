"""The time-limited task (learn_within, learn --time-limit): one budget for cache, search
and polishing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnsl_dist.cache.independence import explore_independence
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.pipeline.tasks.within import learn_within
from bnsl_dist.scores import LocalScorer
from tests.naive import naive_is_acyclic
from tests.naive_scores import naive_bic


@pytest.fixture(scope="module")
def child_data():
    return sample(read_bif(bundled_path("bif/child.bif.gz")), 600, rng=3)


def _naive_total(data, dag):
    codes = np.asarray(data.codes)
    return sum(naive_bic(codes, data.arities, v, list(p)) for v, p in enumerate(dag.parents))


@pytest.mark.parametrize("expand", [False, True])
def test_reproducible_form_is_deterministic_and_rescores(child_data, expand):
    kw = dict(scores_per_variable=60, search_iterations=30, polish_iterations=3,
              expand_dominated=expand)
    a = learn_within(child_data, None, 5, **kw)
    b = learn_within(child_data, None, 5, **kw)
    assert a.dag == b.dag and a.score == b.score
    assert naive_is_acyclic([list(p) for p in a.dag.parents])
    assert math.isclose(a.score, _naive_total(child_data, a.dag), rel_tol=1e-10)
    # the cache is independence selection's, variable by variable, with that budget
    scorer = LocalScorer(child_data, "bic")
    for v in (0, 7, 19):
        sets, _ = explore_independence(scorer, v, max_scores=60, expand_dominated=expand)
        assert a.cache.sets_of(v) == [(ps, pytest.approx(s, rel=1e-12)) for ps, s in sets]
    stages = [i.info["stage"] for i in a.trace.incumbents]
    assert stages[0] == "search" and set(stages) <= {"search", "polish"}
    scores = [i.score for i in a.trace.incumbents]
    assert all(y > x for x, y in zip(scores, scores[1:], strict=False))
    assert a.score == scores[-1]
    assert set(a.seconds) == {"cache", "search", "polish", "total"}


def test_polish_never_loses_and_can_be_off(child_data):
    kw = dict(scores_per_variable=30, search_iterations=20, polish_iterations=2)
    on = learn_within(child_data, None, 1, **kw)
    off = learn_within(child_data, None, 1, polish=False, **kw)
    assert "polish" not in off.seconds
    assert all(i.info["stage"] == "search" for i in off.trace.incumbents)
    assert on.score >= off.score
    assert math.isclose(off.score, _naive_total(child_data, off.dag), rel_tol=1e-10)


def test_time_limited_run_returns_a_scored_dag(child_data):
    seen = []
    res = learn_within(child_data, 3.0, 0, on_progress=seen.append)
    assert math.isclose(res.score, _naive_total(child_data, res.dag), rel_tol=1e-10)
    # the stage's start (0 done: a long first variable still shows the stage), then each
    assert [p.done for p in seen if p.stage == "cache"] == list(range(0, 21))
    assert all(p.time_left is not None and p.time_left >= 0 for p in seen)
    # a limit too short for any exploration still gives a DAG (∅ families, then polish)
    tiny = learn_within(child_data, 1e-6, 0)
    assert math.isclose(tiny.score, _naive_total(child_data, tiny.dag), rel_tol=1e-10)


def test_compiling_the_kernels_is_not_counted_in_the_limit(child_data, monkeypatch):
    """A first run compiles the numba kernels (tens of seconds): counted, it spent a 10 s
    limit on alarm compiling and returned a 1-arc DAG. The deadline moves by the
    compiling time the warm-up measured (here a stand-in reporting 2 s), so even a
    limit that is already over when the warm-up ends leaves the stages their time."""
    import contextlib

    import bnsl_dist.pipeline.tasks.within as within
    from bnsl_dist.search.warmup import CompileClock

    @contextlib.contextmanager
    def two_seconds():
        yield CompileClock(2.0)

    monkeypatch.setattr(within, "compile_clock", two_seconds)
    seen = []
    res = learn_within(child_data, 1e-6, 0, on_progress=seen.append)
    assert res.compile_seconds == 2.0
    first = next(p for p in seen if p.stage == "cache")
    assert first.time_left > 0.5  # 0 when the compiling counted
    assert math.isclose(res.score, _naive_total(child_data, res.dag), rel_tol=1e-10)


def test_exported_at_the_top_level():
    import bnsl_dist

    assert bnsl_dist.learn_within is learn_within


@pytest.mark.parametrize("start", ["search", "empty"])
def test_single_start_polish(child_data, start):
    kw = dict(scores_per_variable=25, search_iterations=5, polish_iterations=2)
    res = learn_within(child_data, None, 0, polish_from=start, **kw)
    assert {i.info.get("from") for i in res.trace.incumbents} <= {None, start}
    assert math.isclose(res.score, _naive_total(child_data, res.dag), rel_tol=1e-10)


@pytest.mark.parametrize("kw", [
    dict(),  # no limit at all
    dict(scores_per_variable=10, search_iterations=5),  # polishing unbounded
    dict(time_limit=0),
    dict(time_limit=1, shares=(1, 1)),
    dict(time_limit=1, shares=(1, 0, 1)),
    dict(time_limit=1, polish_candidates="some"),
    dict(time_limit=1, polish_from="middle"),
    dict(time_limit=1, score="ll"),
    dict(time_limit=1, search="nope"),
    dict(time_limit=1, scores_per_variable=0),
])
def test_bad_settings(child_data, kw):
    with pytest.raises(InvalidConfigError):
        learn_within(child_data, **kw)


def test_time_limited_seeds_merge_to_the_best_rescored_dag(tmp_path, child_data):
    """learn --time-limit's pipeline: the seeds' cells share the limit, each run is scored
    by an independent naive BIC, and the reported DAG is the best run's."""
    from bnsl_dist.data import write_csv
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.pipeline.tasks.within import WithinTask, cache_spec, within_cells

    csv = tmp_path / "child.csv"
    write_csv(child_data, csv)
    cells = within_cells(DataRef.parse(str(csv)), cache_spec(), WithinTask(time_limit=4.0),
                         2, base_seed=9)
    res = execute(cells).learn_result()
    assert [r["seed"] for r in res["runs"]] == [[9, 0], [9, 1]]
    dag = DAG.from_json_dict(res["dag"])
    assert naive_is_acyclic([list(p) for p in dag.parents])
    assert math.isclose(res["score"], _naive_total(child_data, dag), rel_tol=1e-10)
    assert res["score"] == max(r["score"] for r in res["runs"])


def test_cli_time_limit_excludes_stage_budgets(tmp_path):
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "5", "--seconds", "3",
                                  "--serial", "-o", str(out)])
    assert r.exit_code == 2 and "--seconds" in r.output and not out.exists()


def test_cli_short_time_limit_runs_in_process_unless_a_cluster_is_asked_for(tmp_path,
                                                                              monkeypatch):
    """Below LOCAL_CLUSTER_MIN_LIMIT with no cluster option, learn --time-limit starts no
    local cluster (its start would eat the limit); --workers still gets one."""
    import json

    from click.testing import CliRunner

    import bnsl_dist.orchestrate.cluster as cluster
    from bnsl_dist.cli import main
    from bnsl_dist.cli.learn import LOCAL_CLUSTER_MIN_LIMIT

    asked: list[dict] = []

    def no_cluster(**kw):
        asked.append(kw)
        raise RuntimeError("a cluster was started")

    monkeypatch.setattr(cluster, "connect", no_cluster)
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "2", "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert asked == [] and res["mode"] == "time-limit" and len(res["runs"]) == 1
    assert res["wall_seconds"] < LOCAL_CLUSTER_MIN_LIMIT
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "2", "--workers", "1",
                                  "-q", "-o", str(tmp_path / "w.json")])
    assert r.exit_code != 0 and asked and asked[0]["workers"] == 1


def test_cli_time_limit_says_its_result_unless_quiet(tmp_path):
    """Off a terminal, learn --time-limit shows no live progress but still closes with
    its best score (as learn without a limit closes with its summary); -q says nothing."""
    import json

    from click.testing import CliRunner

    from bnsl_dist.cli import main

    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "2", "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["time_limit"] == 2.0  # the limit asked for (was 1.9: less the write margin)
    assert 0.0 <= res["compile_seconds"] <= res["wall_seconds"]  # not in the limit
    arcs = sum(len(v) for v in res["dag"]["parents"].values())
    assert r.stdout == ""
    assert f"best score {res['score']:.4f} ({arcs} arcs)" in r.stderr
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "2", "-q", "-o",
                                  str(tmp_path / "q.json")])
    assert r.exit_code == 0 and r.stderr == "" and r.stdout == ""


@pytest.mark.parametrize("limit", ["nan", "inf"])
def test_cli_time_limit_must_be_finite(tmp_path, limit):
    """click's FloatRange(min=0, min_open=True) lets nan and inf through: nan wrote a
    result with ``"time_limit": NaN`` (not JSON) and the empty DAG, exit 0; inf ended in
    an OverflowError traceback, exit 1. Both are one line, exit 2, nothing written."""
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs/test", "--time-limit", limit, "--serial",
                                  "-o", str(out)])
    text = r.output.strip()
    assert r.exit_code == 2 and text.startswith("error:") and "--time-limit" in text
    assert text.count("\n") == 0 and not out.exists()


@pytest.mark.parametrize("limit", [math.nan, math.inf, 0.0, -1.0])
def test_a_time_limited_task_rejects_a_bad_limit(limit):
    """The task checks its limit before any cache stage: NaN gave a run of 1 ms stages,
    inf an OverflowError in the cache stage."""
    from bnsl_dist._spec import make
    from bnsl_dist.pipeline.tasks.within import WithinTask

    with pytest.raises(InvalidConfigError, match="time_limit"):
        make(WithinTask, time_limit=limit)


@pytest.mark.parametrize("args, needle", [
    (["--score", "bdeu", "--ess", "0"], "ess"),  # was run with ess 1, exit 0
    (["-k", "3"], "-k"),  # was ignored, exit 0 (without --time-limit: exit 2)
])
def test_cli_time_limit_checks_the_options_learn_checks(tmp_path, args, needle):
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs/test", "--time-limit", "2", "--serial",
                                  *args, "-o", str(out)])
    text = r.output.strip()
    assert r.exit_code == 2 and text.startswith("error:") and needle in text
    assert not out.exists()


def test_cli_time_limit_runs_with_the_cache_options_given(tmp_path):
    """--score/--ess/--max-indegree/--candidate-limit/--expand-dominated reach
    learn_within (--expand-dominated was dropped), and the result is the naive BDeu
    (ess 4) of its DAG, whose in-degree is at most 2."""
    import json

    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.graph.dag import DAG
    from tests.naive_scores import naive_bdeu

    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs/test", "--time-limit", "2", "--serial",
                                  "--score", "bdeu", "--ess", "4", "--max-indegree", "2",
                                  "--candidate-limit", "5", "--expand-dominated", "true",
                                  "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["options"] == {"score": "bdeu", "ess": 4.0, "max_indegree": 2,
                              "candidate_limit": 5, "expand_dominated": True}
    data = load_data("nltcs/test")
    dag = DAG.from_json_dict(res["dag"])
    assert max(len(p) for p in dag.parents) <= 2
    codes = np.asarray(data.codes)
    naive = sum(naive_bdeu(codes, data.arities, v, list(p), 4.0)
                for v, p in enumerate(dag.parents))
    assert math.isclose(res["score"], naive, rel_tol=1e-10)


_WARM_RUN = """
import json
from numba.core import event
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.pipeline.tasks.within import learn_within

data = sample(read_bif(bundled_path("bif/asia.bif.gz")), 300, rng=0)
with event.install_recorder("numba:compile") as rec:
    learn_within(data, None, 0, scores_per_variable=30, search_iterations=5,
                 polish_iterations=2)
print(json.dumps(sorted({ev.data["dispatcher"].py_func.__qualname__
                         for _, ev in rec.buffer if ev.is_start})))
"""


def test_a_warm_process_compiles_nothing():
    """Once numba's disk cache holds the kernels, a new process loads them all: the
    family memo's own Python methods (a typed Dict's len, clear, in, []) compiled afresh
    in every process, about a second of each run's start and every Dask worker's."""
    import json
    import subprocess
    import sys

    runs = [json.loads(subprocess.run([sys.executable, "-c", _WARM_RUN], check=True,
                                      capture_output=True, text=True).stdout.splitlines()[-1])
            for _ in range(2)]
    assert runs[1] == [], runs[1]  # the first run may compile what no earlier test did


def test_cli_time_limit_on_a_fresh_machine_does_not_count_the_compiling(tmp_path,
                                                                        monkeypatch):
    """An empty numba cache and a local cluster: learn --time-limit compiles in the
    client before the cluster starts and leaves that time out of the limit, as the
    serial run does (counted, a cold first run's compiling took the cache stage's whole
    share: the empty DAG). Compiling is stood in for by 8 s of sleep within a 10 s limit:
    the network must still be learned (a non-empty DAG whose score is the naive BIC of it),
    and the result reports the 8 s as compiling."""
    import json
    import time
    from contextlib import contextmanager
    from types import SimpleNamespace

    from click.testing import CliRunner

    import bnsl_dist.search.warmup as warmup
    from bnsl_dist.cli import main
    from bnsl_dist.data.registry import resolve_data
    from tests.naive_scores import naive_bic

    @contextmanager
    def fake_clock():
        clock = SimpleNamespace(seconds=0.0)
        t = time.time()
        yield clock
        clock.seconds = time.time() - t

    monkeypatch.setattr(warmup, "kernels_cached", lambda: False)
    monkeypatch.setattr(warmup, "warm_up", lambda *a, **k: time.sleep(8.0) or {})  # warm_up returns its problems
    monkeypatch.setattr(warmup, "compile_clock", fake_clock)
    out = tmp_path / "r.json"
    r = CliRunner().invoke(main, ["learn", "nltcs", "--time-limit", "10", "--workers", "1",
                                  "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    assert res["compile_seconds"] >= 8.0 and res["wall_seconds"] >= 8.0
    names = res["dag"]["nodes"]
    parents = res["dag"]["parents"]
    assert sum(map(len, parents.values())) > 0
    data = resolve_data("nltcs")
    codes = np.asarray(data.codes)
    naive = sum(naive_bic(codes, data.arities, names.index(v),
                          [names.index(p) for p in parents.get(v, [])]) for v in names)
    assert res["score"] == pytest.approx(naive, rel=1e-9)
