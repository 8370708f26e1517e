"""Dask clusters: a local multi-process cluster by default, or an existing scheduler.

The only module that creates clients; every other orchestrate function takes a client.

Connecting to a running cluster (an address or a scheduler file) checks everything
before any work: a malformed address, a missing or unreadable scheduler file, a
scheduler that does not answer within ``timeout`` seconds (a stale file: its scheduler
is gone), an address where something else answers or nothing answers in time (not a
Dask scheduler, :mod:`._probe`), a refused TLS certificate, a scheduler with no worker
within ``timeout`` seconds and a worker that cannot import the package or runs other
versions (:mod:`~bnsl_dist.orchestrate.preflight`) each fail with one
:class:`~bnsl_dist.exceptions.InvalidConfigError` line. The timeout defaults to
:data:`DEFAULT_TIMEOUT` seconds (environment variable ``BNSL_CONNECT_TIMEOUT``).

``tls://`` addresses use TLS: the certificate files of :func:`tls_security` (a folder
holding ``ca.pem``, ``cert.pem``, ``key.pem``, as ``bnsl-dist cluster start --tls``
writes) or, without one, dask's configuration (``distributed.comm.tls.*``).
Dashboards bind to 127.0.0.1 unless asked otherwise.

A local cluster forks its workers from a forkserver that has loaded the package and
numba's compiled kernels once (``_preload``), so workers start warm, in parallel. With
``processes=False`` its workers are threads of this process instead: nothing to start or
import, the kernels this process loaded are shared, and the numba kernels release the
GIL (``nogil=True``) but the Python between them does not — for small jobs
(:func:`bnsl_dist.pipeline.cost.fits_threads`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dask
from distributed import Client, LocalCluster

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.orchestrate._logs import mirror_logging
from bnsl_dist.orchestrate._probe import probe_scheduler
from bnsl_dist.orchestrate._timeout import DEFAULT_TIMEOUT, connect_timeout

if TYPE_CHECKING:
    from bnsl_dist.pipeline.config import ClusterConfig

__all__ = ["DEFAULT_TIMEOUT", "announce_client", "connect", "connect_timeout",
           "default_n_workers", "open_client",
           "read_scheduler_file", "start_cluster", "stop_cluster", "temporary_security",
           "tls_security",
           "validate_address", "write_tls_credentials"]

#: Dask settings of the schedulers this package starts (read when one starts): each
#: worker thread holds one task at a time (``worker-saturation`` 1.0, not Dask's 1.1,
#: which gives a one-thread worker a second task to queue behind its first), so every
#: task goes to the first free thread in priority order. A replay of seven cells on two
#: workers showed it: at 1.1 the cell of 5 s ran before the one of 6 s, queued behind
#: the 8 s cell on a worker while the other still ran its 10 s cell
#: (tests/orchestrate/test_replay.py). Its cost: one scheduler round trip per task.
SCHEDULER_CONFIG = {"distributed.scheduler.worker-saturation": 1.0}


def default_n_workers() -> int:
    """One single-threaded worker per core (the Python between numba kernels holds the
    GIL: processes for all but small jobs)."""
    return max(1, os.cpu_count() or 1)


def validate_address(address: str) -> str:
    """``address`` if it looks like ``tcp://host:port`` (or tls://, ...), else one error."""
    from distributed.comm.addressing import get_address_host_port, parse_address

    try:
        parse_address(address, strict=True)
        get_address_host_port(address)
    except ValueError as exc:
        raise InvalidConfigError(f"scheduler address {address!r}: {exc}") from None
    return address


def read_scheduler_file(path: str | os.PathLike[str]) -> str:
    """The scheduler address written in a scheduler file (checked, never waited for)."""
    p = Path(path).expanduser()
    hint = "(is the cluster running? see `bnsl-dist cluster start`)"
    try:
        info = json.loads(p.read_text())
    except FileNotFoundError:
        raise InvalidConfigError(f"scheduler file {p}: no such file {hint}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidConfigError(f"scheduler file {p}: not a scheduler file "
                                 f"({type(exc).__name__}: {exc})") from None
    address = info.get("address") if isinstance(info, dict) else None
    if not isinstance(address, str):
        raise InvalidConfigError(f"scheduler file {p}: no 'address' field")
    return validate_address(address)


