"""The time-limited task (``learn --time-limit``): search and polish within what the
cache stage left of one wall-clock limit.

A cell of this kind is (data, cache spec, :class:`WithinTask`, seed). The executor
(:func:`bnsl_dist.orchestrate.execute.execute`) builds its cache through the one route
of every cell (:func:`bnsl_dist.cache.build.explore_batch`, fanned out on Dask), in the
cache's share of the limit (``deadline``: each variable an equal share of the time still
left, so time one does not use goes to the next ones; one slice per worker thread on
Dask); then :func:`run` spends the rest on

1. **search** — a cache optimizer (default ``DEFAULT_ALGORITHM``, the memetic search over
   orders of :mod:`~bnsl_dist.search.ordering.memetic`, docs/ALGORITHMS.md §4);
2. **polish** — tabu local search over DAGs scored from the data
   (:func:`~bnsl_dist.search.local.tabu_search`): one climb from the search's best DAG,
   one from the empty DAG, then restarts from the better end. It reaches families the
   cache does not hold.

Each stage gets ``shares[k] / sum(shares[k:])`` of the time left when it starts, so a
stage that finishes early hands its time on. Without a limit the stages are bounded by
counts (the cache's exact scores per variable, ``search_iterations``,
``polish_iterations``) and the run is reproducible on any machine and any cluster.
:func:`learn_within` is the same run on data in memory, in this process.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from pydantic import Field, PositiveFloat, PositiveInt, field_validator, model_validator

from bnsl_dist._rng import as_rng
from bnsl_dist._spec import Spec, make
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.pipeline.tasks import register_task
from bnsl_dist.search.base import (
    DEFAULT_ALGORITHM,
    AnytimeTrace,
    Budget,
    Incumbent,
    make_optimizer,
    optimizer_info,
)
from bnsl_dist.search.local import cache_candidates, tabu_search
from bnsl_dist.search.spec import JSONValue
from bnsl_dist.search.warmup import AlgorithmSpec, algorithm_spec, compile_clock, warm_up

if TYPE_CHECKING:
    from bnsl_dist.pipeline.cell import Cell
    from bnsl_dist.pipeline.specs import DataRef

__all__ = ["WithinTask", "WithinResult", "Progress", "run", "learn_within", "cache_spec",
           "cache_share", "cache_deadline", "stage_algorithms", "merge", "check_cell",
           "within_cells", "build_cache_within",
           "DEFAULT_SHARES"]

#: Relative shares of the time of the cache, search and polish stages.
DEFAULT_SHARES = (0.2, 0.2, 0.6)
#: ``polish_candidates="auto"`` lets every variable be a candidate parent while the
#: first scoring of all moves (about n² N row visits) stays under this.
_ALL_CANDIDATES_WORK = 2e9


@dataclass(frozen=True, slots=True)
class Progress:
    """What a time-limited run is doing (passed to ``on_progress``)."""

    stage: str
    done: int  # variables explored (cache) or incumbents found (search, polish)
    total: int  # variables to explore (cache); 0 otherwise
    best_score: float | None
    elapsed: float
    time_left: float | None


@register_task
class WithinTask(Spec):
    """A time-limited learn: the limit and the stages' settings.

    Attributes
    ----------
    time_limit : wall-clock seconds of the whole run (cache included; compiling numba
        kernels is not counted). None: the stages are bounded by counts alone
        (``search_iterations``, ``polish_iterations`` and the cache's
        ``scores_per_variable``, all required), a reproducible run.
    algorithm, params : the cache optimizer of the search stage (one that needs neither
        a treewidth bound nor the data) and its parameters
    search_iterations, polish_iterations : the search's iterations; the polishing's climbs
        (after the first climb from each start when ``polish_from="both"``). With a time
        limit they are extra caps.
    polish : run the data-scored tabu local search after the search
    polish_from : where the local search starts: the search's best DAG, the empty DAG or
        (default) one climb from each, then restarts from the better end. Measured: on
        alarm (N = 5,000) the search's DAG is the better start; on a 500-variable
        BNGenerator network, whose cache is thin, the empty DAG is (its climb ends about
        20,000 nats higher).
    polish_candidates : candidate parents of the local search: every variable ("all"),
        the variables of the cached sets ("cache",
        :func:`~bnsl_dist.search.local.cache_candidates`), or "all" while n² N ≤ 2·10⁹ and
        "cache" above ("auto", a rule on the data's shape only)
    shares : relative shares of the time of the cache, search and polish stages
    """

    kind: Literal["within"] = "within"
    time_limit: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    algorithm: str = DEFAULT_ALGORITHM
    params: dict[str, JSONValue] = Field(default_factory=dict)
    search_iterations: PositiveInt | None = None
    polish: bool = True
    polish_iterations: PositiveInt | None = None
    polish_from: Literal["both", "search", "empty"] = "both"
    polish_candidates: Literal["auto", "all", "cache"] = "auto"
    shares: tuple[PositiveFloat, PositiveFloat, PositiveFloat] = DEFAULT_SHARES

    @field_validator("algorithm")
    @classmethod
    def _cache_optimizer(cls, v: str) -> str:
        try:
            info = optimizer_info(v)
        except InvalidConfigError as exc:
            raise ValueError(str(exc)) from None
        if info.takes_k or getattr(info.cls, "needs_data", False):
            raise ValueError(f"the search stage takes a cache optimizer; {v!r} is not one")
        return v

    @field_validator("shares")
    @classmethod
    def _finite(cls, v: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(math.isfinite(s) for s in v):
            raise ValueError(f"shares must be three positive numbers, got {list(v)}")
        return v

    @model_validator(mode="after")
    def _bounded(self) -> WithinTask:
        if self.time_limit is None and (self.search_iterations is None or (
                self.polish and self.polish_iterations is None)):
            raise ValueError("without time_limit give search_iterations and "
                             "polish_iterations (and the cache's scores_per_variable): "
                             "a reproducible run")
        make_optimizer(self.algorithm, **dict[str, Any](self.params))  # its parameters
        return self


@dataclass
class WithinResult:
    """One time-limited run: the best DAG and its score, every incumbent (``elapsed``
    counted from the run's start), the cache it searched and its size, the seconds per
    stage (and
    "total"), the cache stage's exact scores and the seconds spent compiling numba kernels
    (in "total", not in the limit)."""

    dag: DAG
    score: float
    trace: AnytimeTrace
    cache: ParentSetCache | None  # None where it came back from a worker (not sent back)
    n_sets: int = 0  # the cache's
    seconds: dict[str, float] = field(default_factory=dict)
    exact_scores: int = 0
    compile_seconds: float = 0.0


def _fraction(shares: Sequence[float], k: int, polish: bool) -> float:
    """Stage ``k``'s fraction of the time left when it starts (the polish's share left
    out without polishing)."""
    return shares[k] / sum(shares[k:] if polish else shares[k:2])


def cache_share(shares: Sequence[float] | None = None, polish: bool = True) -> float:
    """The cache stage's fraction of a whole run's time (without polishing its share is
    left out)."""
    sh = make(WithinTask, time_limit=1.0, shares=DEFAULT_SHARES if shares is None
              else tuple(shares), names={"shares": "shares"}).shares
    return _fraction(sh, 0, polish)


def cache_deadline(task: WithinTask, deadline: float, now: float | None = None) -> float:
    """When the cache stage ends (``time.time()``): its share of the time left until
    ``deadline``."""
    now = time.time() if now is None else now
    return now + max(0.0, deadline - now) * _fraction(task.shares, 0, task.polish)


def stage_algorithms(task: WithinTask) -> list[AlgorithmSpec]:
    """The optimizers whose kernels the search and polish stages run (to warm them)."""
    return [algorithm_spec(task.algorithm, dict(task.params)),
            *([algorithm_spec("tabu-data", {"start": task.algorithm, "start_iterations": 2})]
              if task.polish else [])]


def cache_spec(score: str = "bic", ess: float = 1.0, max_indegree: int | None = None,
               scores_per_variable: int | None = None, candidate_limit: int = 256,
               expand_dominated: bool = False) -> CacheSpec:
    """The cache of a time-limited run: independence selection bounded by the deadline
    and ``scores_per_variable`` alone (no seconds per variable); by default sets that a
    subset one member smaller dominates are not expanded."""
    return make(CacheSpec, method="independence", score=score, ess=ess,
                max_indegree=max_indegree, scores_per_variable=scores_per_variable,
                seconds_per_variable=math.inf, candidate_limit=candidate_limit,
                expand_dominated=expand_dominated)


def check_cell(cell: Cell) -> None:
    """A time-limited cell builds its cache (independence selection, no seconds per
    variable) from its data, without screening; without a limit the cache's exact scores
    bound it.

    Raises
    ------
    ValueError
        Any other cell of this kind (pydantic's validator reports it).
    """
    c = cell.cache
    if cell.screening is not None or c.path is not None or c.method != "independence" \
            or c.seconds is not None:
        raise ValueError("a time-limited cell builds an independence-selection cache "
                         "bounded by its deadline (no seconds per variable, no cache "
                         "file, no screening)")
    task = cell.task
    assert isinstance(task, WithinTask)
    if task.time_limit is None and c.scores_per_variable is None:
        raise ValueError("without time_limit give the cache's scores_per_variable "
                         "(a reproducible run)")


def run(task: WithinTask, data: CategoricalData, cache: ParentSetCache,
        rng: np.random.Generator, *, deadline: float | None = None,
        started: float | None = None,
        on_progress: Callable[[Progress], None] | None = None) -> WithinResult:
    """The search and polish stages on ``cache`` (of ``data``'s variables) until the
    absolute ``deadline`` (``time.time()``; None: the task's counts alone), each stage
    its share of the time left when it starts. ``started`` (default now): where the
    trace's ``elapsed`` counts from. ``on_progress`` hears each incumbent (its time
    counts against the limit: keep it cheap).

    Raises
    ------
    InvalidConfigError
        The cache's variables are not the data's.
    """
    t0 = time.time() if started is None else started
    if tuple(cache.names) != tuple(data.names):
        raise InvalidConfigError(f"the cache's variables ({cache.n_vars}) are not the "
                                 f"data's ({data.n_vars}): names differ")
    if task.time_limit is None:
        deadline = None
    score, ess = str(cache.meta.get("score", "bic")), float(cache.meta.get("ess", 1.0))
    max_indegree = cache.meta.get("max_indegree")
    optimizer = make_optimizer(task.algorithm, **dict[str, Any](task.params))
    g_search, g_polish = rng.spawn(2)

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.time())

    def stage_seconds(k: int) -> float | None:
        rest = left()
        return None if rest is None else rest * _fraction(task.shares, k, task.polish)

    def report(stage: str, best: float | None) -> None:
        if on_progress is not None:
            on_progress(Progress(stage, len(trace.incumbents), 0, best, time.time() - t0,
                                 left()))

    seconds: dict[str, float] = {}
    n = data.n_vars
    # ---- search
    trace = AnytimeTrace()
    t_stage = time.time()
    s_sec = stage_seconds(1)
    sb = Budget(seconds=max(1e-3, s_sec) if s_sec is not None else None,
                max_iterations=task.search_iterations)
    offset = t_stage - t0
    for inc in optimizer.run(cache, sb, g_search):
        trace.append(Incumbent(offset + inc.elapsed, inc.score, inc.dag,
                               iterations=inc.iterations, info={"stage": "search"}))
        report("search", inc.score)
    seconds["search"] = time.time() - t_stage
    best = trace.best
    if best is None:  # a budget too short for one order: the best empty-set DAG
        empty = DAG.empty(n, data.names)
        best = Incumbent(time.time() - t0, cache.score_dag(empty), empty,
                         info={"stage": "search"})
        trace.append(best)
    # ---- polish
    if task.polish:
        t_stage = time.time()
        if task.polish_candidates == "cache" or (task.polish_candidates == "auto"
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
            at = time.time() - t0
            last = None
            for inc in tabu_search(data, start, Budget(seconds=None if rest is None else
                                                       max(1e-3, rest),
                                                       max_iterations=iterations),
                                   g, score=score, ess=ess, max_indegree=max_indegree,
                                   candidates=cand):
                last = inc
                if inc.score > floor:
                    floor = inc.score
                    trace.append(Incumbent(at + inc.elapsed, inc.score, inc.dag,
                                           iterations=inc.iterations,
                                           info={"stage": "polish", "from": label,
                                                 **inc.info}))
                    report("polish", inc.score)
            return last

        empty_dag = DAG.empty(n, data.names)
        if task.polish_from == "both":  # one climb from each start, restarts from the better
            ends = [climb(best.dag, "search", 1, g_runs[0]),
                    climb(empty_dag, "empty", 1, g_runs[1])]
            done = [e for e in ends if e is not None]
            if done:
                top = max(done, key=lambda e: e.score)
                climb(top.dag, "search" if top is ends[0] else "empty",
                      task.polish_iterations, g_runs[2])
        else:
            climb(best.dag if task.polish_from == "search" else empty_dag, task.polish_from,
                  task.polish_iterations, g_runs[0])
        seconds["polish"] = time.time() - t_stage
    final = trace.best or best
    seconds["total"] = time.time() - t0
    trace.total_seconds = seconds["total"]
    return WithinResult(final.dag, final.score, trace, cache, cache.n_sets, seconds)


def build_cache_within(data: CategoricalData, spec: CacheSpec, task: WithinTask,
                       deadline: float | None,
                       on_progress: Callable[[Progress], None] | None = None,
                       started: float | None = None) -> ParentSetCache:
    """The cache stage in this process: every variable, in the cache's share of the time
    left until ``deadline`` (``time.time()``; past it a variable gets ∅ alone), through
    :func:`bnsl_dist.cache.build.build_cache`. ``on_progress`` hears each variable."""
    from bnsl_dist.cache.build import VariableResult, build_cache

    t0 = time.time() if started is None else started
    n = data.n_vars
    done = 0

    def report() -> None:
        if on_progress is not None:
            now = time.time()
            on_progress(Progress("cache", done, n, None, now - t0,
                                 None if deadline is None else max(0.0, deadline - now)))

    def explored(_r: VariableResult) -> None:
        nonlocal done
        done += 1
        report()

    report()  # the stage starts
    if deadline is None or task.time_limit is None:
        return build_cache(data, spec, on_done=explored)
    return build_cache(data, spec, deadline=cache_deadline(task, deadline), cutoff=deadline,
                       on_done=explored)


def learn_within(data: CategoricalData, time_limit: float | None = None,
                 rng: np.random.Generator | int | None = None, *, score: str = "bic",
                 ess: float = 1.0, max_indegree: int | None = None,
                 scores_per_variable: int | None = None, search_iterations: int | None = None,
                 polish_iterations: int | None = None,
                 shares: Sequence[float] = DEFAULT_SHARES, search: str = DEFAULT_ALGORITHM,
                 search_params: dict[str, Any] | None = None, polish: bool = True,
                 polish_candidates: str = "auto", polish_from: str = "both",
                 candidate_limit: int = 256, expand_dominated: bool = False,
                 cache: ParentSetCache | None = None,
                 on_progress: Callable[[Progress], None] | None = None) -> WithinResult:
    """Learn a DAG from ``data`` within ``time_limit`` seconds in all (cache included),
    in this process: the cache stage (:func:`build_cache_within`), then :func:`run`.

    ``time_limit``: wall-clock seconds for the whole run, from this call; time spent
    compiling numba kernels (a fresh environment: tens of seconds, ``compile_seconds``
    of the result) comes on top, so that the limit buys the same search. Without it the
    run is bounded by ``scores_per_variable``, ``search_iterations`` and
    ``polish_iterations`` (all three required) and is reproducible. ``rng``: the search
    and polishing use independent children of it. ``score``, ``ess``, ``max_indegree``,
    ``scores_per_variable``, ``candidate_limit``, ``expand_dominated``: the cache
    stage's settings (:func:`cache_spec`; the polishing scores with the same score and
    in-degree bound); ``search``, ``search_params`` and the rest: :class:`WithinTask`'s.
    ``cache``: a cache of ``data`` (same variables) already built, e.g. once for several
    seeds: the cache stage and its share are skipped. ``on_progress`` hears a
    :class:`Progress` after each explored variable and each incumbent.

    Raises
    ------
    InvalidConfigError
        A bad setting, or no limit at all.

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
    t0 = time.time()
    if len(shares) != 3:
        raise InvalidConfigError(f"shares must be three positive numbers (cache, search, "
                                 f"polish), got {list(shares)!r}")
    task = make(WithinTask, time_limit=time_limit, algorithm=search,
                params=dict(search_params or {}), search_iterations=search_iterations,
                polish=polish, polish_iterations=polish_iterations, polish_from=polish_from,
                polish_candidates=polish_candidates, shares=tuple(shares))
    spec = cache_spec(score, ess, max_indegree, scores_per_variable, candidate_limit,
                      expand_dominated)
    if cache is None and time_limit is None and scores_per_variable is None:
        raise InvalidConfigError("without time_limit give scores_per_variable, "
                                 "search_iterations and polish_iterations (a reproducible run)")
    # the kernels of every stage, before the time is split (a fresh process loads them
    # in about half a second; inside a stage it would overrun that stage's share); time
    # spent compiling them (an empty numba cache: tens of seconds) is not counted
    with compile_clock() as compiled:
        warm_up(cache_methods=("independence",) if cache is None else (),
                algorithms=stage_algorithms(task))
    deadline = None if time_limit is None else t0 + float(time_limit) + compiled.seconds
    seconds: dict[str, float] = {}
    exact = 0
    if cache is None:
        t_stage = time.time()
        cache = build_cache_within(data, spec, task, deadline, on_progress, started=t0)
        exact = int(sum(cache.meta["stats"]["exact_scores"]))
        seconds["cache"] = time.time() - t_stage
    res = run(task, data, cache, as_rng(rng), deadline=deadline, started=t0,
              on_progress=on_progress)
    res.seconds = {**seconds, **res.seconds}
    res.exact_scores, res.compile_seconds = exact, compiled.seconds
    return res


def within_cells(data: DataRef, cache: CacheSpec, task: WithinTask, seeds: int,
                 base_seed: int = 0) -> list[Cell]:
    """One time-limited cell per seed ``0 .. seeds-1``, each a child stream of
    ``base_seed`` keyed by the cell (as every cell's)."""
    from bnsl_dist.pipeline.cell import Cell

    if seeds < 1:
        raise InvalidConfigError(f"seeds must be >= 1, got {seeds}")
    return [Cell(grid="learn", label=task.algorithm, data=data, cache=cache, task=task,
                 seed=s, grid_seed=base_seed) for s in range(seeds)]


def merge(cells: Sequence[Cell], runs: Sequence[WithinResult], *, wall: float,
          cache: dict[str, Any], compile_seconds: float = 0.0) -> dict[str, Any]:
    """The result JSON of a time-limited learn (README "Result JSON", ``mode``
    "time-limit") from its cells' runs: the best run's DAG and score (ties: the earlier
    seed), every run's stage times and trace, the shared cache's stage (``cache``: its
    seconds, exact scores, sets and slices) and the seconds spent compiling numba kernels
    before the limit's clock ran."""
    from bnsl_dist.pipeline.learn import SCHEMA_VERSION
    from bnsl_dist.pipeline.provenance import provenance

    best = max(range(len(runs)), key=lambda r: (runs[r].score, -r))
    c0 = cells[0]
    task = c0.task
    assert isinstance(task, WithinTask)
    opts: dict[str, Any] = {"score": c0.cache.score, "ess": c0.cache.ess,
                            "max_indegree": c0.cache.max_indegree,
                            "candidate_limit": c0.cache.candidate_limit,
                            "expand_dominated": c0.cache.expand_dominated}
    if task.algorithm != DEFAULT_ALGORITHM:
        opts["search"] = task.algorithm
    return {"schema_version": SCHEMA_VERSION, "mode": "time-limit",
            "dag": runs[best].dag.to_json_dict(), "score": float(runs[best].score),
            "best_seed": [c0.grid_seed, cells[best].seed],
            "time_limit": task.time_limit, "wall_seconds": float(wall),
            "compile_seconds": float(compile_seconds), "options": opts,
            "cache": dict(cache),
            "runs": [{"seed": [c.grid_seed, c.seed], "score": float(r.score),
                      "seconds": {k: float(v) for k, v in r.seconds.items()},
                      "n_sets": int(r.n_sets),
                      "incumbents": [{"elapsed": float(i.elapsed), "score": float(i.score),
                                      "stage": (i.info or {}).get("stage")}
                                     for i in r.trace.incumbents]}
                     for c, r in zip(cells, runs, strict=True)],
            "provenance": provenance()}
