"""Fixtures shared with tests/orchestrate/test_fault_tolerance.py: a scheduler and two
workers as separate processes (``cluster``), exhaustive nltcs caches (``caches``); and
:func:`dask_scheduler`, a bare ``dask scheduler`` process for the connection tests."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.orchestrate.test_fault_tolerance import caches, cluster  # noqa: F401


@contextmanager
def dask_scheduler(scheduler_file: Path, *options: str) -> Iterator[subprocess.Popen[bytes]]:
    """A ``dask scheduler`` on 127.0.0.1 (any port, no dashboard, ``options`` added),
    running once its ``scheduler_file`` is written (60 s at most); ended on exit."""
    p = subprocess.Popen([sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1",
                          "--port", "0", "--no-dashboard", *options,
                          "--scheduler-file", str(scheduler_file)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not (scheduler_file.is_file() and scheduler_file.stat().st_size > 0):
            assert p.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        yield p
    finally:
        p.terminate()
        p.wait(timeout=30)
