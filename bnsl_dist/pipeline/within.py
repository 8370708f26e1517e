"""``learn --time-limit``: the whole run (cache, search, polishing) within one wall-clock
limit, per seed, and the seeds' runs merged into one result.

Each seed is one call of :func:`bnsl_dist.within.learn_within` bounded by a shared
absolute deadline (``time.time()``), so runs that start later (a Dask task queued behind
another) still end in time; the best DAG over the seeds is reported (ties: the earlier
seed). Serially the seeds share the limit one after the other
(:func:`learn_in_time`); :func:`bnsl_dist.orchestrate.within.learn_in_time_distributed`
runs one task per seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.pipeline.learn import SCHEMA_VERSION
from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.within import Progress, learn_within

__all__ = ["run_in_time", "learn_in_time", "merge_in_time"]


def run_in_time(data: CategoricalData, deadline: float, base_seed: int, index: int,
                options: Mapping[str, Any],
                on_progress: Callable[[Progress], None] | None = None) -> dict[str, Any]:
    """Seed ``index``'s :func:`learn_within` until the absolute ``deadline``
    (``time.time()``); its stream is ``SeedSequence(base_seed).spawn(n)[index]``. Plain
    data out (a Dask task)."""
    rng = np.random.default_rng(np.random.SeedSequence(base_seed, spawn_key=(index,)))
    limit = max(1e-3, deadline - time.time())
    res = learn_within(data, limit, rng, on_progress=on_progress, **dict(options))
    return {"seed": [int(base_seed), int(index)], "score": float(res.score),
            "parents": [list(p) for p in res.dag.parents],
            "seconds": {k: float(v) for k, v in res.seconds.items()},
            "exact_scores": int(res.exact_scores), "n_sets": int(res.cache.n_sets),
            "incumbents": [{"elapsed": float(i.elapsed), "score": float(i.score),
                            "stage": (i.info or {}).get("stage")}
                           for i in res.trace.incumbents]}


def learn_in_time(data: CategoricalData, time_limit: float, n_seeds: int = 1,
                  base_seed: int = 0, options: Mapping[str, Any] | None = None,
                  on_progress: Callable[[Progress], None] | None = None,
                  started: float | None = None) -> dict[str, Any]:
    """The seeds one after the other in this process, each with an equal share of what is
    left of ``time_limit`` (counted from ``started``, a ``time.time()``, default now)."""
    t0 = time.time() if started is None else started
    deadline = t0 + float(time_limit)
    runs = []
    for i in range(n_seeds):
        share = (deadline - time.time()) / (n_seeds - i)
        runs.append(run_in_time(data, time.time() + share, base_seed, i, options or {},
                                on_progress))
    return merge_in_time(runs, data.names, time_limit=time_limit, options=options or {},
                         wall=time.time() - t0)


def merge_in_time(runs: Sequence[dict[str, Any]], names: Sequence[str], *,
                  time_limit: float, options: Mapping[str, Any],
                  wall: float) -> dict[str, Any]:
    """The result JSON of a time-limited learn (README "Result JSON", ``mode``
    "time-limit"): the best run's DAG and score, every run's stage times and trace."""
    from bnsl_dist.graph.dag import DAG

    best = max(range(len(runs)), key=lambda r: (runs[r]["score"], -r))
    dag = DAG.from_parents(runs[best]["parents"], list(names))
    return {"schema_version": SCHEMA_VERSION, "mode": "time-limit",
            "dag": dag.to_json_dict(), "score": runs[best]["score"],
            "best_seed": runs[best]["seed"], "time_limit": float(time_limit),
            "wall_seconds": float(wall), "options": dict(options),
            "runs": [{k: v for k, v in r.items() if k != "parents"} for r in runs],
            "provenance": provenance()}
