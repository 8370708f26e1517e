"""Structural EM (SEM-kMAX) for incomplete data, and imputation."""

from bnsl_dist.sem.imputation import (
    complete_rows,
    imputation_accuracy,
    impute,
    mode_impute,
)
from bnsl_dist.sem.structural_em import SEMIteration, SEMResult, random_chain, structural_em

__all__ = [
    "SEMIteration",
    "SEMResult",
    "complete_rows",
    "imputation_accuracy",
    "impute",
    "mode_impute",
    "random_chain",
    "structural_em",
]
