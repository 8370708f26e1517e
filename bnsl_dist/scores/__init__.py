"""Local scores: counts -> BIC, BDeu, log-likelihood, entropies; the score registry."""

from bnsl_dist.scores.local import LocalScorer, n_configurations
from bnsl_dist.scores.registry import ScoreInfo, register_score, score_info, score_names

__all__ = ["LocalScorer", "ScoreInfo", "n_configurations", "register_score", "score_info",
           "score_names"]
