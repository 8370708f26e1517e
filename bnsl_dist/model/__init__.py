"""Models: a Bayesian network (DAG + CPTs), BIF I/O, forward sampling, seeded random
networks, parameter fitting, export to pgmpy/networkx."""

from bnsl_dist.model.bif import format_bif, parse_bif, read_bif, write_bif
from bnsl_dist.model.export import from_pgmpy, to_networkx, to_pgmpy
from bnsl_dist.model.fit import family_counts, fit_cpts
from bnsl_dist.model.generate import random_dag, random_network
from bnsl_dist.model.network import BayesianNetwork, parent_config_index
from bnsl_dist.model.sampling import sample

__all__ = [
    "BayesianNetwork",
    "family_counts",
    "fit_cpts",
    "format_bif",
    "from_pgmpy",
    "parent_config_index",
    "parse_bif",
    "random_dag",
    "random_network",
    "read_bif",
    "sample",
    "to_networkx",
    "to_pgmpy",
    "write_bif",
]
