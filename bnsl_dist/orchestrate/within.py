"""``learn --time-limit`` on Dask: one :func:`~bnsl_dist.pipeline.within.run_in_time`
task per seed, every task bounded by the same absolute deadline; the data are scattered
once."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.orchestrate.workers import register_warmup, task_key
from bnsl_dist.pipeline.within import merge_in_time, run_in_time
from bnsl_dist.search.warmup import algorithm_spec

__all__ = ["learn_in_time_distributed"]


def learn_in_time_distributed(client: Any, data: CategoricalData, time_limit: float,
                              n_seeds: int, base_seed: int = 0,
                              options: Mapping[str, Any] | None = None,
                              started: float | None = None,
                              margin: float = 0.0) -> dict[str, Any]:
    """The best of ``n_seeds`` time-limited runs, one task each; ``time_limit`` counts
    from ``started`` (a ``time.time()``, e.g. when the command began, so the cluster's
    start is inside the limit) and ``margin`` seconds are kept for gathering."""
    t0 = time.time() if started is None else started
    opts = dict(options or {})
    register_warmup(client, cache_methods=("independence",), algorithms=[
        algorithm_spec(str(opts.get("search", "winasobs-ent")), opts.get("search_params"))])
    deadline = t0 + float(time_limit) - margin
    data_f = client.scatter(data, broadcast=True, hash=False)
    futures = [client.submit(run_in_time, data_f, deadline, base_seed, i, opts,
                             key=task_key("within", base_seed, i, deadline), pure=False)
               for i in range(n_seeds)]
    runs = client.gather(futures)
    return merge_in_time(runs, data.names, time_limit=time_limit, options=opts,
                         wall=time.time() - t0)
