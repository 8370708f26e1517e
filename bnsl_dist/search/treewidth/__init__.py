"""Bounded-treewidth structure learning on k-trees: k-G, k-G_ENT, k-MAX, S2.

Every incumbent carries ``info["certificate"]``, a
:class:`~bnsl_dist.graph.TreewidthCertificate` of width k.
"""

from bnsl_dist.search.treewidth.kgreedy import KGreedy, KGreedyEnt
from bnsl_dist.search.treewidth.kmax import KMax
from bnsl_dist.search.treewidth.s2 import S2

__all__ = ["KGreedy", "KGreedyEnt", "KMax", "S2"]
