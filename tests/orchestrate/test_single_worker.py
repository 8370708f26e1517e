"""On one worker of one thread (the background grids' ``grid run --workers 1``), the cells
whose cache is stored run before a cache still to build: the task stream's start times
of the run (``summary.spans``) show every such cell started before the build did."""

from __future__ import annotations

import pytest

from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import ensure_cache
from bnsl_dist.results.store import ResultStore

GRID = {"name": "one-worker", "seed": 1,
        "datasets": [{"name": "nltcs", "splits": ["valid", "test"]}],
        "cache": {"method": "independence", "scores_per_variable": 40, "max_indegree": 3},
        "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs-ent"}], "seeds": [0, 1],
        "budget": {"iterations": 10}}


@pytest.fixture(scope="module")
def one_worker():
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=1, announce=False, memory_limit=None) as c:
        yield c


def test_ready_cells_run_before_a_cache_build_on_one_worker(one_worker, tmp_path):
    from bnsl_dist.orchestrate.cells import run_cells

    cells = expand_grid(GridConfig.model_validate(GRID))
    store = ResultStore(tmp_path)
    by_cache: dict[str, list] = {}
    for c in cells:
        by_cache.setdefault(c.cache_job.key, []).append(c)
    stored_key, built_key = sorted(by_cache, key=lambda k: by_cache[k][0].data.split)
    assert by_cache[stored_key][0].data.split == "test"
    ensure_cache(by_cache[stored_key][0].cache_job, store.cache_path(stored_key))
    assert sum(one_worker.nthreads().values()) == 1
    summary = run_cells(one_worker, cells, store,
                        cache_path=lambda c: str(store.cache_path(c.cache_job.key)),
                        fan_out_seconds=float("inf"))
    assert len(summary.computed) == len(cells) and not summary.failed
    (build,) = summary.spans[f"cache-{built_key}"]
    ready = [summary.spans[f"cell-{c.key}"][0] for c in by_cache[stored_key]]
    assert len(ready) == 4 and all(start < build[0] for start, _ in ready)
