"""Local scores: counts -> BIC, BDeu, log-likelihood, entropies."""

from bnsl_dist.scores.local import SCORES, LocalScorer, ScoreName, n_configurations

__all__ = ["LocalScorer", "SCORES", "ScoreName", "n_configurations"]
