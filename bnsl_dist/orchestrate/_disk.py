"""A full disk mid-grid: one line that says where, what is stored and how to resume.

The stored records stay correct (each is written atomically: a record that did not fit
is not there) and a rerun computes only what is missing, as after a lost scheduler; the
message said only "No space left on device".
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Callable, Iterator
from pathlib import Path

from bnsl_dist.exceptions import BNSLError

__all__ = ["DiskFull", "resumable_when_full"]

_FULL = (errno.ENOSPC, errno.EDQUOT)


class DiskFull(BNSLError):
    """The results folder's file system is full (or over quota) mid-grid."""


@contextlib.contextmanager
def resumable_when_full(root: Path, stored: Callable[[], int], total: int,
                        stop: Callable[[], None]) -> Iterator[None]:
    """Turn a full file system under the block into :class:`DiskFull`, naming ``root``,
    the ``stored()`` count of the ``total`` cells and the rerun that resumes; ``stop()``
    (cancel the rest) first."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in _FULL:
            raise
        with contextlib.suppress(Exception):
            stop()
        what = "over quota" if exc.errno == errno.EDQUOT else "no space left"
        raise DiskFull(f"{what} on the device of {root}: {stored()} of {total} pending "
                       f"cells stored; free space there and rerun the same command to "
                       f"resume") from None
