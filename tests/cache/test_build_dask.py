"""The one route of a cache on Dask equals the serial build (data in memory, a file the
workers read or are sent); the on-disk cache."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.cache import build_cache, read_jkl, write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data import write_csv
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample

pytestmark = pytest.mark.dask

ARRAYS = ("offsets", "scores", "par_offsets", "par_flat")


@pytest.fixture(scope="module")
def client():
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=2, announce=False, dashboard=False) as c:
        yield c


@pytest.fixture(scope="module")
def child():
    return sample(read_bif(bundled_path("bif/child.bif.gz")), 1500, rng=9)


def _same(a: ParentSetCache, b: ParentSetCache) -> None:
    for k in ARRAYS:
        assert np.array_equal(getattr(a, k), getattr(b, k)), k
    assert a.names == b.names


def _route(client, data, spec, threads, staging=None, ref=None):
    """The cache of ``data`` (held in memory), or of the file ``ref`` names, through the
    one route for ``threads`` worker threads (its last task returns the cache), and its
    number of batches."""
    from bnsl_dist.orchestrate.explore import submit_cache_build
    from bnsl_dist.orchestrate.staging import Staging
    from bnsl_dist.pipeline.cell import CacheJob

    stage = staging or Staging(client, shared_fs=True)
    job = CacheJob(data=ref if ref is not None else stage.hold(data), cache=spec)
    deps = {}
    fut = submit_cache_build(client, job, None, data.n_vars, threads, deps=deps,
                             staging=stage)
    return fut.result(), len(deps[fut.key])


@pytest.mark.parametrize("kwargs,threads", [
    ({"method": "independence", "scores_per_variable": 150}, 2),
    ({"method": "independence", "scores_per_variable": 150, "score": "bdeu"}, 3),
    ({"method": "sequential", "max_indegree": 2}, 7),
])
def test_dask_build_equals_serial_build(client, child, kwargs, threads):
    """Fanned out in batches (guided, for 2, 3 or 7 threads: other batchings), the cache
    equals the serial build's, as does the executor's build of data in memory (with a
    progress bar)."""
    from bnsl_dist.cache import CacheSpec
    from bnsl_dist.orchestrate.explore import cache_of_held
    from bnsl_dist.pipeline.cost import guided_batches

    spec = CacheSpec(**kwargs)
    serial = build_cache(child, spec)
    dist, n_batches = _route(client, child, spec, threads)
    assert n_batches == len(guided_batches(range(child.n_vars), threads)) > threads
    held = cache_of_held(client, child, spec, progress=True)
    for c in (dist, held):
        _same(serial, c)
        assert c.meta["stats"]["exact_scores"] == serial.meta["stats"]["exact_scores"]
        assert c.meta["data_hash"] == serial.meta["data_hash"] == child.content_hash()


def test_files_are_read_by_the_workers_or_sent_and_data_in_memory_held(client, child,
                                                                       tmp_path):
    """A cache job on a CSV file: the workers read the file (a shared file system) or
    get it sent (none); data with missing values are refused before anything is sent."""
    from bnsl_dist.cache import CacheSpec
    from bnsl_dist.data import read_data
    from bnsl_dist.exceptions import DataError
    from bnsl_dist.orchestrate.explore import cache_of_held
    from bnsl_dist.orchestrate.staging import Staging
    from bnsl_dist.pipeline.specs import DataRef

    path = tmp_path / "child.csv"
    write_csv(child.select(list(range(8))), path, header=True)
    local = read_data(path)
    spec = CacheSpec(method="sequential", max_indegree=1)
    serial = build_cache(local, spec)
    for shared in (True, False):
        got, _ = _route(client, local, spec, 2, Staging(client, shared_fs=shared),
                        DataRef.parse(str(path)))
        _same(serial, got)
    masked = CategoricalData.from_array(local.codes, arities=local.arities,
                                        missing=np.eye(*local.codes.shape, dtype=bool))
    with pytest.raises(DataError, match="missing values"):
        cache_of_held(client, masked, spec)


def _job(path, **settings):
    from bnsl_dist.cache import CacheSpec
    from bnsl_dist.pipeline.cell import CacheJob
    from bnsl_dist.pipeline.specs import DataRef

    return CacheJob(data=DataRef.parse(str(path)), cache=CacheSpec(**settings))


def test_a_store_keeps_a_cache_job_by_its_key_and_reads_it_back(client, child, tmp_path):
    """A cache job run into a store on Dask is kept at the store's ``caches/<key>.jkl.gz``
    (the grid's file) and equals the serial build; a later run returns the kept file (a
    marked copy put there comes back), other settings make another file, and data changed
    at the same path (the key names the path, not the bytes) are rebuilt."""
    from bnsl_dist.data import read_data
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.results.store import ResultStore

    data = tmp_path / "child.csv"
    write_csv(child.select(list(range(6))), data, header=True)
    store = ResultStore(tmp_path / "res")
    job = _job(data, method="independence", scores_per_variable=60)
    first = execute([job], client, store).caches[job.key]
    _same(first, build_cache(read_data(data), method="independence", scores_per_variable=60))
    path = store.cache_path(job.key)
    _same(first, read_jkl(path))
    marked = ParentSetCache(first.names, first.offsets, first.scores - 1.0, first.par_offsets,
                            first.par_flat, first.arities, dict(first.meta))
    write_jkl(marked, path)
    again = execute([job], client, store).caches[job.key]
    assert np.array_equal(again.scores, first.scores - 1.0)
    other = _job(data, method="independence", scores_per_variable=61)
    assert execute([other], client, store).caches[other.key].meta["scores_per_variable"] == 61
    assert len(list(store.caches_dir.glob("*.jkl.gz"))) == 2
    from bnsl_dist.pipeline.run import _load_data

    write_csv(child.select(list(range(1, 7))), data, header=True)
    _load_data.cache_clear()  # this process read the former file
    fresh = execute([job], None, store).caches[job.key]
    _same(fresh, build_cache(read_data(data), method="independence", scores_per_variable=60))
    _same(fresh, read_jkl(path))


@pytest.mark.slow  # starts a second cluster
def test_cli_build_on_a_local_cluster_fills_its_cache_dir(client, child, tmp_path):
    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.data import read_data
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.results.store import ResultStore

    data = tmp_path / "child.csv"
    write_csv(child.select(list(range(8))), data, header=True)
    res = CliRunner().invoke(main, ["cache", "build", str(data), "--scores-per-variable", "40",
                                    "--workers", "2", "--cache-dir", str(tmp_path / "cd"),
                                    "-o", str(tmp_path / "a.jkl")])
    assert res.exit_code == 0, res.output
    stored = list((tmp_path / "cd" / "caches").glob("*.jkl.gz"))
    assert len(stored) == 1
    a = read_jkl(tmp_path / "a.jkl")
    _same(a, read_jkl(stored[0]))
    local = read_data(data)
    _same(a, build_cache(local, scores_per_variable=40))
    # the executor finds the CLI's cache (same key)
    job = _job(data, scores_per_variable=40)
    again = execute([job], client, ResultStore(tmp_path / "cd")).caches[job.key]
    assert again.meta["source"] == str(stored[0])


def test_cli_build_reuses_a_running_cluster_through_its_scheduler_file(client, child,
                                                                       tmp_path):
    """`cluster start` prints ``--scheduler-file`` for later commands, cache build among
    them (`bnsl-dist cluster --help`, README): cache build had no such option (exit 2,
    "No such option '--scheduler-file'")."""
    import json

    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.data import read_data

    data = tmp_path / "child.csv"
    write_csv(child.select(list(range(6))), data, header=True)
    sched = tmp_path / "scheduler.json"
    sched.write_text(json.dumps({"address": client.scheduler.address}))
    res = CliRunner().invoke(main, ["cache", "build", str(data), "--scores-per-variable", "40",
                                    "--scheduler-file", str(sched), "--connect-timeout", "30",
                                    "--cache-dir", str(tmp_path / "cd"),
                                    "-o", str(tmp_path / "a.jkl")])
    assert res.exit_code == 0, res.output
    assert len(list((tmp_path / "cd" / "caches").glob("*.jkl.gz"))) == 1  # on the cluster
    _same(read_jkl(tmp_path / "a.jkl"), build_cache(read_data(data), scores_per_variable=40))
