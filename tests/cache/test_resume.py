"""A cache build cut off after k batches (a kill, or its stop time) resumes from the
batches it stored: the resumed cache equals the uninterrupted serial build (the oracle:
``build_cache`` in one go), and only the variables no stored batch holds are explored
again (counted). The stop time is read on a clock injected here that jumps past it
after k batches are stored, so no assertion depends on the machine's speed."""

from __future__ import annotations

import json
import time
import types

import numpy as np
import pytest

import bnsl_dist.cache.build as build_mod
from bnsl_dist.cache.build import build_cache
from bnsl_dist.cache.parts import BuildStopped, StoredBatches
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.exceptions import DataError
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import ensure_cache, load_data
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.results.store import ResultStore

SPEC = CacheSpec(method="independence", scores_per_variable=40, max_indegree=3)
GRID = {"name": "resume", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "scores_per_variable": 40, "max_indegree": 3},
        "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs-ent"}], "seeds": [0],
        "budget": {"iterations": 10}}


@pytest.fixture
def data():
    return load_data(DataRef.parse("nltcs/test"))


@pytest.fixture
def explored(monkeypatch):
    """The variables explored, in order; batches of 3 variables."""
    seen: list[int] = []
    real = build_mod._explore_one

    def explore_one(scorer, v, settings, kwargs, seconds=None):
        seen.append(int(v))
        return real(scorer, v, settings, kwargs, seconds)

    monkeypatch.setattr(build_mod, "_explore_one", explore_one)
    monkeypatch.setattr(build_mod, "BATCH_VARIABLES", 3)
    return seen


@pytest.fixture
def stop_after(monkeypatch):
    """``stop_after(k)``: the build's clock jumps a year ahead once k batches are
    stored."""
    saves = [0]
    limit = [None]
    real_save = StoredBatches.save

    def save(self, results):
        saves[0] += 1
        return real_save(self, results)

    def now():
        late = limit[0] is not None and saves[0] >= limit[0]
        return time.time() + (3.2e7 if late else 0.0)

    monkeypatch.setattr(StoredBatches, "save", save)
    monkeypatch.setattr(build_mod, "time", types.SimpleNamespace(time=now,
                                                                 perf_counter=time.perf_counter))

    def arm(k):
        saves[0], limit[0] = 0, k

    return arm


def same_cache(a, b):
    assert a.n_vars == b.n_vars and a.names == b.names
    for v in range(a.n_vars):
        assert a.sets_of(v) == b.sets_of(v)  # parents and scores, bit for bit
    np.testing.assert_array_equal(a.entropies, b.entropies)
    assert a.meta["stats"]["exact_scores"] == b.meta["stats"]["exact_scores"]


class Killed(Exception):
    pass


def test_a_killed_build_resumes_to_the_uninterrupted_cache(data, explored, tmp_path):
    oracle = build_cache(data, SPEC)
    explored.clear()
    stored = StoredBatches(tmp_path / "parts", data.content_hash())

    class Dies(StoredBatches):
        def save(self, results):
            if len(list(self.folder.glob("*.json"))) == 2:
                raise Killed  # the third batch explored, not stored
            return super().save(results)

    with pytest.raises(Killed):
        build_cache(data, SPEC, stored=Dies(stored.folder, stored.data_hash))
    assert explored == list(range(9)) and len(stored.load()) == 6
    explored.clear()
    resumed = build_cache(data, SPEC, stored=stored)
    assert explored == list(range(6, data.n_vars))  # only the missing variables
    same_cache(resumed, oracle)
    assert resumed.meta["remote_seconds"] == pytest.approx(  # the stored ones' seconds
        sum(resumed.meta["stats"]["seconds"][:6]), abs=1e-5)


