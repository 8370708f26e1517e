"""bnsl_dist: Bayesian-network structure learning over categorical data, on Dask."""

from __future__ import annotations

__version__ = "0.1.0"

from bnsl_dist.exceptions import BNSLError

__all__ = ["__version__", "BNSLError", "learn_within"]


def __getattr__(name: str) -> object:
    if name == "learn_within":  # imported on first use: it loads every numba kernel module
        from bnsl_dist.pipeline.tasks.within import learn_within

        return learn_within
    raise AttributeError(f"module 'bnsl_dist' has no attribute {name!r}")
