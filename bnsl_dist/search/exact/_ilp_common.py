"""Shared solving machinery of the OR-Tools structure learners (``ilp``, ``twilp``).

- the solutions a solver thread finds (:class:`Found`) and how its solve ended
  (:class:`Final`); :func:`generated_row`, a MathOpt callback row;
- :func:`stream_thread` / :func:`hold_back`: run a blocking solve on a thread, stream
  what its callbacks emit (the solver thread only collects), and turn it into strictly
  improving incumbents whose last one carries the final bound; :func:`incumbents`: a
  solver's whole run of incumbents from its greedy start and such a stream;
- the SCIP solves (``ilp``'s lazy encoding, ``twilp``): :func:`scip_stream` runs one on
  a thread with a :class:`ScipStop`, :func:`scip_callback` is the start their
  callbacks share (stop at the deadline, or when their own incumbent is proved
  optimal), :func:`solve_scip` the solve itself (parameters, hint, callback events).

The cache as families of bit masks and the DAGs built from it (repair, orders) live in
:mod:`bnsl_dist.search.exact._ilp_families`; cluster separation in
:mod:`bnsl_dist.search.exact._ilp_separation`.
"""

from __future__ import annotations

import dataclasses
import datetime
import queue
import threading
import time
from collections.abc import Callable, Generator, Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np

from bnsl_dist.search.base import Incumbent, Stopwatch

_T = TypeVar("_T")

__all__ = ["Found", "Final", "generated_row", "stream_thread", "hold_back", "incumbents",
           "ScipStop", "StepCosts", "STEP_COSTS", "load_mathopt", "scip_parameters",
           "scip_stream", "scip_callback", "solve_scip", "model_rows", "SEED_MAX"]

#: Solver seeds are drawn from ``0 .. SEED_MAX - 1``.
SEED_MAX = 2**31 - 1
#: Seconds kept for building incumbents after SCIP stops.
TIME_MARGIN = 0.03


class Found(NamedTuple):
    """A feasible solution met by a solver thread (raw; turned into an Incumbent later)."""

    elapsed: float
    chosen: list[int]
    score: float
    bound: float | None
    iterations: int
    extra: Any = None


class Final(NamedTuple):
    """How a solve ended: the proven bound, whether optimality was proved, iterations."""

    bound: float | None
    optimal: bool
    iterations: int


def generated_row(variables: Sequence[Any], coefs: Sequence[float] | float, lb: float,
                  ub: float, lazy: bool) -> Any:
    """A MathOpt callback row ``lb <= sum coef * var <= ub`` (built without expressions,
    which cost several microseconds per term)."""
    from ortools.math_opt.python import mathopt

    if isinstance(coefs, float | int):
        terms = dict.fromkeys(variables, float(coefs))
    else:
        terms = {}
        for var, c in zip(variables, coefs, strict=True):
            terms[var] = terms.get(var, 0.0) + float(c)
    return mathopt.GeneratedConstraint(terms=terms, lower_bound=lb, upper_bound=ub,
                                       is_lazy=lazy)


class ScipStop:
    """Stops a GSCIP solve at the budget's deadline, or when :meth:`stop` is called (the
    consumer closed the stream), from the solve's own callbacks: a callback that sees
    :meth:`due` sets ``CallbackResult.terminate`` (and a node callback then adds no more
    cuts, which would keep SCIP re-solving the LP).

    OR-Tools' ``SolveInterrupter`` does not reach GSCIP in the OR-Tools this project
    uses (9.15): its event handler fails to register (the "SCIPcatchEvent does not
    support variable or row change events ... Error <-9>" line) and an interrupted solve
    ran on to SCIP's own time limit. The callbacks run at each node's LP solutions and
    at each new solution; between them (presolve, one long LP) only SCIP's time limit,
    which the solvers still set, stops the solve. Closing an ILP stream 2 s into a 30 s
    run: 25.4 s -> 8.4 s on a 2,000-variable cache (r0; few callbacks in its root LP),
    12.6 s -> 0.7 s on the 30-variable cache of ``tests/search/test_scip_stop.py``.
    """

    def __init__(self, deadline: Callable[[], float], costs: StepCosts | None = None) -> None:
        self._remaining = deadline
        self._stopped = threading.Event()
        self.costs = STEP_COSTS if costs is None else costs

    def stop(self) -> None:
        self._stopped.set()

    def due(self) -> bool:
        return self._stopped.is_set() or self._remaining() <= 0.0

    def remaining(self) -> float:
        """Seconds left before the deadline (0 once stopped)."""
        return 0.0 if self._stopped.is_set() else self._remaining()

    def attempt(self, step: str, size: int, work: Callable[[], _T]) -> _T | None:
        """``work()``, timed into :attr:`costs`; ``None`` (not run) when the stop is due
        or the step's estimated cost exceeds the time left before the deadline."""
        if self.due() or self.costs.estimate(step, size) > self._remaining():
            return None
        t0 = time.perf_counter()
        out = work()
        self.costs.record(step, size, time.perf_counter() - t0)
        return out


