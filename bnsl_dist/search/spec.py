"""SearchSpec: which optimizer runs, with which parameters, for how long.

One model for YAML, the library and the CLI. The algorithm name and its parameters are
checked against the registry's declaration (:func:`~bnsl_dist.search.base.optimizer_info`)
while the spec is validated, so a typo fails before any data is read.

Examples
--------
>>> s = SearchSpec(algorithm="kmax", k=3, budget={"iterations": 10})
>>> s.budget.as_budget()
Budget(seconds=None, max_iterations=10)
>>> from bnsl_dist._spec import make
>>> make(SearchSpec, algorithm="asobs", params={"windw": 3},
...      budget={"seconds": 1})  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
bnsl_dist.exceptions.InvalidConfigError: params: algorithm 'asobs' has no parameter 'windw'; ...
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    AfterValidator,
    Field,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bnsl_dist._spec import Spec
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import DEFAULT_CHECKPOINTS, Budget, make_optimizer, optimizer_info

__all__ = ["BudgetSpec", "SearchSpec", "JSONValue", "AlgorithmName", "declared_params",
           "registry_check", "DEFAULT_SEARCH_SECONDS"]

JSONValue = str | int | float | bool | None | list[Any] | dict[str, Any]


#: Seconds of a budget: positive and finite (``inf`` would be no budget at all: an anytime
#: optimizer would never stop; leave seconds out and give iterations instead).
FiniteSeconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


#: Seconds per run of a search given neither seconds nor iterations (``learn``).
DEFAULT_SEARCH_SECONDS = 10.0


class BudgetSpec(Spec):
    """Seconds and/or iterations per run, and the checkpoints reported on the way
    (``checkpoints`` in seconds, ``iteration_checkpoints`` in iterations)."""

    seconds: FiniteSeconds | None = Field(
        default=None, description="Time budget per seed [10 s].")
    iterations: PositiveInt | None = Field(
        default=None, description="Iteration budget per seed (reproducible).")
    checkpoints: tuple[FiniteSeconds, ...] = Field(
        default=(), description="Budgets (seconds, or iterations for an iteration budget) "
        "at which to report the best DAG [1,10,60,600,3600 s; 1,10,100,... iterations].")
    iteration_checkpoints: tuple[PositiveInt, ...] = Field(
        default=(), description="Checkpoints in iterations.")

    @model_validator(mode="after")
    def _check(self) -> BudgetSpec:
        if self.seconds is None and self.iterations is None:
            raise ValueError("a budget needs seconds or iterations (or both)")
        for name, vals, top in (("checkpoints", self.checkpoints, self.seconds),
                                ("iteration_checkpoints", self.iteration_checkpoints,
                                 self.iterations)):
            if list(vals) != sorted(set(vals)):
                raise ValueError(f"{name} must be strictly increasing, got {list(vals)}")
            if top is not None and vals and vals[-1] > top:
                raise ValueError(f"{name} {list(vals)} go past the budget ({top})")
        return self

    @classmethod
    def with_default_checkpoints(cls, seconds: float | None, iterations: int | None
                                 ) -> BudgetSpec:
        """A budget whose checkpoints are resolved: 1, 10, 60, 600, 3600 s below the
        time budget, or 1, 10, 100, ... below the iteration budget; the budget last."""
        if seconds is not None:
            cps = tuple(c for c in DEFAULT_CHECKPOINTS if c < seconds) + (float(seconds),)
            return cls(seconds=seconds, iterations=iterations, checkpoints=cps)
        if iterations is None:
            raise InvalidConfigError("a budget needs seconds or iterations (or both)")
        its = []
        c = 1
        while c < iterations:
            its.append(c)
            c *= 10
        return cls(iterations=iterations, iteration_checkpoints=(*its, iterations))

    def as_budget(self) -> Budget:
        return Budget(seconds=self.seconds, max_iterations=self.iterations)


def _registered(name: str) -> str:
    try:
        optimizer_info(name)
    except InvalidConfigError as exc:
        raise ValueError(str(exc)) from None
    return name


#: A registered optimizer's name (checked while a spec or grid is validated).
AlgorithmName = Annotated[str, Field(min_length=1), AfterValidator(_registered)]


def declared_params(params: dict[str, Any], info: ValidationInfo,
                    name_field: str) -> dict[str, Any]:
    """A ``params`` field validator: the parameters the algorithm (validated before, as
    ``name_field``) declares, with values of the declared types; ``k`` is checked
    with the whole spec."""
    name = info.data.get(name_field)
    if name is not None:
        registry_check(name, params, 1 if optimizer_info(name).takes_k else None)
    return params


class SearchSpec(Spec):
    """A registered optimizer, its declared parameters, its treewidth bound ``k`` (for
    the optimizers that declare one) and the budget of each run. ``params`` also holds
    the parameters the optimizer pins (its ``pinned_params``: those whose default once
    changed, e.g. ASOBS-ENT's ``high_entropy``), so that a cell's key and record name
    them."""

    algorithm: AlgorithmName = Field(
        default="asobs-ent",
        description="A registered optimizer (`bnsl-dist algorithms` lists them).")
    params: dict[str, JSONValue] = Field(
        default_factory=dict, description="Optimizer parameter (repeatable), e.g. "
        "--param local_search=window.")
    k: PositiveInt | None = Field(
        default=None, description="Treewidth bound (for the optimizers that declare one: "
        "kg, kmax, ...).")
    budget: BudgetSpec

    #: The settings a grid varies between the cells of one algorithm entry, beyond the
    #: treewidth ``k`` (the grid's ``AlgorithmConfig.search_specs`` makes one spec per
    #: value): ``grid status --by`` counts by them. None yet.
    AXES: ClassVar[tuple[str, ...]] = ()

    @field_validator("params")
    @classmethod
    def _declared(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        return declared_params(v, info, "algorithm")

    @model_validator(mode="after")
    def _k(self) -> SearchSpec:
        registry_check(self.algorithm, {}, self.k)
        pin = getattr(optimizer_info(self.algorithm).cls, "pinned_params", None)
        if pin is not None:  # frozen: the validated dict is replaced, never shared
            object.__setattr__(self, "params", {**pin(self.params), **self.params})
        return self

    def optimizer(self) -> Any:
        """A fresh instance of the optimizer."""
        return make_optimizer(self.algorithm, self.k, **self.params)


def registry_check(algorithm: str, params: dict[str, Any], k: int | None) -> None:
    """:meth:`OptimizerInfo.check_params` as a ValueError, which pydantic reports at the
    field being validated (with the file and line when read from YAML)."""
    try:
        optimizer_info(algorithm).check_params(params, k)
    except InvalidConfigError as exc:
        raise ValueError(str(exc)) from None
