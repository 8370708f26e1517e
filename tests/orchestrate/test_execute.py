"""The executor (orchestrate/execute.py) and the cell's task union: one cache build per
distinct cache, a store's done cells skipped, every kind's cell round-tripping through
its stored JSON."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data import write_csv
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.orchestrate.execute import execute
from bnsl_dist.pipeline.cell import Cell, ImputeTask, SearchTask, WithinTask
from bnsl_dist.pipeline.learn import learn_cells
from bnsl_dist.pipeline.specs import DataRef, SearchSpec
from bnsl_dist.pipeline.tasks.within import cache_spec
from bnsl_dist.results import ResultStore
from tests.naive_scores import naive_bic


@pytest.fixture(scope="module")
def asia_ref(tmp_path_factory):
    path = tmp_path_factory.mktemp("execute") / "asia.csv"
    write_csv(sample(read_bif(bundled_path("bif/asia.bif.gz")), 300, rng=4), path,
              header=True)
    return DataRef.parse(str(path))


def _search(iterations: int = 5) -> SearchSpec:
    return SearchSpec(algorithm="asobs", budget={"iterations": iterations})


def test_each_distinct_cache_is_built_once_and_a_store_skips_done_cells(asia_ref, tmp_path,
                                                                        monkeypatch):
    """Three seeds on one cache spec and one seed on another: two builds, kept in the
    store by their keys. With a store, the records are written and a second run over the
    same cells runs none of them; each record's score is the naive BIC of its DAG."""
    import importlib

    run_mod = importlib.import_module("bnsl_dist.pipeline.run")

    built: list[str] = []
    real = run_mod.build

    def counting(spec, data, builder=None):
        built.append(repr(spec))
        return real(spec, data, builder)

    monkeypatch.setattr(run_mod, "build", counting)
    cells = [*learn_cells(asia_ref, CacheSpec(scores_per_variable=30), _search(), 3),
             *learn_cells(asia_ref, CacheSpec(scores_per_variable=10), _search(), 1)]
    store = ResultStore(tmp_path / "res")
    done = execute(cells, store=store)
    assert len(built) == 2 and len(set(built)) == 2
    assert sorted(p.name for p in store.caches_dir.glob("*.jkl.gz")) == sorted(
        {f"{c.cache_job.key}.jkl.gz" for c in cells})
    assert store.done_keys() == {c.key for c in cells}
    assert done.summary.computed == [c.key for c in cells]
    from bnsl_dist.pipeline.run import load_data

    data = load_data(asia_ref)
    codes = np.asarray(data.codes)
    for rec in done.outcomes:
        parents = json.loads(rec.dag_json)["parents"]
        names = list(data.names)
        naive = sum(naive_bic(codes, data.arities, names.index(v),
                              [names.index(p) for p in parents.get(v, [])]) for v in names)
        assert math.isclose(rec.best_score, naive, rel_tol=1e-9)
    built.clear()
    again = execute(cells, store=store)
    assert again.outcomes == [None] * len(cells) and built == []
    assert again.summary.skipped == len(cells)


def test_a_cache_job_is_built_once_and_equals_the_serial_build(asia_ref, tmp_path):
    """Cache jobs alone (``cache build``): each distinct one built once, equal to
    :func:`build_cache` of its data; a job naming a ready file reads it."""
    from bnsl_dist.cache import build_cache, write_jkl
    from bnsl_dist.pipeline.cell import CacheJob
    from bnsl_dist.pipeline.run import load_data

    job = CacheJob(data=asia_ref, cache=CacheSpec(scores_per_variable=25))
    out = execute([job, job])
    oracle = build_cache(load_data(asia_ref), scores_per_variable=25)
    (cache,) = out.caches.values()
    assert out.outcomes == [cache, cache]
    for k in ("offsets", "scores", "par_offsets", "par_flat"):
        assert np.array_equal(getattr(cache, k), getattr(oracle, k)), k
    ready = tmp_path / "ready.jkl"
    write_jkl(oracle.prune_dominated(), ready)  # not what a build would give
    named = CacheJob(data=asia_ref, cache=CacheSpec(path=str(ready)))
    assert execute([named]).outcomes[0].meta["source"] == str(ready)


