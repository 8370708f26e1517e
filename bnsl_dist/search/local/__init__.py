"""Local search over DAGs scored from the data (polishing after a cache-based search)."""

from bnsl_dist.search.local.tabu import DataTabu, TabuClimber, cache_candidates, tabu_search

__all__ = ["DataTabu", "TabuClimber", "cache_candidates", "tabu_search"]
