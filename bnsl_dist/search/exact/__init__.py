"""Exact structure learning: dynamic programming (and, as they land, ILP, A*, POPS)."""

from bnsl_dist.search.exact.dp import MAX_DP_VARS, ExactDP, exact_dp, exact_dp_indices

__all__ = ["ExactDP", "MAX_DP_VARS", "exact_dp", "exact_dp_indices"]
