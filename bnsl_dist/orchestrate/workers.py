"""What every Dask driver shares: the numba warm-up worker plugin and task keys.

Every driver (``learn``'s search, the cache build, grids, SEM) calls
:func:`register_warmup` with the kernels *its* job needs (cache-building methods and
optimizers), before submitting timed work. The plugin runs in every worker process,
also in workers that join later, and remembers per process what it already warmed, so
a reused cluster (``--scheduler``, ``bnsl-dist cluster start``) warms each kernel once
per worker for its whole life. The kernels are ``cache=True`` numba functions: with a
shared ``NUMBA_CACHE_DIR`` (or the default ``__pycache__`` beside the package) workers
load the compiled code from disk instead of compiling it; when that cache is empty and
the workers are on this machine, the client compiles them first, once, so that the
workers load them rather than each compile them at the same time.

Task keys come from :func:`task_key` (``dask.base.tokenize`` of the arguments), so the
same work gets the same key and different work never collides.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from dask.base import tokenize
from distributed.diagnostics.plugin import WorkerPlugin

from bnsl_dist.search.warmup import AlgorithmSpec, compile_clock, kernels_cached, warm_up

__all__ = ["WarmupPlugin", "WarmupSpec", "register_warmup", "compiled_since", "task_key"]

WarmupSpec = tuple[tuple[str, ...], tuple[AlgorithmSpec, ...]]


def task_key(prefix: str, *parts: Any) -> str:
    """``<prefix>-<tokenize(parts)>``: the one task-key helper of the orchestrate layer."""
    return f"{prefix}-{tokenize(*parts)}"


class WarmupPlugin(WorkerPlugin):
    """Runs :func:`warm_up` in every worker process, now and in workers that join later;
    problems are kept in ``worker.bnsl_warmup_problems``. Idempotent: registering it
    again under its name (the same needs) does nothing."""

    idempotent = True

    def __init__(self, spec: WarmupSpec) -> None:
        self.spec = spec

    def setup(self, worker: Any) -> None:
        with compile_clock() as clock:
            found = warm_up(*self.spec)
        worker.bnsl_warmup_problems = {**getattr(worker, "bnsl_warmup_problems", {}), **found}
        worker.bnsl_compiled = [*getattr(worker, "bnsl_compiled", []),
                                (time.time(), clock.seconds)]


def _workers_here(client: Any) -> bool:
    """Whether every worker of ``client`` runs on this machine (shares its disk cache):
    a loopback address, an in-process cluster, or this host's own address."""
    import contextlib
    import socket

    from distributed.comm.addressing import get_address_host

    try:
        workers = client.scheduler_info().get("workers", {})
        here = {"127.0.0.1", "localhost", "::1", socket.gethostname()}
        with contextlib.suppress(OSError):
            here.add(socket.gethostbyname(socket.gethostname()))
        return bool(workers) and all(a.startswith("inproc://") or get_address_host(a) in here
                                     for a in workers)
    except Exception:  # noqa: BLE001 - not knowing: leave the workers to it
        return False


def _compiled_since(since: float, dask_worker: Any) -> float:
    return float(sum(s for end, s in getattr(dask_worker, "bnsl_compiled", ()) if end >= since))


def compiled_since(client: Any, since: float) -> float:
    """The most seconds a worker of ``client`` spent compiling kernels in warm-ups that
    ended after ``since`` (a ``time.time()``; workers' clocks are taken to agree)."""
    return max(client.run(_compiled_since, since).values(), default=0.0)


def register_warmup(client: Any, *, cache_methods: Iterable[str] = (),
                    algorithms: Iterable[AlgorithmSpec] = ()) -> None:
    """Warm the kernels a job needs on every worker of ``client`` (blocks until the
    current workers are warm). Plugins are named by what they warm: registering the same
    needs twice is a no-op; workers joining later run every registered plugin."""
    spec: WarmupSpec = (tuple(sorted(set(cache_methods))),
                        tuple(sorted(set(algorithms), key=lambda a: (a[0], a[1], a[2] or 0))))
    if not spec[0] and not spec[1]:
        return
    if not kernels_cached() and _workers_here(client):
        # an empty disk cache and workers on this machine: compile once, here, so that
        # they load the kernels instead of each compiling them at once (2 cores: 63 s in
        # the client, then 82 s in the workers, before)
        warm_up(*spec)
    client.register_plugin(WarmupPlugin(spec), name=task_key("bnsl-warmup", spec))
