"""Where the workers of a local cluster log: where this process logs dask's messages.

A local cluster's worker processes write dask's log records ("Compute Failed" with the
cell's traceback, heartbeat errors at shutdown) on the stderr they inherit: the
command's terminal. When this process sends the ``distributed`` logger to a file (the
command line does: :mod:`bnsl_dist.cli._logging`), :func:`mirror_logging` makes each
worker send its records to the same file (appending; one line per record, each naming
its worker), and to stderr only if this process also does (``--debug``). A program that
leaves dask's logging alone keeps dask's default in its workers too.
"""

from __future__ import annotations

import logging
from typing import Any

from distributed import Client
from distributed.diagnostics.plugin import WorkerPlugin

__all__ = ["LOGGERS", "LogFile", "WorkerLogs", "mirror_logging", "route"]

#: The loggers of dask and the libraries under it.
LOGGERS = ("distributed", "tornado", "bokeh", "asyncio")


def route(handlers: list[logging.Handler]) -> None:
    """Make ``handlers`` the only ones of :data:`LOGGERS` and of every logger under them
    that has its own (dask's configuration gives ``distributed.client``,
    ``tornado.application`` ... a stderr handler each, not propagating)."""
    names = set(LOGGERS) | {n for n in logging.root.manager.loggerDict
                            if n.split(".")[0] in LOGGERS}
    for name in sorted(names):
        log = logging.getLogger(name)
        if name not in LOGGERS and log.propagate and not log.handlers:
            continue  # its records reach its parent's handlers
        for h in list(log.handlers):
            log.removeHandler(h)
        for h in handlers:
            log.addHandler(h)
        log.propagate = False


class LogFile(logging.FileHandler):
    """A log file, created when the first record comes, that drops a record it cannot
    write (a full disk) instead of printing logging's error traceback on stderr."""

    def __init__(self, path: str) -> None:
        super().__init__(path, delay=True)

    def handleError(self, record: logging.LogRecord) -> None:  # noqa: N802 - logging's
        pass


class WorkerLogs(WorkerPlugin):
    """Send a worker's dask log records to ``path`` (and stderr with ``to_stderr``)."""

    name = "bnsl-dist-logs"

    def __init__(self, path: str, to_stderr: bool) -> None:
        self.path = path
        self.to_stderr = to_stderr

    def setup(self, worker: Any) -> None:
        fmt = logging.Formatter(f"%(asctime)s worker {worker.address} %(name)s "
                                f"%(levelname)s: %(message)s")
        handlers: list[logging.Handler] = [LogFile(self.path)]
        if self.to_stderr:
            handlers.append(logging.StreamHandler())
        for h in handlers:
            h.setFormatter(fmt)
        route(handlers)


def mirror_logging(client: Client) -> None:
    """Register :class:`WorkerLogs` on ``client``'s workers when this process's
    ``distributed`` logger writes to a file (call for local clusters only: the path is
    this machine's)."""
    files = [h for h in logging.getLogger("distributed").handlers
             if isinstance(h, logging.FileHandler)]
    if not files:
        return
    to_stderr = any(type(h) is logging.StreamHandler
                    for h in logging.getLogger("distributed").handlers)
    client.register_plugin(WorkerLogs(files[0].baseFilename, to_stderr))
