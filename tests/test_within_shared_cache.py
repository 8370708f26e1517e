"""learn --time-limit with one cache shared by the seeds: built through the cache route of
every cell (explore_batch; in slices of the variables, one per Dask worker thread, when
timed), then searched and polished per seed (the executor's time-limited cells)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from bnsl_dist.cache.build import build_cache, explore_batch
from bnsl_dist.cache.independence import explore_independence
from bnsl_dist.data import write_csv
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.orchestrate.execute import execute
from bnsl_dist.pipeline.run import load_data
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.pipeline.tasks.within import (
    WithinTask,
    cache_share,
    cache_spec,
    learn_within,
    within_cells,
)
from tests.naive import naive_is_acyclic
from tests.naive_scores import naive_bic

#: A reproducible run: every stage bounded by counts, no clock.
CAPS = {"scores_per_variable": 40, "search_iterations": 6, "polish_iterations": 2,
        "max_indegree": 3}
SPEC = cache_spec(max_indegree=3, scores_per_variable=40)
TASK = WithinTask(search_iterations=6, polish_iterations=2)


@pytest.fixture(scope="module")
def child_data():
    return sample(read_bif(bundled_path("bif/child.bif.gz")), 500, rng=11)


@pytest.fixture(scope="module")
def child_ref(child_data, tmp_path_factory):
    path = tmp_path_factory.mktemp("within") / "child.csv"
    write_csv(child_data, path, header=True)
    return DataRef.parse(str(path))


def _naive_total(data, parents):
    codes = np.asarray(data.codes)
    return sum(naive_bic(codes, data.arities, v, list(p)) for v, p in enumerate(parents))


def _lists(cache):
    return [sorted((tuple(p), round(s, 9)) for p, s in cache.sets_of(v))
            for v in range(cache.n_vars)]


def test_the_time_limited_cache_is_one_pass_over_every_variable(child_data):
    """The cache of a count-capped time-limited run equals each variable explored on its
    own by explore_independence with the same caps (the route of every cell's cache)."""
    n = child_data.n_vars
    cache = build_cache(child_data, SPEC)
    scorer_cache = build_cache(child_data, SPEC, variables=list(range(n))[::-1])
    from bnsl_dist.scores import LocalScorer

    scorer = LocalScorer(child_data, "bic")
    oracle = [sorted((tuple(p), round(s, 9)) for p, s in explore_independence(
        scorer, v, max_indegree=3, max_scores=40, expand_dominated=False)[0])
        for v in range(n)]
    assert _lists(cache) == oracle == _lists(scorer_cache)


def test_a_deadline_floors_each_variable(child_data):
    """Past the deadline a variable still gets ∅ and every singleton scored (n per
    variable); past the cutoff only ∅."""
    n = child_data.n_vars
    spec = cache_spec()
    res = explore_batch(child_data, range(n), spec, deadline=time.time())
    assert sum(r.stats.exact_scores for r in res) == n * n  # ∅ + (n - 1) singletons each
    assert all(max(len(p) for p, _ in r.sets) <= 1 for r in res)
    res = explore_batch(child_data, range(n), spec, deadline=time.time() + 10,
                        cutoff=time.time())
    assert all(r.stats.exact_scores == 0 and [p for p, _ in r.sets] == [()] for r in res)
    for v, r in enumerate(res):
        assert math.isclose(r.sets[0][1], naive_bic(np.asarray(child_data.codes),
                                                    child_data.arities, v, []), rel_tol=1e-12)


def test_learn_within_on_a_given_cache_equals_the_whole_run(child_data):
    """The search and polish stages on the cache a whole run builds give the whole run's
    DAG (same caps, same seed): the cache stage is the only difference."""
    whole = learn_within(child_data, None, 4, **CAPS)
    again = learn_within(child_data, None, 4, cache=whole.cache, **CAPS)
    assert again.dag.parents == whole.dag.parents and again.score == whole.score
    assert again.exact_scores == 0 and "cache" not in again.seconds
    other = sample(read_bif(bundled_path("bif/asia.bif.gz")), 100, rng=0)
    with pytest.raises(InvalidConfigError, match="names differ"):
        learn_within(other, None, 0, cache=whole.cache, **CAPS)


def test_serial_seeds_share_one_cache(child_data, child_ref):
    cells = within_cells(child_ref, SPEC, TASK, 3, base_seed=2)
    res = execute(cells).learn_result()
    assert res["cache"]["slices"] == 1 and res["time_limit"] is None
    assert {r["n_sets"] for r in res["runs"]} == {res["cache"]["n_sets"]}
    assert res["cache"]["exact_scores"] > 0
    data = load_data(child_ref)  # as the cells read it
    for c, r in zip(cells, res["runs"], strict=True):  # each seed: its cell's stream
        assert r["seed"] == [2, c.seed]
        assert r["score"] == learn_within(data, None, c.rng(), **CAPS).score
    parents = DAG.from_json_dict(res["dag"]).parents
    assert naive_is_acyclic([list(p) for p in parents])
    assert math.isclose(res["score"], _naive_total(child_data, parents), rel_tol=1e-10)


def test_cache_share_follows_the_stage_shares():
    assert cache_share() == pytest.approx(0.2)
    assert cache_share((1, 1, 2), polish=False) == pytest.approx(0.5)
    with pytest.raises(InvalidConfigError):
        cache_share((1, 0, 1))


@pytest.mark.dask
def test_concurrent_calls_on_one_scheduler_keep_their_own_results(child_ref, tmp_path):
    """Two executions at once on one client, the same seeds and no time limit, on
    different data: each gets the serial result of its own data (task keys named by the
    seed and the slice alone handed one call the other's cache parts and runs)."""
    from concurrent.futures import ThreadPoolExecutor

    from bnsl_dist.orchestrate.cluster import connect

    path = tmp_path / "other.csv"
    write_csv(sample(read_bif(bundled_path("bif/child.bif.gz")), 300, rng=12), path,
              header=True)
    refs = (child_ref, DataRef.parse(str(path)))
    serial = [execute(within_cells(r, SPEC, TASK, 2, 5)).learn_result() for r in refs]
    with connect(workers=2, announce=False, dashboard=False) as client, \
            ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda r: execute(within_cells(r, SPEC, TASK, 2, 5),
                                               client).learn_result(), refs))
    for dist, ser in zip(runs, serial, strict=True):
        assert dist["dag"] == ser["dag"]
        assert [(r["seed"], r["score"]) for r in dist["runs"]] == \
            [(r["seed"], r["score"]) for r in ser["runs"]]
    assert serial[0]["runs"] != serial[1]["runs"]


