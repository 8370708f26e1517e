"""learn as cells: the per-seed merge against a direct computation, budgets honoured,
learn on a LocalCluster equal to the serial learn."""

from __future__ import annotations

import pytest

from bnsl_dist.cache import write_jkl
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.learn import LearnResult, learn, learn_cells
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec
from bnsl_dist.search import AnytimeTrace, Budget, Incumbent, make_optimizer
from bnsl_dist.search.spec import BudgetSpec
from tests.naive import random_cache

ITERS = 300


@pytest.fixture(scope="module")
def cache():
    return random_cache(25, 77, max_sets_per_var=10, max_indegree=3)


@pytest.fixture(scope="module")
def cache_file(cache, tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "c.jkl"
    write_jkl(cache, path)
    return str(path)


def _search(algorithm, iters=ITERS, **params):
    return SearchSpec(algorithm=algorithm, params=params,
                      budget=BudgetSpec.with_default_checkpoints(None, iters))


def _strip_times(res: LearnResult):
    out = res.to_dict()
    out.pop("provenance")
    for run in out["runs"]:
        run.pop("seconds")
        for inc in run["incumbents"]:
            inc.pop("elapsed")
    out["best"].pop("elapsed")
    out["cache"].pop("seconds")
    return out


@pytest.mark.parametrize("algorithm", ["obs", "asobs", "winasobs", "hc-tabu", "dp"])
def test_runs_record_the_iterations_performed(cache_file, algorithm):
    small = random_cache(8, 3, max_sets_per_var=6)
    path = cache_file.replace("c.jkl", f"small-{algorithm}.jkl")
    write_jkl(small, path)
    params = {"restarts": 20} if algorithm == "hc-tabu" else {}
    (cell,) = learn_cells(None, CacheSpec(path=path), _search(algorithm, 13, **params), 1)
    rec = run_cell(cell)
    want = 1 if algorithm == "dp" else 13  # dp: one iteration, the optimum
    assert rec.iterations == want
    assert all(it <= want for it in rec.trace_iterations)


def test_default_iteration_checkpoints():
    assert BudgetSpec.with_default_checkpoints(None, 300).iteration_checkpoints == \
        (1, 10, 100, 300)
    assert BudgetSpec.with_default_checkpoints(None, 1).iteration_checkpoints == (1,)
    assert BudgetSpec.with_default_checkpoints(30.0, None).checkpoints == (1.0, 10.0, 30.0)


def test_merge_equals_a_direct_computation(cache, cache_file):
    cells = learn_cells(None, CacheSpec(path=cache_file),
                        _search("asobs", local_search="none"), 3, base_seed=4)
    res = learn(cells)
    assert res.unit == "iterations"
    assert [c.budget for c in res.checkpoints] == [1, 10, 100, 300]
    # each seed run directly with its cell's stream, the best over seeds by hand
    budget = Budget(max_iterations=ITERS)
    traces = [list(make_optimizer("asobs", local_search="none").run(cache, budget, c.rng()))
              for c in cells]
    for row in res.checkpoints:
        cands = [(inc.score, -k, inc) for k, tr in enumerate(traces) for inc in tr
                 if inc.iterations <= row.budget]
        if not cands:
            assert row.score is None
            continue
        score, negk, inc = max(cands, key=lambda t: (t[0], t[1]))
        assert row.score == score
        assert row.seed == cells[-negk].seed
        pos = {name: i for i, name in enumerate(cache.names)}
        assert [sorted(pos[p] for p in row.dag["parents"][name]) for name in cache.names] \
            == [list(p) for p in inc.dag.parents]
    assert res.score == max(tr[-1].score for tr in traces)
    pos = {name: i for i, name in enumerate(cache.names)}
    assert res.score == pytest.approx(
        sum(cache.score_of(v, [pos[p] for p in res.dag["parents"][name]])
            for v, name in enumerate(cache.names)))
    assert res.checkpoints[-1].score == res.score
    assert LearnResult.from_dict(res.to_dict()) == res


def test_trace_merge_and_budget_cut():
    from bnsl_dist.graph import DAG

    dag = DAG.from_parents([[], []])

    def inc(t, s, it):
        return Incumbent(elapsed=t, score=s, dag=dag, iterations=it)

    a = AnytimeTrace([inc(0.1, -10, 1), inc(0.5, -8, 5), inc(1.2, -1, 9)], 9, 1.2)
    b = AnytimeTrace([inc(0.2, -9, 2), inc(0.4, -8, 3)], 3, 0.4)
    m = AnytimeTrace.merge([a, b])
    assert m.best_at(0.15).score == -10 and m.best_at(0.3).score == -9
    assert m.best_at(0.6).score == -8 and m.best_at(0.6).info["run"] == 0  # tie: earlier seed
    assert m.total_iterations == 12
    cut = a.within(Budget(seconds=1.0))
    assert cut.best.score == -8  # the incumbent found at 1.2 s is past the budget
    assert a.within(Budget(max_iterations=4)).best.score == -10


def test_seconds_budget_reports_only_what_the_budget_saw(cache_file):
    search = SearchSpec(algorithm="obs", budget=BudgetSpec(seconds=0.3, checkpoints=(0.1, 0.3)))
    res = learn(learn_cells(None, CacheSpec(path=cache_file), search, 2))
    assert res.unit == "seconds"
    assert [c.budget for c in res.checkpoints] == [0.1, 0.3]
    scores = [c.score for c in res.checkpoints if c.score is not None]
    assert scores == sorted(scores)
    assert res.checkpoints[-1].score == res.score
    assert all(i["elapsed"] <= 0.3 for r in res.runs for i in r.incumbents)


def test_bad_algorithm_parameters_or_seeds(cache_file):
    from bnsl_dist._spec import make

    with pytest.raises(InvalidConfigError, match="unknown algorithm"):
        make(SearchSpec, algorithm="nope", budget={"iterations": 1})
    with pytest.raises(InvalidConfigError, match="bogus"):
        make(SearchSpec, algorithm="asobs", params={"bogus": 1}, budget={"iterations": 1})
    with pytest.raises(InvalidConfigError, match="seeds"):
        learn_cells(None, CacheSpec(path=cache_file), _search("obs"), 0)


@pytest.fixture(scope="module", params=[True, False], ids=["processes", "threads"])
def client(request):
    """A local cluster of worker processes, then one of worker threads (the numba
    kernels release the GIL; the results must not depend on it)."""
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=2, announce=False, dashboard=False, processes=request.param) as c:
        yield c


