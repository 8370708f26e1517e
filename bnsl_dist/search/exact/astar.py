"""Exact structure learning as a shortest path over the order graph: A*, AWA*, BFBnB.

Nodes of the order graph are the subsets U of variables placed so far (uint64 bitmasks
over the variables of one subproblem); the arc U -> U + {X} costs BestScore(X, U), the
best cached set of X inside U (minimisation form: cost = minus log-score, reduced by each
variable's best cost so arcs cost >= 0). A path from the empty set to all variables is a
variable order, and its cost is the best network consistent with that order.

* **A*** expands nodes best-first on f = g + h and stops when the goal is popped; it
  starts from a greedy order (least f at each step) and stores no node whose f reaches
  that order's cost (such nodes are never expanded).
* **AWA*** (anytime window A*) freezes nodes whose layer is at most the deepest expanded
  layer minus a window w; each iteration ends at a goal (a better network, yielded with
  the proven bound min(UB, least f of the open and frozen nodes)); w then grows by one
  and frozen nodes reopen, until an iteration freezes nothing.
* **BFBnB** takes an upper bound from a short AWA* run, then expands layer by layer,
  pruning every node whose f reaches the bound.

POPS constraints (:mod:`.pops`): ``constraints="on"`` solves the strongly connected
components of the parent relation graph as independent subproblems, ``"recursive"``
also expands, at each node, only the variables of a source component of the parent
relation graph induced on the variables left; ``"off"`` searches one order graph over all
variables (at most 63). ``p`` applies the top-p POPS constraint and reports the
suboptimality bound. Heuristics (:mod:`.heuristics`): ``"simple"`` or ``"pdb"`` (static
pattern databases per subproblem).

The iteration budget counts node expansions. Each incumbent's ``info`` reports
``nodes_expanded``, ``nodes_generated`` and ``peak_memory_bytes`` (bytes of the open and
closed lists: hash table, heap and frozen list at their peak capacity). The proof of
optimality may come after the last (strictly better) incumbent: the run's totals, final
bound and ``proved_optimal`` are in :attr:`OrderGraphSearch.stats` (see ``solve``).

References
----------
C. Yuan, B. Malone, X. Wu, "Learning optimal Bayesian networks using A* search",
IJCAI 2011. C. Yuan, B. Malone, "Learning optimal Bayesian networks: a shortest path
perspective", JAIR 48, 2013, sections 3-4. B. Malone, C. Yuan, "Evaluating anytime
algorithms for learning optimal Bayesian networks", UAI 2013 (AWA*). S. Aine,
P. P. Chakrabarti, R. Kumar, "AWA* - a window constrained anytime heuristic search
algorithm", IJCAI 2007. B. Malone, C. Yuan, E. Hansen, S. Bridges, "Improving the
scalability of optimal Bayesian network learning with external-memory frontier
breadth-first branch and bound search", UAI 2011. X. Fan, B. Malone, C. Yuan, UAI 2014,
sections 2.4, 3-5 (POPS constraints).
"""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache, bitset
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.search.base import AnytimeTrace, Budget, Incumbent, Stopwatch, register
from bnsl_dist.search.exact import _astar_kernels as K
from bnsl_dist.search.exact._order_graph import (
    ST_BUDGET,
    ST_MEMORY,
    NodeLists,
    SubState,
    greedy_order,
)
from bnsl_dist.search.exact.heuristics import (
    HEURISTICS,
    make_heuristic,
    rest_bound,
)
from bnsl_dist.search.exact.pops import decompose, top_p_bound, top_p_cache

__all__ = ["AStar", "AWAStar", "BFBnB", "OrderGraphSearch", "SearchStats", "CONSTRAINTS"]

CONSTRAINTS = ("off", "on", "recursive")
ALGORITHMS = ("astar", "awastar", "bfbnb")
_NO_WINDOW = 1 << 40
_CHUNK = 1 << 15