@pytest.mark.parametrize("task", [
    WithinTask(time_limit=5.0, algorithm="asobs"),
    WithinTask(search_iterations=3, polish=False),
    ImputeTask(k=2, search_iterations=7),
])
def test_every_task_kind_round_trips_through_its_stored_json(asia_ref, task):
    cache = cache_spec(scores_per_variable=20) if task.kind == "within" else CacheSpec()
    cell = Cell(grid="g", label="x", data=asia_ref, cache=cache, task=task, seed=3)
    back = Cell.model_validate(json.loads(json.dumps(cell.json_dict())))
    assert back == cell and back.key == cell.key and back.kind == task.kind
    assert back.seed_sequence().spawn_key == cell.seed_sequence().spawn_key
    flat = Cell(grid="g", label="x", data=asia_ref, cache=CacheSpec(),
                task=SearchTask(search=_search()), seed=3)
    assert flat.key != cell.key and "task" not in flat.json_dict()


@pytest.mark.parametrize("cache, task, needle", [
    (CacheSpec(seconds_per_variable=1.0), WithinTask(time_limit=2.0), "no seconds"),
    (cache_spec(), WithinTask(search_iterations=3, polish_iterations=2), "scores_per"),
])
def test_a_time_limited_cell_needs_a_cache_its_deadline_bounds(asia_ref, cache, task,
                                                               needle):
    with pytest.raises(ValueError, match=needle):
        Cell(grid="g", label="x", data=asia_ref, cache=cache, task=task, seed=0)


def test_a_time_limited_task_takes_cache_optimizers_and_bounds_only():
    from bnsl_dist._spec import make
    from bnsl_dist.exceptions import InvalidConfigError

    for kw, needle in ((dict(time_limit=1.0, algorithm="kmax"), "cache optimizer"),
                       (dict(search_iterations=2), "polish_iterations"),
                       (dict(time_limit=1.0, shares=(1, 0, 1)), "shares")):
        with pytest.raises(InvalidConfigError, match=needle):
            make(WithinTask, **kw)


def test_one_kind_per_execution(asia_ref):
    a = learn_cells(asia_ref, CacheSpec(scores_per_variable=5), _search(), 1)[0]
    b = Cell(grid="g", label="x", data=asia_ref, cache=CacheSpec(),
             task=ImputeTask(), seed=0)
    with pytest.raises(ValueError, match="one kind"):
        execute([a, b])
    with pytest.raises(ValueError, match="not both"):
        execute([a, a.cache_job])


def test_a_stored_run_in_this_process_starts_no_cell_that_would_overrun_the_stop_time(
        asia_ref, tmp_path):
    """Serially, as on Dask: a cell expected to take longer than the time left is not
    started (no record: it stays pending), the others run; a rerun without a stop time
    runs the rest."""
    import time

    from bnsl_dist.orchestrate.execute import Scheduling

    cells = learn_cells(asia_ref, CacheSpec(scores_per_variable=10), _search(), 3)
    store = ResultStore(tmp_path / "res")
    late = cells[1].key
    out = execute(cells, store=store, scheduling=Scheduling(
        stop_at=time.time() + 600, expected={late: 3600.0}))
    assert out.summary.not_started == [late]
    assert out.summary.computed == [cells[0].key, cells[2].key]
    assert store.done_keys() == {cells[0].key, cells[2].key}
    rest = execute(cells, store=store)
    assert rest.summary.computed == [late] and rest.summary.skipped == 2


def test_a_stored_run_expects_the_like_cells_it_has_run(asia_ref, tmp_path, monkeypatch):
    """Three cells alike (seeds) with nothing stored to go by, each taking 100 s on a
    simulated clock, 150 s before the stop time: the first starts (expected 0 s); the
    second is then expected to take as long as the first, which the 50 s left cannot
    hold: not started, nor the third. Before, a cell with nothing to go by was expected
    to take 0 s to the end, and the second started, to end 50 s past the stop time."""
    import importlib
    import time
    import types

    from bnsl_dist.orchestrate.execute import Scheduling

    now = [time.time()]  # the cache build reads the real clock: within its stop time
    clock = types.SimpleNamespace(time=lambda: now[0], perf_counter=lambda: now[0])
    monkeypatch.setattr(importlib.import_module("bnsl_dist.orchestrate.stored"), "time",
                        clock)
    run_mod = importlib.import_module("bnsl_dist.pipeline.run")
    real = run_mod.run_cell

    def slow(cell, path):
        now[0] += 100.0
        return real(cell, path)

    monkeypatch.setattr(run_mod, "run_cell", slow)
    cells = learn_cells(asia_ref, CacheSpec(scores_per_variable=10), _search(), 3)
    store = ResultStore(tmp_path / "res")
    out = execute(cells, store=store, scheduling=Scheduling(stop_at=now[0] + 150.0))
    assert out.summary.computed == [cells[0].key]
    assert out.summary.not_started == [cells[1].key, cells[2].key]
    assert store.done_keys() == {cells[0].key}