@pytest.mark.dask
@pytest.mark.timeout(300)
@pytest.mark.parametrize("algorithm", ["asobs-ent", "obs", "memetic"])
def test_dask_equals_serial_with_iteration_budgets(client, cache_file, algorithm):
    from bnsl_dist.orchestrate.execute import execute

    cells = learn_cells(None, CacheSpec(path=cache_file), _search(algorithm), 5,
                        base_seed=11)
    assert _strip_times(execute(cells, client).learn_result()) == _strip_times(learn(cells))


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_dask_learn_from_data_builds_the_cache_once_and_equals_serial(client):
    """Data -> cache (one task per variable, exact-score budget) -> seeds: equal to the
    serial learn, which builds the same cache in-process."""
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.specs import DataRef

    cells = learn_cells(DataRef(name="nltcs", split="test"),
                        CacheSpec(scores_per_variable=60), _search("asobs", 40), 3)
    assert _strip_times(execute(cells, client).learn_result()) == _strip_times(learn(cells))


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_dask_islands_with_seconds_run_every_seed_to_the_budget(client, cache_file):
    """A budget in seconds: the islands go on without barriers; every seed searches,
    in epochs, until the budget (its clock the wall clock since the islands started)."""
    from bnsl_dist.orchestrate.execute import execute

    search = SearchSpec(algorithm="memetic", params={"population": 4, "epochs": 4},
                        budget=BudgetSpec.with_default_checkpoints(2.0, None))
    cells = learn_cells(None, CacheSpec(path=cache_file), search, 2, base_seed=3)
    res = execute(cells, client).learn_result()
    assert [r.seed for r in res.runs] == [0, 1]
    for r in res.runs:
        assert r.incumbents and r.iterations > 0
        assert r.seconds >= 2.0  # an island stops at the budget, not at an epoch
        assert all(i["elapsed"] <= 2.0 for i in r.incumbents)


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_more_seeds_than_threads_with_seconds_are_not_islands(client, cache_file):
    """``--seconds`` is a budget per seed: on Dask islands count wall seconds from their
    start, so seeds beyond the worker threads would share them; those run as
    independent seeds. Iteration budgets and serial runs keep the islands."""
    from bnsl_dist.orchestrate.execute import _islands_fit

    threads = sum(client.nthreads().values())
    timed = SearchSpec(algorithm="memetic", params={"population": 4},
                       budget=BudgetSpec.with_default_checkpoints(2.0, None))
    fit = learn_cells(None, CacheSpec(path=cache_file), timed, threads)
    over = learn_cells(None, CacheSpec(path=cache_file), timed, threads + 1)
    assert _islands_fit(client, fit) and not _islands_fit(client, over)
    assert _islands_fit(None, over)
    counted = learn_cells(None, CacheSpec(path=cache_file), _search("memetic"), threads + 1)
    assert _islands_fit(client, counted)
