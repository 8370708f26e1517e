"""Models: a Bayesian network (DAG + CPTs), parameter fitting, sampling, BIF I/O, export to
pgmpy/networkx. The container, the sampler and the BIF reader/writer live in
:mod:`bnsl_dist.data` and are re-exported here."""

from bnsl_dist.data.bif import read_bif, write_bif
from bnsl_dist.data.network import BayesianNetwork, parent_config_index
from bnsl_dist.data.sampling import sample
from bnsl_dist.model.export import from_pgmpy, to_networkx, to_pgmpy
from bnsl_dist.model.fit import family_counts, fit_cpts

__all__ = [
    "BayesianNetwork",
    "family_counts",
    "fit_cpts",
    "from_pgmpy",
    "parent_config_index",
    "read_bif",
    "sample",
    "to_networkx",
    "to_pgmpy",
    "write_bif",
]
