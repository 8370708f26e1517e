"""A wrong cluster set-up fails in one line before any work: a worker that cannot import
the package, a worker at another version."""

from __future__ import annotations

import subprocess
import sys

import pytest

from bnsl_dist.exceptions import InvalidConfigError

pytestmark = [pytest.mark.dask, pytest.mark.timeout(120)]

#: A worker process in which ``import bnsl_dist`` fails (as on a host without it).
NO_PACKAGE = ("import sys; sys.modules['bnsl_dist'] = None; "
              "from distributed.cli.dask_worker import main; sys.exit(main())")


def test_a_worker_without_the_package_fails_connect_in_one_line():
    from distributed import LocalCluster

    from bnsl_dist.orchestrate.cluster import connect

    with LocalCluster(n_workers=0, host="127.0.0.1", dashboard_address=None) as lc:
        worker = subprocess.Popen([sys.executable, "-c", NO_PACKAGE, lc.scheduler_address,
                                   "--nthreads", "1", "--no-dashboard", "--no-nanny"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            with pytest.raises(InvalidConfigError) as err, \
                    connect(scheduler=lc.scheduler_address, timeout=60, announce=False):
                pass
        finally:
            worker.kill()
            worker.wait()
    msg = str(err.value)
    assert "\n" not in msg and "cannot import the package" in msg, msg
    assert "ModuleNotFoundError" in msg or "ImportError" in msg, msg


def test_a_worker_at_another_version_is_named(monkeypatch):
    from distributed import Client, LocalCluster

    import bnsl_dist.orchestrate.preflight as pf

    with LocalCluster(n_workers=1, processes=False, dashboard_address=None) as lc, \
            Client(lc) as client:
        pf.check_workers(client)  # the same set-up: nothing to say
        mine = pf.setup_of_this_process()
        monkeypatch.setattr(pf, "setup_of_this_process", lambda: ("0.0.1", *mine[1:]))
        with pytest.raises(InvalidConfigError, match=r"runs bnsl_dist .*, this client 0\.0\.1"):
            pf.check_workers(client)
