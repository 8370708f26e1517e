"""Score caches: candidate parent sets per variable, their exploration and `.jkl` files."""

from bnsl_dist.cache.jkl import read_jkl, write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache, bitset, n_words

__all__ = ["ParentSetCache", "bitset", "n_words", "read_jkl", "write_jkl"]