def tls_security(tls_dir: str | os.PathLike[str] | None = None) -> Any:
    """A :class:`distributed.security.Security` requiring TLS: from ``tls_dir``
    (``ca.pem``, ``cert.pem``, ``key.pem``) or dask's configuration."""
    import dask
    from distributed.security import Security

    if tls_dir is None:
        if not dask.config.get("distributed.comm.tls.ca-file", None):
            raise InvalidConfigError("a tls:// scheduler needs its certificates: give "
                                     "--tls-dir (or set dask's distributed.comm.tls.*)")
        return Security(require_encryption=True)
    d = Path(tls_dir).expanduser()
    files = {name: d / f"{name}.pem" for name in ("ca", "cert", "key")}
    for name, f in files.items():
        if not f.is_file():
            raise InvalidConfigError(f"TLS folder {d}: no {name}.pem")
    return Security(tls_ca_file=str(files["ca"]), tls_client_cert=str(files["cert"]),
                    tls_client_key=str(files["key"]), require_encryption=True)


@contextlib.contextmanager
def connect(*, workers: int | None = None, scheduler: str | None = None,
            scheduler_file: str | os.PathLike[str] | None = None, threads_per_worker: int = 1,
            dashboard: bool = True, announce: bool = True,
            memory_limit: str | None = "auto", timeout: float | None = None,
            tls_dir: str | os.PathLike[str] | None = None, processes: bool = True
            ) -> Iterator[Client]:
    """A Dask client: an existing cluster (address or scheduler file) or a LocalCluster.

    Parameters
    ----------
    workers : int, optional
        Worker processes of the local cluster (default: one per core), started in
        parallel.
    scheduler, scheduler_file : str, optional
        Connect to a running scheduler instead (``tcp://host:port`` or its JSON file).
    timeout : float, optional
        Seconds to reach the scheduler, and again to see a worker (default
        :func:`connect_timeout`).
    tls_dir : path, optional
        TLS certificates for a ``tls://`` scheduler (see :func:`tls_security`).
    dashboard : bool
        Serve the scheduler's Bokeh dashboard (on 127.0.0.1; importing Bokeh costs about
        a second).
    announce : bool
        Print the number of workers and the dashboard link on stderr.
    processes : bool
        Local cluster only: worker processes (default), or worker threads in this
        process (no memory limit: they share it).

    Raises
    ------
    InvalidConfigError
        Bad options, or the cluster cannot be reached / has no worker in time.
    """
    if scheduler and scheduler_file:
        raise InvalidConfigError("give either --scheduler or --scheduler-file, not both")
    if workers is not None and workers < 1:
        raise InvalidConfigError(f"workers must be >= 1, got {workers}")
    t = connect_timeout(timeout)
    if scheduler or scheduler_file:
        address = validate_address(scheduler) if scheduler else read_scheduler_file(
            scheduler_file)  # type: ignore[arg-type]
        where = address if scheduler else f"{address} (from {scheduler_file})"
        security = tls_security(tls_dir) if address.startswith("tls://") else None
        probe_scheduler(address, where, t, security)  # one deadline, one line
        try:
            client = Client(address, timeout=f"{t}s", security=security)
        except (OSError, TimeoutError) as exc:
            raise InvalidConfigError(f"cannot reach the scheduler at {where} within {t:g} s "
                                     f"({type(exc).__name__})") from None
        try:
            try:
                client.wait_for_workers(1, timeout=t)
            except (OSError, TimeoutError):
                raise InvalidConfigError(f"the scheduler at {where} has no worker after "
                                         f"{t:g} s") from None
            from bnsl_dist.orchestrate.preflight import check_workers

            check_workers(client, f"the scheduler at {where}")  # before any work
            announce_client(client, announce)
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.close()
        return
    n = workers or default_n_workers()
    kwargs: dict[str, Any] = {
        "n_workers": n, "threads_per_worker": threads_per_worker,
        "dashboard_address": "127.0.0.1:0",  # the HTTP server too
        "scheduler_kwargs": {"dashboard": dashboard}, "silence_logs": 40}
    if processes:
        with _start_method(), dask.config.set(SCHEDULER_CONFIG):
            cluster = LocalCluster(processes=True, host="127.0.0.1",
                                   memory_limit=memory_limit, **kwargs)
    else:  # in-process transport; the HTTP server still binds 127.0.0.1
        with dask.config.set(SCHEDULER_CONFIG):
            cluster = LocalCluster(processes=False, memory_limit=None, **kwargs)
    client = Client(cluster)
    try:
        mirror_logging(client)  # workers log where this process logs dask's records
        announce_client(client, announce, cluster, dashboard)
        yield client
    finally:
        client.close()
        cluster.close()


