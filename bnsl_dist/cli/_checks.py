"""Checks every command runs on its arguments before any compute.

Each check takes the option's value (``None``: the option was not given, nothing to
check) and the option's name, and raises :class:`~bnsl_dist.exceptions.InvalidConfigError`
naming both; the CLI prints it as one line with exit code 2. Wiring one option is one
call, e.g. ``check_output_file(output, "--output")``.

Writability is tested by creating (and removing) a temp file where the output will go,
so that read-only file systems, ``/proc`` and permissions are caught whoever runs the
command (root included); folders that do not exist yet are judged by their nearest
existing ancestor, where they would be created.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from bnsl_dist.exceptions import InvalidConfigError

if TYPE_CHECKING:
    from bnsl_dist.data import CategoricalData

__all__ = ["check_output_file", "check_output_dir", "check_scheduler_address",
           "check_bif_writable"]


def _nearest_existing(p: Path) -> Path:
    p = p.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _probe(directory: Path, option: str, path: str | os.PathLike[str]) -> None:
    """Create and remove a temp file in ``directory`` (an existing folder)."""
    if not directory.is_dir():
        raise InvalidConfigError(f"{option} {path}: {directory} is not a directory")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".bnsl-probe-", dir=directory)
    except OSError as exc:
        raise InvalidConfigError(f"{option} {path}: cannot write in {directory} "
                                 f"({exc.strerror})") from None
    os.close(fd)
    os.unlink(tmp)


def check_output_file(path: str | os.PathLike[str] | None, option: str) -> None:
    """``path`` can be written atomically: not a folder or a special file, and its
    folder (or the nearest existing ancestor, where folders will be created) takes
    new files."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise InvalidConfigError(f"{option} {path}: is a directory")
    if p.exists() and not p.is_file():
        raise InvalidConfigError(f"{option} {path}: not a regular file")
    _probe(_nearest_existing(p.parent), option, path)


def check_output_dir(path: str | os.PathLike[str] | None, option: str) -> None:
    """``path`` is a folder that takes new files, or can be created as one."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InvalidConfigError(f"{option} {path}: not a directory")
    _probe(_nearest_existing(p), option, path)



def check_scheduler_address(address: str | None, option: str) -> None:
    """``address`` reads as a Dask scheduler address (``tcp://HOST:PORT``, ``tls://...``);
    whether it answers is the cluster connection's business."""
    if address is None:
        return
    from distributed.comm.addressing import get_address_host_port, parse_address

    try:
        if parse_address(address)[0] not in ("inproc", "ucx"):  # no host:port to check
            get_address_host_port(address)
    except ValueError as exc:
        raise InvalidConfigError(f"{option} {address}: not a scheduler address ({exc}); "
                                 "expected tcp://HOST:PORT") from None


def check_bif_writable(data: CategoricalData, option: str) -> None:
    """The names and states of ``data`` can be written as BIF (a network learned from it
    goes to ``option``): checked before the search, so that a name BIF cannot hold fails
    before anything is computed or written."""
    from bnsl_dist.exceptions import DataError
    from bnsl_dist.model.bif import check_bif_names

    try:
        check_bif_names(data.names, data.states)
    except DataError as exc:
        raise InvalidConfigError(f"{option}: {exc} (data {data.source})") from None
