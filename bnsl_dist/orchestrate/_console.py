"""The rich console every command writes its tables, progress and failure lines to.

On a terminal rich fits them to its width. Off a terminal (a log file, a pipe, a batch
job's output) it would wrap them at 80 columns, mid-message; there they never wrap.
"""

from __future__ import annotations

from rich.console import Console

__all__ = ["stderr_console"]

#: Columns off a terminal: wide enough that no line of ours wraps.
_UNWRAPPED = 10_000


def stderr_console() -> Console:
    """A console on stderr: fitted to a terminal, unwrapped off one."""
    con = Console(stderr=True)
    if con.is_terminal:
        return con
    return Console(stderr=True, width=_UNWRAPPED, soft_wrap=True)
