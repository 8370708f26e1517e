"""bnsl_dist: Bayesian-network structure learning over categorical data, on Dask."""

from __future__ import annotations

__version__ = "0.1.0"

from bnsl_dist.exceptions import BNSLError

__all__ = ["__version__", "BNSLError"]
