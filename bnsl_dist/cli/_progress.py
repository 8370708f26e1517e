"""What a long command is doing, on stderr while it runs.

On a terminal: a spinner naming the phase, with the variables explored, the best score
so far and the time left as they come. Off a terminal (a log, a pipe): one line per
phase, with the seconds since the command began and the best score so far when there is
one. With ``-q``: nothing.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from bnsl_dist.orchestrate._console import stderr_console

__all__ = ["Phases"]

#: How the stages of :class:`bnsl_dist.pipeline.tasks.within.Progress` read.
_STAGES = {"cache": "building the cache", "search": "searching", "polish": "polishing"}


class Phases:
    """Phases and progress reports (:class:`bnsl_dist.pipeline.tasks.within.Progress`) of a command."""

    def __init__(self, enabled: bool) -> None:
        self.console = stderr_console()
        self.summary = enabled  # the closing line, on stderr unless -q (a TTY or not)
        self.enabled = enabled and self.console.is_terminal  # the live spinner
        self.lines = enabled and not self.console.is_terminal  # a line per phase
        self.reporting = enabled  # progress reports are wanted at all
        self._status: Any = None
        self._stage: str | None = None
        self._t0 = time.time()

    def _line(self, text: str) -> None:
        self.console.print(f"{time.time() - self._t0:6.1f} s  {text}", highlight=False,
                           markup=False)

    def note(self, text: str) -> None:
        """A phase whose progress something else shows on a terminal (a bar): a line off
        one, nothing on one."""
        if self.lines:
            self._stage = text
            self._line(text)

    def phase(self, text: str) -> Any:
        """A context for one phase: a spinner on a terminal, a line off one."""
        if self.lines:
            self._stage = text
            self._line(text)
        if not self.enabled:
            return contextlib.nullcontext()
        self._status = self.console.status(text)
        return self._status

    def within(self, p: Any) -> None:
        """A :class:`bnsl_dist.pipeline.tasks.within.Progress` report: the spinner's text on a terminal;
        off one, a line when the stage changes."""
        stage = _STAGES.get(p.stage, p.stage)
        if self.lines:
            if stage != self._stage:
                self._stage = stage
                best = "" if p.best_score is None else f" (best so far {p.best_score:,.2f})"
                self._line(f"{stage}{best}")
            return
        if self._status is None:
            return
        parts = [stage]
        if p.total:
            parts.append(f"{p.done}/{p.total} variables")
        if p.best_score is not None:
            parts.append(f"best {p.best_score:,.2f}")
        if p.time_left is not None:
            parts.append(f"{p.time_left:.1f} s left")
        self._status.update(" · ".join(parts))
