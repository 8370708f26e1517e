"""The islands on Dask (bnsl_dist/orchestrate/islands.py) start their clock on ready
workers: what a search derives from the cache is derived on each worker before the
clock, as a one-core run's warm-up derives it before its own (issue 44)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from bnsl_dist.orchestrate import islands as dask_islands
from bnsl_dist.search import Budget
from bnsl_dist.search.ordering import memetic
from bnsl_dist.search.ordering.memetic import Memetic
from tests.naive import random_cache

#: (what, when): each derivation of a cache's set-up and each epoch's clock origin, as
#: the worker threads of an in-process cluster saw them.
EVENTS: list[tuple[str, float | None]] = []
_REAL = {"derive": memetic._derive, "epoch": dask_islands.run_epoch}


def _derive(cache):
    EVENTS.append(("derive", time.time()))
    return _REAL["derive"](cache)


def _epoch(island, cache, budget, incoming, until, migrants, origin=None):
    EVENTS.append(("epoch", origin))
    return _REAL["epoch"](island, cache, budget, incoming, until, migrants, origin)


@pytest.mark.dask
@pytest.mark.timeout(300)
def test_the_cache_set_up_is_derived_on_the_workers_before_the_clock(monkeypatch):
    from bnsl_dist.orchestrate.cluster import connect

    monkeypatch.setattr(memetic, "_derive", _derive)
    monkeypatch.setattr(dask_islands, "run_epoch", _epoch)
    EVENTS.clear()
    cache = random_cache(30, 3, max_sets_per_var=10, max_indegree=3)  # never derived yet
    with connect(workers=2, processes=False, announce=False, dashboard=False) as client:
        dask_islands.run_islands_distributed(
            client, Memetic(population=4), cache, Budget(seconds=0.5),
            [np.random.default_rng(s) for s in (1, 2)], epochs=2, migrants=1)
    derived = [t for what, t in EVENTS if what == "derive"]
    origins = {t for what, t in EVENTS if what == "epoch"}
    assert len(origins) == 1 and None not in origins  # one wall clock, every epoch on it
    assert derived and all(t is not None and t < min(origins) for t in derived)
