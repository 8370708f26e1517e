"""Per-seed search: the reduce against a direct computation, Dask equal to serial."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.orchestrate.anytime import (
    iteration_checkpoints,
    search_distributed,
    search_serial,
    seed_streams,
)
from bnsl_dist.search import Budget, make_optimizer
from tests.naive import random_cache

ITERS = 300


@pytest.fixture(scope="module")
def cache():
    return random_cache(25, 77, max_sets_per_var=10, max_indegree=3)


def _strip_times(res):
    out = json.loads(json.dumps(res))
    for run in out["runs"]:
        run.pop("seconds")
        for inc in run["incumbents"]:
            inc.pop("elapsed")
    out["best"].pop("elapsed")
    return out


def test_seed_streams():
    a = seed_streams(3, base_seed=5)
    b = seed_streams(3, base_seed=5)
    assert [s.spawn_key for s in a] == [s.spawn_key for s in b] == [(0,), (1,), (2,)]
    assert seed_streams([4, 9]) == [4, 9]
    for bad in (0, [], [1, 1]):
        with pytest.raises(InvalidConfigError):
            seed_streams(bad)


@pytest.mark.parametrize("algorithm", ["obs", "asobs", "winasobs", "hc-tabu", "dp"])
def test_runs_record_the_iterations_performed(cache, algorithm):
    from bnsl_dist.orchestrate.anytime import run_seed

    small = random_cache(8, 3, max_sets_per_var=6)
    run = run_seed(small, algorithm, {"restarts": 20} if algorithm == "hc-tabu" else {},
                   Budget(max_iterations=13), 0)
    want = 1 if algorithm == "dp" else 13  # dp: one iteration, the optimum
    assert run["iterations"] == want
    assert all(inc["iterations"] <= want for inc in run["incumbents"])


def test_iteration_checkpoints():
    assert iteration_checkpoints(300) == [1, 10, 100, 300]
    assert iteration_checkpoints(1) == [1]


def test_serial_reduce_equals_a_direct_computation(cache):
    budget = Budget(max_iterations=ITERS)
    res = search_serial(cache, "asobs", {"local_search": "none"}, budget, [3, 8, 21])
    assert res["unit"] == "iterations"
    assert [c["budget"] for c in res["checkpoints"]] == [1, 10, 100, 300]
    # each seed run directly, then the best over seeds at each checkpoint by hand
    traces = [list(make_optimizer("asobs", local_search="none")
                   .run(cache, budget, np.random.default_rng(s))) for s in (3, 8, 21)]
    for row in res["checkpoints"]:
        cands = [(inc.score, -k, inc) for k, tr in enumerate(traces) for inc in tr
                 if inc.iterations <= row["budget"]]
        if not cands:
            assert row["score"] is None
            continue
        score, negk, inc = max(cands, key=lambda t: (t[0], t[1]))
        assert row["score"] == score
        assert row["seed"] == [3, 8, 21][-negk]
        parents = row["dag"]["parents"]
        assert [sorted(int(p) for p in parents[str(v)]) for v in range(cache.n_vars)] == \
            [list(p) for p in inc.dag.parents]
    assert res["best"]["score"] == max(tr[-1].score for tr in traces)
    assert res["best"]["score"] == pytest.approx(
        sum(cache.score_of(v, [int(p) for p in res["best"]["dag"]["parents"][str(v)]])
            for v in range(cache.n_vars)))
    assert res["checkpoints"][-1]["score"] == res["best"]["score"]


def test_seconds_budget_checkpoints(cache):
    res = search_serial(cache, "obs", None, Budget(seconds=0.3), 2, checkpoints=[0.1, 1.0])
    assert res["unit"] == "seconds"
    assert [c["budget"] for c in res["checkpoints"]] == [0.1, 0.3]
    scores = [c["score"] for c in res["checkpoints"] if c["score"] is not None]
    assert scores == sorted(scores)
    assert res["checkpoints"][-1]["score"] == res["best"]["score"]


def test_bad_algorithm_or_parameters(cache):
    with pytest.raises(InvalidConfigError):
        search_serial(cache, "nope", None, Budget(max_iterations=1), 1)
    with pytest.raises(InvalidConfigError):
        search_serial(cache, "asobs", {"bogus": 1}, Budget(max_iterations=1), 1)


@pytest.fixture(scope="module")
def client():
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=2, announce=False, dashboard=False) as c:
        yield c


@pytest.mark.dask
@pytest.mark.timeout(300)
@pytest.mark.parametrize("algorithm", ["asobs-ent", "obs"])
def test_dask_equals_serial_with_iteration_budgets(client, cache, algorithm):
    budget = Budget(max_iterations=ITERS)
    serial = search_serial(cache, algorithm, None, budget, 5, base_seed=11)
    dist = search_distributed(client, cache, algorithm, None, budget, 5, base_seed=11)
    assert _strip_times(dist) == _strip_times(serial)


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_dask_from_a_jkl_path(client, tmp_path, cache):
    from bnsl_dist.cache import write_jkl

    path = tmp_path / "c.jkl"
    write_jkl(cache, path)
    budget = Budget(max_iterations=50)
    dist = search_distributed(client, path, "asobs", None, budget, [1, 2, 3])
    serial = search_serial(cache, "asobs", None, budget, [1, 2, 3])
    assert _strip_times(dist) == _strip_times(serial)
    with pytest.raises(InvalidConfigError):
        search_distributed(client, tmp_path / "missing.jkl", "asobs", None, budget, 1)