class StepCosts:
    """Per-process estimates of what the solvers' callback steps cost, in seconds per
    unit of size (parent sets), so that a callback starts a step only when it can end
    before the deadline.

    The Python separation and LP-repair steps of one node callback cost seconds on
    large caches (r0 of the 2018 ASOBS grid, 2,000 variables / 19,052 sets: cluster
    separation ~1.8 s, LP repairs ~0.6 s) and SCIP cannot interrupt them: a 3.6 s ILP
    run took 4.2-4.7 s. A step never timed in this process is assumed to cost
    ``defaults[step]`` (else ``default_rate``) per set; after each run the rate is ``max(observed, decay *
    previous)`` (a slow outlier fades out over a few calls), and an estimate is the rate
    times the size times ``factor``. Grid workers run many cells in one process, so the
    estimates carry over between runs. Runs on fewer than ``min_size`` units are not
    recorded: their time is mostly a fixed cost, not a rate (a grid worker's warm-up
    loads a model of ~60 rows into SCIP in 0.03-0.1 s: as a rate, the load of cr52's
    318,000 rows would be estimated at minutes and never started, so never timed again).
    """

    def __init__(self, default_rate: float = 1e-4, factor: float = 1.5,
                 decay: float = 0.5, defaults: dict[str, float] | None = None,
                 min_size: int = 10_000) -> None:
        self.default_rate = default_rate
        self.defaults = dict(_DEFAULT_RATES if defaults is None else defaults)
        self.factor = factor
        self.decay = decay
        self.min_size = min_size
        self._rates: dict[str, float] = {}
        self._lock = threading.Lock()

    def rate(self, step: str) -> float:
        """Seconds per unit of size of ``step`` (the default when never timed)."""
        with self._lock:
            return self._rates.get(step, self.defaults.get(step, self.default_rate))

    def estimate(self, step: str, size: int) -> float:
        """The seconds ``step`` is expected to take on ``size`` units (with the factor)."""
        return self.factor * self.rate(step) * max(1, int(size))

    def record(self, step: str, size: int, seconds: float) -> None:
        """Account for one timed run of ``step`` on ``size`` units (ignored below
        ``min_size`` units)."""
        if size < self.min_size:
            return
        obs = max(0.0, seconds) / max(1, int(size))
        with self._lock:
            prev = self._rates.get(step)
            self._rates[step] = obs if prev is None else max(obs, self.decay * prev)


#: First estimates of the solvers' steps, in seconds per unit of size. The ILP's node
#: steps (per parent set), timed on r0 with the machine loaded: LP repairs 0.6 s, cluster
#: separation 1.8 s for 19,052 sets. Building the models before SCIP starts (per parent
#: set for the ILP; per set and arc variable for TWILP) and loading them into SCIP (per
#: variable and row), timed on cr52's test-split cache of the 2018 grid (889 variables,
#: 317,115 sets) with the machine loaded: the ILP's model 7.8 s (2.5e-5 s per set), its
#: load 10.2 s (3.2e-5 s per row); TWILP's model 3.4-4.4e-4 s per set and arc variable
#: (the cache's first 100 and 250 variables, k = 2 and 5: 3.9-31.9 s). SCIP's return
#: after its time limit (see :func:`solve_scip`): 10.1 s on cr52's validation split,
#: 3.1e-5 s per row. TWILP's one-pass cut of a DAG to treewidth k (per parent set,
#: :func:`~bnsl_dist.search.exact._twilp_heuristics.chordal_cut`): 0.45 s on BLIP's
#: cache of cwebkb (839 variables, 457,986 sets, k = 2; loaded machine).
_DEFAULT_RATES = {"ilp.repair": 3e-5, "ilp.separate": 1e-4, "ilp.model": 2.5e-5,
                  "twilp.model": 4e-4, "scip.load": 3e-5, "scip.overshoot": 3e-5,
                  "twilp.cut": 1e-6}

#: The estimates the solvers share within a process.
STEP_COSTS = StepCosts()