def test_a_build_stopped_at_its_stop_time_keeps_its_batches(data, explored, stop_after,
                                                              tmp_path):
    oracle = build_cache(data, SPEC)
    stored = StoredBatches(tmp_path / "parts", data.content_hash())
    stop_after(2)
    explored.clear()
    with pytest.raises(BuildStopped, match="10 of 16 variables left"):
        build_cache(data, SPEC, stored=stored, stop_at=time.time() + 3600)
    assert explored == list(range(6))  # stopped at a batch boundary
    assert sorted(stored.load()) == list(range(6))
    stop_after(None)
    explored.clear()
    same_cache(build_cache(data, SPEC, stored=stored, stop_at=time.time() + 3600), oracle)
    assert explored == list(range(6, data.n_vars))


def test_stored_batches_of_other_data_are_not_read_and_a_bad_one_is_named(data, tmp_path):
    stored = StoredBatches(tmp_path / "parts", data.content_hash())
    res = build_mod.explore_batch(data, [0, 1], SPEC)
    path = stored.save(res)
    assert sorted(stored.load()) == [0, 1]
    back = stored.load()
    assert [back[v].sets for v in (0, 1)] == [r.sets for r in res]
    assert StoredBatches(stored.folder, "other data").load() == {}
    obj = json.loads(path.read_text())
    obj["results"][0].pop("sets")
    path.write_text(json.dumps(obj))
    with pytest.raises(DataError, match="unreadable stored batch") as err:
        stored.load()
    assert str(path) in str(err.value)


def test_ensure_cache_resumes_and_removes_its_batches(explored, stop_after, tmp_path):
    """The grid's one-task build (``ensure_cache``): stopped after 2 batches, no cache
    file and 2 batch files beside it; resumed, the file equals the uninterrupted build's
    and the batches are gone."""
    job = expand_grid(GridConfig.model_validate(GRID))[0].cache_job
    oracle = build_cache(load_data(job.data), job.cache)
    path = tmp_path / "caches" / f"{job.key}.jkl.gz"
    stop_after(2)
    explored.clear()
    with pytest.raises(BuildStopped):
        ensure_cache(job, path, stop_at=time.time() + 3600)
    parts = tmp_path / "caches" / f"{job.key}.parts"
    assert not path.exists() and len(list(parts.glob("*.json"))) == 2
    stop_after(None)
    explored.clear()
    ensure_cache(job, path)
    assert explored == list(range(6, 16)) and not parts.exists()
    from bnsl_dist.cache.jkl import read_jkl

    same_cache(read_jkl(path), oracle)


def test_a_grid_run_stopped_in_a_build_keeps_its_batches(explored, stop_after, tmp_path):
    """``grid run --stop-at`` in this process: the build stops after 2 batches, its
    cells are not started (no record, no failure), the batches stay; the next run
    explores only the rest and stores what an uninterrupted grid run stores."""
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.orchestrate.stored import Scheduling

    cells = expand_grid(GridConfig.model_validate(GRID))
    store = ResultStore(tmp_path / "run")
    stop_after(2)
    explored.clear()
    out = execute(cells, None, store, scheduling=Scheduling(stop_at=time.time() + 3600))
    assert sorted(out.summary.not_started) == sorted(c.key for c in cells)
    assert not out.summary.failed and store.read_failures() == []
    assert explored == list(range(6))
    key = cells[0].cache_job.key
    assert len(list((store.caches_dir / f"{key}.parts").glob("*.json"))) == 2
    stop_after(None)
    explored.clear()
    out = execute(cells, None, store, scheduling=Scheduling(stop_at=time.time() + 3600))
    assert explored == list(range(6, 16)) and len(out.summary.computed) == len(cells)
    assert not (store.caches_dir / f"{key}.parts").exists()
    whole = ResultStore(tmp_path / "whole")
    execute(cells, None, whole, scheduling=Scheduling())
    assert sorted((r.key, r.best_score, r.dag_json) for r in store.read_results()) == \
        sorted((r.key, r.best_score, r.dag_json) for r in whole.read_results())
