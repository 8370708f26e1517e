"""The best network within one total budget: cache, search and polishing in one call.

:func:`learn_within` takes data and a wall-clock limit and decides how to spend it:

1. **cache** — independence selection (docs/ALGORITHMS.md §3) variable by variable; each
   variable gets an equal share of the cache time still left, so time a variable does
   not use (its open list ran empty) goes to the next ones. By default sets dominated
   by a subset one member smaller are not expanded (``expand_dominated=False``, see
   :func:`~bnsl_dist.cache.independence.explore_independence`);
2. **search** — a cache optimizer (default ``DEFAULT_ALGORITHM``, the memetic search over
   orders of :mod:`~bnsl_dist.search.ordering.memetic`, docs/ALGORITHMS.md §4);
3. **polish** — tabu local search over DAGs scored from the data
   (:func:`~bnsl_dist.search.local.tabu_search`): one climb from the search's best DAG,
   one from the empty DAG, then restarts from the better end. It reaches families the
   cache does not hold.

Each stage gets ``shares[k] / sum(shares[k:])`` of the time left when it starts, so a
stage that finishes early hands its time on. An exact-score / iteration form
(``time_limit=None``) makes a run reproducible on any machine.

The cache stage is :func:`explore_within` over every variable; given a ``cache``,
:func:`learn_within` runs the search and polish stages alone. So several seeds, or several
workers (:mod:`bnsl_dist.orchestrate.within`: each explores a slice of the variables),
share one cache instead of each building its own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bnsl_dist._rng import as_rng
from bnsl_dist.cache.independence import explore_independence
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.scores.registry import score_names
from bnsl_dist.search.base import (
    DEFAULT_ALGORITHM,
    AnytimeTrace,
    Budget,
    Incumbent,
    make_optimizer,
)
from bnsl_dist.search.local import cache_candidates, tabu_search
from bnsl_dist.search.warmup import AlgorithmSpec, algorithm_spec, compile_clock, warm_up

__all__ = ["learn_within", "explore_within", "cache_from_lists", "cache_share",
           "stage_algorithms", "LearnResult", "Progress"]

STAGES = ("cache", "search", "polish")
#: Relative shares of the time of the cache, search and polish stages.
DEFAULT_SHARES = (0.2, 0.2, 0.6)
#: ``polish_candidates="auto"`` lets every variable be a candidate parent while the
#: first scoring of all moves (about n² N row visits) stays under this.
_ALL_CANDIDATES_WORK = 2e9


@dataclass(frozen=True, slots=True)
class Progress:
    """What :func:`learn_within` is doing (passed to ``on_progress``)."""

    stage: str
    done: int  # variables explored (cache) or incumbents found (search, polish)
    total: int  # variables to explore (cache); 0 otherwise
    best_score: float | None
    elapsed: float
    time_left: float | None


@dataclass
class LearnResult:
    """The outcome of :func:`learn_within`."""

    dag: DAG
    score: float
    trace: AnytimeTrace  # every incumbent, ``elapsed`` counted from the call
    cache: ParentSetCache
    seconds: dict[str, float] = field(default_factory=dict)  # per stage, and "total"
    exact_scores: int = 0  # exact family scores of the cache stage
    compile_seconds: float = 0.0  # compiling numba kernels: in "total", not in the limit


def _check_shares(shares: Sequence[float]) -> tuple[float, float, float]:
    if len(shares) != 3 or not all(isinstance(s, (int, float)) and math.isfinite(s) and s > 0
                                   for s in shares):
        raise InvalidConfigError(f"shares must be three positive numbers (cache, search, "
                                 f"polish), got {list(shares)!r}")
    return float(shares[0]), float(shares[1]), float(shares[2])


def stage_algorithms(search: str = DEFAULT_ALGORITHM,
                     search_params: Mapping[str, Any] | None = None,
                     polish: bool = True) -> list[AlgorithmSpec]:
    """The optimizers whose kernels the search and polish stages run (to warm them)."""
    return [algorithm_spec(search, dict(search_params or {})),
            *([algorithm_spec("tabu-data", {"start": search, "start_iterations": 2})]
              if polish else [])]


def _fraction(sh: tuple[float, float, float], k: int, polish: bool) -> float:
    """Stage ``k``'s fraction of the time left when it starts (the polish's share left
    out without polishing)."""
    return sh[k] / sum(sh[k:] if polish else sh[k:2])


def cache_share(shares: Sequence[float] | None = None, polish: bool = True) -> float:
    """The cache stage's fraction of a whole run's time (``shares`` as in
    :func:`learn_within`; without polishing its share is left out)."""
    return _fraction(_check_shares(DEFAULT_SHARES if shares is None else shares), 0, polish)


def _positive_int(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))
                              or value < 1):
        raise InvalidConfigError(f"{name} must be an integer >= 1, got {value!r}")


def explore_within(scorer: LocalScorer, variables: Sequence[int], seconds: float | None, *,
                   cutoff: float | None = None, max_indegree: int | None = None,
                   scores_per_variable: int | None = None, candidate_limit: int = 256,
                   expand_dominated: bool = False,
                   on_variable: Callable[[int], None] | None = None
                   ) -> tuple[list[list[tuple[tuple[int, ...], float]]], int]:
    """Independence selection for ``variables``, one after the other, within ``seconds``.

    Each variable gets an equal share of the time still left, so time one does not use
    (its open list ran empty) goes to the next ones. A variable reached after
    ``seconds`` still gets ∅ and every singleton (always scored), one reached after
    ``cutoff`` seconds (a hard limit, default none) only ∅. ``scores_per_variable``
    caps each variable's exact scores (with ``seconds=None`` it alone bounds the run,
    which is then reproducible). ``on_variable(i)`` is called after the i-th variable
    explored (1-based).

    Returns the (parent set, score) lists, one per variable in ``variables``' order, and
    the number of exact scores computed.
    """
    start = time.perf_counter()
    end = None if seconds is None else start + max(0.0, float(seconds))
    hard = None if cutoff is None else start + max(0.0, float(cutoff))
    lists: list[list[tuple[tuple[int, ...], float]]] = []
    exact = 0
    m = len(variables)
    for j, v in enumerate(variables):
        now = time.perf_counter()
        if hard is not None and now >= hard:
            lists.append([((), scorer.score(int(v), ()))])
            continue
        per_var = None if end is None else max(0.0, end - now) / (m - j)
        sets, st = explore_independence(
            scorer, int(v), max_indegree=max_indegree, seconds=per_var,
            max_scores=scores_per_variable, candidate_limit=candidate_limit,
            expand_dominated=expand_dominated)
        lists.append(sets)
        exact += st.exact_scores
        if on_variable is not None:
            on_variable(j + 1)
    return lists, exact


def cache_from_lists(data: CategoricalData,
                     lists: Sequence[Sequence[tuple[tuple[int, ...], float]]], score: str,
                     ess: float, exact_scores: int) -> ParentSetCache:
    """The cache of :func:`explore_within`'s lists over all of ``data``'s variables."""
    return ParentSetCache.from_lists(lists, names=data.names, arities=data.arities,
                                     meta={"score": score, "ess": ess,
                                           "n_samples": data.n_samples,
                                           "exact_scores": int(exact_scores)})


def learn_within(data: CategoricalData, time_limit: float | None = None,
                 rng: np.random.Generator | int | None = None, *, score: str = "bic",
                 ess: float = 1.0, max_indegree: int | None = None,
                 scores_per_variable: int | None = None, search_iterations: int | None = None,
                 polish_iterations: int | None = None,
                 shares: Sequence[float] = DEFAULT_SHARES, search: str = DEFAULT_ALGORITHM,
                 search_params: Mapping[str, Any] | None = None, polish: bool = True,
                 polish_candidates: str = "auto", polish_from: str = "both",
                 candidate_limit: int = 256,
                 expand_dominated: bool = False, cache: ParentSetCache | None = None,
                 on_progress: Callable[[Progress], None] | None = None) -> LearnResult:
    """Learn a DAG from ``data`` within ``time_limit`` seconds in all (cache included).

    Parameters
    ----------
    data : CategoricalData
        Complete data.
    time_limit : float, optional
        Wall-clock seconds for the whole run, from this call; time spent compiling numba
        kernels (a fresh environment: tens of seconds, ``compile_seconds`` of the result)
        comes on top, so that the limit buys the same search. Without it, the run is
        bounded by ``scores_per_variable``, ``search_iterations`` and
        ``polish_iterations`` (all three required) and is reproducible.
    rng : Generator, int or None
        Randomness (search and polishing use independent children of it).
    score, ess : optional
        Local score ("bic" or "bdeu") and BDeu's equivalent sample size.
    max_indegree : int, optional
        Largest parent set (cache and polishing).
    scores_per_variable, search_iterations, polish_iterations : int, optional
        Exact scores per variable in the cache stage; the search's iterations (orders);
        climbs of the polishing run (after the first climb from each start when
        ``polish_from="both"``). With ``time_limit`` they are extra caps.
    shares : three positive floats
        Relative shares of the time of the cache, search and polish stages.
    search, search_params : optional
        The registered cache optimizer and its hyper-parameters.
    polish : bool
        Run the data-scored tabu local search after the search.
    polish_from : {"both", "search", "empty"}
        Where the local search starts: the search's best DAG, the empty DAG, or
        (default) one climb from each, then restarts from the better end. Measured: on
        alarm (N = 5,000) the search's DAG is the better start; on a 500-variable
        BNGenerator network, whose cache is thin, the empty DAG is (its climb ends about
        20,000 nats higher).
    polish_candidates : {"auto", "all", "cache"}
        Candidate parents of the local search: every variable, the variables of the
        cached sets (:func:`~bnsl_dist.search.local.cache_candidates`), or "all" while
        n² N ≤ 2·10⁹ and "cache" above (a rule on the data's shape only).
    candidate_limit : int
        Independence selection's candidate parents (the best singletons).
    expand_dominated : bool
        Independence selection expands every scored set, as the paper (True), or not
        the sets a subset one member smaller dominates (False, default here).
    cache : ParentSetCache, optional
        A cache of ``data`` (same variables) already built, e.g. once for several seeds:
        the cache stage and its share are skipped (``scores_per_variable`` is then not
        needed, nor used).
    on_progress : callable, optional
        Called with a :class:`Progress` after each explored variable and each incumbent
        (its time counts against the budget: keep it cheap).

    Returns
    -------
    LearnResult
        The best DAG, its score, the trace of incumbents, the cache and stage times.

    Raises
    ------
    InvalidConfigError
        A bad setting, or no limit at all.

    Notes
    -----
    The cache stage always scores ∅ and every singleton of a variable it starts, and a
    variable reached after the whole budget is spent gets only ∅: with n variables and N
    rows the floor of a run is about n² N row visits.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 400)
    >>> b = a ^ (rng.random(400) < 0.1)
    >>> d = CategoricalData.from_array(np.column_stack([a, b, b ^ (rng.random(400) < 0.1)]))
    >>> res = learn_within(d, None, 0, scores_per_variable=50, search_iterations=20,
    ...                    polish_iterations=2)
    >>> res.dag.n_arcs
    2
    """
    t0 = time.perf_counter()
    if time_limit is not None:
        if not (isinstance(time_limit, (int, float)) and time_limit > 0
                and math.isfinite(time_limit)):
            raise InvalidConfigError(f"time_limit must be a positive number of seconds, "
                                     f"got {time_limit!r}")
    elif (cache is None and scores_per_variable is None) or search_iterations is None or (
            polish and polish_iterations is None):
        raise InvalidConfigError("without time_limit give scores_per_variable, "
                                 "search_iterations and polish_iterations (a reproducible run)")
    for nm, val in (("scores_per_variable", scores_per_variable),
                    ("search_iterations", search_iterations),
                    ("polish_iterations", polish_iterations),
                    ("candidate_limit", candidate_limit)):
        _positive_int(nm, val)
    sh = _check_shares(shares)
    if polish_from not in ("search", "empty", "both"):
        raise InvalidConfigError(f"polish_from must be search, empty or both, got "
                                 f"{polish_from!r}")
    if polish_candidates not in ("auto", "all", "cache"):
        raise InvalidConfigError(f"polish_candidates must be auto, all or cache, got "
                                 f"{polish_candidates!r}")
    if score not in score_names(structure=True):
        raise InvalidConfigError(f"score must be one of {', '.join(score_names(structure=True))}"
                                 f", got {score!r}")
    if cache is not None and tuple(cache.names) != tuple(data.names):
        raise InvalidConfigError(f"the cache's variables ({cache.n_vars}) are not the "
                                 f"data's ({data.n_vars}): names differ")
    optimizer = make_optimizer(search, **dict(search_params or {}))
    gen = as_rng(rng)
    g_search, g_polish = gen.spawn(2)
    deadline = None if time_limit is None else t0 + float(time_limit)

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.perf_counter())

    def stage_seconds(k: int) -> float | None:
        rest = left()
        return None if rest is None else rest * _fraction(sh, k, polish)

    def report(stage: str, done: int, total: int, best: float | None) -> None:
        if on_progress is not None:
            on_progress(Progress(stage, done, total, best, time.perf_counter() - t0, left()))

    seconds: dict[str, float] = {}
    # the kernels of every stage, before the time is split (a fresh process loads them
    # in about half a second; inside a stage it would overrun that stage's share); time
    # spent compiling them (an empty numba cache: tens of seconds) is not counted
    with compile_clock() as compiled:
        warm_up(cache_methods=("independence",) if cache is None else (),
                algorithms=stage_algorithms(search, search_params, polish))
    if deadline is not None:
        deadline += compiled.seconds
    n = data.n_vars
    exact = 0
    if cache is None:  # ---- cache
        t_stage = time.perf_counter()
        lists, exact = explore_within(
            LocalScorer(data, score, ess), range(n), stage_seconds(0), cutoff=left(),
            max_indegree=max_indegree, scores_per_variable=scores_per_variable,
            candidate_limit=candidate_limit, expand_dominated=expand_dominated,
            on_variable=lambda i: report("cache", i, n, None))
        cache = cache_from_lists(data, lists, score, ess, exact)
        seconds["cache"] = time.perf_counter() - t_stage
    # ---- search
    trace = AnytimeTrace()
    t_stage = time.perf_counter()
    s_sec = stage_seconds(1)
    sb = Budget(seconds=max(1e-3, s_sec) if s_sec is not None else None,
                max_iterations=search_iterations)
    offset = t_stage - t0
    for inc in optimizer.run(cache, sb, g_search):
        trace.append(Incumbent(offset + inc.elapsed, inc.score, inc.dag,
                               iterations=inc.iterations, info={"stage": "search"}))
        report("search", len(trace.incumbents), 0, inc.score)
    seconds["search"] = time.perf_counter() - t_stage
    best = trace.best
    if best is None:  # a budget too short for one order: the best empty-set DAG
        empty = DAG.empty(n, data.names)
        best = Incumbent(time.perf_counter() - t0, cache.score_dag(empty), empty,
                         info={"stage": "search"})
        trace.append(best)
    # ---- polish
    if polish:
        t_stage = time.perf_counter()
        if polish_candidates == "cache" or (polish_candidates == "auto"
                                            and float(n) ** 2 * data.n_samples
                                            > _ALL_CANDIDATES_WORK):
            cand: list[list[int]] | None = cache_candidates(cache)
        else:
            cand = None
        floor = best.score
        g_runs = g_polish.spawn(3)

        def climb(start: DAG, label: str, iterations: int | None,
                  g: np.random.Generator) -> Incumbent | None:
            nonlocal floor
            rest = left()
            if rest is not None and rest <= 0:
                return None
            offset = time.perf_counter() - t0
            last = None
            for inc in tabu_search(data, start, Budget(seconds=None if rest is None else
                                                       max(1e-3, rest),
                                                       max_iterations=iterations),
                                   g, score=score, ess=ess, max_indegree=max_indegree,
                                   candidates=cand):
                last = inc
                if inc.score > floor:
                    floor = inc.score
                    trace.append(Incumbent(offset + inc.elapsed, inc.score, inc.dag,
                                           iterations=inc.iterations,
                                           info={"stage": "polish", "from": label,
                                                 **inc.info}))
                    report("polish", len(trace.incumbents), 0, inc.score)
            return last

        empty_dag = DAG.empty(n, data.names)
        if polish_from == "both":  # one climb from each start, restarts from the better end
            ends = [climb(best.dag, "search", 1, g_runs[0]), climb(empty_dag, "empty", 1,
                                                                   g_runs[1])]
            done = [e for e in ends if e is not None]
            if done:
                top = max(done, key=lambda e: e.score)
                climb(top.dag, "search" if top is ends[0] else "empty", polish_iterations,
                      g_runs[2])
        else:
            climb(best.dag if polish_from == "search" else empty_dag, polish_from,
                  polish_iterations, g_runs[0])
        seconds["polish"] = time.perf_counter() - t_stage
    final = trace.best or best
    seconds["total"] = time.perf_counter() - t0
    trace.total_seconds = seconds["total"]
    return LearnResult(final.dag, final.score, trace, cache, seconds, exact, compiled.seconds)