def stream_thread(work: Callable[[Callable[[Any], None]], Any],
                  stop: Callable[[], None]) -> Generator[Any, None, Any]:
    """Run ``work(emit)`` on a thread; yield every object it emits, in order.

    The generator's return value (``result = yield from stream_thread(...)``) is what
    ``work`` returned; an exception raised by ``work`` is re-raised here. Closing the
    generator early calls ``stop()`` (interrupt the solver) and waits for the thread.
    """
    q: queue.Queue[tuple[int, Any]] = queue.Queue()

    def target() -> None:
        try:
            q.put((1, work(lambda item: q.put((0, item)))))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the consumer
            q.put((2, exc))

    t = threading.Thread(target=target, name="bnsl-ilp-solver", daemon=True)
    t.start()
    try:
        while True:
            kind, item = q.get()
            if kind == 0:
                yield item
            elif kind == 1:
                return item
            else:
                raise item
    finally:
        if t.is_alive():
            stop()
            t.join()


def hold_back(stream: Generator[Found, None, Final], make: Callable[[Found], Any],
              finish: Callable[[Any, Final], Any], best: float = -np.inf
              ) -> Generator[Any, None, Final | None]:
    """Turn a solver's :class:`Found` stream into strictly improving incumbents.

    Each incumbent is held back until the next one arrives (or the solve ends), so that
    the last one carries the final proven bound: ``make(found)`` builds an incumbent,
    ``finish(incumbent, final)`` updates the last one. Returns the :class:`Final` of the
    stream.
    """
    pending = None
    final: Final | None = None
    try:
        while True:
            try:
                found = next(stream)
            except StopIteration as stop:
                final = stop.value
                break
            if not np.isfinite(best) or found.score > best + 1e-9 * max(1.0, abs(best)):
                best = found.score
                if pending is not None:
                    yield pending
                pending = make(found)
    finally:
        stream.close()
    if pending is not None:
        yield finish(pending, final) if final is not None else pending
    return final


def _finish(inc: Incumbent, final: Final) -> Incumbent:
    """The last incumbent with the solve's final bound (optimal when it meets it)."""
    bounds = [b for b in (inc.bound, final.bound) if b is not None]
    bound = max(min(bounds, default=inc.score), inc.score)
    if final.optimal or bound - inc.score <= 1e-9 * max(1.0, abs(inc.score)):
        return dataclasses.replace(inc, bound=inc.score, info=dict(inc.info, optimal=True))
    return dataclasses.replace(inc, bound=bound)


def _prepend(first: Found, stream: Generator[Found, None, Final]
             ) -> Generator[Found, None, Final]:
    yield first
    return (yield from stream)


def incumbents(first: Found, upper: float, stream: Callable[[], Generator[Found, None, Final]],
               make: Callable[[Found, float], Incumbent]
               ) -> Generator[Incumbent, None, int | None]:
    """An exact solver's incumbents: ``first`` (its greedy start), then each strictly
    better solution of ``stream()``, the last with the final bound (see :func:`hold_back`).

    ``make(found, bound)`` builds an incumbent whose ``info`` has ``"optimal": False``;
    ``bound`` is the solver's bound clipped to ``[found.score, upper]``. When ``first``
    reaches ``upper`` (every variable has its best set) it is optimal and no solve
    runs. Returns the solve's iteration count (``None`` when none ran).
    """
    def build(found: Found) -> Incumbent:
        bound = upper if found.bound is None else min(upper, float(found.bound))
        return make(found, max(bound, found.score))

    if first.score >= upper:
        yield _finish(build(first), Final(upper, True, 0))
        return None
    final = yield from hold_back(_prepend(first, stream()), build, _finish)
    return None if final is None else final.iterations


def load_mathopt() -> Any:
    """OR-Tools MathOpt (imported on first use)."""
    from ortools.math_opt.python import mathopt

    return mathopt


def scip_parameters(seed: int, seconds: float | None, nodes: int | None) -> Any:
    """Single-threaded exact SCIP parameters (no relative gap tolerance)."""
    mo = load_mathopt()
    p = mo.SolveParameters(threads=1, random_seed=seed, relative_gap_tolerance=0.0,
                           absolute_gap_tolerance=1e-9)
    if seconds is not None:
        p.time_limit = datetime.timedelta(seconds=max(0.01, seconds))
    if nodes is not None:
        p.node_limit = max(1, int(nodes))
    return p


def scip_stream(watch: Stopwatch, solve: Callable[[Callable[[Found], None], ScipStop], Final]
                ) -> Generator[Found, None, Final]:
    """What ``solve(emit, stopper)`` emits, run on a thread (:func:`stream_thread`); the
    :class:`ScipStop` is due at the deadline of ``watch`` or when the stream is closed."""
    stopper = ScipStop(watch.remaining)
    return stream_thread(lambda emit: solve(emit, stopper), stopper.stop)


