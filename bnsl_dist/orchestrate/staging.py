"""How a grid's tasks get their data and caches: through Dask, or a shared file system.

A grid names data and caches by the *client's* paths. On a cluster whose workers do
not see the client's files (Kubernetes pods, cloud clusters, lab machines without a
shared mount) a :class:`Staging` sends what those paths hold:

* data: the client reads each split its pending cells need once
  (:func:`~bnsl_dist.pipeline.run.load_data`: a file, or a registered or bundled name
  materialised on the client) and sends it to the workers under its content hash
  (``data-<hash>``, once per worker process, never inside the task graph: a worker
  plugin, :class:`Inputs`, so that a worker that joins or restarts later gets it too);
  each task names the keys it needs and runs inside
  :func:`~bnsl_dist.pipeline.staged.staged` with those data. A URL
  (``s3://``, ``gs://``, ``https://``, ``file://`` on a mount the workers share) is
  not sent: the workers read it themselves with fsspec.
* caches: a cache built on the cluster comes back to the client as the bytes of its
  file, which *the client* writes (``caches/<key>.jkl.gz``, atomically, as soon as it
  arrives); the cells of that cache depend on the same future, so they start as soon as
  it is built (a cache lost with its worker before its cells ran is rebuilt by Dask:
  equal for score and iteration budgets). A cache file already on the client (a
  resumed run, a ``cache.path`` of the grid) is sent like the data. A worker writes nothing the run needs later
  (its only files: a private scratch copy of the bytes it was sent, so that the very
  reader of the shared-file-system path reads them, and the same records come out).

Inputs sent this way stay in the workers' memory (and, pickled, in the scheduler's, with
the plugin) for the cluster's life, so that a later run on the same data sends nothing
and a worker lost mid-run takes no input with it: its cells rerun elsewhere. (Dask's
scattered data would not do: the scheduler's active memory manager keeps one replica,
lost with its worker.) Restart a long-lived cluster to free them.

With a shared file system (``shared_fs: true`` in a cluster YAML, ``grid run
--shared-fs``, or a local cluster this process started), nothing is sent: the workers
read the paths and write the caches themselves, the fast path, with the same results.

Data that exist only in the client's memory (the screened roots' data of ``learn``, an
EM iteration's completed data) have no path: :meth:`Staging.hold` scatters them once
to every worker and names them by a reference of their own, which the tasks of that
staging get them for, whatever the file system; they are released with the staging.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from distributed import Client, Future
from distributed.diagnostics.plugin import WorkerPlugin

from bnsl_dist._io import atomic_write_bytes
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.pipeline.staged import is_url, staged

__all__ = ["Inputs", "Staging", "StagedFile", "as_bytes", "has_shared_fs", "with_inputs",
           "write_as_is"]


class StagedFile(NamedTuple):
    """A client path and its bytes' key on the workers (:class:`Inputs`), or the future
    of a cache built on the cluster."""

    path: str
    future: Future[Any] | str


class Inputs(WorkerPlugin):
    """One input (data, or a file's bytes) kept in every worker process under ``key``
    (its content hash): in the workers connected now and in those that join later
    (a worker restarted after a loss included). Idempotent: registering the same key
    again sends nothing."""

    idempotent = True

    def __init__(self, key: str, value: Any) -> None:
        self.key = key
        self.value = value

    def setup(self, worker: Any) -> None:
        if not hasattr(worker, "bnsl_inputs"):
            worker.bnsl_inputs = {}
        worker.bnsl_inputs[self.key] = self.value


def _input(key: Any) -> Any:
    """The input kept on this worker under ``key`` (a string); anything else is the
    input itself (a built cache's bytes, data scattered: :meth:`Staging.hold`)."""
    if not isinstance(key, str):
        return key
    from distributed import get_worker

    try:
        return get_worker().bnsl_inputs[key]  # type: ignore[attr-defined]
    except (AttributeError, KeyError):
        raise DataError(f"input {key} is not on this worker (its plugin was "
                        f"unregistered?)") from None


def with_inputs(data: Sequence[tuple[DataRef, Any]], files: Sequence[tuple[str, str | bytes]],
                fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` on a worker, with the data and file bytes kept under the given keys
    (:class:`Inputs`; bytes: a built cache; data: scattered) standing for the client's
    references and paths (:func:`~bnsl_dist.pipeline.staged.staged`)."""
    with staged([(ref, _input(k)) for ref, k in data],
                [(path, _input(k)) for path, k in files]):
        return fn(*args)


def as_bytes(fn: Callable[..., Any], job: CacheJob, path: str, *rest: Any) -> bytes:
    """The bytes of the file ``fn(job, path, *rest)`` writes at the client's ``path``
    (:func:`~bnsl_dist.pipeline.run.ensure_cache`,
    :func:`~bnsl_dist.orchestrate.explore.store_job_cache`), written to a private
    temporary folder of this worker and removed there."""
    tmp = Path(tempfile.mkdtemp(prefix="bnsl-cache-"))
    try:
        out = tmp / Path(path).name
        fn(job, str(out), *rest)
        return out.read_bytes()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_as_is(path: str, blob: bytes) -> None:
    """Write ``blob`` at ``path`` atomically, as it is (already gzip-compressed for a
    ``.gz`` name: the bytes the worker's writer made)."""
    part = Path(f"{path}.part")  # not a .gz name: not compressed again
    atomic_write_bytes(part, blob)
    os.replace(part, path)


def has_shared_fs(client: Client, declared: bool | None) -> bool:
    """``declared`` when given, else whether ``client``'s cluster is a local cluster of
    this process (its workers see this file system)."""
    if declared is not None:
        return declared
    from distributed import LocalCluster

    return isinstance(getattr(client, "cluster", None), LocalCluster)


class Staging:
    """The inputs of one run's tasks on ``client``'s cluster: paths (``shared_fs``) or
    sent through Dask (see the module's description).

    ``task``/``cell_task``/``build_task`` return the ``client.submit`` arguments of a
    task; call :meth:`wait` before reading the cache files a run built."""

    def __init__(self, client: Client, shared_fs: bool) -> None:
        self.client = client
        self.shared_fs = shared_fs
        self._data: dict[DataRef, str] = {}
        self._held: dict[DataRef, Future[Any]] = {}
        self._sent: set[str] = set()
        self._files: dict[str, str] = {}
        self._writes: list[threading.Event] = []
        self.errors: list[str] = []  # caches the client could not write

    # ------------------------------------------------------------------ sending
    def _send(self, key: str, value: Any) -> str:
        """Keep ``value`` in every worker under ``key`` (once per key: an
        :class:`Inputs` plugin, blocking until the workers connected now have it)."""
        if key not in self._sent:
            self.client.register_plugin(Inputs(key, value), name=f"bnsl-input-{key}")
            self._sent.add(key)
        return key

    @staticmethod
    def check(refs: Iterable[DataRef | None]) -> None:
        """Fail now, before any task is submitted, if a URL among ``refs`` names no
        file: the workers read it (sent or not), so the client only asks whether it
        exists (:meth:`~bnsl_dist.pipeline.specs.DataRef.check`).

        Raises
        ------
        DataError
            One line naming the URL.
        """
        for ref in sorted({r for r in refs if r is not None and r.file is not None
                           and is_url(r.file)}, key=lambda r: str(r.file)):
            ref.check()

    def data(self, ref: DataRef) -> str | None:
        """The workers' key of the data ``ref`` names (``data-<content hash>``), read on
        the client and sent once; None for a URL (the workers read it)."""
        file = ref.file
        if file is not None and is_url(file):
            return None
        if ref not in self._data:
            from bnsl_dist.pipeline.run import load_data

            d = load_data(ref)
            self._data[ref] = self._send(f"data-{d.content_hash()}", d)
        return self._data[ref]

    def hold(self, data: CategoricalData) -> DataRef:
        """A reference to ``data``, which are in this process's memory alone: scattered
        once to every worker, and given to the tasks of this staging that name the
        reference (:meth:`task`; on a shared file system too). The reference is new on
        every call (its name: the scattered key), so two builds never share a task."""
        fut = self.client.scatter(data, broadcast=True, hash=False)
        ref = DataRef(name=f"memory-{str(fut.key).rsplit('-', 1)[-1]}")
        self._held[ref] = fut
        return ref

    def file(self, path: str) -> StagedFile:
        """A client file (a cache), read once and sent under its content hash."""
        if path not in self._files:
            blob = Path(path).read_bytes()
            self._files[path] = self._send(
                f"file-{hashlib.sha256(blob).hexdigest()[:32]}", blob)
        return StagedFile(path, self._files[path])

    def _data_items(self, refs: Iterable[DataRef | None]) -> list[tuple[DataRef, Any]]:
        """(reference, what the task gets for it): the data held (:meth:`hold`), and
        without a shared file system the data sent (:meth:`data`)."""
        out: list[tuple[DataRef, Any]] = []
        for ref in refs:
            if ref is None:
                continue
            got: Any = self._held.get(ref)
            if got is None and not self.shared_fs:
                got = self.data(ref)
            if got is not None:
                out.append((ref, got))
        return out

    # ------------------------------------------------------------------ tasks
    def task(self, refs: Iterable[DataRef | None], fn: Callable[..., Any],
             *args: Any) -> tuple[Any, ...]:
        """``fn(*args)`` with the data of ``refs``."""
        items = self._data_items(refs)
        if self.shared_fs and not items:
            return (fn, *args)
        return (with_inputs, items, [], fn, *args)

    def existing(self, path: str) -> str | StagedFile:
        """A cache file on the client, for the cells that read it."""
        return path if self.shared_fs else self.file(path)

    def cell_task(self, fn: Callable[..., Any], cell: Cell,
                  cache: str | Future[Any] | StagedFile | None) -> tuple[Any, ...]:
        """``fn(cell, cache)``: the cell with its data and cache (its grid's
        ``cache.path`` file included)."""
        if self.shared_fs:
            return (fn, cell, cache)
        files: list[tuple[str, Future[Any] | str]] = []
        given = cell.cache_job.given_path
        if isinstance(cache, StagedFile):
            files.append((cache.path, cache.future))
            cache = cache.path
        elif cache is None and given is not None and not is_url(given):
            files.append(self.file(given))
        refs = (cell.data, cell.holdout)
        return (with_inputs, self._data_items(refs), files, fn, cell, cache)

    def build(self, fn: Callable[..., Any], job: CacheJob, path: str, *rest: Any,
              queued: bool = False, **submit: Any) -> str | Future[Any] | StagedFile:
        """Submit ``fn(job, path, *rest)``, the task building (and writing) the cache at
        ``path``: on a shared file system as it is; else the worker returns the file's
        bytes (:func:`as_bytes`) and the client writes them at ``path`` when they
        arrive. ``queued``: held on the scheduler and handed out in priority order
        (:func:`~bnsl_dist.orchestrate.queued.queued_delayed`; ``submit`` gives its
        ``key`` and ``priority``), not sent to a worker at once."""
        if self.shared_fs:
            fut: Future[Any] = self._submit((fn, job, path, *rest), queued, submit)
            return fut
        fut = self._submit(self.task([job.data], as_bytes, fn, job, path, *rest), queued,
                           submit)
        def write(f: Future[Any]) -> None:  # in a thread of the client, once the task ended
            if f.status != "finished":
                return  # failed or cancelled: its cells say so
            done = threading.Event()
            self._writes.append(done)
            try:
                write_as_is(path, f.result())
            except Exception as exc:  # noqa: BLE001 - reported by the run
                self.errors.append(f"{path}: {type(exc).__name__}: {exc}")
            finally:
                done.set()

        fut.add_done_callback(write)
        return StagedFile(path, fut)

    def _submit(self, task: tuple[Any, ...], queued: bool, submit: dict[str, Any]
                ) -> Future[Any]:
        if not queued:
            return self.client.submit(*task, **submit)
        from bnsl_dist.orchestrate.queued import queued_delayed

        fut: Future[Any] = self.client.compute(
            queued_delayed(*task, key=submit["key"], priority=submit.get("priority", 0.0)),
            optimize_graph=False)
        return fut

    def wait(self, timeout: float = 60.0) -> None:
        """Until the client has written every cache that arrived (a cache arrives
        before any of its cells starts)."""
        for ev in self._writes:
            ev.wait(timeout)
