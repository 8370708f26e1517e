"""Categorical data: containers, readers, networks, sampling."""

from bnsl_dist.data.bif import format_bif, parse_bif, read_bif, write_bif
from bnsl_dist.data.catalog import data_root, fetch, load_catalog, load_network, load_registered
from bnsl_dist.data.dataset import MAX_STATES, CategoricalData, Dataset, code_dtype
from bnsl_dist.data.generate import random_dag, random_network
from bnsl_dist.data.io import MISSING_TOKENS, read_data, read_dataset, write_csv
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.data.network import BayesianNetwork, parent_config_index
from bnsl_dist.data.registry import bundled_names, bundled_path, load_bundled_dataset, resolve_data
from bnsl_dist.data.sampling import sample

__all__ = [
    "BayesianNetwork",
    "parent_config_index",
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
    "read_bif",
    "write_bif",
    "parse_bif",
    "format_bif",
    "sample",
    "random_network",
    "random_dag",
    "mask_mcar",
    "data_root",
    "fetch",
    "load_catalog",
    "load_network",
    "load_registered",
]
