"""SEM on Dask: the E-step fanned out in batches of records (:class:`DaskEStep`); the
executor (:func:`bnsl_dist.orchestrate.execute.execute`, an impute cell) gives it to
structural EM with the M-step's cache built in variable batches through the one route of
a cache on Dask (:func:`bnsl_dist.orchestrate.explore.cache_of_held`; k-MAX runs in the
client, as in the serial run).

The records that have missing values are cut into batches (10^4-10^5 rows, never one
task per record) scattered once for the whole run (they do not change between EM
iterations); the network is scattered once per iteration; each task completes one batch
with the pure :func:`bnsl_dist.sem.complete_rows`, so the result equals the serial run.
When all the records fit one batch the client completes them itself (shipping them and
the network to one worker would only add latency). The inference kernels are warmed on
every worker (:class:`InferenceWarmup`) before the first E-step that fans out, as the
cache kernels are (:func:`bnsl_dist.orchestrate.workers.register_warmup`). The M-step's
cache build gets the completed data scattered once to every worker.

At 3,000 x 60 the whole serial run takes ~10 CPU seconds, less than a local cluster's
start; ``bnsl-dist impute`` then runs serially unless a cluster is asked for
(:func:`bnsl_dist.sem.budgets.prefer_serial`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from distributed import Client, Future
from distributed.diagnostics.plugin import WorkerPlugin
from numpy.typing import NDArray

from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.sem.imputation import complete_rows

__all__ = ["DaskEStep", "InferenceWarmup"]

_WARM: set[str] = set()  # per worker process


def _warm_inference() -> None:
    """Complete a toy network's rows once (MPE and marginals): loads the junction-tree
    kernels from numba's disk cache, or compiles them, in this process."""
    if "inference" in _WARM:
        return
    from bnsl_dist.model.generate import random_network

    net = random_network(4, 2, rng=0)
    codes = np.zeros((3, 4), dtype=np.int64)
    miss = np.zeros((3, 4), dtype=bool)
    miss[:, 1] = True
    for method in ("mpe", "marginal"):
        complete_rows(net, None, codes, miss, method)
    _WARM.add("inference")


class InferenceWarmup(WorkerPlugin):
    """Warms the E-step's inference kernels in every worker process, now and in workers
    that join later (the cache kernels are warmed by ``register_warmup``, whose
    specification covers cache methods and optimizers only)."""

    idempotent = True

    def setup(self, worker: Any) -> None:
        _warm_inference()


class DaskEStep:
    """An E-step runner for :func:`structural_em` that fans out batches of records."""

    def __init__(self, client: Client, batch_size: int = 20_000) -> None:
        self.client = client
        self.batch_size = int(batch_size)
        self.n_tasks = 0
        self._batches: tuple[str, list[tuple[Future[Any], Future[Any]]]] | None = None
        self._warmed = False

    def _scattered(self, codes: NDArray[np.integer], missing: NDArray[np.bool_],
                   rows: NDArray[np.intp]) -> list[tuple[Future[Any], Future[Any]]]:
        """The record batches on the cluster, scattered on the first call only."""
        from dask.base import tokenize

        token = tokenize(codes, missing, self.batch_size)
        if self._batches is None or self._batches[0] != token:
            parts = []
            for a in range(0, rows.size, self.batch_size):
                idx = rows[a:a + self.batch_size]
                parts += [np.ascontiguousarray(codes[idx]), np.ascontiguousarray(missing[idx])]
            futs = self.client.scatter(parts)
            self._batches = (token, list(zip(futs[::2], futs[1::2], strict=True)))
        return self._batches[1]

    def __call__(self, net: BayesianNetwork, order: Sequence[int] | None,
                 codes: NDArray[np.integer], missing: NDArray[np.bool_],
                 method: str) -> NDArray[np.int64]:
        out = np.asarray(codes).astype(np.int64, copy=True)
        rows = np.nonzero(np.asarray(missing).any(axis=1))[0]
        if rows.size == 0:
            return out
        if rows.size <= self.batch_size:  # one batch: no task
            return complete_rows(net, order, codes, missing, method)  # type: ignore[arg-type]
        if not self._warmed:
            from bnsl_dist.orchestrate.workers import task_key

            self.client.register_plugin(InferenceWarmup(), name=task_key("bnsl-warmup-sem"))
            self._warmed = True
        batches = self._scattered(codes, missing, rows)
        [net_f] = self.client.scatter([net], broadcast=True)
        futures = [self.client.submit(complete_rows, net_f, order, c_f, m_f, method,
                                      pure=False) for c_f, m_f in batches]
        bounds = range(0, rows.size, self.batch_size)
        self.n_tasks += len(futures)
        for a, res in zip(bounds, self.client.gather(futures), strict=True):
            out[rows[a:a + self.batch_size]] = res
        return out
