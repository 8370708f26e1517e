"""learn --time-limit with one cache shared by the seeds: built in slices of the variables
(one per Dask worker), then searched and polished per seed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bnsl_dist.cache.independence import explore_independence
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.pipeline.within import explore_slice, learn_in_time, shared_cache
from bnsl_dist.scores import LocalScorer
from bnsl_dist.within import cache_share, explore_within, learn_within
from tests.naive import naive_is_acyclic
from tests.naive_scores import naive_bic

#: A reproducible run: every stage bounded by counts, no clock.
CAPS = {"scores_per_variable": 40, "search_iterations": 6, "polish_iterations": 2,
        "max_indegree": 3}


@pytest.fixture(scope="module")
def child_data():
    return sample(read_bif(bundled_path("bif/child.bif.gz")), 500, rng=11)


def _naive_total(data, parents):
    codes = np.asarray(data.codes)
    return sum(naive_bic(codes, data.arities, v, list(p)) for v, p in enumerate(parents))


def _lists(cache):
    return [sorted((tuple(p), round(s, 9)) for p, s in cache.sets_of(v))
            for v in range(cache.n_vars)]


def test_slices_make_the_cache_of_one_pass_over_every_variable(child_data):
    """Variables explored in interleaved slices, merged, equal each variable explored on
    its own by explore_independence with the same caps."""
    n = child_data.n_vars
    parts = [explore_slice(child_data, list(range(i, n, 3)), None, None, CAPS)
             for i in (2, 0, 1)]
    cache = shared_cache(child_data, parts, CAPS)
    scorer = LocalScorer(child_data, "bic")
    oracle = [sorted((tuple(p), round(s, 9)) for p, s in explore_independence(
        scorer, v, max_indegree=3, max_scores=40, expand_dominated=False)[0])
        for v in range(n)]
    assert _lists(cache) == oracle
    assert cache.meta["exact_scores"] == sum(p["exact_scores"] for p in parts)
    with pytest.raises(ValueError, match="no slice explored"):
        shared_cache(child_data, parts[:2], CAPS)


def test_explore_within_floors(child_data):
    """Past ``seconds`` a variable still gets ∅ and every singleton scored (n per
    variable); past ``cutoff`` only ∅."""
    scorer = LocalScorer(child_data, "bic")
    n = child_data.n_vars
    lists, exact = explore_within(scorer, range(n), 0.0)
    assert exact == n * n  # ∅ + (n - 1) singletons each, nothing more
    assert all(max(len(p) for p, _ in sets) <= 1 for sets in lists)
    lists, exact = explore_within(scorer, range(n), 10.0, cutoff=0.0)
    assert exact == 0 and all([p for p, _ in sets] == [()] for sets in lists)
    for v, sets in enumerate(lists):
        assert math.isclose(sets[0][1], naive_bic(np.asarray(child_data.codes),
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


def test_serial_seeds_share_one_cache(child_data):
    res = learn_in_time(child_data, None, n_seeds=3, base_seed=2, options=CAPS)
    assert res["cache"]["slices"] == 1 and res["time_limit"] is None
    assert {r["n_sets"] for r in res["runs"]} == {res["cache"]["n_sets"]}
    assert res["cache"]["exact_scores"] > 0 and all("exact_scores" not in r for r in res["runs"])
    for r in res["runs"]:  # each seed = learn_within with its own stream, same caps
        rng = np.random.default_rng(np.random.SeedSequence(2, spawn_key=(r["seed"][1],)))
        assert r["score"] == learn_within(child_data, None, rng, **CAPS).score
    parents = DAG.from_json_dict(res["dag"]).parents
    assert naive_is_acyclic([list(p) for p in parents])
    assert math.isclose(res["score"], _naive_total(child_data, parents), rel_tol=1e-10)


def test_cache_share_follows_the_stage_shares():
    assert cache_share() == pytest.approx(0.2)
    assert cache_share((1, 1, 2), polish=False) == pytest.approx(0.5)
    with pytest.raises(InvalidConfigError):
        cache_share((1, 0, 1))


@pytest.mark.dask
def test_concurrent_calls_on_one_scheduler_keep_their_own_results(child_data):
    """Two calls at once on one client, the same seed and no time limit, on different
    data: each gets the serial result of its own data (their task keys were the seed and
    the slice alone, so the second call could be handed the first's cache parts and
    runs)."""
    from concurrent.futures import ThreadPoolExecutor

    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.within import learn_in_time_distributed

    other = sample(read_bif(bundled_path("bif/child.bif.gz")), 300, rng=12)
    serial = [learn_in_time(d, None, n_seeds=2, base_seed=5, options=CAPS)
              for d in (child_data, other)]
    with connect(workers=2, announce=False, dashboard=False) as client, \
            ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda d: learn_in_time_distributed(client, d, None, 2, 5, CAPS),
                             (child_data, other)))
    for dist, ser in zip(runs, serial, strict=True):
        assert dist["dag"] == ser["dag"]
        assert [(r["seed"], r["score"]) for r in dist["runs"]] == \
            [(r["seed"], r["score"]) for r in ser["runs"]]
    assert serial[0]["runs"] != serial[1]["runs"]


@pytest.mark.dask
def test_dask_shared_cache_equals_serial_and_a_timed_run_uses_every_worker(child_data):
    """On 2 workers: with count caps the result is the serial one (same cache, same seeds'
    DAGs); with a time limit the cache is built in 2 slices and every seed searches it,
    and the reported score is the naive BIC of the reported DAG."""
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.within import learn_in_time_distributed

    serial = learn_in_time(child_data, None, n_seeds=2, base_seed=5, options=CAPS)
    seen: list = []
    with connect(workers=2, announce=False, dashboard=False) as client:
        dist = learn_in_time_distributed(client, child_data, None, 2, 5, CAPS)
        timed = learn_in_time_distributed(client, child_data, 6.0, 2, 0,
                                          {"max_indegree": 3}, on_progress=seen.append)
    assert dist["cache"]["slices"] == 2 and dist["cache"]["n_sets"] == serial["cache"]["n_sets"]
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
def test_dask_cache_slices_follow_worker_threads(child_data):
    """A worker of two threads explores two slices; the count-capped result is still the
    serial one."""
    from distributed import Client, LocalCluster

    from bnsl_dist.orchestrate.within import learn_in_time_distributed

    serial = learn_in_time(child_data, None, n_seeds=1, base_seed=3, options=CAPS)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        dist = learn_in_time_distributed(client, child_data, None, 1, 3, CAPS)
    assert dist["cache"]["slices"] == 2
    assert dist["cache"]["exact_scores"] == serial["cache"]["exact_scores"]
    assert dist["dag"] == serial["dag"] and dist["score"] == serial["score"]