@contextlib.contextmanager
def open_client(cluster: ClusterConfig | None = None, *, workers: int | None = None,
                scheduler: str | None = None, scheduler_file: str | None = None,
                announce: bool = True, timeout: float | None = None,
                tls_dir: str | None = None) -> Iterator[Client]:
    """A client for the command line: explicit options first, else ``cluster``, else a
    local cluster of single-threaded processes sized to the machine.

    Clusters spanning hosts are encrypted by default: dask-jobqueue clusters get
    temporary TLS credentials (``Security.temporary()``) unless the cluster YAML says
    ``tls: false``; ``tls://`` addresses use ``tls_dir`` or dask's TLS configuration.
    Their dashboards bind to 127.0.0.1 unless ``dashboard_address`` says otherwise
    (:mod:`bnsl_dist.orchestrate.jobqueue`).
    """
    from bnsl_dist.pipeline.config import ClusterConfig

    if scheduler or scheduler_file or workers or cluster is None \
            or cluster.kind in ("local", "address", "scheduler-file"):
        c = cluster or ClusterConfig()
        if not (scheduler or scheduler_file or workers):
            scheduler = c.address if c.kind == "address" else None
            scheduler_file = os.path.expanduser(c.scheduler_file) \
                if c.kind == "scheduler-file" and c.scheduler_file else None
            workers = c.workers if c.kind == "local" else None
        with connect(workers=workers, scheduler=scheduler, scheduler_file=scheduler_file,
                     threads_per_worker=c.threads_per_worker, announce=announce,
                     memory_limit=c.memory_limit, timeout=timeout,
                     tls_dir=tls_dir) as client:
            yield client
        return
    from bnsl_dist.orchestrate.jobqueue import open_batch_cluster

    with open_batch_cluster(cluster, announce) as client:
        yield client


#: Set in the forkserver's environment (workers forked from it inherit it).
_WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1"}


@contextlib.contextmanager
def _start_method() -> Iterator[None]:
    """Fork local workers from a forkserver that has imported the package and loaded
    numba's target and the cache-building kernels once (:mod:`._preload`): workers start
    warm instead of each importing and loading them (``spawn`` where there is no
    forkserver, e.g. on Windows)."""
    import multiprocessing

    import dask

    if "forkserver" not in multiprocessing.get_all_start_methods():
        yield
        return
    from multiprocessing import forkserver

    from distributed.utils import get_mp_context

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        ctx = get_mp_context()  # distributed's own preload list, set once
        ctx.set_forkserver_preload(["distributed", "bnsl_dist.orchestrate._preload"])
        saved = {k: os.environ.get(k) for k in _WORKER_ENV}
        os.environ.update(_WORKER_ENV)
        try:
            forkserver.ensure_running()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        yield


def announce_client(client: Client, announce: bool = True, cluster: Any = None,
                    dashboard: bool = True) -> None:
    """Print the cluster's workers and dashboard link on stderr (``announce``: whether
    to). ``cluster``: a local cluster of ours, whose dashboard binds 127.0.0.1."""
    if not announce:
        return
    n = len(client.scheduler_info().get("workers", {}))
    link = client.dashboard_link
    if cluster is not None:  # ours binds 127.0.0.1 (an in-process cluster's link says
        link = f"http://127.0.0.1:{cluster.scheduler.http_server.port}/status"  # not)
    kind = "" if cluster is None or cluster.processes else " (threads)"
    where = f"dashboard: {link}" if dashboard else "no dashboard"
    print(f"Dask cluster: {n} workers{kind}; {where}", file=sys.stderr)


# ------------------------------------------------------------- a long-lived local cluster
def temporary_security() -> Any:
    """``distributed.security.Security.temporary()``: a throwaway self-signed key and
    certificate, in memory.

    Raises
    ------
    InvalidConfigError
        The optional package ``cryptography`` (extra ``tls``) is not installed.
    """
    from distributed.security import Security

    try:
        import cryptography  # noqa: F401  (Security.temporary makes the key with it)
    except ImportError:
        raise InvalidConfigError("TLS certificates need the optional package cryptography "
                                 "(pip install 'bnsl_dist[tls]')") from None
    return Security.temporary()


def write_tls_credentials(folder: str | os.PathLike[str]) -> Path:
    """A throwaway self-signed key and certificate (``Security.temporary()``) written as
    ``ca.pem``, ``cert.pem`` and ``key.pem`` (mode 0600) in ``folder``; returns it.

    Raises
    ------
    InvalidConfigError
        The optional package ``cryptography`` (extra ``tls``) is not installed; nothing
        is written.
    """
    sec = temporary_security()
    d = Path(folder).expanduser()
    d.mkdir(parents=True, exist_ok=True)
    for name, text in (("ca", sec.tls_ca_file), ("cert", sec.tls_client_cert),
                       ("key", sec.tls_client_key)):
        f = d / f"{name}.pem"
        fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
    return d


