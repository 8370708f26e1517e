"""The settings of one structural EM run of ``bnsl-dist impute`` (:class:`ImputeTask`):
a spec model with no heavy import, so that the command line is generated from it
(:data:`bnsl_dist.cli._specs.impute_options`) and a cell carries it
(:mod:`bnsl_dist.pipeline.tasks.sem` runs it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt

from bnsl_dist._spec import Spec

__all__ = ["ImputeTask"]


class ImputeTask(Spec):
    """Structural EM with k-MAX on the cell's incomplete data, then its completion
    (``bnsl-dist impute``): the treewidth bound ``k``, the EM iteration cap, each
    iteration's completion (``e_step``) and the written one (``imputation``), whether
    each M-step's cache keeps the earlier ones' sets (``accumulate``), k-MAX's budget per
    M-step (``search_seconds``, ``search_iterations``; none: the data-scaled iterations)
    and a wall-clock ``time_limit`` (no EM iteration starts that would not end in it)."""

    kind: Literal["impute"] = "impute"
    k: PositiveInt = Field(default=4, description="Treewidth bound of k-MAX.")
    max_iterations: PositiveInt = Field(default=10, description="EM iterations at most.")
    e_step: Literal["mpe", "marginal"] = Field(
        default="mpe", description="Completion of each EM iteration: joint MPE or "
        "per-variable argmax.")
    imputation: Literal["marginal", "mpe"] = Field(
        default="marginal", description="Completion written by the learned network: each "
        "missing cell's posterior-marginal argmax (most cells right on average), or the "
        "joint MPE of each record (the paper's).")
    accumulate: bool = Field(
        default=False, description="Keep the earlier M-steps' parent sets (rescored) in "
        "each M-step's cache; --no-accumulate: each cache is its own build, as in the "
        "paper.")
    search_seconds: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="k-MAX budget per iteration in seconds (default: none, "
        "the iterations).")
    search_iterations: PositiveInt | None = Field(
        default=None, description="k-MAX budget per iteration in iterations (default: "
        "1.2e6/n_vars within 200-20,000, reproducible).")
    time_limit: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        default=None, description="No EM iteration starts that would not end, with the "
        "final completion, within SECONDS of the command's start (at the mean time of "
        "those before; the first always runs): the best network so far imputes (stop "
        "reason 'time limit').")
    batch_size: PositiveInt = Field(
        default=20_000, description="Records per E-step task on Dask (no effect on the "
        "result).")
