"""CP-SAT encodings of the BNSL ILP (``ilp(encoding="cuts" | "order")``).

CP-SAT has no lazy-constraint callback, hence the two ways around it compared in
``workflows/benchmarks/ilp.py``:

- :func:`cpsat_cuts`: solve the family-variable model with the cluster constraints
  found so far, read the cycles of the integral optimum, add their cluster
  constraints (as clauses: at least one "open" set), re-solve warm-started with the
  previous solution as a hint. Every round's optimum is an upper bound; each round's
  solution is repaired into a DAG (ASOBS with the chosen sets preferred, variables
  in an Eades-Lin-Smyth order of the cyclic graph) for an incumbent.
- :func:`cpsat_order`: an order (ranking) encoding with no cuts: ``pos[v]`` in
  ``0..n-1``, ``arc[u, v] => pos[u] + 1 <= pos[v]``, ``z[S, v] => arc[u, v]`` for
  u in S, and the 2-cycle clauses ``not arc[u, v] or not arc[v, u]``.

Scores are scaled to integers: ``round((score - best_v) * SCALE)``; bounds are widened
by the rounding error so that they stay valid for the real scores.

References
----------
J. Cussens, "Bayesian network learning with cutting planes", UAI 2011, §3.
L. Perron, F. Didier, "CP-SAT", OR-Tools v9, Google, 2023 (the solver).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bnsl_dist.search.base import Stopwatch
from bnsl_dist.search.exact._ilp_common import Final, Found
from bnsl_dist.search.exact._ilp_families import Families, bits, eades_order, repair
from bnsl_dist.search.exact._ilp_separation import integer_clusters

__all__ = ["cpsat_cuts", "cpsat_order", "Stopper", "SCALE", "DET_TIME_PER_ITERATION"]

SCALE = 1e6
#: One iteration of ``"order"`` is this much CP-SAT deterministic time.
DET_TIME_PER_ITERATION = 0.1


class Stopper:
    """Stops the CP-SAT solve in progress (thread-safe) and any later one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.stopped = False
        self.solver: Any = None

    def attach(self, solver: Any) -> bool:
        with self._lock:
            self.solver = solver
            return not self.stopped

    def stop(self) -> None:
        with self._lock:
            self.stopped = True
            if self.solver is not None:
                self.solver.stop_search()


def _base_model(fam: Families) -> tuple[Any, list[Any], float]:
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
    z = [m.new_bool_var(f"z{i}") for i in range(fam.n_sets)]
    for v in range(fam.n):
        m.add_exactly_one([z[i] for i in fam.sets_of(v)])
    rel = np.rint((fam.scores - fam.best[fam.owner]) * SCALE).astype(np.int64)
    m.maximize(sum(int(c) * z[i] for i, c in enumerate(rel.tolist()) if c != 0))
    slack = 0.5 * fam.n / SCALE  # the rounding error of a whole DAG's scaled score
    return m, z, slack


def _solver(seed: int, seconds: float | None, det_time: float | None) -> Any:
    from ortools.sat.python import cp_model

    s = cp_model.CpSolver()
    s.parameters.num_workers = 1
    s.parameters.random_seed = seed
    if seconds is not None:
        s.parameters.max_time_in_seconds = max(0.01, seconds)
    if det_time is not None:
        s.parameters.max_deterministic_time = max(DET_TIME_PER_ITERATION, det_time)
    return s


def _hint(m: Any, z: list[Any], chosen: Sequence[int]) -> None:
    m.clear_hints()
    on = set(int(i) for i in chosen)
    for i, var in enumerate(z):
        m.add_hint(var, i in on)


