"""Inputs handed to a task instead of read from the client's paths. No Dask.

A grid's cells name their data and caches by the client's paths
(:class:`~bnsl_dist.pipeline.specs.DataRef`, ``caches/<key>.jkl.gz``). Where a worker
does not share the client's file system, the orchestrate layer
(:mod:`bnsl_dist.orchestrate.staging`) sends what those paths hold with the task, and
the task runs inside :func:`staged`: :func:`~bnsl_dist.pipeline.run.load_data` then
returns the data sent for a reference, and
:func:`~bnsl_dist.pipeline.run.load_cache` / :func:`~bnsl_dist.pipeline.run.ensure_cache`
read the bytes sent for a client path (written once per process to a private temporary
folder, so the very reader of the shared-file-system path reads them: the same cache,
the same results). The table is a context variable: tasks running in other threads
of the same worker each see their own.

A path that is a URL (``s3://``, ``gs://``, ``https://``, ``file://``...) is read here
with fsspec (an optional package), without passing through the client
(:func:`local_copy`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bnsl_dist.exceptions import DataError

if TYPE_CHECKING:
    from bnsl_dist.data.dataset import CategoricalData

__all__ = ["client_named", "is_url", "local_copy", "local_path", "staged", "staged_data", "url_exists"]

_NONE: Mapping[Any, Any] = MappingProxyType({})
_DATA: ContextVar[Mapping[Any, CategoricalData]] = ContextVar("bnsl_staged_data",
                                                              default=_NONE)
_FILES: ContextVar[Mapping[str, str]] = ContextVar("bnsl_staged_files", default=_NONE)

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path: str) -> bool:
    """Whether ``path`` is a URL (``scheme://...``) rather than a local path."""
    return _URL.match(path) is not None


@functools.lru_cache(maxsize=1)
def _scratch() -> Path:
    """This process's folder for the bytes it was sent (removed at exit)."""
    d = Path(tempfile.mkdtemp(prefix="bnsl-staged-"))
    atexit.register(shutil.rmtree, d, True)
    return d


def _materialise(path: str, blob: bytes) -> str:
    """``blob`` (the bytes of the client's ``path``) as a file of this process, named by
    its content and ``path``'s suffixes (readers choose the format and gzip by them)."""
    suffix = "".join(Path(path).suffixes[-2:])
    out = _scratch() / f"{hashlib.sha256(blob).hexdigest()[:32]}{suffix}"
    if not out.is_file():
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        os.replace(tmp, out)
    return str(out)


@contextlib.contextmanager
def staged(data: Iterable[tuple[Any, CategoricalData]] = (),
           files: Iterable[tuple[str, bytes]] = ()) -> Iterator[None]:
    """Within: :func:`staged_data` gives ``data`` (``(DataRef, data)`` pairs) and
    :func:`local_path` maps each client path of ``files`` (``(path, bytes)`` pairs) to a
    local copy of its bytes."""
    d = {**_DATA.get(), **dict(data)}
    f = {**_FILES.get(), **{str(p): _materialise(str(p), b) for p, b in files}}
    td, tf = _DATA.set(d), _FILES.set(f)
    try:
        yield
    finally:
        _FILES.reset(tf)
        _DATA.reset(td)


def staged_data(ref: Any) -> CategoricalData | None:
    """The data sent for ``ref`` (a :class:`~bnsl_dist.pipeline.specs.DataRef`), if any."""
    return _DATA.get().get(ref)


def local_path(path: str | os.PathLike[str]) -> str:
    """Where this process reads the client's ``path``: the copy of the bytes sent for it,
    a local copy of a URL (:func:`local_copy`), else ``path`` itself."""
    s = str(path)
    got = _FILES.get().get(s)
    if got is not None:
        return got
    return local_copy(s) if is_url(s) else s


@contextlib.contextmanager
def client_named(local: str, path: str | os.PathLike[str]) -> Iterator[None]:
    """Errors reading ``local`` (a copy, :func:`local_path`) name the client's ``path``."""
    try:
        yield
    except DataError as exc:
        if local == str(path):
            raise
        raise type(exc)(str(exc).replace(local, str(path))) from None


def _fsspec() -> Any:
    try:
        import fsspec
    except ImportError:
        raise DataError("reading a URL needs the optional package fsspec "
                        "(pip install fsspec, and s3fs/gcsfs for s3:// and gs://)") from None
    return fsspec


def url_exists(url: str) -> bool:
    """Whether the file at ``url`` exists (asked of its file system; nothing is read).

    Raises
    ------
    DataError
        fsspec (or the file system's package) is missing, or the file system fails.
    """
    try:
        fs, path = _fsspec().core.url_to_fs(url)
        return bool(fs.exists(path))
    except DataError:
        raise
    except (ImportError, ValueError, OSError) as exc:
        raise DataError(f"cannot reach it ({type(exc).__name__}: {exc})", path=url) from None


@functools.lru_cache(maxsize=16)
def local_copy(url: str) -> str:
    """A copy of the file at ``url`` in this process's scratch folder, read once per
    process with fsspec (same suffixes, so the same reader reads it).

    Raises
    ------
    DataError
        No such file, fsspec (or the file system's package) missing, or a failed read.
    """
    fsspec = _fsspec()
    try:
        with fsspec.open(url, "rb") as fh:
            blob = fh.read()
    except FileNotFoundError:
        raise DataError("no such file", path=url) from None
    except (ImportError, ValueError, OSError) as exc:
        raise DataError(f"cannot read it ({type(exc).__name__}: {exc})", path=url) from None
    return _materialise(url.split("?", 1)[0], blob)