@pytest.mark.dask
def test_dask_shared_cache_equals_serial_and_a_timed_run_uses_every_worker(child_data,
                                                                           child_ref):
    """On 2 workers: with count caps the result is the serial one (same cache, same seeds'
    DAGs); with a time limit the cache is built in 2 slices and every seed searches it,
    and the reported score is the naive BIC of the reported DAG."""
    from bnsl_dist.orchestrate.cluster import connect

    cells = within_cells(child_ref, SPEC, TASK, 2, 5)
    serial = execute(cells).learn_result()
    seen: list = []
    timed_cells = within_cells(child_ref, cache_spec(max_indegree=3),
                               WithinTask(time_limit=6.0), 2, 0)
    with connect(workers=2, announce=False, dashboard=False) as client:
        dist = execute(cells, client).learn_result()
        timed = execute(timed_cells, client, on_progress=seen.append).learn_result()
    assert dist["cache"]["n_sets"] == serial["cache"]["n_sets"]
    assert dist["cache"]["exact_scores"] == serial["cache"]["exact_scores"]
    assert [(r["seed"], r["score"]) for r in dist["runs"]] == \
        [(r["seed"], r["score"]) for r in serial["runs"]]
    assert dist["dag"] == serial["dag"]
    # the live display: both stages, time left falling, best scores from the workers
    assert seen[0].stage.startswith("cache") and seen[-1].stage.startswith("search")
    assert all(a.time_left >= b.time_left for a, b in zip(seen, seen[1:], strict=False))
    reported = [p.best_score for p in seen if p.best_score is not None]
    assert reported and max(reported) <= timed["score"] + 1e-6
    assert timed["cache"]["slices"] == 2 and len(timed["runs"]) == 2
    assert {r["n_sets"] for r in timed["runs"]} == {timed["cache"]["n_sets"]}
    parents = DAG.from_json_dict(timed["dag"]).parents
    assert naive_is_acyclic([list(p) for p in parents])
    assert math.isclose(timed["score"], _naive_total(child_data, parents), rel_tol=1e-10)


def test_cli_time_limit_saves_the_shared_cache(tmp_path):
    """--save-cache with --time-limit writes the cache every seed searched: read back, its
    sets are the result's, and each family score in it is the naive BIC."""
    import json

    from click.testing import CliRunner

    from bnsl_dist.cache import read_jkl
    from bnsl_dist.cli import main
    from bnsl_dist.data import read_data, write_csv

    data = sample(read_bif(bundled_path("bif/asia.bif.gz")), 400, rng=1)
    csv = tmp_path / "asia.csv"
    write_csv(data, csv, header=True)
    out, jkl = tmp_path / "r.json", tmp_path / "c.jkl"
    r = CliRunner().invoke(main, ["learn", str(csv), "--time-limit", "3", "--serial",
                                  "--seeds", "2", "-q", "--save-cache", str(jkl),
                                  "-o", str(out)])
    assert r.exit_code == 0, r.output
    res = json.loads(out.read_text())
    cache = read_jkl(jkl)
    assert cache.n_sets == res["cache"]["n_sets"] == res["runs"][1]["n_sets"]
    d = read_data(csv)
    codes = np.asarray(d.codes)
    for v in range(cache.n_vars):
        for parents, s in cache.sets_of(v):
            assert math.isclose(s, naive_bic(codes, d.arities, v, list(parents)),
                                rel_tol=1e-6, abs_tol=1e-6)


@pytest.mark.dask
def test_dask_cache_slices_follow_worker_threads(child_ref):
    """A worker of two threads explores two slices of a timed cache; the count-capped
    result is still the serial one."""
    from distributed import Client, LocalCluster

    from bnsl_dist.orchestrate.explore import thread_slices

    cells = within_cells(child_ref, SPEC, TASK, 1, 3)
    serial = execute(cells).learn_result()
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        slices = thread_slices(client, range(20))
        dist = execute(cells, client).learn_result()
    assert [s for s, _ in slices] == [list(range(0, 20, 2)), list(range(1, 20, 2))]
    assert len({w for _, w in slices}) == 1
    assert dist["cache"]["exact_scores"] == serial["cache"]["exact_scores"]
    assert dist["dag"] == serial["dag"] and dist["score"] == serial["score"]
