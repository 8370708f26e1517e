"""Where a result comes from: package version, git commit, dependencies, host.

Nothing is computed on import. :func:`provenance` reads the git state and hashes the
sources on its first call in a process and keeps them for the process's life, so a
commit or an edit made while a run goes on (a grid running for hours beside development)
does not change what its records say ran. A run takes it when it starts:
:func:`~bnsl_dist.pipeline.run.run_cell` calls it before any work, and the forkserver of
a local cluster before it forks the workers (``orchestrate/_preload.py``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

from bnsl_dist import __version__

__all__ = ["provenance", "source_digest", "git_state", "DEPENDENCIES"]

#: Packages whose versions every record carries.
DEPENDENCIES = ("numpy", "numba", "scipy", "pandas", "pyarrow", "pydantic", "networkx",
                "ortools", "dask", "distributed")


_PACKAGE = Path(__file__).resolve().parents[1]


def source_digest(package: Path = _PACKAGE) -> str:
    """SHA-256 (first 16 hex digits) of the package's Python sources: each ``*.py``
    file's path relative to the package (POSIX form) and bytes, in sorted path order,
    each part preceded by its length. Says which code ran when the checkout was dirty
    or is not a checkout at all."""
    h = hashlib.sha256()
    for f in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        for part in (f.relative_to(package).as_posix().encode(), f.read_bytes()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()[:16]


def _git(root: Path, *args: str) -> str | None:
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def git_state(package: Path = _PACKAGE) -> tuple[str | None, bool | None]:
    """The commit checked out in the repository holding ``package`` (its parent folder)
    and whether the package's tracked sources differ from it (other files do not
    count); (None, None) outside a git checkout."""
    commit = _git(package.parent, "rev-parse", "HEAD")
    status = (_git(package.parent, "status", "--porcelain", "--untracked-files=no", "--",
                   str(package)) if commit else None)
    return commit, None if status is None else bool(status)


@functools.cache
def _static() -> dict[str, Any]:
    """Once per process (see the module's docstring): versions, digest, git state."""
    from importlib import metadata

    versions = {"bnsl_dist": __version__, "python": platform.python_version()}
    for pkg in DEPENDENCIES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    versions["bnsl_dist_source"] = source_digest()
    commit, dirty = git_state()
    return {"version": __version__, "commit": commit, "dirty": dirty, "versions": versions,
            "cpus": os.cpu_count()}


def provenance() -> dict[str, Any]:
    """``version``, ``commit`` and ``dirty`` (:func:`git_state`), dependency ``versions``
    with ``bnsl_dist_source`` (:func:`source_digest` of the package's sources), ``cpus``
    (the machine's logical core count, ``os.cpu_count()``: timed budgets depend on it),
    as they were at this process's first call, and ``hostname`` of this process."""
    return {**_static(), "hostname": socket.gethostname()}
