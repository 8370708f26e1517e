"""Dask orchestration: the only package (with cli/) that imports dask/distributed.

Submodules: cluster (clients), explore (per-variable cache build), anytime (``learn``:
``client.map(run_cell, cells)``), sem (E-step batches), grid (experiment grids). Import
them explicitly.
"""

__all__: list[str] = []