def _is_loopback(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1")


def start_cluster(folder: str | os.PathLike[str], *, workers: int | None = None,
                  host: str = "127.0.0.1", tls: bool | None = None,
                  dashboard_address: str = "127.0.0.1:0", timeout: float = 120.0
                  ) -> dict[str, Any]:
    """Start a scheduler and ``workers`` single-threaded worker processes (one nanny
    process starting them in parallel) in the background, detached from this process.

    ``folder`` receives ``scheduler.json`` (for ``--scheduler-file``), ``cluster.json``
    (process ids, for :func:`stop_cluster`), logs and, with TLS, ``tls/``. TLS is on by
    default when ``host`` is not a loopback address. Workers inherit this environment,
    ``NUMBA_CACHE_DIR`` included (share it between hosts so that workers load compiled
    kernels instead of compiling them). Returns the cluster's description.

    Raises
    ------
    InvalidConfigError
        A cluster is already running from ``folder``, or it did not come up in time.
    """
    import subprocess
    import time

    if not 0 < timeout < math.inf:  # before anything starts: -1 and nan started processes
        # and then failed; inf failed in dask once the workers ran (a KeyError)
        raise InvalidConfigError(f"timeout must be positive and finite, got {timeout}")
    d = Path(folder).expanduser()
    d.mkdir(parents=True, exist_ok=True)
    sched_file, info_file = d / "scheduler.json", d / "cluster.json"
    if info_file.exists():
        raise InvalidConfigError(f"{info_file} exists: a cluster runs from {d} "
                                 f"(`bnsl-dist cluster stop --dir {d}` first)")
    n = workers or default_n_workers()
    tls = (not _is_loopback(host)) if tls is None else tls
    sec_args: list[str] = []
    if tls:
        t = write_tls_credentials(d / "tls")
        sec_args = ["--tls-ca-file", str(t / "ca.pem"), "--tls-cert", str(t / "cert.pem"),
                    "--tls-key", str(t / "key.pem")]
    sched_file.unlink(missing_ok=True)
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1"}

    def spawn(args: list[str], log: str) -> subprocess.Popen[bytes]:
        with open(d / log, "wb") as fh:
            return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=fh,
                                    stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)

    sched = spawn(["scheduler", "--host", host, "--port", "0", "--protocol",
                   "tls" if tls else "tcp", "--dashboard-address", dashboard_address,
                   "--scheduler-file", str(sched_file), *sec_args], "scheduler.log")
    deadline = time.monotonic() + timeout
    while not (sched_file.is_file() and sched_file.stat().st_size > 0):
        if sched.poll() is not None or time.monotonic() > deadline:
            sched.kill()
            raise InvalidConfigError(f"the scheduler did not start; see {d / 'scheduler.log'}")
        time.sleep(0.05)
    wk = spawn(["worker", "--scheduler-file", str(sched_file), "--nworkers", str(n),
                "--nthreads", "1", "--no-dashboard", "--host", host,
                "--local-directory", str(d / "workers"), *sec_args], "workers.log")
    tls_dir = str(d / "tls") if tls else None
    info = {"address": read_scheduler_file(sched_file), "scheduler_file": str(sched_file),
            "workers": n, "tls_dir": tls_dir,
            "pids": [sched.pid, wk.pid]}
    info_file.write_text(json.dumps(info, indent=1) + "\n")
    try:
        with connect(scheduler_file=sched_file, timeout=timeout, announce=False,
                     tls_dir=tls_dir) as client:
            client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))
            info["dashboard"] = client.dashboard_link
    except (InvalidConfigError, TimeoutError, OSError):
        stop_cluster(d)
        raise InvalidConfigError(f"the cluster did not come up within {timeout:g} s; "
                                 f"see the logs in {d}") from None
    return info


def stop_cluster(folder: str | os.PathLike[str], timeout: float = 10.0) -> bool:
    """Stop the cluster :func:`start_cluster` started from ``folder`` (shut it down
    through the scheduler, then end the recorded process groups). False if none ran."""
    import signal
    import time

    d = Path(folder).expanduser()
    info_file = d / "cluster.json"
    try:
        info = json.loads(info_file.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return False
    with contextlib.suppress(Exception):
        with connect(scheduler_file=d / "scheduler.json", timeout=timeout, announce=False,
                     tls_dir=info.get("tls_dir")) as client:
            client.shutdown()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in info.get("pids", []):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, sig)
                alive.append(pid)
        deadline = time.monotonic() + timeout
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if _running(p)]
            time.sleep(0.1)
        if not alive:
            break
    for f in (d / "scheduler.json", info_file):
        f.unlink(missing_ok=True)
    return True


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reap our own child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
