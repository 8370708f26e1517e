"""Where a result comes from: package version, git commit, dependencies, host."""

from __future__ import annotations

import functools
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

from bnsl_dist import __version__

__all__ = ["provenance", "DEPENDENCIES"]

#: Packages whose versions every record carries.
DEPENDENCIES = ("numpy", "numba", "scipy", "pandas", "pyarrow", "pydantic", "networkx",
                "ortools", "dask", "distributed")


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                             timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


@functools.lru_cache(maxsize=1)
def _static() -> dict[str, Any]:
    from importlib import metadata

    versions = {"bnsl_dist": __version__, "python": platform.python_version()}
    for pkg in DEPENDENCIES:
        try:
            versions[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"version": __version__, "commit": commit,
            "dirty": None if status is None else bool(status), "versions": versions}


def provenance() -> dict[str, Any]:
    """``version``, ``commit`` and ``dirty`` (None outside a git checkout), dependency
    ``versions`` and ``hostname`` of this process (the commit is read once)."""
    return {**_static(), "hostname": socket.gethostname()}
