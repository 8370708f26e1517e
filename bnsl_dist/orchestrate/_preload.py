"""Imported once by the forkserver that forks the workers of a local cluster
(:func:`bnsl_dist.orchestrate.cluster.connect`): the package, numba's target and the
cache-building kernels are loaded there once, and every worker forked from it starts
with them in memory instead of importing and loading them itself."""

from bnsl_dist.pipeline.provenance import provenance
from bnsl_dist.search.warmup import warm_up

warm_up(("independence",))
provenance()  # taken once, before the workers fork: they inherit it
