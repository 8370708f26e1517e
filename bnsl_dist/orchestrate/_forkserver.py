"""The forkserver local workers are forked from, startable before ``distributed`` is
imported (this module imports neither dask nor distributed), so that a command can
start it first thing and let it load the package and the kernels (:mod:`._preload`)
while the command itself goes on importing and checking its input."""

from __future__ import annotations

import os

__all__ = ["WORKER_ENV", "PRELOAD", "start_forkserver"]

#: Set in the forkserver's environment (workers forked from it inherit it).
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "OPENBLAS_NUM_THREADS": "1"}

#: Modules the forkserver imports once for all its workers.
PRELOAD = ["distributed", "bnsl_dist.orchestrate._preload"]


def start_forkserver() -> bool:
    """Start the forkserver (once per process; it loads :data:`PRELOAD` in the
    background) unless it runs. False where there is no forkserver (e.g. Windows)."""
    import multiprocessing
    from multiprocessing import forkserver

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return False
    multiprocessing.get_context("forkserver").set_forkserver_preload(PRELOAD)
    saved = {k: os.environ.get(k) for k in WORKER_ENV}
    os.environ.update(WORKER_ENV)
    try:
        forkserver.ensure_running()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return True
