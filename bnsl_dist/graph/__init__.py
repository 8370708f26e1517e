"""Graphs: DAGs, moral graphs, k-trees, treewidth. A leaf: imports nothing of the project
but exceptions and I/O helpers."""

from bnsl_dist.graph.dag import DAG, find_cycle, topological_order

__all__ = ["DAG", "find_cycle", "topological_order"]