@dataclass
class SearchStats:
    """Totals of one run (also reported in each incumbent's ``info``)."""

    algorithm: str
    nodes_expanded: int = 0
    nodes_generated: int = 0
    peak_memory_bytes: int = 0
    pdb_bytes: int = 0
    pdb_seconds: float = 0.0
    n_subproblems: int = 0
    largest_subproblem: int = 0
    proved_optimal: bool = False
    stopped: str | None = None
    seconds: float = 0.0
    score: float | None = None
    bound: float | None = None
    epsilon: float | None = None  # top-p runs: valid suboptimality bound (pops.top_p_bound)
    epsilon_paper: float | None = None  # ... and Fan et al.'s eq. 5, for comparison

    def as_info(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()
                if k not in ("score", "bound") and (v is not None or not k.startswith("eps"))}


class OrderGraphSearch:
    """One run of A*, AWA* or BFBnB over a cache, with the settings of ``opt`` (an
    :class:`AStar`, :class:`AWAStar` or :class:`BFBnB`); :meth:`incumbents` is the anytime
    stream and :attr:`stats` holds the totals once the stream ends.
    """

    def __init__(self, cache: ParentSetCache, opt: _OrderGraphOptimizer) -> None:
        self.cache = cache
        self.algorithm, self.constraints, self.heuristic, self.p = (
            opt.algorithm, opt.constraints, opt.heuristic, opt.p)
        self.pdb_group_size = opt.pdb_group_size
        self.bound_expansions = opt.bound_expansions
        self.max_bytes = int(opt.max_memory_mb * 2**20)
        self.stats = SearchStats(opt.algorithm)
        self._rate = 1e5  # expansions per second, re-measured on every chunk
        self._best_score = -np.inf
        self._rest: Any = None

    # ---------------------------------------------------------------- assembling
    def _dag(self, work: ParentSetCache) -> tuple[DAG, float]:
        n = work.n_vars
        allowed = bitset([], n)
        chosen = np.zeros(n, dtype=np.int64)
        for sub, st in zip(self.subs, self.states, strict=True):
            for x in st.order:
                v = int(sub.variables[x])
                chosen[v] = work.best_within(v, allowed)
                allowed[v >> 6] |= np.uint64(1) << np.uint64(v & 63)
        return work.dag_from_indices(chosen), float(work.scores[chosen].sum())

    def _incumbent(self, sw: Stopwatch, work: ParentSetCache) -> Incumbent | None:
        dag, score = self._dag(work)
        lower = float(sum(s.base_cost + st.lower
                          for s, st in zip(self.subs, self.states, strict=True)))
        bound = -lower
        info: dict[str, Any] = {}
        if self.p is not None:
            if self._rest is None:
                self._rest = rest_bound(self.cache, self.heuristic, self.pdb_group_size)
            tb = top_p_bound(self.cache, work, dag, kept_bound=bound, rest_bound=self._rest)
            bound = tb.upper_bound
            self.stats.epsilon, self.stats.epsilon_paper = tb.epsilon, tb.epsilon_paper
            info.update(p=self.p, n_pruned_sets=tb.n_pruned_sets, n_sets_kept=work.n_sets)
        self.stats.score, self.stats.bound = score, max(bound, score)
        if not score > self._best_score:
            return None
        self._best_score = score
        self._update_memory()
        info.update(self.stats.as_info())
        info["proved_optimal"] = all(st.solved for st in self.states)
        return Incumbent(elapsed=sw.elapsed(), score=score, dag=dag, iterations=sw.iterations,
                         bound=max(bound, score), info=info)

    def _update_memory(self) -> None:
        live = sum(st.search.nbytes for st in self.states if st.search is not None)
        self.stats.peak_memory_bytes = max(self.stats.peak_memory_bytes, live)
        self.stats.nodes_expanded = self._expanded_done + sum(
            st.search.expanded for st in self.states if st.search is not None)
        self.stats.nodes_generated = self._generated_done + sum(
            st.search.generated for st in self.states if st.search is not None)

    def _retire(self, st: SubState) -> None:
        if st.search is not None:
            self._update_memory()
            self.stats.peak_memory_bytes = max(self.stats.peak_memory_bytes,
                                               st.search.peak_bytes)
            self._expanded_done += st.search.expanded
            self._generated_done += st.search.generated
            st.search = None

    # ---------------------------------------------------------------- driving
    def _drive(self, search: NodeLists, sw: Stopwatch, ub: float, window: int,
               cap: int | None = None) -> int:
        used = 0
        while True:
            if sw.done():
                return ST_BUDGET
            # chunks of about 20 ms (or a quarter of the time left) at the measured rate
            chunk = max(16, min(_CHUNK, int(self._rate * min(0.02, sw.remaining() / 4))))
            left = sw.iterations_left()
            if left is not None:
                chunk = min(chunk, left)
            if cap is not None:
                if used >= cap:
                    return ST_BUDGET
                chunk = min(chunk, cap - used)
            e0 = search.expanded
            t0 = time.perf_counter()
            st = search.step(chunk, ub, window, sw.start + (sw.budget.seconds or np.inf))
            dt = time.perf_counter() - t0
            if search.expanded - e0 >= 16 and dt > 1e-4:
                self._rate = (search.expanded - e0) / dt
            sw.tick(search.expanded - e0)
            used += search.expanded - e0
            self.stats.peak_memory_bytes = max(self.stats.peak_memory_bytes, search.peak_bytes)
            if st in (K.ST_GOAL, K.ST_EMPTY, ST_MEMORY):
                return st

    def _awa_iteration(self, k: int, sw: Stopwatch, window: int, cap: int | None = None) -> int:
        """One AWA* iteration on subproblem k; updates its order, bound and solved flag."""
        sub, st = self.subs[k], self.states[k]
        search = st.search
        assert search is not None
        search.begin_iteration()
        status = self._drive(search, sw, st.cost, window, cap)
        if status == K.ST_GOAL:
            st.order = search.order_to(int(sub.full))
            st.cost = float(K.path_cost(st.order, sub.set_off, sub.set_mask, sub.set_cost))
        st.lower = max(st.lower, min(st.cost, search.frontier_bound()))
        if status in (K.ST_GOAL, K.ST_EMPTY) and search.ctr[K.C_FROZEN] == 0:
            st.lower = st.cost  # a plain A* pass: the goal popped has the least f
        if st.lower >= st.cost - sub.tol:
            st.lower = min(st.lower, st.cost)
            st.solved = True
        return status

    def _new_search(self, k: int, mode: int) -> NodeLists:
        return NodeLists(self.subs[k], self.heurs[k], mode, self.constraints == "recursive",
                       self.max_bytes)

    def _stop(self, status: int) -> None:
        self.stats.stopped = "memory" if status == ST_MEMORY else "budget"

    def _run_to_end(self, k: int, sw: Stopwatch, mode: int) -> bool:
        """A* (best-first) or BFBnB (breadth-first) on subproblem k, pruning nodes whose f
        reaches its best cost so far (they would never be expanded); False when the
        budget or memory ends first (A* then completes its best open node greedily)."""
        sub, st = self.subs[k], self.states[k]
        st.search = search = self._new_search(k, mode)
        status = self._drive(search, sw, st.cost, _NO_WINDOW)
        if status == K.ST_GOAL:
            st.order = search.order_to(int(sub.full))
            st.cost = st.lower = float(K.path_cost(st.order, sub.set_off, sub.set_mask,
                                                   sub.set_cost))
            st.solved = True
        elif status == K.ST_EMPTY:  # nothing beats the order we had
            st.lower, st.solved = st.cost, True
        else:
            st.lower = max(st.lower, min(st.cost, search.frontier_bound()))
            key = search.best_partial() if mode == K.MODE_BEST_FIRST else None
            if key is not None:
                order = greedy_order(sub, self.heurs[k], self.constraints == "recursive",
                                search.order_to(key))
                cost = float(K.path_cost(order, sub.set_off, sub.set_mask, sub.set_cost))
                if cost < st.cost:
                    st.order, st.cost = order, cost
            self._stop(status)
        self._retire(st)
        return st.solved

    def _astar(self, sw: Stopwatch) -> None:
        for k, st in enumerate(self.states):
            if not st.solved and not self._run_to_end(k, sw, K.MODE_BEST_FIRST):
                return

    def _awastar(self, sw: Stopwatch, work: ParentSetCache) -> Iterator[Incumbent]:
        for k, st in enumerate(self.states):  # window 0: a first network, quickly
            if st.solved:
                continue
            st.search = self._new_search(k, K.MODE_BEST_FIRST)
            status = self._awa_iteration(k, sw, 0)
            if status in (ST_BUDGET, ST_MEMORY):
                self._stop(status)
                return
            if st.solved:
                self._retire(st)
        inc = self._incumbent(sw, work)
        if inc is not None:
            yield inc
        for k, st in enumerate(self.states):
            window = 1
            while not st.solved:
                before = st.cost
                status = self._awa_iteration(k, sw, window)
                if status in (ST_BUDGET, ST_MEMORY):
                    self._stop(status)
                    return
                window += 1
                if st.cost < before:
                    inc = self._incumbent(sw, work)
                    if inc is not None:
                        yield inc
            self._retire(st)

    def _bfbnb(self, sw: Stopwatch, work: ParentSetCache) -> Iterator[Incumbent]:
        for k, st in enumerate(self.states):  # upper bounds from a short AWA* run
            if st.solved:
                continue
            st.search = self._new_search(k, K.MODE_BEST_FIRST)
            window, used = 0, 0
            while not st.solved and used < self.bound_expansions:
                e0 = st.search.expanded
                status = self._awa_iteration(k, sw, window, self.bound_expansions - used)
                used += st.search.expanded - e0
                window += 1
                if status == ST_MEMORY or sw.done():
                    self._retire(st)
                    self._stop(status if status == ST_MEMORY else ST_BUDGET)
                    return
            self._retire(st)
        inc = self._incumbent(sw, work)
        if inc is not None:
            yield inc
        for k, st in enumerate(self.states):
            if st.solved:
                continue
            before = st.cost
            if not self._run_to_end(k, sw, K.MODE_BREADTH_FIRST):
                return
            if st.cost < before:
                inc = self._incumbent(sw, work)
                if inc is not None:
                    yield inc

    # ---------------------------------------------------------------- public
    def incumbents(self, budget: Budget) -> Generator[Incumbent, None, int]:
        """Run within ``budget``, yielding each strictly better network; returns the
        number of nodes expanded (the iterations run)."""
        sw = budget.stopwatch()
        self._expanded_done = self._generated_done = 0
        self._rate = 1e5  # expansions per second, re-measured on every chunk
        work = top_p_cache(self.cache, self.p) if self.p is not None else self.cache
        self.subs = decompose(work, split=self.constraints != "off")
        self.heurs = [make_heuristic(s, self.heuristic, self.pdb_group_size) for s in self.subs]
        recursive = self.constraints == "recursive"
        self.states = [SubState(s, h, recursive) for s, h in zip(self.subs, self.heurs,
                                                                   strict=True)]
        st = self.stats
        st.n_subproblems = len(self.subs)
        st.largest_subproblem = max((s.m for s in self.subs), default=0)
        st.pdb_bytes = sum(h.nbytes for h in self.heurs)
        st.pdb_seconds = sum(h.seconds for h in self.heurs)
        if self.algorithm == "astar":
            self._astar(sw)
        elif self.algorithm == "awastar":
            yield from self._awastar(sw, work)
        else:
            yield from self._bfbnb(sw, work)
        for s in self.states:
            self._retire(s)
        self._update_memory()
        st.proved_optimal = all(s.solved for s in self.states)
        inc = self._incumbent(sw, work)
        st.seconds = sw.elapsed()
        if inc is not None:
            yield inc
        return sw.iterations


