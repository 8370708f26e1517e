"""Hosts made of Linux namespaces, for tests of a cluster that shares nothing.

:class:`Hosts` makes a switch (a namespace holding a bridge) and, per host, a network
namespace with one veth port on that bridge and an address in a private /24 of its
own; nothing is added to the namespace the tests run in, so no traffic leaves the
namespaces made here (each host reaches the others and its own loopback, nothing
else). A process on a *private* host also runs in its own mount namespace with a
tmpfs over ``scratch`` (the tests' temporary folder, which holds the client's data,
results and cache folders; default ``/tmp``), which is also its ``TMPDIR``, working
folder and ``HOME``, a tmpfs over each path of ``hidden``, and no ``BNSL_SHARED_DATA``:
it sees the installed software (also a checkout or virtual environment under /tmp, as a
CI clone may be), not the client's files.
:meth:`Hosts.kill` ends every process of a host (``ip netns pids``), as a host lost.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["Hosts", "namespaces_unavailable"]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check,
                          timeout=30)


def namespaces_unavailable() -> str | None:
    """Why network and mount namespaces cannot be made here (None: they can)."""
    if os.geteuid() != 0:
        return "not root"
    probe = f"bnslprobe{os.getpid()}"
    try:
        _ip("netns", "add", probe)
        _ip("netns", "del", probe)
        subprocess.run(["unshare", "-m", "true"], check=True, capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class Hosts:
    """Namespaced hosts ``names`` on one bridge (see the module's description)."""

    def __init__(self, names: Sequence[str], private: Sequence[str],
                 hidden: Sequence[str] = (), scratch: str | Path = "/tmp") -> None:
        self.tag = f"bn{os.getpid() % 100000}"
        self.prefix = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
        self.names = list(names)
        self.private = set(private)
        self.hidden = [str(h) for h in hidden]
        self.scratch = str(scratch)
        self.logs: dict[str, Path] = {}
        self._made: list[str] = []

    def ns(self, host: str) -> str:
        return f"{self.tag}-{host}"

    def address(self, host: str) -> str:
        return f"{self.prefix}.{self.names.index(host) + 2}"

    @property
    def subnet(self) -> str:
        return f"{self.prefix}.0/24"

    def up(self) -> None:
        sw = self.ns("switch")
        _ip("netns", "add", sw)
        self._made.append(sw)
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "link", "set", "br0", "up")
        for i, host in enumerate(self.names):
            ns = self.ns(host)
            _ip("netns", "add", ns)
            self._made.append(ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", f"p{i}",
                "netns", sw)
            _ip("-n", sw, "link", "set", f"p{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")

    def command(self, host: str, argv: Sequence[str]) -> list[str]:
        """``argv`` on ``host`` (its network namespace; a private one's mounts)."""
        if host not in self.private:
            return ["ip", "netns", "exec", self.ns(host), *argv]
        hide = "".join(f"mount -t tmpfs tmpfs {shlex.quote(h)} && " for h in self.hidden)
        tmp = shlex.quote(self.scratch)
        prologue = (f"mount -t tmpfs tmpfs {tmp} && " + hide
                    + f"mkdir -p {tmp}/home && export HOME={tmp}/home TMPDIR={tmp} && "
                    f"unset BNSL_SHARED_DATA && cd {tmp} && exec \"$@\"")
        return ["ip", "netns", "exec", self.ns(host), "unshare", "-m", "--propagation",
                "private", "sh", "-c", prologue, "sh", *argv]

    def start(self, host: str, argv: Sequence[str], log: Path,
              env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` on ``host`` in the background, its output in ``log``."""
        self.logs[host] = log
        with open(log, "ab") as fh:
            return subprocess.Popen(self.command(host, argv), stdout=fh,
                                    stderr=subprocess.STDOUT, env=env,
                                    start_new_session=True)

    def run(self, host: str, argv: Sequence[str], timeout: float,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(host, argv), capture_output=True, text=True,
                              timeout=timeout, env=env)

    def pids(self, host: str) -> list[int]:
        out = _ip("netns", "pids", self.ns(host), check=False).stdout
        return [int(p) for p in out.split()]

    def kill(self, host: str, timeout: float = 10.0) -> None:
        """End every process of ``host`` at once (SIGKILL), as a host lost."""
        deadline = time.monotonic() + timeout
        while (pids := self.pids(host)) and time.monotonic() < deadline:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.1)

    def down(self) -> None:
        """Kill every host's processes, delete every namespace made."""
        for host in self.names:
            self.kill(host)
        for ns in reversed(self._made):
            _ip("netns", "del", ns, check=False)
        self._made.clear()
