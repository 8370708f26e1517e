"""The command line's logging: dask's own log records go to a file, not the terminal.

Dask, tornado and bokeh log on stderr by default: a cell that raises printed a 9-line
"Compute Failed" record from its worker, Ctrl-C "Couldn't gather keys", a lost
heartbeat a traceback, breaking the one-line contract of every command. The
``bnsl-dist`` group calls :func:`configure` (never at import); a command that uses
dask then sends them to a file (:func:`ensure`, :func:`log_to`), created only when a
record arrives: ``dask.log`` in the results folder when the command has one, else in
the user's log folder (:func:`default_log_file`).
With ``--debug`` they go to stderr as well. The workers of a local cluster follow
(:func:`bnsl_dist.orchestrate._logs.mirror_logging`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

__all__ = ["LOG_NAME", "configure", "default_log_file", "ensure", "log_file", "log_to"]

#: The log file's name in a results folder.
LOG_NAME = "dask.log"
_FORMAT = "%(asctime)s %(name)s %(levelname)s: %(message)s"
_state: dict[str, logging.Handler | bool] = {}


def default_log_file() -> Path:
    """``dask.log`` in ``platformdirs.user_log_dir('bnsl_dist')`` (for a command with no
    results folder)."""
    import platformdirs

    return Path(platformdirs.user_log_dir("bnsl_dist")) / LOG_NAME


def configure(debug: bool = False) -> None:
    """Take over dask's logging from now on (to stderr as well with ``debug``); nothing
    is imported or changed until :func:`ensure` or :func:`log_to`."""
    _state.clear()
    _state["debug"] = debug


def ensure() -> None:
    """Send dask's log records to :func:`default_log_file` unless a file is set."""
    if "file" not in _state:
        log_to(default_log_file())


def log_to(path: str | os.PathLike[str]) -> Path:
    """Send dask's log records to ``path`` from now on, replacing their handlers (dask's
    stderr handler included), when :func:`configure` ran (else a program's own logging
    is left be); returns ``path``."""
    p = Path(path).expanduser()
    if "debug" not in _state:
        return p
    from bnsl_dist.orchestrate._logs import LogFile, route  # imports distributed: its
    # logging set-up first, ours after
    p.parent.mkdir(parents=True, exist_ok=True)
    file = LogFile(str(p))  # no file until a record comes
    handlers: list[logging.Handler] = [file]
    if _state["debug"]:
        handlers.append(logging.StreamHandler())
    for h in handlers:
        h.setFormatter(logging.Formatter(_FORMAT))
    old = _state.get("file")
    route(handlers)
    if isinstance(old, logging.Handler):
        old.close()
    _state["file"] = file
    return p


def log_file() -> Path | None:
    """The file dask's records go to now (None before :func:`configure`)."""
    file = _state.get("file")
    return Path(file.baseFilename) if isinstance(file, logging.FileHandler) else None