def _validate(algorithm: str, constraints: str, heuristic: str, p: int | None,
              pdb_group_size: int, bound_expansions: int, max_memory_mb: float) -> None:
    if algorithm not in ALGORITHMS:
        raise InvalidConfigError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if constraints not in CONSTRAINTS:
        raise InvalidConfigError(f"constraints must be one of {CONSTRAINTS}, "
                                 f"got {constraints!r}")
    if heuristic not in HEURISTICS:
        raise InvalidConfigError(f"heuristic must be one of {HEURISTICS}, got {heuristic!r}")
    if p is not None and (isinstance(p, bool) or not isinstance(p, int | np.integer) or p < 1):
        raise InvalidConfigError(f"p must be None or an integer >= 1, got {p!r}")
    if not 1 <= pdb_group_size <= 24:
        raise InvalidConfigError(f"pdb_group_size must be in 1..24, got {pdb_group_size}")
    if bound_expansions < 1:
        raise InvalidConfigError(f"bound_expansions must be >= 1, got {bound_expansions}")
    if not max_memory_mb > 0:
        raise InvalidConfigError(f"max_memory_mb must be positive, got {max_memory_mb}")


class _OrderGraphOptimizer:
    """Shared front of the three order-graph optimizers (see :class:`OrderGraphSearch`).

    Parameters
    ----------
    constraints : {"recursive", "on", "off"}
        POPS constraints: recursive SCC splitting, SCC subproblems only, or none.
    heuristic : {"pdb", "simple"}
        Static pattern databases or the simple heuristic.
    p : int or None
        Top-p POPS constraint (None: keep every cached set). With p the result is
        optimal for the pruned cache only; ``info["epsilon"]`` bounds the loss.
    pdb_group_size : int
        Most variables in one pattern-database group (at least two groups).
    bound_expansions : int
        BFBnB: expansions of the AWA* run that gives the upper bound, per subproblem.
    max_memory_mb : float
        Cap on the open/closed lists; the search stops like at the end of its budget.
    """

    name: ClassVar[str]
    exact: ClassVar[bool] = True
    algorithm: ClassVar[str]

    def __init__(self, *, constraints: str = "recursive", heuristic: str = "pdb",
                 p: int | None = None, pdb_group_size: int = 24,
                 bound_expansions: int = 100_000, max_memory_mb: float = 2048.0) -> None:
        _validate(self.algorithm, constraints, heuristic, p, pdb_group_size, bound_expansions,
                  max_memory_mb)
        self.constraints = constraints
        self.heuristic = heuristic
        self.p = p
        self.pdb_group_size = pdb_group_size
        self.bound_expansions = bound_expansions
        self.max_memory_mb = max_memory_mb

    def search(self, cache: ParentSetCache) -> OrderGraphSearch:
        return OrderGraphSearch(cache, self)

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield each strictly better network until optimal or out of budget, then return
        the nodes expanded (the search is deterministic; ``rng`` is unused)."""
        return self.search(cache).incumbents(budget)

    def solve(self, cache: ParentSetCache, budget: Budget) -> tuple[AnytimeTrace, SearchStats]:
        """Run to the end; the trace and the run's totals."""
        s = self.search(cache)
        return AnytimeTrace.collect(s.incumbents(budget)), s.stats


@register("astar")
class AStar(_OrderGraphOptimizer):
    """A* over the order graph: one incumbent, optimal unless the budget ends first
    (then the best open node completed greedily, with the proven bound)."""

    algorithm = "astar"


@register("awastar")
class AWAStar(_OrderGraphOptimizer):
    """Anytime window A*: an improving network per window iteration, with its bound."""

    algorithm = "awastar"


@register("bfbnb")
class BFBnB(_OrderGraphOptimizer):
    """Breadth-first branch and bound, with an upper bound from a short AWA* run."""

    algorithm = "bfbnb"
