"""The local cluster's forkserver: a command may start it before distributed is
imported, and the cluster's workers are then forked from that very process, with the
single-threaded numba/BLAS environment, which starting it leaves out of the caller's."""

from __future__ import annotations

import os
from multiprocessing import forkserver

import pytest

pytestmark = pytest.mark.dask


def _env() -> dict[str, str | None]:
    return {"NUMBA_NUM_THREADS": os.environ.get("NUMBA_NUM_THREADS"),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}


def test_workers_fork_from_the_forkserver_started_early():
    from bnsl_dist.orchestrate._forkserver import start_forkserver
    from bnsl_dist.orchestrate.cluster import connect

    before = _env()
    assert start_forkserver() is True
    pid = forkserver._forkserver._forkserver_pid
    assert pid is not None and pid != os.getpid()
    assert start_forkserver() is True and forkserver._forkserver._forkserver_pid == pid
    assert _env() == before
    with connect(workers=2, announce=False, dashboard=False) as client:
        parents = client.run(os.getppid)
        envs = client.run(_env)
    assert forkserver._forkserver._forkserver_pid == pid
    assert sorted(parents.values()) == [pid, pid]
    assert list(envs.values()) == [{"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}] * 2
