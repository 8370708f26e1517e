"""Build a parent-set cache from data: settings, the per-variable step, the serial driver.

One function, :func:`explore_batch`, explores a batch of variables; the serial
:func:`build_cache` calls it once for all variables, the Dask driver
(:mod:`bnsl_dist.orchestrate.explore`) once per task, and :func:`assemble_cache` turns
the results into a :class:`ParentSetCache` either way, so both give identical caches
(with a score budget or no budget; a time budget depends on the machine).

References
----------
Scanagatta, de Campos, Corani, Zaffalon. Learning Bayesian networks with thousands of
variables. NIPS 2015, §3. docs/ALGORITHMS.md §3.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bnsl_dist._spec import make
from bnsl_dist.cache import independence as _indep
from bnsl_dist.cache.independence import ExploreStats, explore_independence
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.parts import StoredBatches
from bnsl_dist.cache.sequential import explore_sequential
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.scores.registry import score_info, score_names

__all__ = [
    "BATCH_SECONDS",
    "BATCH_VARIABLES",
    "VariableResult",
    "as_spec",
    "build_cache",
    "explore_variable",
    "explore_batch",
    "assemble_cache",
    "resolve_variables",
    "stored_batches",
    "warm_up",
]

Family = tuple[tuple[int, ...], float]


def as_spec(spec: CacheSpec | None, settings: dict[str, Any]) -> CacheSpec:
    """``spec``, or the keyword settings validated into one (not both)."""
    if spec is None:
        return make(CacheSpec, settings)
    if settings:
        raise InvalidConfigError("give either a CacheSpec or keyword settings, not both")
    return spec


@dataclass(frozen=True, slots=True)
class VariableResult:
    """One variable's explored sets (best first, ∅ last), what it cost, and its entropy
    H_D(X_v) in nats (:meth:`LocalScorer.entropies`: made by the task that explored it,
    so the client assembling a distributed build need not)."""

    variable: int
    sets: list[Family]
    stats: ExploreStats
    entropy: float


_WARM = False


def warm_up() -> None:
    """Compile the kernels once per process, before any time budget starts."""
    global _WARM
    if not _WARM:
        _indep._warm_up()
        _WARM = True


def explore_variable(scorer_or_data: LocalScorer | CategoricalData, v: int, *,
                     settings: CacheSpec | None = None, **kwargs: Any) -> list[Family]:
    """Explore the parent sets of variable ``v``.

    Parameters
    ----------
    scorer_or_data : LocalScorer or CategoricalData
        A scorer (its score and ESS are used), or data (scored with the settings'
        score and ESS).
    v : int
        The variable's index.
    settings : CacheSpec, optional
        Or the same fields as keyword arguments (``method``, ``max_indegree``, ...).

    Returns
    -------
    list of (parents, score)
        Dominance-pruned, best first, ∅ last.
    """
    return _explore_one(scorer_or_data, v, settings, kwargs).sets


def _explore_one(scorer_or_data: LocalScorer | CategoricalData, v: int,
                 settings: CacheSpec | None, kwargs: dict[str, Any],
                 seconds: float | None = None) -> VariableResult:
    """``seconds``: this variable's time, when shorter than the settings' (a deadline's
    share)."""
    settings = as_spec(settings, kwargs)
    if seconds is None or (settings.seconds is not None and settings.seconds < seconds):
        seconds = settings.seconds
    if isinstance(scorer_or_data, LocalScorer):
        scorer = scorer_or_data
        if not score_info(scorer.score_name).structure:
            raise InvalidConfigError(f"exploration needs a structure score "
                                     f"({', '.join(score_names(structure=True))}), got "
                                     f"{scorer.score_name!r}")
    else:
        scorer = LocalScorer(scorer_or_data, settings.score, settings.ess)
    if not (isinstance(v, (int, np.integer)) and 0 <= v < scorer.n_vars):
        raise InvalidConfigError(f"variable index {v!r} out of range 0..{scorer.n_vars - 1}")
    warm_up()
    if settings.method == "sequential":
        sets, stats = explore_sequential(scorer, int(v), max_indegree=settings.max_indegree,
                                         seconds=seconds,
                                         max_scores=settings.scores_per_variable)
    else:
        sets, stats = explore_independence(scorer, int(v), max_indegree=settings.max_indegree,
                                           seconds=seconds,
                                           max_scores=settings.scores_per_variable,
                                           candidate_limit=settings.candidate_limit,
                                           max_open=settings.max_open,
                                           expand_dominated=settings.expand_dominated)
    return VariableResult(int(v), sets, stats, float(scorer.entropies([v])[0]))


def explore_batch(data: CategoricalData, variables: Sequence[int], settings: CacheSpec,
                  on_done: Callable[[VariableResult], None] | None = None, *,
                  deadline: float | None = None, cutoff: float | None = None
                  ) -> list[VariableResult]:
    """Explore several variables with one scorer (the unit of work of every driver).

    ``deadline`` (a ``time.time()``): the variables share the time left until then, each
    an equal share of what is still left when it starts (so time one does not use, its
    open list run empty, goes to the next ones), never more than the settings' seconds;
    a variable reached after it still gets ∅ and every singleton scored. ``cutoff`` (a
    ``time.time()``, a hard limit): a variable reached after it gets ∅ alone. A time-limited
    run (``learn --time-limit``) gives both; its cache is then the machine's.
    """
    scorer = LocalScorer(data, settings.score, settings.ess)
    out = []
    m = len(variables)
    for j, v in enumerate(variables):
        now = time.time()
        if cutoff is not None and now >= cutoff:
            if not (isinstance(v, (int, np.integer)) and 0 <= v < scorer.n_vars):
                raise InvalidConfigError(f"variable index {v!r} out of range "
                                         f"0..{scorer.n_vars - 1}")
            res = VariableResult(int(v), [((), scorer.score(int(v), ()))],
                                 ExploreStats(0, 0.0, stopped_by="deadline"),
                                 float(scorer.entropies([int(v)])[0]))
        else:
            share = None if deadline is None else max(0.0, deadline - now) / (m - j)
            res = _explore_one(scorer, int(v), settings, {}, share)
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
                   settings: CacheSpec, variables: Sequence[int],
                   data_hash: str | None = None) -> ParentSetCache:
    """The cache of explored variables; the others get only ∅ (scored exactly).

    ``meta`` records the settings, N, the data's content hash (``data_hash`` when the
    caller has it: hashing 10,000 variables x 5,000 rows takes 0.2 s) and per-variable
    stats (exact scores, seconds). The variables' entropies are those the results bring
    (made where they were explored), the others' computed here.
    """
    by_var = {r.variable: r for r in results}
    missing = [v for v in variables if v not in by_var]
    if missing:
        raise InvalidConfigError(f"no result for variables {missing[:5]}")
    scorer = LocalScorer(data, settings.score, settings.ess)
    lists: list[list[Family]] = []
    entropies = np.empty(data.n_vars)
    for v in range(data.n_vars):
        res = by_var.get(v)
        if res is None:  # not explored: ∅ only
            lists.append([((), scorer.score(v, ()))])
            entropies[v] = scorer.entropies([v])[0]
        else:
            lists.append(res.sets)
            entropies[v] = res.entropy
    meta: dict[str, Any] = {**settings.json_dict(), "n_samples": data.n_samples,
                            "n_vars": data.n_vars, "data_hash": data_hash or data.content_hash()}
    meta["seconds_in_force"] = settings.seconds
    if len(variables) != data.n_vars:
        meta["variables"] = [int(v) for v in variables]
    meta["stats"] = {
        "variables": [int(v) for v in variables],
        "exact_scores": [by_var[v].stats.exact_scores for v in variables],
        "seconds": [round(by_var[v].stats.seconds, 6) for v in variables],
        "stopped_by": [by_var[v].stats.stopped_by for v in variables],
    }
    return ParentSetCache.from_lists(lists, names=data.names, arities=data.arities, meta=meta,
                                     entropies=entropies)


#: A resumable build (:func:`build_cache` with ``stored``) stores a batch of about this
#: many seconds of exploration (a seconds budget per variable), else of
#: :data:`BATCH_VARIABLES` variables: what a cut-off build can lose.
BATCH_SECONDS = 30.0
BATCH_VARIABLES = 32


def stored_batches(variables: Sequence[int], spec: CacheSpec) -> list[list[int]]:
    """The batches a resumable build explores and stores ``variables`` in."""
    size = BATCH_VARIABLES if not spec.seconds else max(1, int(BATCH_SECONDS // spec.seconds))
    return [list(variables[i:i + size]) for i in range(0, len(variables), size)]


def _explore_stored(data: CategoricalData, todo: Sequence[int], cfg: CacheSpec,
                    on_done: Callable[[VariableResult], None] | None,
                    stored: StoredBatches | None, stop_at: float | None
                    ) -> tuple[list[VariableResult], float]:
    """The results of ``todo``: those ``stored`` holds, the others explored batch by
    batch, each stored as it ends; no batch starts that would not end by ``stop_at``
    (a ``time.time()``) at the settings' seconds per variable (else the mean of those
    explored here): :class:`~bnsl_dist.cache.parts.BuildStopped`. Also the seconds the
    stored results took when they were explored."""
    from bnsl_dist.cache.parts import BuildStopped

    have = {} if stored is None else stored.load()
    kept = [have[v] for v in todo if v in have]
    for r in kept:
        if on_done is not None:
            on_done(r)
    out = list(kept)
    fresh: list[VariableResult] = []
    batches = stored_batches([v for v in todo if v not in have], cfg)
    for i, batch in enumerate(batches):
        per = cfg.seconds or (sum(r.stats.seconds for r in fresh) / len(fresh) if fresh
                              else 0.0)
        if stop_at is not None and time.time() + per * len(batch) > stop_at:
            left = sum(len(b) for b in batches[i:])
            raise BuildStopped(f"cache build stopped for the stop time with {left} of "
                               f"{len(todo)} variables left ({len(out)} stored)")
        res = explore_batch(data, batch, cfg, on_done)
        if stored is not None:
            stored.save(res)
        fresh.extend(res)
        out.extend(res)
    return out, sum(r.stats.seconds for r in kept)


def build_cache(data: CategoricalData, spec: CacheSpec | None = None, *,
                variables: Sequence[int | str] | None = None, progress: bool = False,
                deadline: float | None = None, cutoff: float | None = None,
                on_done: Callable[[VariableResult], None] | None = None,
                stored: StoredBatches | None = None, stop_at: float | None = None,
                **settings: Any) -> ParentSetCache:
    """Identify candidate parent sets of every variable and score them (serially).

    Parameters
    ----------
    data : CategoricalData
        Complete data.
    spec : CacheSpec, optional
        The settings (method, score, ess, max_indegree, per-variable budget in seconds
        and/or exact scores, candidate_limit, max_open); or give them as keywords
        (``**settings``), not both. Independence selection with no budget runs 1 s per
        variable (``math.inf`` seconds: no limit); sequential exploration with none is
        complete.
    variables : sequence of int or str, optional
        Explore only these (the others get only ∅).
    progress : bool
        Show a progress bar (rich) on stderr.
    deadline, cutoff : float, optional
        A time-limited build (``time.time()`` values, :func:`explore_batch`).
    on_done : callable, optional
        Called with each variable's result as it is explored.
    stored : StoredBatches, optional
        A resumable build: the variables it holds are not explored again, the others are
        explored in batches (:func:`stored_batches`), each stored as it ends
        (:mod:`bnsl_dist.cache.parts`). The cache is the one an uninterrupted build
        makes; ``meta["remote_seconds"]`` is the seconds the stored variables took.
    stop_at : float, optional
        A ``time.time()``: no batch starts that would not end by then (at the seconds
        per variable of ``spec``, else the mean so far), with or without ``stored``.

    Returns
    -------
    ParentSetCache
        Best first, ∅ last; ``meta`` holds the settings, N and per-variable stats.

    Raises
    ------
    InvalidConfigError
        A bad setting, or ``stored`` / ``stop_at`` with a time-limited build.
    DataError
        Data with missing values.
    BuildStopped
        ``stop_at`` came before every batch ran (those that did are stored).

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
    cfg = as_spec(spec, settings)
    LocalScorer(data, cfg.score, cfg.ess)  # validates the data (no missing values)
    todo = resolve_variables(data, variables)
    resumable = stored is not None or stop_at is not None
    if resumable and (deadline is not None or cutoff is not None):
        raise InvalidConfigError("a time-limited build (deadline, cutoff) is not resumable")
    earlier = 0.0

    def explore(hear: Callable[[VariableResult], None] | None) -> list[VariableResult]:
        nonlocal earlier
        if not resumable:
            return explore_batch(data, todo, cfg, hear, deadline=deadline, cutoff=cutoff)
        found, earlier = _explore_stored(data, todo, cfg, hear, stored, stop_at)
        return found

    if not progress:
        results = explore(on_done)
    else:
        from rich.progress import Progress

        with Progress(transient=True) as bar:
            task = bar.add_task(f"{cfg.method} selection", total=len(todo))

            def done(r: VariableResult) -> None:
                bar.advance(task)
                if on_done is not None:
                    on_done(r)

            results = explore(done)
    cache = assemble_cache(data, results, cfg, todo)
    if earlier:
        cache.meta["remote_seconds"] = earlier
    return cache
