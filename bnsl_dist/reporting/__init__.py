"""Reporting: the papers' ΔBIC tables with sign tests, anytime curves, histograms."""

from bnsl_dist.reporting.tables import (
    CATEGORIES,
    SIZE_CLASSES,
    Comparison,
    DeltaTable,
    SignTest,
    binomial_two_sided_p,
    default_comparisons,
    delta_table,
    experiment_scores,
    paired_deltas,
    raftery_category,
    sign_test,
    size_class,
    write_tables,
)

__all__ = [
    "CATEGORIES",
    "Comparison",
    "DeltaTable",
    "SIZE_CLASSES",
    "SignTest",
    "binomial_two_sided_p",
    "default_comparisons",
    "delta_table",
    "experiment_scores",
    "paired_deltas",
    "raftery_category",
    "sign_test",
    "size_class",
    "write_tables",
]
