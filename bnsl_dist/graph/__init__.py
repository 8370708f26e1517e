"""Graphs: DAGs, moral graphs, k-trees, treewidth. A leaf: imports nothing of the project
but exceptions and I/O helpers."""

from bnsl_dist.graph.dag import DAG, find_cycle, strongly_connected_components, topological_order
from bnsl_dist.graph.ktree import KTree
from bnsl_dist.graph.moral import moral_graph, undirected_edges
from bnsl_dist.graph.treewidth import (
    TreewidthCertificate,
    certify,
    eliminate,
    elimination_width,
    min_degree_order,
    min_fill_order,
)

__all__ = ["DAG", "find_cycle", "strongly_connected_components", "topological_order", "KTree", "moral_graph", "undirected_edges",
           "TreewidthCertificate", "certify", "eliminate", "elimination_width", "min_degree_order",
           "min_fill_order"]