def scip_callback(stopper: ScipStop, node_cuts: bool, best: Sequence[float],
                  body: Callable[[Any, Any], None]) -> Callable[[Any], Any]:
    """A SCIP (MathOpt) callback: it terminates the solve when ``stopper`` is due, or when
    SCIP's dual bound proves ``best[0]`` (the solver's own best score, unknown to SCIP)
    optimal, and otherwise runs ``body(data, result)``: on every solution, and at a
    node's LP point only with ``node_cuts`` and the stop not due (more cuts would keep
    SCIP re-solving the LP)."""
    mo = load_mathopt()

    def cb(data: Any) -> Any:
        out = mo.CallbackResult()
        out.terminate = stopper.due()
        if data.solution is None or (data.event == mo.Event.MIP_NODE
                                     and (out.terminate or not node_cuts)):
            return out
        if data.mip_stats.dual_bound <= best[0] + 1e-9 * max(1.0, abs(best[0])):
            out.terminate = True  # our own incumbent is proved optimal
        body(data, out)
        return out

    return cb


def model_rows(model: Any) -> int:
    """Variables plus linear constraints of a MathOpt model: the size SCIP loads."""
    return int(model.get_num_variables() + model.get_num_linear_constraints())


def solve_scip(model: Any, watch: Stopwatch, stopper: ScipStop, seed: int,
               hint: dict[Any, float], node_cuts: bool, cb: Callable[[Any], Any],
               last: Callable[[dict[Any, float], int], None]) -> Final:
    """Solve ``model`` by SCIP (single-threaded, seeded, from the solution ``hint``)
    within the budget of ``watch``, with ``cb`` at every new solution and node LP point
    (lazy constraints; cuts with ``node_cuts``); ``last(values, nodes)`` sees SCIP's
    final solution. Callbacks and results carry the non-zero values only.

    The model is loaded into SCIP first (MathOpt's ``IncrementalSolver``), a step
    SCIP's clock leaves out and nothing can interrupt: only when its estimated cost
    (``stopper``'s ``"scip.load"``, per variable and row) fits before the deadline. SCIP's
    time limit is then what is left of the budget after the load, less
    :data:`TIME_MARGIN` for building incumbents and less the estimated overshoot
    (``"scip.overshoot"``, per row): the seconds a solve stopped by its time limit
    returned after it, SCIP freed included. Its clock leaves out work before and after
    the search, and it checks the limit only between steps of its presolve: cr52's
    validation-split cache (322,473 sets; loaded machine) ran its presolve 0.9 s past a
    15.7 s limit, and the call returned 6.4 s after SCIP's clock stopped, then 2.8 s to
    free it. A load that does not fit, or nothing left after it: no solve
    (``Final(None, False, 0)``; the caller keeps its start).
    """
    mo = load_mathopt()
    rows = model_rows(model)
    solver = stopper.attempt("scip.load", rows,
                             lambda: mo.IncrementalSolver(model, mo.SolverType.GSCIP))
    if solver is None:
        return Final(None, False, 0)
    t0 = time.perf_counter()
    with solver:
        seconds = None if watch.budget.seconds is None else (
            watch.remaining() - TIME_MARGIN - stopper.costs.estimate("scip.overshoot", rows))
        if (seconds is not None and seconds <= 0.0) or stopper.due():
            return Final(None, False, 0)
        nonzero = mo.SparseVectorFilter(skip_zero_values=True)
        res = solver.solve(
            params=scip_parameters(seed, seconds, watch.iterations_left()),
            model_params=mo.ModelSolveParameters(
                solution_hints=[mo.SolutionHint(variable_values=hint)],
                variable_values_filter=nonzero),
            callback_reg=mo.CallbackRegistration(
                events={mo.Event.MIP_SOLUTION, mo.Event.MIP_NODE},  # MIP_NODE: stops
                add_lazy_constraints=True, add_cuts=node_cuts,
                mip_solution_filter=nonzero, mip_node_filter=nonzero),
            cb=cb)
    if seconds is not None and res.termination.limit == mo.Limit.TIME:
        stopper.costs.record("scip.overshoot", rows,
                             time.perf_counter() - t0 - max(0.01, seconds))
    nodes = int(res.solve_stats.node_count)
    if res.has_primal_feasible_solution():
        last(res.variable_values(), nodes)
    bound = res.termination.objective_bounds.dual_bound
    optimal = res.termination.reason == mo.TerminationReason.OPTIMAL
    return Final(float(bound) if np.isfinite(bound) else None, optimal, nodes)
