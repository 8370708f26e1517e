"""``bnsl-dist`` with the wall time of each phase of ``learn`` on a cluster recorded:
``python -m workflows.benchmarks._phased learn ...`` runs the CLI as its console script
does, with the stages of ``bnsl_dist.cli.learn`` wrapped in timers, and writes the
phases as JSON to the file ``$BNSL_PHASES_OUT`` when it ends (seconds from the start of
this process's ``main``; ``learn_large --phases`` reads it). The wrapped stages: the
cluster's start (``connect`` entered), the cache's build, and the search (the cache
scattered, the seeds mapped, their records gathered and merged), and the result's write.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

T0 = time.perf_counter()
PHASES: list[dict[str, Any]] = []


def _span(name: str, start: float) -> None:
    PHASES.append({"phase": name, "start": round(start - T0, 3),
                   "seconds": round(time.perf_counter() - start, 3)})


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _span(name, start)
    return wrapper


def _install() -> None:
    import distributed

    import bnsl_dist._io as io
    import bnsl_dist.orchestrate.cluster as cluster
    import bnsl_dist.orchestrate.execute as execute

    # the module (the package's attribute `learn` is the function of that name)
    learn = importlib.import_module("bnsl_dist.pipeline.learn")

    connect = cluster.connect

    @contextlib.contextmanager
    def timed_connect(*args: Any, **kwargs: Any) -> Iterator[Any]:
        start = time.perf_counter()
        with connect(*args, **kwargs) as client:
            _span("cluster start", start)
            yield client
            closing = time.perf_counter()
        _span("cluster close", closing)

    cluster.connect = timed_connect
    learn.prepare_cache = _timed("cache build", learn.prepare_cache)
    execute._map_cells = _timed("search (scatter, seeds, gather)", execute._map_cells)
    import bnsl_dist.orchestrate.explore as explore
    import bnsl_dist.pipeline.run as run
    from bnsl_dist.data.dataset import CategoricalData

    explore._own = _timed("  explore tasks and assembly (waited for)", explore._own)
    run.with_entropies = _timed("  entropies", run.with_entropies)
    setattr(CategoricalData, "content_hash",  # noqa: B010 - mypy forbids assigning a method
            _timed("  content hash", CategoricalData.content_hash))
    for method in ("scatter", "gather"):
        setattr(distributed.Client, method,
                _timed("  " + method, getattr(distributed.Client, method)))
    io.atomic_write_text = _timed("result written", io.atomic_write_text)
    merge = learn.LearnResult.merge.__func__

    def seeds_merge(cls: Any, cells: Any, results: Any) -> Any:
        """Each seed's task as its worker saw it: run_cell's wall and its search's."""
        PHASES.append({"phase": "seeds on the workers", "start": None, "seconds": None,
                       "run_cell_wall": [round(getattr(r, "wall_seconds", 0.0), 3)
                                         for r in results],
                       "search": [round(getattr(r, "elapsed", 0.0), 3) for r in results]})
        return _timed("  merge", merge)(cls, cells, results)

    learn.LearnResult.merge = classmethod(seeds_merge)


def _write() -> None:
    out = os.environ.get("BNSL_PHASES_OUT")
    if out:
        PHASES.append({"phase": "main ended", "start": round(time.perf_counter() - T0, 3),
                       "seconds": 0.0})
        with open(out, "w") as f:
            json.dump(PHASES, f, indent=1)


def main() -> None:
    _install()
    atexit.register(_write)
    from bnsl_dist.cli import main as cli

    sys.argv[0] = "bnsl-dist"
    cli()


if __name__ == "__main__":
    main()
