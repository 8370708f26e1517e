"""Build a parent-set cache from data: settings, the per-variable step, the serial driver.

One function, :func:`explore_batch`, explores a batch of variables; the serial
:func:`build_cache` calls it once for all variables, the Dask driver
(:mod:`bnsl_dist.orchestrate.explore`) once per task, and :func:`assemble_cache` turns
the results into a :class:`ParentSetCache` either way, so both give identical caches
(with a score budget or no budget; a time budget depends on the machine).

References
----------
Scanagatta, de Campos, Corani, Zaffalon. Learning Bayesian networks with thousands of
variables. NIPS 2015, §3. ALGORITHMS.md §3.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from bnsl_dist._json import json_digest
from bnsl_dist.cache import independence as _indep
from bnsl_dist.cache.independence import ExploreStats, explore_independence
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.sequential import explore_sequential
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.scores.local import LocalScorer

__all__ = [
    "ExploreSettings",
    "VariableResult",
    "METHODS",
    "build_cache",
    "explore_variable",
    "explore_batch",
    "assemble_cache",
    "resolve_variables",
    "cache_key",
    "warm_up",
]

METHODS = ("independence", "sequential")
#: Seconds per variable of independence selection when no budget is given.
DEFAULT_SECONDS = 1.0
Family = tuple[tuple[int, ...], float]


@dataclass(frozen=True, slots=True)
class ExploreSettings:
    """Validated settings of a cache build (see :func:`build_cache` for their meaning)."""

    method: str = "independence"
    score: str = "bic"
    ess: float = 1.0
    max_indegree: int | None = None
    seconds_per_variable: float | None = None
    scores_per_variable: int | None = None
    candidate_limit: int = 256
    max_open: int | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InvalidConfigError(f"method: unknown {self.method!r}; choose from "
                                     f"{', '.join(METHODS)}")
        if self.score not in ("bic", "bdeu"):
            raise InvalidConfigError(f"score: unknown {self.score!r}; choose bic or bdeu")
        if not (isinstance(self.ess, (int, float)) and self.ess > 0 and math.isfinite(self.ess)):
            raise InvalidConfigError(f"ess must be a positive number, got {self.ess!r}")
        _check_int("max_indegree", self.max_indegree, 0)
        _check_int("scores_per_variable", self.scores_per_variable, 1)
        _check_int("candidate_limit", self.candidate_limit, 1)
        _check_int("max_open", self.max_open, 1)
        s = self.seconds_per_variable
        if s is not None and not (isinstance(s, (int, float)) and s > 0):
            raise InvalidConfigError(f"seconds_per_variable must be positive, got {s!r}")

    @property
    def seconds(self) -> float | None:
        """The time budget in force (independence: 1 s when no budget is given)."""
        s = self.seconds_per_variable
        if s is not None:
            return None if math.isinf(s) else float(s)
        if self.method == "independence" and self.scores_per_variable is None:
            return DEFAULT_SECONDS
        return None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        if d["seconds_per_variable"] is not None and math.isinf(d["seconds_per_variable"]):
            d["seconds_per_variable"] = "inf"
        return d


def _check_int(name: str, value: Any, low: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise InvalidConfigError(f"{name} must be an integer >= {low}, got {value!r}")


@dataclass(frozen=True, slots=True)
class VariableResult:
    """One variable's explored sets (best first, ∅ last) and what it cost."""

    variable: int
    sets: list[Family]
    stats: ExploreStats


_WARM = False


def warm_up() -> None:
    """Compile the kernels once per process, before any time budget starts."""
    global _WARM
    if not _WARM:
        _indep._warm_up()
        _WARM = True


def explore_variable(scorer_or_data: LocalScorer | CategoricalData, v: int, *,
                     settings: ExploreSettings | None = None, **kwargs: Any) -> list[Family]:
    """Explore the parent sets of variable ``v``.

    Parameters
    ----------
    scorer_or_data : LocalScorer or CategoricalData
        A scorer (its score and ESS are used), or data (scored with the settings'
        score and ESS).
    v : int
        The variable's index.
    settings : ExploreSettings, optional
        Or the same fields as keyword arguments (``method``, ``max_indegree``, ...).

    Returns
    -------
    list of (parents, score)
        Dominance-pruned, best first, ∅ last.
    """
    return _explore_one(scorer_or_data, v, settings, kwargs).sets


def _explore_one(scorer_or_data: LocalScorer | CategoricalData, v: int,
                 settings: ExploreSettings | None, kwargs: dict[str, Any]) -> VariableResult:
    if settings is None:
        settings = ExploreSettings(**kwargs)
    elif kwargs:
        raise InvalidConfigError("give either settings or keyword arguments, not both")
    if isinstance(scorer_or_data, LocalScorer):
        scorer = scorer_or_data
        if scorer.score_name not in ("bic", "bdeu"):
            raise InvalidConfigError(f"exploration needs a bic or bdeu scorer, got "
                                     f"{scorer.score_name!r}")
    else:
        scorer = LocalScorer(scorer_or_data, settings.score, settings.ess)
    if not (isinstance(v, (int, np.integer)) and 0 <= v < scorer.n_vars):
        raise InvalidConfigError(f"variable index {v!r} out of range 0..{scorer.n_vars - 1}")
    warm_up()
    if settings.method == "sequential":
        sets, stats = explore_sequential(scorer, int(v), max_indegree=settings.max_indegree,
                                         seconds=settings.seconds,
                                         max_scores=settings.scores_per_variable)
    else:
        sets, stats = explore_independence(scorer, int(v), max_indegree=settings.max_indegree,
                                           seconds=settings.seconds,
                                           max_scores=settings.scores_per_variable,
                                           candidate_limit=settings.candidate_limit,
                                           max_open=settings.max_open)
    return VariableResult(int(v), sets, stats)


