"""Score caches: candidate parent sets per variable, their exploration and `.jkl` files."""

from bnsl_dist.cache.build import build_cache, explore_variable
from bnsl_dist.cache.independence import bic_star
from bnsl_dist.cache.jkl import read_jkl, write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache, bitset, n_words
from bnsl_dist.cache.spec import CacheSpec

__all__ = [
    "CacheSpec",
    "ParentSetCache",
    "bic_star",
    "bitset",
    "build_cache",
    "explore_variable",
    "n_words",
    "read_jkl",
    "write_jkl",
]
