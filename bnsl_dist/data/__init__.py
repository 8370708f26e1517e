"""Categorical data: containers, readers, MCAR masking, the data sets shipped in the package."""

from bnsl_dist.data.dataset import MAX_STATES, CategoricalData, Dataset, code_dtype
from bnsl_dist.data.io import MISSING_TOKENS, read_data, read_dataset, write_csv
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.data.registry import bundled_names, bundled_path, load_bundled_dataset, resolve_data

__all__ = [
    "CategoricalData",
    "Dataset",
    "MAX_STATES",
    "MISSING_TOKENS",
    "code_dtype",
    "bundled_names",
    "bundled_path",
    "load_bundled_dataset",
    "resolve_data",
    "read_data",
    "read_dataset",
    "write_csv",
    "mask_mcar",
]