def cpsat_cuts(fam: Families, watch: Stopwatch, seed: int, hint: list[int],
               emit: Callable[[Found], None], stopper: Stopper) -> Final:
    """Cut loop: CP-SAT optimum of the relaxation, cluster cuts from its cycles, repeat."""
    from ortools.sat.python import cp_model

    m, z, slack = _base_model(fam)
    offset = float(fam.best.sum())
    best = fam.score(hint)
    prev = list(hint)
    bound: float | None = None
    budget = watch.budget
    while not watch.done():
        _hint(m, z, prev)
        seconds = None if budget.seconds is None else watch.remaining() - 0.03
        if seconds is not None and seconds <= 0:
            break
        solver = _solver(seed, seconds, None)
        if not stopper.attach(solver):
            break
        status = solver.solve(m)
        watch.tick()
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            break
        rb = solver.best_objective_bound / SCALE + offset + slack
        bound = rb if bound is None else min(bound, rb)
        chosen = [i for i in range(fam.n_sets) if solver.boolean_value(z[i])]
        cuts = integer_clusters(fam, chosen)
        if not cuts:
            s = fam.score(chosen)
            if s > best:
                best = s
                emit(Found(watch.elapsed(), chosen, s, bound, watch.iterations))
            # Optimal for the scaled scores only: the bound keeps the rounding slack.
            return Final(bound, False, watch.iterations)
        weights = {(p, v): 1.0 for v, i in enumerate(chosen) for p in bits(fam.masks[i])}
        order = eades_order(fam.n, weights)
        fixed = repair(fam, order, [[i] for i in chosen])
        s = fam.score(fixed)
        if s > best:
            best = s
            emit(Found(watch.elapsed(), fixed, s, bound, watch.iterations))
        for c in cuts:
            m.add_bool_or([z[i] for i in fam.cluster_sets(c)])
        prev = chosen
        if status != cp_model.OPTIMAL:
            break
    return Final(bound, False, watch.iterations)


def cpsat_order(fam: Families, watch: Stopwatch, seed: int, hint: list[int],
                emit: Callable[[Found], None], stopper: Stopper) -> Final:
    """Order encoding in CP-SAT; each solution found by the search is an incumbent."""
    from ortools.sat.python import cp_model

    m, z, slack = _base_model(fam)
    offset = float(fam.best.sum())
    n = fam.n
    pos = [m.new_int_var(0, max(0, n - 1), f"pos{v}") for v in range(n)]
    arcs: dict[tuple[int, int], Any] = {}
    for i in range(fam.n_sets):
        v = int(fam.owner[i])
        for p in bits(fam.masks[i]):
            a = arcs.get((p, v))
            if a is None:
                a = arcs[(p, v)] = m.new_bool_var(f"a{p}_{v}")
                m.add(pos[p] + 1 <= pos[v]).only_enforce_if(a)
            m.add_implication(z[i], a)
    for (p, v), a in arcs.items():
        if p < v and (v, p) in arcs:
            m.add_bool_or([~a, ~arcs[(v, p)]])
    _hint(m, z, hint)
    budget = watch.budget
    left = watch.iterations_left()
    seconds = None if budget.seconds is None else watch.remaining() - 0.03
    if seconds is not None and seconds <= 0:
        return Final(None, False, 0)
    solver = _solver(seed, seconds, None if left is None else left * DET_TIME_PER_ITERATION)
    best = [fam.score(hint)]

    class _Callback(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            chosen = [i for i in range(fam.n_sets) if self.boolean_value(z[i])]
            s = fam.score(chosen)
            if s > best[0]:
                best[0] = s
                b = self.best_objective_bound / SCALE + offset + slack
                it = int(self.deterministic_time / DET_TIME_PER_ITERATION)
                emit(Found(watch.elapsed(), chosen, s, b, it))

    if not stopper.attach(solver):
        return Final(None, False, 0)
    status = solver.solve(m, _Callback())
    iters = int(solver.deterministic_time / DET_TIME_PER_ITERATION)
    watch.tick(iters)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        b = solver.best_objective_bound / SCALE + offset + slack
        return Final(b, False, iters)  # scaled optimum: the bound keeps the slack
    return Final(None, False, iters)
