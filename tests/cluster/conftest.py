"""A three-host cluster that shares no file system with its client, made of Linux
namespaces (:mod:`tests.cluster.hosts`): a scheduler host and two worker hosts, TLS
between all of them (a throwaway certificate made here), and a client host whose
``bnsl-dist`` commands the tests run. Skipped, in one line, where namespaces cannot
be made."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.cluster.hosts import Hosts, namespaces_unavailable

WORKERS = ("w1", "w2")
PORT = 8786
ROOT = Path(__file__).resolve().parents[2]

#: Waits for ``n`` workers from the client host; prints their addresses.
_WAIT = """
import json, sys
from distributed import Client
from bnsl_dist.orchestrate.cluster import tls_security
with Client(sys.argv[1], security=tls_security(sys.argv[2]), timeout="60s") as c:
    c.wait_for_workers(int(sys.argv[3]), timeout=120)
    print(json.dumps(sorted(c.scheduler_info()["workers"])))
"""


class Cluster:
    """The hosts, the scheduler's address, the certificates; ``cli`` runs bnsl-dist on
    the client host."""

    def __init__(self, hosts: Hosts, tls: Path, logs: Path) -> None:
        self.hosts = hosts
        self.tls = tls
        self.logs = logs
        self.address = f"tls://{hosts.address('scheduler')}:{PORT}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
        self.env = {**env, "PYTHONPATH": str(ROOT), "NUMBA_NUM_THREADS": "1",
                    "OMP_NUM_THREADS": "1", "BNSL_CONNECT_TIMEOUT": "15"}
        self.procs: list[subprocess.Popen[bytes]] = []

    def _sec(self) -> list[str]:
        return ["--tls-ca-file", str(self.tls / "ca.pem"), "--tls-cert",
                str(self.tls / "cert.pem"), "--tls-key", str(self.tls / "key.pem")]

    def start(self, hosts: Sequence[str] = ("scheduler", *WORKERS)) -> None:
        """Start the scheduler and/or workers and wait until every worker is in."""
        py = [sys.executable, "-m", "dask"]
        for host in hosts:
            ip = self.hosts.address(host)
            if host == "scheduler":
                argv = [*py, "scheduler", "--host", ip, "--port", str(PORT), "--protocol",
                        "tls", "--no-dashboard", *self._sec()]
            else:
                argv = [*py, "worker", self.address, "--nworkers", "1", "--nthreads", "1",
                        "--host", ip, "--no-dashboard", "--local-directory",
                        f"{self.hosts.scratch}/dask",
                        *self._sec()]
            self.procs.append(self.hosts.start(host, argv, self.logs / f"{host}.log",
                                               env=self.env))
        r = self.hosts.run("client", [sys.executable, "-c", _WAIT, self.address,
                                      str(self.tls), str(len(WORKERS))], 180, env=self.env)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:] + self.log_tail()
        workers = json.loads(r.stdout.strip().splitlines()[-1])
        subnet = self.hosts.prefix + "."
        assert all(w.startswith(f"tls://{subnet}") for w in workers), workers

    def stop(self) -> None:
        for host in ("scheduler", *WORKERS):
            self.hosts.kill(host)
        for p in self.procs:
            p.wait()
        self.procs.clear()

    def cli(self, args: Sequence[str], timeout: float = 240, tls: bool = True,
            scheduler: bool = True) -> subprocess.CompletedProcess[str]:
        """``bnsl-dist ARGS`` on the client host, against the cluster."""
        extra = ["--scheduler", self.address] if scheduler else []
        if scheduler and tls:
            extra += ["--tls-dir", str(self.tls)]
        return self.hosts.run("client", [sys.executable, "-c",
                                         "from bnsl_dist.cli import main; main()",
                                         *args, *extra], timeout, env=self.env)

    def popen(self, args: Sequence[str], log: Path) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-c", "from bnsl_dist.cli import main; main()", *args,
                "--scheduler", self.address, "--tls-dir", str(self.tls)]
        return self.hosts.start("client", argv, log, env=self.env)

    def log_tail(self) -> str:
        out = []
        for f in sorted(self.logs.glob("*.log")):
            out.append(f"--- {f.name}\n" + f.read_text(errors="replace")[-1500:])
        return "\n".join(out)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    why = namespaces_unavailable()
    if why is not None:
        pytest.skip(f"tests/cluster: cannot make network and mount namespaces ({why})")
    pytest.importorskip("cryptography")
    from bnsl_dist.orchestrate.cluster import write_tls_credentials

    shared = os.environ.get("BNSL_SHARED_DATA")
    # the private hosts' tmpfs goes over the tests' temporary folder (the client's data,
    # results, caches), not over /tmp, where the checkout and its virtual environment
    # may be (a CI clone): the hosts must run the installed software
    hosts = Hosts(["client", "scheduler", *WORKERS], private=["scheduler", *WORKERS],
                  hidden=[shared] if shared and Path(shared).is_dir() else [],
                  scratch=tmp_path_factory.getbasetemp())
    secrets = Path("/run") / hosts.tag  # outside /tmp: every host reads it
    logs = tmp_path_factory.mktemp("cluster-logs")
    try:
        hosts.up()
        write_tls_credentials(secrets / "tls")
        cl = Cluster(hosts, secrets / "tls", logs)
        t0 = time.monotonic()
        cl.start()
        print(f"cluster up in {time.monotonic() - t0:.1f} s", file=sys.stderr)
        yield cl
        cl.stop()
    finally:
        hosts.down()
        shutil.rmtree(secrets, ignore_errors=True)
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert hosts.tag + "-" not in left, left
