"""Distributed parent-set exploration: one Dask task per variable (or small batch).

The data reach the workers through one task keyed ``data-<content hash>`` (it reads
the file, or carries the arrays in its spec): not scattered, so a lost worker's copy is
recomputed. Each exploration task runs :func:`bnsl_dist.cache.build.explore_batch`,
the very function of the serial build, and :func:`~bnsl_dist.cache.build.assemble_cache`
merges the results, so a score-budgeted (or unbudgeted) build equals the serial one.
With ``cache_dir`` the cache is written there as ``<key>.jkl`` (key = hash of the
data and the settings) and later runs with the same data and settings read it back.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from distributed import Client, Future, as_completed

from bnsl_dist.cache.build import (
    VariableResult,
    as_spec,
    assemble_cache,
    cache_key,
    explore_batch,
    resolve_variables,
)
from bnsl_dist.cache.jkl import read_jkl, write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.scores.local import LocalScorer

__all__ = ["build_cache_distributed", "cached_path", "load_data_task"]


def load_data_task(spec: str | CategoricalData, expected_hash: str) -> CategoricalData:
    """The data-loading task: read ``spec`` (a path or bundled name) or pass data through.

    Raises
    ------
    DataError
        The worker read different data than the client (another file at that path).
    """
    if isinstance(spec, CategoricalData):
        return spec
    from bnsl_dist.data.registry import resolve_data

    data = resolve_data(spec)
    if data.content_hash() != expected_hash:
        raise DataError("the data read on the worker differ from the client's copy",
                        path=str(spec))
    return data


def _explore_task(data: CategoricalData, variables: list[int], settings: CacheSpec
                  ) -> list[VariableResult]:
    return explore_batch(data, variables, settings)


def cached_path(cache_dir: str | os.PathLike[str], data: CategoricalData,
                settings: CacheSpec, variables: Sequence[int]) -> Path:
    """Where a cache built from these data and settings is kept."""
    return Path(cache_dir) / f"cache-{cache_key(data.content_hash(), settings, variables)}.jkl"


def build_cache_distributed(client: Client, data: CategoricalData | str | os.PathLike[str],
                            spec: CacheSpec | None = None, *,
                            variables: Sequence[int | str] | None = None,
                            progress: bool = False, batch_size: int | None = None,
                            cache_dir: str | os.PathLike[str] | None = None,
                            **settings: Any) -> ParentSetCache:
    """:func:`bnsl_dist.cache.build_cache` on a Dask cluster.

    Parameters
    ----------
    client : distributed.Client
        The cluster (see :func:`bnsl_dist.orchestrate.cluster.connect`).
    data : CategoricalData, or a path / bundled name
        A path is read by the workers themselves (checked against the client's copy).
    spec, settings, variables, progress
        As in :func:`~bnsl_dist.cache.build_cache`; ``progress`` shows a rich bar.
    batch_size : int, optional
        Variables per task (default 1).
    cache_dir : path, optional
        Keep the cache there and reuse it on later calls with the same data and
        settings.

    Returns
    -------
    ParentSetCache
        Equal to the serial build (score budget or none).
    """
    cfg = as_spec(spec, settings)
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int)
                                   or batch_size < 1):
        raise InvalidConfigError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(data, CategoricalData):
        local = data
        source: str | CategoricalData = data
    else:
        from bnsl_dist.data.registry import resolve_data

        p = Path(data)
        source = str(p.resolve()) if p.exists() else str(data)
        local = resolve_data(source)
    LocalScorer(local, cfg.score, cfg.ess)  # validates the data
    todo = resolve_variables(local, variables)
    target = None if cache_dir is None else cached_path(cache_dir, local, cfg, todo)
    if target is not None and target.exists():
        cache = read_jkl(target, names=local.names)
        if cache.meta.get("data_hash") == local.content_hash():
            return cache
    h = local.content_hash()
    data_future = client.submit(load_data_task, source, h, key=f"data-{h}", pure=False)
    size = batch_size or 1
    batches = [todo[i:i + size] for i in range(0, len(todo), size)]
    tag = cache_key(h, cfg, todo)
    futures: list[Future] = [client.submit(_explore_task, data_future, b, cfg,
                                           key=f"explore-{tag}-{i}", pure=False)
                             for i, b in enumerate(batches)]
    results = _drain(futures, batches, cfg, progress)
    client.cancel(futures)
    cache = assemble_cache(local, results, cfg, todo)
    if target is not None:
        write_jkl(cache, target, comments=True)
    return cache


def _drain(futures: list[Future], batches: list[list[int]], settings: CacheSpec,
           progress: bool) -> list[VariableResult]:
    results: list[VariableResult] = []
    if not progress:
        for _fut, res in as_completed(futures, with_results=True):
            results.extend(res)
        return results
    from rich.progress import Progress

    sizes = {f.key: len(b) for f, b in zip(futures, batches, strict=True)}
    with Progress(transient=True) as bar:
        task = bar.add_task(f"{settings.method} selection", total=sum(sizes.values()))
        for fut, res in as_completed(futures, with_results=True):
            results.extend(res)
            bar.advance(task, sizes[fut.key])
    return results

