"""SEM on Dask: the E-step fanned out in batches of records, the M-step's cache build
per variable and k-MAX per seed.

The records that have missing values are cut into batches (10^4-10^5 rows, never one
task per record) scattered once for the whole run (they do not change between EM
iterations); the network is scattered once per iteration; each task completes one batch
with the pure :func:`bnsl_dist.sem.complete_rows`, so the result equals the serial run.
The M-step's cache build gets the completed data scattered once to every worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from distributed import Client, Future
from numpy.typing import NDArray

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.search.base import Budget
from bnsl_dist.sem.imputation import complete_rows
from bnsl_dist.sem.structural_em import SEMResult, sem_cache_spec, structural_em

__all__ = ["DaskEStep", "structural_em_distributed"]


class DaskEStep:
    """An E-step runner for :func:`structural_em` that fans out batches of records."""

    def __init__(self, client: Client, batch_size: int = 20_000) -> None:
        self.client = client
        self.batch_size = int(batch_size)
        self.n_tasks = 0
        self._batches: tuple[str, list[tuple[Future, Future]]] | None = None

    def _scattered(self, codes: NDArray[np.integer], missing: NDArray[np.bool_],
                   rows: NDArray[np.intp]) -> list[tuple[Future, Future]]:
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
        batches = self._scattered(codes, missing, rows)
        [net_f] = self.client.scatter([net], broadcast=True)
        futures = [self.client.submit(complete_rows, net_f, order, c_f, m_f, method,
                                      pure=False) for c_f, m_f in batches]
        bounds = range(0, rows.size, self.batch_size)
        self.n_tasks += len(futures)
        for a, res in zip(bounds, self.client.gather(futures), strict=True):
            out[rows[a:a + self.batch_size]] = res
        return out


def structural_em_distributed(client: Client, data: CategoricalData, *, k: int = 4,
                              rng: np.random.Generator | int | None = None,
                              batch_size: int = 20_000,
                              cache: CacheSpec | None = None,
                              search_budget: Budget | None = None,
                              distribute_cache: bool = True, **kwargs: Any) -> SEMResult:
    """:func:`bnsl_dist.sem.structural_em` with a Dask E-step and cache build."""
    cache_builder = None
    if distribute_cache:
        from bnsl_dist.orchestrate.explore import build_cache_distributed

        spec = sem_cache_spec(cache, kwargs.get("score", "bic"), data)

        def cache_builder(d: CategoricalData):  # type: ignore[no-untyped-def]
            return build_cache_distributed(client, d, spec)

    return structural_em(data, k=k, rng=rng, cache=cache,
                         search_budget=search_budget, cache_builder=cache_builder,
                         e_step_runner=DaskEStep(client, batch_size), **kwargs)