def explore_batch(data: CategoricalData, variables: Sequence[int], settings: ExploreSettings,
                  on_done: Callable[[VariableResult], None] | None = None
                  ) -> list[VariableResult]:
    """Explore several variables with one scorer (the unit of work of every driver)."""
    scorer = LocalScorer(data, settings.score, settings.ess)
    out = []
    for v in variables:
        res = _explore_one(scorer, int(v), settings, {})
        out.append(res)
        if on_done is not None:
            on_done(res)
    return out


def resolve_variables(data: CategoricalData, variables: Sequence[int | str] | None) -> list[int]:
    """Indices of the variables to explore (all by default), validated."""
    if variables is None:
        return list(range(data.n_vars))
    out = []
    for v in variables:
        try:
            out.append(data.index_of(v))
        except DataError as exc:
            raise InvalidConfigError(f"variables: {exc}") from None
    if len(set(out)) != len(out):
        raise InvalidConfigError("variables: a variable is listed twice")
    return out


def assemble_cache(data: CategoricalData, results: Sequence[VariableResult],
                   settings: ExploreSettings, variables: Sequence[int]) -> ParentSetCache:
    """The cache of explored variables; the others get only ∅ (scored exactly).

    ``meta`` records the settings, N, the data's content hash and per-variable stats
    (exact scores, seconds).
    """
    by_var = {r.variable: r for r in results}
    missing = [v for v in variables if v not in by_var]
    if missing:
        raise InvalidConfigError(f"no result for variables {missing[:5]}")
    scorer: LocalScorer | None = None
    lists: list[list[Family]] = []
    for v in range(data.n_vars):
        if v in by_var:
            lists.append(by_var[v].sets)
        else:
            if scorer is None:
                scorer = LocalScorer(data, settings.score, settings.ess)
            lists.append([((), scorer.score(v, ()))])
    meta: dict[str, Any] = {**settings.to_dict(), "n_samples": data.n_samples,
                            "n_vars": data.n_vars, "data_hash": data.content_hash()}
    meta["seconds_in_force"] = settings.seconds
    if len(variables) != data.n_vars:
        meta["variables"] = [int(v) for v in variables]
    meta["stats"] = {
        "variables": [int(v) for v in variables],
        "exact_scores": [by_var[v].stats.exact_scores for v in variables],
        "seconds": [round(by_var[v].stats.seconds, 6) for v in variables],
        "stopped_by": [by_var[v].stats.stopped_by for v in variables],
    }
    return ParentSetCache.from_lists(lists, names=data.names, arities=data.arities, meta=meta)


def cache_key(data_hash: str, settings: ExploreSettings, variables: Sequence[int]) -> str:
    """A file-name-safe key of (data, settings, variables): where a built cache is kept."""
    from bnsl_dist import __version__

    payload = {"data": data_hash, "settings": settings.to_dict(),
               "variables": [int(v) for v in variables], "version": __version__, "format": 1}
    return json_digest(payload, 32)


def build_cache(data: CategoricalData, *, method: str = "independence", score: str = "bic",
                ess: float = 1.0, max_indegree: int | None = None,
                seconds_per_variable: float | None = None,
                scores_per_variable: int | None = None, candidate_limit: int = 256,
                max_open: int | None = None, variables: Sequence[int | str] | None = None,
                progress: bool = False) -> ParentSetCache:
    """Identify candidate parent sets of every variable and score them (serially).

    Parameters
    ----------
    data : CategoricalData
        Complete data.
    method : {"independence", "sequential"}
        Independence selection (approximate, BIC*-guided, anytime) or sequential
        exploration (every set by size, lossless pruning).
    score : {"bic", "bdeu"}
        Local score; ``ess`` is BDeu's equivalent sample size.
    max_indegree : int, optional
        Largest parent set (default: no limit).
    seconds_per_variable, scores_per_variable : optional
        Per-variable budget: wall seconds and/or number of exact scores (reproducible).
        Independence selection with neither runs 1 s per variable (``math.inf`` seconds
        means no limit); sequential exploration with neither is complete.
    candidate_limit : int
        Independence selection: candidate parents are the best ``candidate_limit``
        singletons (BLIP: 256).
    max_open : int, optional
        Independence selection: open-list bound (default min(n³, 2²⁰)).
    variables : sequence of int or str, optional
        Explore only these (the others get only ∅).
    progress : bool
        Show a progress bar (rich) on stderr.

    Returns
    -------
    ParentSetCache
        Best first, ∅ last; ``meta`` holds the settings, N and per-variable stats.

    Raises
    ------
    InvalidConfigError
        A bad setting.
    DataError
        Data with missing values.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> x = np.random.default_rng(0).integers(0, 2, size=(200, 3))
    >>> x[:, 2] = x[:, 0] ^ x[:, 1]
    >>> c = build_cache(CategoricalData.from_array(x), method="sequential")
    >>> c.sets_of(2)[0][0]
    (0, 1)

    References
    ----------
    Scanagatta et al., NIPS 2015, §3; de Campos & Ji, JMLR 2011, §4.
    """
    settings = ExploreSettings(method=method, score=score, ess=ess, max_indegree=max_indegree,
                               seconds_per_variable=seconds_per_variable,
                               scores_per_variable=scores_per_variable,
                               candidate_limit=candidate_limit, max_open=max_open)
    LocalScorer(data, score, ess)  # validates the data (no missing values)
    todo = resolve_variables(data, variables)
    if not progress:
        results = explore_batch(data, todo, settings)
    else:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"{settings.method} selection", total=len(todo))
            results = explore_batch(data, todo, settings,
                                    on_done=lambda _r: bar.advance(task))
    return assemble_cache(data, results, settings, todo)
