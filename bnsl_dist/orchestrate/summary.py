"""What a ``grid run`` did with its workers: ``reports/summary.json``.

From the scheduler's task stream (each compute's start and stop, by task key), the tasks'
dependencies as submitted (a cell on its cache's task, a fanned-out cache's storing task
on its batches) and the worker threads connected, :func:`run_report` gives

* ``workers`` (worker threads: task slots), ``makespan_s`` (from the first submission to
  the last result stored, or the span of the tasks on the workers' clocks when longer),
  ``busy_s`` (the tasks' compute seconds), ``utilisation``
  (:func:`~bnsl_dist.pipeline.plan.utilisation`: busy over the worker-seconds available);
* ``lower_bound_s`` (:func:`~bnsl_dist.pipeline.plan.lower_bound` of the measured task
  seconds: no schedule of them ends sooner) and ``efficiency`` (lower bound / makespan);
* ``scheduler_ms_per_task``: CPU milliseconds of the scheduler's event-loop thread over
  the run, per task (its background work, heartbeats included: a run of few long tasks
  reads high; with in-process workers, a replay's, their communication shares that
  thread);
* ``client_peak_rss_bytes`` (``resource.getrusage``: the client process's peak).

A replay (:mod:`bnsl_dist.orchestrate.replay`) runs ``scale`` grid seconds per real
second: its seconds are multiplied by ``scale``, so the report reads in the grid's time.
"""

from __future__ import annotations

import resource
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from bnsl_dist.pipeline.plan import lower_bound, utilisation

__all__ = ["peak_rss_bytes", "run_report", "scheduler_cpu_seconds", "task_seconds"]


def peak_rss_bytes() -> int:
    """This process's peak resident set size (Linux reports KiB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def _loop_thread_seconds() -> float:
    return time.thread_time()


def scheduler_cpu_seconds(client: Any) -> float | None:
    """CPU seconds of the scheduler's event-loop thread so far; None when it does not
    answer."""
    try:
        return float(client.run_on_scheduler(_loop_thread_seconds))
    except Exception:  # noqa: BLE001 - a lost scheduler has no figure
        return None


def task_seconds(stream: Sequence[Mapping[str, Any]], since: float,
                 prefixes: tuple[str, ...]) -> dict[str, list[tuple[float, float]]]:
    """Task key -> (start, stop) of each of its computes that started since ``since``
    (a task recomputed after a lost worker has several), from a task stream
    (``client.get_task_stream``). A task of an earlier run still computing on a shared
    cluster is not this run's work; the stream's own ``start`` filter only narrows (it
    bisects a buffer that is not sorted when several workers report)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for rec in stream:
        key = str(rec.get("key", ""))
        if not key.startswith(prefixes):
            continue
        for ss in rec.get("startstops", ()):
            if ss.get("action") == "compute" and ss["start"] >= since:
                out.setdefault(key, []).append((ss["start"], ss["stop"]))
    return out


def run_report(spans: Mapping[str, Sequence[tuple[float, float]]],
               deps: Mapping[str, Sequence[str]], workers: int, wall_s: float, *,
               scheduler_s: float | None = None, scale: float = 1.0) -> dict[str, Any]:
    """The summary of a run (see the module's docstring): ``spans`` from
    :func:`task_seconds`, ``deps`` (task key -> the keys it waited for), ``workers``
    (worker threads), ``wall_s`` (the client's seconds from the first submission to the
    last result), ``scheduler_s`` (the scheduler's CPU seconds over the run)."""
    seconds = {k: sum(b - a for a, b in ss) * scale for k, ss in spans.items()}
    starts = [a for ss in spans.values() for a, _ in ss]
    stops = [b for ss in spans.values() for _, b in ss]
    span = (max(stops) - min(starts)) if starts else 0.0
    makespan = max(wall_s, span) * scale
    busy = sum(seconds.values())
    bound = lower_bound(seconds, deps, workers) if seconds else 0.0
    u = utilisation(busy, workers, makespan)
    return {"workers": workers, "tasks": len(spans), "makespan_s": round(makespan, 3),
            "busy_s": round(busy, 3), "utilisation": None if u is None else round(u, 4),
            "lower_bound_s": round(bound, 3),
            "efficiency": round(bound / makespan, 4) if makespan > 0 else None,
            "scheduler_ms_per_task": None if scheduler_s is None or not spans
            else round(1e3 * scheduler_s / len(spans), 4),
            "client_peak_rss_bytes": peak_rss_bytes(), "time_scale": scale}
