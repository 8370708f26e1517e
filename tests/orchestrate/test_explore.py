"""The distributed cache build: its batches, and byte-identical caches for any number of
workers and any batching (the serial build is the oracle)."""

from __future__ import annotations

import pytest

from bnsl_dist.cache import build_cache, write_jkl
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample

pytestmark = pytest.mark.dask


@pytest.mark.parametrize("n,workers", [(1, 1), (16, 2), (37, 2), (500, 16), (10_000, 16)])
def test_guided_batches_cover_in_order_and_shrink_to_one(n, workers):
    from bnsl_dist.orchestrate.explore import guided_batches

    variables = list(range(100, 100 + n))
    batches = guided_batches(variables, workers)
    assert [v for b in batches for v in b] == variables
    sizes = [len(b) for b in batches]
    assert all(a >= b for a, b in zip(sizes, sizes[1:], strict=False))
    assert sizes[-1] == 1 and sizes[0] == -(-n // (4 * workers))
    assert len(batches) <= 4 * workers * (1 + n.bit_length()) + 4 * workers
    assert guided_batches(variables, workers, 7) == [variables[i:i + 7]
                                                     for i in range(0, n, 7)]


def _body(cache, path) -> bytes:
    write_jkl(cache, path, comments=False)
    return path.read_bytes()


def _route(client, data, spec, threads):
    """The cache of ``data`` held in memory, through the one route batched for
    ``threads`` worker threads (its last task returns the cache)."""
    from bnsl_dist.orchestrate.explore import submit_cache_build
    from bnsl_dist.orchestrate.staging import Staging
    from bnsl_dist.pipeline.cell import CacheJob

    stage = Staging(client, shared_fs=True)
    job = CacheJob(data=stage.hold(data), cache=spec)
    return submit_cache_build(client, job, None, data.n_vars, threads, staging=stage).result()


def test_cache_bodies_are_byte_identical_for_any_number_of_workers(tmp_path):
    from bnsl_dist.cache import CacheSpec
    from bnsl_dist.orchestrate.cluster import connect

    data = sample(read_bif(bundled_path("bif/child.bif.gz")), 1000, rng=4)
    spec = CacheSpec(method="independence", scores_per_variable=120)
    serial = _body(build_cache(data, spec), tmp_path / "serial.jkl")
    bodies = {}
    for workers in (1, 2):
        with connect(workers=workers, announce=False, dashboard=False) as client:
            for threads in (workers, 5):  # batched for the threads, and otherwise
                c = _route(client, data, spec, threads)
                bodies[(workers, threads)] = _body(c, tmp_path / f"d{workers}-{threads}.jkl")
    assert set(bodies.values()) == {serial}


def test_large_data_never_ride_in_the_graph(caplog):
    """12 MB of in-memory data (1,000 variables): held (scattered once), so no task
    carries them and distributed never warns about a large graph; the cache equals the
    serial build's."""
    import warnings

    import numpy as np

    from bnsl_dist.cache import CacheSpec
    from bnsl_dist.data.dataset import CategoricalData
    from bnsl_dist.orchestrate.cluster import connect

    rng = np.random.default_rng(0)
    data = CategoricalData.from_array(rng.integers(0, 2, size=(12_000, 1000), dtype=np.int8))
    assert data.codes.nbytes >= 12_000_000
    spec = CacheSpec(method="independence", scores_per_variable=3, candidate_limit=8,
                     max_indegree=1)
    with warnings.catch_warnings(record=True) as caught, caplog.at_level("WARNING"):
        warnings.simplefilter("always")
        with connect(workers=1, announce=False, dashboard=False) as client:
            dist = _route(client, data, spec, 1)
    said = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "large graph" in m], said
    serial = build_cache(data, spec)
    assert all(dist.sets_of(v) == serial.sets_of(v) for v in range(data.n_vars))
