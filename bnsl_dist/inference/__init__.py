"""Inference: junction-tree exact inference batched over evidence rows, likelihood
weighting for networks too wide for it, data-set log-likelihood."""

from bnsl_dist.inference.approximate import LikelihoodWeighting
from bnsl_dist.inference.engine import (
    Engine,
    LogLikelihood,
    align_data,
    log_likelihood,
    make_engine,
)
from bnsl_dist.inference.evidence import as_evidence, parse_assignments
from bnsl_dist.inference.junction_tree import (
    DEFAULT_MEMORY_LIMIT,
    JunctionTree,
    JunctionTreeTooLargeError,
    MPEResult,
    Posterior,
    build_junction_tree,
)

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "Engine",
    "JunctionTree",
    "JunctionTreeTooLargeError",
    "LikelihoodWeighting",
    "LogLikelihood",
    "MPEResult",
    "Posterior",
    "align_data",
    "as_evidence",
    "build_junction_tree",
    "log_likelihood",
    "make_engine",
    "parse_assignments",
]
