"""Dask orchestration: the only package (with cli/) that imports dask/distributed.

Submodules: cluster (clients, the local cluster helper), workers (the numba warm-up
worker plugin every driver registers, task keys), explore (per-variable cache build),
anytime (``learn``: ``client.map(run_cell, cells)``), within (``learn --time-limit``:
one task per seed), sem (E-step batches), grid (experiment grids). Import them
explicitly.
"""

__all__: list[str] = []
