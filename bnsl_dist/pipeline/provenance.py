"""Where a result comes from: package version, git commit, dependencies, host."""

from __future__ import annotations

import functools
import hashlib
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


#: The digest of the sources, the commit and whether the checkout differed from it, as they
#: were when this module was imported (with the rest of the package): commits and edits made
#: later while the process runs do not change what ran (read at the first record instead,
#: a grid process that started on one commit wrote the next one into its records).
_IMPORTED_SOURCE = source_digest()
_IMPORTED_COMMIT, _IMPORTED_DIRTY = git_state()


@functools.lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    from importlib import metadata

    versions = {"bnsl_dist": __version__, "python": platform.python_version()}
    for pkg in DEPENDENCIES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    versions["bnsl_dist_source"] = _IMPORTED_SOURCE
    return {"version": __version__, "commit": _IMPORTED_COMMIT, "dirty": _IMPORTED_DIRTY,
            "versions": versions}


def provenance() -> dict[str, Any]:
    """``version``, ``commit`` and ``dirty`` (:func:`git_state` when the package was
    imported), dependency ``versions`` with ``bnsl_dist_source`` (:func:`source_digest`
    of the package's sources when it was imported) and ``hostname`` of this process."""
    return {**_static(), "hostname": socket.gethostname()}
