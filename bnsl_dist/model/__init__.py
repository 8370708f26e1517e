"""Models: a Bayesian network (DAG + CPTs), parameter fitting, export to pgmpy/networkx."""

from bnsl_dist.data.network import BayesianNetwork, parent_config_index
from bnsl_dist.model.export import from_pgmpy, to_networkx, to_pgmpy
from bnsl_dist.model.fit import family_counts, fit_cpts

__all__ = [
    "BayesianNetwork",
    "family_counts",
    "fit_cpts",
    "from_pgmpy",
    "parent_config_index",
    "to_networkx",
    "to_pgmpy",
]
