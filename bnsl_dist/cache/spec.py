"""CacheSpec: how a parent-set cache is obtained (one model for YAML, library and CLI).

Defaults are resolved into the spec: independence selection given no budget runs
:data:`DEFAULT_SECONDS` per variable and says so (``seconds_per_variable: 1.0``).

Examples
--------
>>> CacheSpec().seconds_per_variable
1.0
>>> CacheSpec(scores_per_variable=500).seconds_per_variable is None
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, PositiveFloat, PositiveInt, model_validator

from bnsl_dist._spec import Spec
from bnsl_dist.scores.local import MAX_ESS
from bnsl_dist.scores.registry import score_names

if TYPE_CHECKING:
    StructureScore = str
else:  # the registered structure scores, as choices (YAML errors, the CLI's --score)
    StructureScore = Literal[score_names(structure=True)]

__all__ = ["CacheSpec", "DEFAULT_SECONDS", "ITERATION_CACHE_SCORES", "with_iteration_budget"]

#: Seconds per variable of independence selection when no budget is given (the papers).
DEFAULT_SECONDS = 1.0
#: Exact scores per variable of the cache when the search budget is in iterations and the
#: cache has no budget of its own (``learn --iterations``, grids): the whole run is then
#: reproducible on any machine and any cluster.
ITERATION_CACHE_SCORES = 2_000


def _get(obj: Any, name: str) -> Any:
    """A field of a section not validated yet: a mapping's key or a model's attribute."""
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def with_iteration_budget(cache: Mapping[str, Any], budgets: Iterable[Any]) -> dict[str, Any]:
    """The one rule for the cache of a reproducible run: ``cache`` (a CacheSpec's fields
    as given, not validated yet) with :data:`ITERATION_CACHE_SCORES` exact scores per
    variable when it is an independence selection with no budget and no file of its own
    and every search budget in ``budgets`` (BudgetSpec fields, as mappings or models; at
    least one) is in iterations alone: such a run, its cache included, is then the same
    on any machine and any cluster. Unchanged otherwise (``learn --iterations``, grids).

    >>> with_iteration_budget({}, [{"iterations": 50}])
    {'scores_per_variable': 2000}
    >>> with_iteration_budget({}, [{"iterations": 50, "seconds": 1.0}])
    {}
    """
    budgets = list(budgets)
    if not budgets or cache.get("method", "independence") != "independence" \
            or any(cache.get(f) is not None
                   for f in ("seconds_per_variable", "scores_per_variable", "path")):
        return dict(cache)
    if all(_get(b, "seconds") is None and _get(b, "iterations") is not None for b in budgets):
        return {**cache, "scores_per_variable": ITERATION_CACHE_SCORES}
    return dict(cache)


class CacheSpec(Spec):
    """Settings of a cache build (docs/ALGORITHMS.md §3), or a ready ``.jkl`` file.

    Attributes
    ----------
    method : "independence" (BIC*-guided, anytime) or "sequential" (every set by size)
    score, ess : a registered structure score (:func:`~bnsl_dist.scores.registry.score_names`)
        and BDeu's equivalent sample size
    max_indegree : largest parent set (None: no limit)
    seconds_per_variable, scores_per_variable : per-variable budget in wall seconds
        (``inf``: none) and/or exact scores (reproducible)
    candidate_limit : independence selection: best singletons kept as candidates
    max_open : independence selection: open-list bound (None: min(n³, 2²⁰))
    expand_dominated : independence selection: expand every scored set (the paper), or not
        those a subset one member smaller dominates (``False``: on a 500-variable
        BNGenerator network 97-99% of the paper's exact scores went to such supersets)
    path : a ready ``.jkl`` file instead (``{dataset}``, ``{split}`` are filled in)
    """

    method: Literal["independence", "sequential"] = Field(
        default="independence", description="Independence selection or sequential "
        "exploration.")
    score: StructureScore = Field(default="bic", description="Local score.")
    ess: float = Field(default=1.0, gt=0, le=MAX_ESS, description="BDeu equivalent sample "
                       "size.")
    max_indegree: int | None = Field(default=None, ge=0,
                                     description="Largest parent set (none: no limit).")
    seconds_per_variable: PositiveFloat | None = Field(
        default=None, description="Cache budget per variable in seconds (independence "
        "with no budget: 1).")
    scores_per_variable: PositiveInt | None = Field(
        default=None, description="Cache budget per variable in exact scores "
        "(reproducible).")
    candidate_limit: PositiveInt = Field(
        default=256, description="Independence selection: best singletons kept as "
        "candidate parents.")
    max_open: PositiveInt | None = Field(
        default=None, description="Independence selection: open-list bound "
        "(none: min(n^3, 2^20)).")
    expand_dominated: bool = Field(
        default=True, description="Independence selection: expand sets that a subset one "
        "member smaller dominates (the paper; false spends the budget elsewhere).")
    path: str | None = Field(default=None, description="A ready .jkl file instead.")

    @model_validator(mode="before")
    @classmethod
    def _default_budget(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("method", "independence") == "independence" \
                and data.get("seconds_per_variable") is None \
                and data.get("scores_per_variable") is None and data.get("path") is None:
            return {**data, "seconds_per_variable": DEFAULT_SECONDS}
        return data

    @property
    def seconds(self) -> float | None:
        """The time budget per variable in force (None: none)."""
        s = self.seconds_per_variable
        return None if s is None or math.isinf(s) else float(s)

