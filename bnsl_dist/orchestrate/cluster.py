"""Dask clusters: a local multi-process cluster by default, or an existing scheduler.

The only module that creates clients; every other orchestrate function takes a client.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from distributed import Client, LocalCluster

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["connect", "default_n_workers"]


def default_n_workers() -> int:
    """One single-threaded worker process per core (numba kernels hold the GIL)."""
    return max(1, os.cpu_count() or 1)


@contextlib.contextmanager
def connect(*, workers: int | None = None, scheduler: str | None = None,
            scheduler_file: str | None = None, threads_per_worker: int = 1,
            dashboard: bool = True, announce: bool = True,
            memory_limit: str | None = "auto") -> Iterator[Client]:
    """A Dask client: an existing cluster (address or scheduler file) or a LocalCluster.

    Parameters
    ----------
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    scheduler, scheduler_file : str, optional
        Connect to a running scheduler instead (``tcp://host:port`` or its JSON file).
    announce : bool
        Print the dashboard link on stderr when the cluster starts.
    """
    if scheduler and scheduler_file:
        raise InvalidConfigError("give either --scheduler or --scheduler-file, not both")
    if workers is not None and workers < 1:
        raise InvalidConfigError(f"workers must be >= 1, got {workers}")
    if scheduler or scheduler_file:
        try:
            client = Client(scheduler, scheduler_file=scheduler_file, timeout="30s")
        except OSError as exc:
            raise InvalidConfigError(f"cannot reach the scheduler "
                                     f"{scheduler or scheduler_file}: {exc}") from None
        try:
            _announce(client, announce)
            yield client
        finally:
            client.close()
        return
    n = workers or default_n_workers()
    cluster = LocalCluster(n_workers=n, threads_per_worker=threads_per_worker, processes=True,
                           dashboard_address=":0" if dashboard else None,
                           memory_limit=memory_limit, silence_logs=40)
    client = Client(cluster)
    try:
        _announce(client, announce)
        yield client
    finally:
        client.close()
        cluster.close()


def _announce(client: Client, announce: bool) -> None:
    if not announce:
        return
    import sys

    link = client.dashboard_link
    n = len(client.scheduler_info().get("workers", {}))
    print(f"Dask cluster: {n} workers; dashboard: {link}", file=sys.stderr)
