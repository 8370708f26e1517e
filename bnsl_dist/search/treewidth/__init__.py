"""Bounded-treewidth structure learning on k-trees: k-G, k-G_ENT, k-MAX.

Every incumbent carries ``info["certificate"]``, a
:class:`~bnsl_dist.graph.TreewidthCertificate` of width k.
"""

from bnsl_dist.search.treewidth.kgreedy import KGreedy, KGreedyEnt
from bnsl_dist.search.treewidth.kmax import KMax

__all__ = ["KGreedy", "KGreedyEnt", "KMax"]
