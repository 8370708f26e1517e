"""Tabu local search over DAGs, scored from the data: the polishing stage after a cache.

A cache-bound optimizer can only use the parent sets its cache kept. This search moves
one arc at a time — add, remove or reverse, keeping the graph acyclic — and scores the
families it produces directly from the data (:mod:`bnsl_dist.scores._kernels`), with a
memo so each family is counted once. Move scores are incremental: the score change of
every move is kept in an n x n table whose column v depends only on v's parents, so a
move rescores the columns of the one or two families it changed (docs/ALGORITHMS.md §4,
greedy hill climbing with tabu and restarts "on raw scores").

Each climb takes the best admissible move at every step — not tabu (the tabu list holds
the variable pairs of the last ``tabu_length`` moves) unless it reaches a new best
score — improving or not, until ``max_no_improve`` steps in a row bring no new best.
Each restart toggles ``perturb`` random arcs of the best DAG so far and climbs again.
One iteration is one climb.

References
----------
M. Teyssier, D. Koller, "Ordering-based search: a simple and effective algorithm for
learning Bayesian networks", UAI 2005, §5 (hill climbing with tabu list and random
restarts over DAGs); D. M. Chickering, "Learning equivalence classes of Bayesian-network
structures", JMLR 2, 2002 (the add/remove/reverse neighbourhood with decomposable
score updates).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache import _explore_kernels as ZK
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.scores._kernels import nlogn_table
from bnsl_dist.scores.local import MAX_ESS, LocalScorer
from bnsl_dist.scores.registry import score_info, score_names
from bnsl_dist.search.base import Budget, Incumbent, make_optimizer, optimizer_info, register
from bnsl_dist.search.local import _kernels as K

__all__ = ["TabuClimber", "tabu_search", "cache_candidates", "DataTabu"]

#: Family memo entries kept before it is emptied (about 100 MB).
_MEMO_CAP = 2_000_000
#: Row-visits per kernel call between two clock checks (a step costs about n * N).
_CHUNK_WORK = 5_000_000


def cache_candidates(cache: ParentSetCache) -> list[list[int]]:
    """Candidate parents of every variable: the members of its cached sets, and the
    variables whose cached sets contain it (so that arcs can be reversed)."""
    cand: list[set[int]] = [set() for _ in range(cache.n_vars)]
    for v in range(cache.n_vars):
        for ps, _ in cache.sets_of(v):
            for u in ps:
                cand[v].add(u)
                cand[u].add(v)
    return [sorted(c) for c in cand]


class TabuClimber:
    """The state of a data-scored local search: the DAG, family scores, move scores.

    Parameters
    ----------
    data : CategoricalData
        Complete data.
    score : {"bic", "bdeu"}
        Local score; ``ess`` is BDeu's equivalent sample size.
    candidates : sequence of sequences of int, optional
        Candidate parents of each variable (default: every other variable).
    max_indegree : int, optional
        Largest parent set an addition may produce (default: no limit).
    """

    def __init__(self, data: CategoricalData, *, score: str = "bic", ess: float = 1.0,
                 candidates: Sequence[Sequence[int]] | None = None,
                 max_indegree: int | None = None) -> None:
        LocalScorer(data, score, ess)  # validates data, score and ess
        if score not in score_names(structure=True):
            raise InvalidConfigError(f"local search scores "
                                     f"{' or '.join(score_names(structure=True))}, not "
                                     f"{score!r}")
        n = data.n_vars
        self.n = n
        self.codes = data.codes
        self.arities = np.ascontiguousarray(data.arities, dtype=np.int64)
        self.kind = score_info(score).kind
        self.ess = float(ess)
        self.log_n = math.log(data.n_samples)
        self.nlogn = nlogn_table(data.n_samples)
        self.max_indegree = n if max_indegree is None else int(max_indegree)
        if self.max_indegree < 0:
            raise InvalidConfigError("max_indegree must be >= 0")
        self.allowed = np.ones((n, n), dtype=np.bool_)
        if candidates is not None:
            if len(candidates) != n:
                raise InvalidConfigError(f"candidates: {len(candidates)} lists for {n} variables")
            self.allowed[:] = False
            for v, cs in enumerate(candidates):
                for u in cs:
                    if not 0 <= int(u) < n:
                        raise InvalidConfigError(f"candidates of {v}: index {u} out of range")
                    self.allowed[int(u), v] = True
        np.fill_diagonal(self.allowed, False)
        self.zc = ZK.zobrist_keys(n, 0xC41D)
        self.zp = ZK.zobrist_keys(n, 0x9A7E)
        self.memo = K.new_memo()
        self.adj = np.zeros((n, n), dtype=np.bool_)
        self.fam = np.zeros(n, dtype=np.float64)
        self.delta = np.zeros((n, n), dtype=np.float64)
        self._par = np.empty(2 * n + 2, dtype=np.int64)
        rows = data.n_samples
        self._ids = np.empty(rows, dtype=np.int64)
        self._ids2 = np.empty(rows, dtype=np.int64)
        self._tmp = np.empty(rows, dtype=np.int64)
        self._counts = np.empty(max(8 * rows, 1 << 14), dtype=np.int64)

    # ------------------------------------------------------------------ state
    def set_dag(self, dag: DAG, stop: Callable[[], bool] | None = None) -> bool:
        """Start from ``dag``: every column rescored, unless ``stop()`` turns true first
        (checked between columns); returns whether all were."""
        if dag.n_vars != self.n:
            raise InvalidConfigError(f"start DAG has {dag.n_vars} variables, data {self.n}")
        self.adj[:] = False
        for v, ps in enumerate(dag.parents):
            self.adj[list(ps), v] = True
        for v in range(self.n):
            if stop is not None and stop():
                return False
            self.rescore([v])
        return True

    def rescore(self, columns: Iterator[int] | Sequence[int] | range) -> None:
        """Recompute the family score and move scores of ``columns``."""
        K.memo_trim(self.memo, _MEMO_CAP)
        for v in columns:
            K.rescore_column(self.codes, self.arities, int(v), self.adj, self.allowed,
                             self.max_indegree, self.kind, self.ess, self.log_n, self.nlogn,
                             self.zc, self.zp, self.memo, self.fam, self.delta, self._par,
                             self._ids, self._ids2, self._tmp, self._counts)

    def score(self) -> float:
        return math.fsum(self.fam.tolist())

    def dag(self, names: Sequence[str] | None = None, adj: NDArray[np.bool_] | None = None
            ) -> DAG:
        a = self.adj if adj is None else adj
        return DAG.from_parents([np.flatnonzero(a[:, v]).tolist() for v in range(self.n)],
                                names)

    def steps_per_call(self) -> int:
        return int(max(1, min(256, _CHUNK_WORK // max(1, self.n * self.codes.shape[0]))))


def tabu_search(data: CategoricalData, start: DAG | None, budget: Budget,
                rng: np.random.Generator | int | None = None, *, score: str = "bic",
                ess: float = 1.0, tabu_length: int = 10, max_no_improve: int | None = None,
                restarts: int | None = None, perturb: int | None = None,
                max_indegree: int | None = None,
                candidates: Sequence[Sequence[int]] | None = None
                ) -> Generator[Incumbent, None, int]:
    """Tabu local search from ``start`` (default: the empty DAG), scored from the data.

    Parameters
    ----------
    data : CategoricalData
        Complete data.
    start : DAG or None
        The first DAG (yielded first, with its exact score).
    budget : Budget
        Seconds and/or climbs (one iteration = one climb).
    rng : Generator, int or None
        Randomness of the restarts' perturbations.
    score, ess : optional
        Local score ("bic" or "bdeu") and BDeu's equivalent sample size.
    tabu_length : int
        Moves remembered; a move on the pair of variables of one of them is tabu unless
        it reaches a new best score.
    max_no_improve : int, optional
        Steps in a row without a new best that end a climb (default ``tabu_length``).
    restarts : int, optional
        Restarts after the first climb (default: until the budget ends).
    perturb : int, optional
        Random arc toggles at each restart (default max(3, n // 20)).
    max_indegree : int, optional
        Largest parent set an addition may produce.
    candidates : sequence of sequences of int, optional
        Candidate parents of each variable (default: all; see :func:`cache_candidates`).

    Yields
    ------
    Incumbent
        The start, then every strictly better DAG. Returns the number of climbs run.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, 500)
    >>> d = CategoricalData.from_array(np.column_stack([a, a ^ (rng.random(500) < .1)]))
    >>> incs = list(tabu_search(d, None, Budget(max_iterations=1), 0))
    >>> incs[-1].dag.n_arcs
    1
    """
    from bnsl_dist._rng import as_rng

    gen = as_rng(rng)
    if int(tabu_length) < 1:
        raise InvalidConfigError("tabu_length must be >= 1")
    if restarts is not None and int(restarts) < 0:
        raise InvalidConfigError("restarts must be >= 0")
    climber = TabuClimber(data, score=score, ess=ess, candidates=candidates,
                          max_indegree=max_indegree)
    n = climber.n
    idle = int(tabu_length if max_no_improve is None else max_no_improve)
    n_perturb = max(3, n // 20) if perturb is None else int(perturb)
    if idle < 1 or n_perturb < 0:
        raise InvalidConfigError("max_no_improve must be >= 1, perturb >= 0")
    watch = budget.stopwatch()
    first = DAG.empty(n) if start is None else start
    names = data.names
    if not climber.set_dag(first, watch.done):  # out of time before the first step
        scorer = LocalScorer(data, score, ess)
        total = math.fsum(scorer.score(v, ps) for v, ps in enumerate(first.parents))
        yield Incumbent(watch.elapsed(), total, DAG.from_parents(first.parents, names),
                        info={"steps": 0})
        return 0
    best = climber.score()
    best_adj = climber.adj.copy()
    yield Incumbent(watch.elapsed(), best, climber.dag(names), iterations=0,
                    info={"steps": 0})
    chunk = climber.steps_per_call()
    steps = 0
    climbs = 0
    while not watch.done():
        if restarts is not None and climbs > int(restarts):
            break
        if climbs > 0:
            before = climber.adj.copy()
            climber.adj[:] = best_adj
            pairs = gen.integers(0, n, size=(n_perturb, 2)).astype(np.int64)
            changed = np.zeros(n, dtype=np.bool_)
            K.perturb(climber.adj, climber.allowed, climber.max_indegree, pairs, changed)
            climber.rescore(np.flatnonzero((before != climber.adj).any(axis=0)).tolist())
        climbs += 1
        cur = climber.score()
        tabu = np.full((int(tabu_length), 2), -1, dtype=np.int64)
        state = np.zeros(4, dtype=np.int64)
        fstate = np.array([cur, cur], dtype=np.float64)
        climb_best = climber.adj.copy()
        while True:
            over = K.tabu_steps(climber.codes, climber.arities, climber.adj, climb_best,
                                climber.allowed, climber.max_indegree, climber.kind,
                                climber.ess, climber.log_n, climber.nlogn, climber.zc,
                                climber.zp, climber.memo, climber.fam, climber.delta, tabu,
                                state, fstate, idle, chunk)
            if fstate[1] > best + 1e-9 * max(1.0, abs(best)):
                best_adj = climb_best.copy()
                best = _exact(climber, best_adj)
                yield Incumbent(watch.elapsed(), best, climber.dag(names, best_adj),
                                iterations=watch.iterations + 1,
                                info={"steps": steps + int(state[3])})
            if over or watch.remaining() <= 0.0:
                break
            K.memo_trim(climber.memo, _MEMO_CAP)
        steps += int(state[3])
        watch.tick()
    return watch.iterations


def _exact(climber: TabuClimber, adj: NDArray[np.bool_]) -> float:
    """The score of the DAG ``adj`` summed afresh from the family scores (no drift from
    deltas): from the memo, or scored again when the memo, emptied whenever it outgrows
    ``_MEMO_CAP``, no longer holds a family of ``adj`` (one scored before the emptying)."""
    return math.fsum(K.dag_family_scores(
        climber.codes, climber.arities, adj, climber.kind, climber.ess, climber.log_n,
        climber.nlogn, climber.zc, climber.zp, climber.memo, climber._par, climber._ids,
        climber._tmp, climber._counts).tolist())


@register("tabu-data")
class DataTabu:
    """Start optimizer on the cache, then tabu local search scored from the data.

    It needs the data, so it runs through :meth:`learn` (like ``qds``); :meth:`run` on a
    bare cache is refused.

    Parameters
    ----------
    start : str
        A registered cache optimizer whose best DAG starts the local search
        (default "asobs-ent-last", the ASOBS-ENT direction this default has always run:
        high-entropy variables processed last; docs/ALGORITHMS.md §4).
    start_params : mapping, optional
        Its hyper-parameters.
    start_fraction : float
        Share of the seconds left after the cache build given to ``start``.
    start_iterations : int
        ``start``'s iterations when the budget counts iterations (with or without
        seconds: both limits then hold), at most the budget's iterations less one: the
        budget bounds the start's iterations and the climbs together, and leaves at
        least one climb when it allows two iterations.
    tabu_length, max_no_improve, restarts, perturb, max_indegree :
        As in :func:`tabu_search`.
    candidates : {"all", "cache"}
        Candidate parents: every variable, or those of :func:`cache_candidates`.
    score, ess :
        The local score (the cache should use the same).
    """

    name: ClassVar[str] = "tabu-data"
    exact: ClassVar[bool] = False
    needs_data: ClassVar[bool] = True

    def __init__(self, *, start: str = "asobs-ent-last", start_params: Mapping[str, Any] | None = None,
                 start_fraction: float = 0.3, start_iterations: int = 200,
                 tabu_length: int = 10, max_no_improve: int | None = None,
                 restarts: int | None = None, perturb: int | None = None,
                 max_indegree: int | None = None, candidates: str = "all",
                 score: str = "bic", ess: float = 1.0) -> None:
        self.start = start
        self.start_params = dict(start_params or {})
        self.start_fraction = start_fraction
        self.start_iterations = start_iterations
        self.tabu_length = tabu_length
        self.max_no_improve = max_no_improve
        self.restarts = restarts
        self.perturb = perturb
        self.max_indegree = max_indegree
        self.candidates = candidates
        self.score = score
        self.ess = ess
        self._check()  # where the spec is read (the registry builds one), not in each run

    def _check(self) -> None:
        """The values :meth:`learn` and :func:`tabu_search` refuse, before any data."""
        if self.candidates not in ("all", "cache"):
            raise InvalidConfigError(f"candidates must be 'all' or 'cache', got "
                                     f"{self.candidates!r}")
        if not 0.0 < float(self.start_fraction) < 1.0:
            raise InvalidConfigError("start_fraction must be in (0, 1)")
        if int(self.start_iterations) < 1:
            raise InvalidConfigError("start_iterations must be >= 1")
        if int(self.tabu_length) < 1:
            raise InvalidConfigError("tabu_length must be >= 1")
        if self.restarts is not None and int(self.restarts) < 0:
            raise InvalidConfigError("restarts must be >= 0")
        if (self.max_no_improve is not None and int(self.max_no_improve) < 1) \
                or (self.perturb is not None and int(self.perturb) < 0):
            raise InvalidConfigError("max_no_improve must be >= 1, perturb >= 0")
        if self.max_indegree is not None and int(self.max_indegree) < 0:
            raise InvalidConfigError("max_indegree must be >= 0")
        score_info(self.score)  # an unknown name: InvalidConfigError
        if not 0 < float(self.ess) <= MAX_ESS:
            raise InvalidConfigError(f"ess must be a positive number up to {MAX_ESS:g}, "
                                     f"got {self.ess}")
        try:
            optimizer_info(self.start).check_params(self.start_params, None)
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"start: {exc}") from None

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Iterator[Incumbent]:
        raise InvalidConfigError("tabu-data scores families from the data: call "
                                 "DataTabu.learn(data, ...), not run on a cache")

    def learn(self, data: CategoricalData, budget: Budget, rng: np.random.Generator, *,
              cache_builder: Callable[[CategoricalData], ParentSetCache]
              ) -> Generator[Incumbent, None, int]:
        """Build the cache, run ``start`` on it, then polish from its best DAG.

        Incumbents' ``elapsed`` counts from this call (the cache build included);
        iterations are the start's runs plus the climbs, within the budget's.
        """
        self._check()
        watch = budget.stopwatch()
        cache = cache_builder(data)
        opt = make_optimizer(self.start, **self.start_params)
        max_it = budget.max_iterations
        sb = Budget(seconds=None if budget.seconds is None
                    else max(1e-3, watch.remaining() * float(self.start_fraction)),
                    max_iterations=None if max_it is None
                    else min(int(self.start_iterations), max(1, max_it - 1)))
        start = None
        best = -math.inf
        start_iters = 0
        stream = iter(opt.run(cache, sb, rng))
        while True:
            try:
                inc = next(stream)
            except StopIteration as stop:  # the iterations run: the generator's value
                if isinstance(stop.value, int | np.integer):
                    start_iters = int(stop.value)
                break
            start, best, start_iters = inc.dag, inc.score, inc.iterations
            yield Incumbent(watch.elapsed(), inc.score, inc.dag, iterations=inc.iterations,
                            info={"stage": "start"})
        left = None if max_it is None else max_it - start_iters
        if left is not None and left < 1:
            return start_iters
        rest = None if budget.seconds is None else max(1e-3, watch.remaining())
        pb = Budget(seconds=rest, max_iterations=left)
        cand = cache_candidates(cache) if self.candidates == "cache" else None
        climbs = yield from _shifted(tabu_search(
            data, start, pb, rng, score=self.score, ess=self.ess,
            tabu_length=self.tabu_length, max_no_improve=self.max_no_improve,
            restarts=self.restarts, perturb=self.perturb, max_indegree=self.max_indegree,
            candidates=cand), watch.elapsed(), start_iters, best)
        return start_iters + climbs


def _shifted(stream: Generator[Incumbent, None, int], t0: float, it0: int, floor: float
             ) -> Generator[Incumbent, None, int]:
    """Re-time a stage's incumbents and keep only those above ``floor``."""
    while True:
        try:
            inc = next(stream)
        except StopIteration as stop:
            return int(stop.value or 0)
        if inc.score > floor:
            floor = inc.score
            yield Incumbent(t0 + inc.elapsed, inc.score, inc.dag,
                            iterations=it0 + inc.iterations, info={"stage": "tabu", **inc.info})
