"""A replay's simulated clock: the real scheduler path, time advancing only when nothing
but the clock can move the run on (a discrete-event replay).

A replay's tasks normally sleep their grid seconds ÷ the speed in real time, so its
schedule carries Dask's real overhead and the machine's load
(:mod:`bnsl_dist.orchestrate.replay`). With a :class:`VirtualClock` each task instead
waits on the clock until a simulated time ("now" plus its grid seconds). The clock
moves to the earliest of those wake-ups, waking that one task only (ties: the lowest
task key), and only when the cluster is *quiescent* — checked on the event loop that
the scheduler and the in-process workers share (:func:`replay_client`'s cluster), so
no transition is half done:

* every task a worker is computing is waiting on the clock (none is starting, or
  ending, with its result still to report);
* the scheduler's tasks on each worker are exactly what that worker is computing or
  holds ready, and a worker holds ready tasks only when its threads are all taken
  (no message between them in flight, no free thread about to take a task);
* no task is queued on the scheduler while a worker has a free slot;
* the client has submitted the cells it can (:meth:`VirtualClock.arm`, called by
  :func:`~bnsl_dist.orchestrate.cells.run_cells` after each submission with the count
  of cells sent so far), the scheduler has taken in every one of them (counted as its
  graphs arrive, :class:`_Received`: a graph the client has sent may still be on its
  way, and the cells it holds would then start late) and, while the client still holds
  some back (its window of cells in flight), it has taken every finished cell's outcome
  (no cell is left in the scheduler's memory: it releases each once stored, after
  sending the cells that replace it).

Everything else is the real code path — the expansion, the cache tasks and batches,
their dependencies, Dask's queueing by priority, the store — so the schedule it gives
(each task's simulated start and end, :meth:`VirtualClock.spans`) is the one the
scheduler makes when every task takes exactly its grid seconds, whatever the load of
the machine replaying it: the same on every run. What it leaves out is Dask's own cost
per task in real time, which a real-clock replay measures.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Iterator
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from typing import Any

from distributed.diagnostics.plugin import SchedulerPlugin

__all__ = ["VirtualClock", "quiescent"]

#: Real seconds between two checks for quiescence on the event loop.
CHECK_EVERY = 0.001


def quiescent(scheduler: Any, workers: list[Any], sleeping: AbstractSet[str],
              client_waits: bool = False) -> bool:
    """Whether nothing on ``scheduler`` and its in-process ``workers`` (Dask objects,
    read on their event loop) will happen until one of the tasks ``sleeping`` (keys)
    wakes: see the module's docstring. ``client_waits``: the client holds cells back
    until it has taken the finished ones."""
    cells = scheduler.task_prefixes.get("cell")
    if client_waits and cells is not None and cells.states.get("memory", 0):
        return False
    free_slot = False
    computing: set[str] = set()
    by_address = {w.address: w for w in workers}
    for address, ws in scheduler.workers.items():
        worker = by_address.get(address)
        if worker is None:  # a worker of another process: cannot be read here
            return False
        st = worker.state
        executing = {ts.key for ts in st.executing}
        held = executing | {ts.key for ts in st.ready} | {ts.key for ts in st.constrained}
        if {ts.key for ts in ws.processing} != held:
            return False  # a task assigned, or a result reported, still in flight
        if len(held) > len(executing) and len(executing) < st.nthreads:
            return False  # a free thread about to take a ready task
        free_slot = free_slot or len(ws.processing) < ws.nthreads
        computing |= executing
    if computing != sleeping:
        return False  # a task starting, or ending with its result to report
    return not (free_slot and len(scheduler.queued))


class _Received(SchedulerPlugin):
    """Counts the cells (keys ``cell-...``) whose graphs the scheduler has taken in."""

    name = "bnsl-dist-virtual-clock"

    def __init__(self) -> None:
        self.cells = 0

    def update_graph(self, scheduler: Any, *, keys: set[Any], **kwargs: Any) -> None:
        self.cells += sum(1 for k in keys if isinstance(k, str) and k.startswith("cell-"))


class VirtualClock:
    """Simulated seconds from 0, advanced only at quiescence (the module's docstring).

    ``sleep(seconds)`` in a task blocks its worker thread until the clock reaches its
    wake-up; :meth:`spans` gives each task's (start, stop) in simulated seconds.
    :meth:`running` drives it on ``client``'s in-process cluster while a block runs."""

    def __init__(self) -> None:
        self._now = 0.0
        self._lock = threading.Lock()
        self._wakeups: list[tuple[float, str]] = []  # heap of (time, key)
        # each sleeping task's key -> what wakes it (its own: waking one task wakes no
        # other thread; with one condition for all, each step woke every worker thread,
        # 256 of them on 256 workers)
        self._sleeping: dict[str, threading.Event] = {}
        self._spans: dict[str, list[tuple[float, float]]] = {}
        self._armed = False
        self._all_sent = False
        self._sent = 0  # cells the client has sent
        self._received = _Received()  # ... and those the scheduler has taken in

    def now(self) -> float:
        with self._lock:
            return self._now

    def arm(self, sent: int, all_sent: bool = True) -> None:
        """The client has submitted what it can for now, ``sent`` cells in all
        (``all_sent``: every cell): the clock may advance once the scheduler has them."""
        with self._lock:
            self._armed = True
            self._sent = sent
            self._all_sent = all_sent

    def sleep(self, seconds: float) -> float:
        """Wait ``seconds`` of simulated time in the task running in this thread (a
        Dask task's key names it); returns ``seconds``."""
        from distributed.worker import thread_state

        key = str(thread_state.key)
        woken = threading.Event()
        with self._lock:
            start = self._now
            wake = start + max(0.0, seconds)
            if wake > start:
                self._sleeping[key] = woken
                heapq.heappush(self._wakeups, (wake, key))
            else:
                woken.set()
        woken.wait()
        with self._lock:
            self._spans.setdefault(key, []).append((start, wake))
        return max(0.0, seconds)

    def spans(self) -> dict[str, list[tuple[float, float]]]:
        """Task key -> its (start, stop) in simulated seconds, each time it ran."""
        with self._lock:
            return {k: list(v) for k, v in self._spans.items()}

    def _tick(self, scheduler: Any, workers: list[Any]) -> None:
        with self._lock:
            if not self._armed or not self._wakeups \
                    or self._received.cells < self._sent \
                    or not quiescent(scheduler, workers, self._sleeping.keys(),
                                     client_waits=not self._all_sent):
                return
            wake, key = heapq.heappop(self._wakeups)
            self._now = max(self._now, wake)
            self._sleeping.pop(key).set()

    @contextmanager
    def running(self, client: Any) -> Iterator[VirtualClock]:
        """Check for quiescence every :data:`CHECK_EVERY` real seconds on the event loop
        of ``client``'s in-process cluster (:func:`~bnsl_dist.orchestrate.replay.replay_client`)
        while the block runs."""
        from tornado.ioloop import PeriodicCallback

        cluster = client.cluster
        scheduler = cluster.scheduler
        workers = list(cluster.workers.values())
        pc = PeriodicCallback(lambda: self._tick(scheduler, workers), CHECK_EVERY * 1e3)
        started = threading.Event()

        def start() -> None:
            scheduler.add_plugin(self._received)
            pc.start()
            started.set()

        scheduler.loop.add_callback(start)
        started.wait()
        try:
            yield self
        finally:
            stopped = threading.Event()

            def stop() -> None:
                pc.stop()
                scheduler.remove_plugin(_Received.name)
                stopped.set()

            scheduler.loop.add_callback(stop)
            stopped.wait()
