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


def test_cache_bodies_are_byte_identical_for_any_number_of_workers(tmp_path):
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.explore import build_cache_distributed

    data = sample(read_bif(bundled_path("bif/child.bif.gz")), 1000, rng=4)
    kw = {"method": "independence", "scores_per_variable": 120}
    serial = _body(build_cache(data, **kw), tmp_path / "serial.jkl")
    bodies = {}
    for workers in (1, 2):
        with connect(workers=workers, announce=False, dashboard=False) as client:
            for batch in (None, 5):
                c = build_cache_distributed(client, data, batch_size=batch, **kw)
                bodies[(workers, batch)] = _body(c, tmp_path / f"d{workers}-{batch}.jkl")
    assert set(bodies.values()) == {serial}


def test_large_data_never_ride_in_the_graph(caplog):
    """12 MB of in-memory data (2,000 variables): scattered once, so no task carries
    them and distributed never warns about a large graph; the two explored variables
    equal the serial build's."""
    import warnings

    import numpy as np

    from bnsl_dist.data.dataset import CategoricalData
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.explore import build_cache_distributed

    rng = np.random.default_rng(0)
    data = CategoricalData.from_array(rng.integers(0, 2, size=(6000, 2000), dtype=np.int8))
    assert data.codes.nbytes >= 12_000_000
    kw = {"method": "independence", "scores_per_variable": 3, "candidate_limit": 8,
          "variables": [0, 1999]}
    with warnings.catch_warnings(record=True) as caught, caplog.at_level("WARNING"):
        warnings.simplefilter("always")
        with connect(workers=1, announce=False, dashboard=False) as client:
            dist = build_cache_distributed(client, data, **kw)
    said = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "large graph" in m], said
    serial = build_cache(data, **kw)
    assert dist.sets_of(0) == serial.sets_of(0) and dist.sets_of(1999) == serial.sets_of(1999)
