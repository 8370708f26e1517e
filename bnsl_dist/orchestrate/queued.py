"""Tasks the scheduler holds and hands out in priority order to the next free thread.

Dask queues a task on the scheduler (``distributed.scheduler.worker-saturation``) only
when it is *root-ish*: part of a task group larger than twice the cluster's threads with
few dependencies, or marked as producing data. Every other task is given to a worker as
soon as it is ready, and waits there behind the tasks already given to it while another
worker may sit idle until work stealing moves it (a stealing round every 100 ms at best).
A grid's cells depend on their cache's task (and a group of more than four caches makes
them not root-ish) and a cache's batches arrived in small groups, so both went to
workers early, out of the priority order the grid sets (the replay of asobs-ent-2018's
four-data-set piece on 64 threads: makespan 7.8 % above the list schedule's, 2.4 %
with both queued; ``grid run --replay``). :func:`queued_delayed` marks a task so.

References
----------
Dask distributed documentation, "Scheduling policies: queuing" (root-ish tasks).
"""

from __future__ import annotations

from typing import Any

import dask
from dask._task_spec import Task
from dask.delayed import Delayed
from dask.highlevelgraph import HighLevelGraph, MaterializedLayer

__all__ = ["queued_delayed"]


def queued_delayed(fn: Any, *args: Any, key: str, priority: float) -> Delayed:
    """``dask.delayed(fn, pure=False)(*args)`` keyed ``key`` with Dask priority
    ``priority``, marked root-ish so that the scheduler queues it (futures among
    ``args`` stay its dependencies)."""
    with dask.annotate(priority=priority):
        d = dask.delayed(fn, pure=False)(*args, dask_key_name=key)
        graph = d.__dask_graph__()
        assert isinstance(graph, HighLevelGraph)
        task = graph.layers[key][key]
        assert isinstance(task, Task)
        # rebuilt from its parsed arguments: only the data-producer mark differs
        own = Task(key, task.func, *task.args, _data_producer=True, **task.kwargs)
        layers = {**graph.layers, key: MaterializedLayer({key: own},
                                                         annotations=graph.layers[key].annotations)}
    return Delayed(key, HighLevelGraph(layers, graph.dependencies))
