"""Exact BNSL by integer linear programming on OR-Tools, GOBNILP-style.

Binary family variables ``z[S, v]`` (v takes the cached parent set S),
``sum_S z[S, v] = 1`` for every v, maximise ``sum score(v, S) z[S, v]``; acyclicity by
cluster constraints

    sum_{v in C} sum_{S : S ∩ C = ∅} z[S, v] >= 1        for every cluster C,

which are exponentially many and therefore added lazily. Three encodings:

``"lazy"`` (default)
    Branch-and-cut in SCIP through OR-Tools MathOpt: cluster constraints are lazy
    constraints separated from every integral candidate (its strongly connected
    components and a cycle in each), and user cuts separated heuristically from
    fractional LP points at the nodes; an ASOBS-style repair of each node's LP point
    (the feasibility heuristic of TWILP §5.2 without the treewidth part) gives
    incumbents. (They are not passed back to SCIP: MathOpt's suggested solutions crash
    GSCIP in OR-Tools 9.15.) The fastest by far (see ``workflows/benchmarks/ilp.py``).
``"cuts"``
    CP-SAT re-solved from scratch with the cluster constraints found so far, cuts
    added between solves from the cycles of each integral optimum, warm-started
    with the previous solution as a hint. One iteration = one cut round.
``"order"``
    CP-SAT with an order (ranking) encoding, no cuts: an integer position per
    variable, ``arc[u, v] => pos[u] < pos[v]`` and ``z[S, v] => arc[u, v]`` for u in S.

Anytime: a greedy ASOBS DAG is reported first, then each better solution with the
solver's proven upper bound (``Incumbent.bound``; relative gap ``Incumbent.gap``).
Solver callbacks run on the solver thread and only collect; incumbents are streamed
to the generator through a queue (see :func:`stream_thread`).

Budgets: ``seconds`` maps onto the solver's time limit. ``max_iterations`` is a
deterministic limit: branch-and-bound nodes for ``"lazy"`` (SCIP ``node_limit``),
cut rounds for ``"cuts"``, and units of 0.1 CP-SAT deterministic time for
``"order"``. Solvers run single-threaded with a seed drawn from ``rng``, so a seed
and an iteration budget reproduce a run exactly.

References
----------
J. Cussens, "Bayesian network learning with cutting planes", UAI 2011, §3-§4.
M. Bartlett, J. Cussens, "Integer linear programming for the Bayesian network
structure learning problem", Artificial Intelligence 244, 2017, §3-§5.
T. Jaakkola et al., "Learning Bayesian network structure using LP relaxations",
AISTATS 2010, §3 (cluster constraints).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, Stopwatch, register
from bnsl_dist.search.exact._ilp_common import (
    SEED_MAX,
    Final,
    Found,
    ScipStop,
    generated_row,
    incumbents,
    load_mathopt,
    scip_callback,
    scip_stream,
    solve_scip,
    stream_thread,
)
from bnsl_dist.search.exact._ilp_families import (
    Families,
    greedy_dag,
    lp_order,
    order_search,
    repair,
    start_deadline,
)
from bnsl_dist.search.exact._ilp_separation import (
    fractional_clusters,
    integer_clusters,
    subip_clusters,
)

__all__ = ["ILP", "solve_clique_ilp", "ENCODINGS"]

#: The encodings of :class:`ILP`.
ENCODINGS = ("lazy", "cuts", "order")


def _lp_repairs(fam: Families, x: NDArray[np.float64], tol: float = 1e-6) -> list[list[int]]:
    """DAGs from an LP point: two as in TWILP §5.2 (each variable's sets preferred by LP
    value, or by score among those with a non-zero value; repaired by ASOBS), and one
    by ASOBS + swaps on the Eades-Lin-Smyth order of the LP's arc weights."""
    prefs_val: list[list[int]] = []
    prefs_score: list[list[int]] = []
    conf = np.zeros(fam.n)
    for v in range(fam.n):
        lo, hi = fam.start[v], fam.start[v + 1]
        xs = x[lo:hi]
        nz = [lo + int(j) for j in np.nonzero(xs > tol)[0]]
        prefs_score.append(nz)  # sets are stored best first
        prefs_val.append(sorted(nz, key=lambda i: (-x[i], i)))
        conf[v] = xs.max() if hi > lo else 0.0
    order = [int(v) for v in np.lexsort((np.arange(fam.n), -conf))]
    by_order = order_search(fam, np.asarray([lp_order(fam, x, tol)]))
    return [repair(fam, order, prefs_val), repair(fam, order, prefs_score), by_order]


def _family_model(fam: Families) -> Any:
    """The assignment model (one set per variable), built as a proto: MathOpt's
    per-variable Python calls cost ~10 s on a cache of 300,000 sets. Variable ids are
    the global set indices. The objective is relative to each variable's best score
    (better conditioned) plus a constant offset."""
    from ortools.math_opt import model_pb2

    mo = load_mathopt()
    m = fam.n_sets
    mp = model_pb2.ModelProto(name="bnsl_ilp")
    mp.variables.ids.extend(range(m))
    mp.variables.lower_bounds.extend(np.zeros(m).tolist())
    mp.variables.upper_bounds.extend(np.ones(m).tolist())
    mp.variables.integers.extend([True] * m)
    rel = fam.scores - fam.best[fam.owner]
    nz = np.nonzero(rel)[0]
    mp.objective.maximize = True
    mp.objective.offset = float(fam.best.sum())
    mp.objective.linear_coefficients.ids.extend(nz.tolist())
    mp.objective.linear_coefficients.values.extend(rel[nz].tolist())
    mp.linear_constraints.ids.extend(range(fam.n))
    mp.linear_constraints.lower_bounds.extend([1.0] * fam.n)
    mp.linear_constraints.upper_bounds.extend([1.0] * fam.n)
    mat = mp.linear_constraint_matrix  # row-major: sets are grouped by variable
    mat.row_ids.extend(fam.owner.tolist())
    mat.column_ids.extend(range(m))
    mat.coefficients.extend([1.0] * m)
    return mo.Model.from_model_proto(mp)


def _scip_lazy(fam: Families, watch: Stopwatch, seed: int, hint: Sequence[int],
               node_cuts: bool, emit: Callable[[Found], None], stopper: ScipStop,
               subip: bool = False) -> Final:
    """Branch-and-cut in SCIP (MathOpt): lazy cluster constraints, fractional cuts.

    The model is built only when its estimated cost (``"ilp.model"``, per parent set)
    fits before the deadline, as SCIP's load after it (:func:`solve_scip`): neither can
    be interrupted, and on large caches they take seconds (cr52, 317,115 sets: 5-26 s
    together on a loaded machine). Else no solve: the caller keeps its start."""
    mo = load_mathopt()
    model = stopper.attempt("ilp.model", fam.n_sets, lambda: _family_model(fam))
    if model is None:
        return Final(None, False, 0)
    var = model.get_variable  # variable i is set i (created on demand: 300k cost seconds)

    def cluster_row(cmask: int, lazy: bool) -> Any:
        idx, lb, ub = fam.cluster_row(cmask)
        return generated_row([var(i) for i in idx], 1.0, lb, ub, lazy)

    best = [fam.score(hint)]

    def record(chosen: list[int], bound: float | None, nodes: int) -> None:
        s = fam.score(chosen)
        if s > best[0]:
            best[0] = s
            emit(Found(watch.elapsed(), chosen, s, bound, nodes))

    def values(sol: dict[Any, float]) -> NDArray[np.float64]:
        x = np.zeros(fam.n_sets)
        for v, val in sol.items():  # callbacks and results carry the non-zero values only
            x[v.id] = val
        return x

    def body(data: Any, out: Any) -> None:
        x = values(data.solution)
        stats = data.mip_stats
        nodes = int(stats.explored_nodes)
        if data.event == mo.Event.MIP_SOLUTION:
            chosen = fam.chosen_from_values(x)
            cuts = integer_clusters(fam, chosen)
            for c in cuts:
                out.generated_constraints.append(cluster_row(c, True))
            if not cuts:
                record(chosen, stats.dual_bound, nodes)
        else:  # MIP_NODE: the LP-repair heuristic and fractional separation, each
            # only when its estimated cost fits before the deadline (seconds each on
            # large caches, and SCIP cannot interrupt them)
            for chosen in stopper.attempt("ilp.repair", fam.n_sets,
                                          lambda: _lp_repairs(fam, x)) or ():
                record(chosen, stats.dual_bound, nodes)
            frac = stopper.attempt("ilp.separate", fam.n_sets,
                                   lambda: fractional_clusters(fam, x))
            if frac == [] and subip:  # the heuristic ran and found nothing
                frac = stopper.attempt("ilp.subip", fam.n_sets,
                                       lambda: subip_clusters(fam, x))
            for c in frac or ():
                out.generated_constraints.append(cluster_row(c, False))

    def last(sol: dict[Any, float], nodes: int) -> None:
        chosen = fam.chosen_from_values(values(sol))
        if not integer_clusters(fam, chosen):
            record(chosen, None, nodes)

    # A partial hint (the chosen sets). SCIP completes a partial solution only when at
    # most 85% of its variables are unknown (heuristics/completesol/maxunknownrate):
    # on large caches it ignores this one (cr52: 99.7% unknown) and starts without it.
    return solve_scip(model, watch, stopper, seed, {var(int(i)): 1.0 for i in hint},
                      node_cuts, scip_callback(stopper, node_cuts, best, body), last)


@register("ilp")
class ILP:
    """Exact ILP structure learning (cluster constraints) on OR-Tools; anytime with gap.

    Parameters
    ----------
    encoding : {"lazy", "cuts", "order"}
        Branch-and-cut in SCIP with lazy cluster constraints (default), CP-SAT with
        cuts added between solves, or CP-SAT with an order encoding. See the module
        docstring.
    node_cuts : bool
        ``"lazy"`` only: separate cluster cuts from fractional LP points at the nodes and
        run the LP-repair heuristic there (default True).
    subip : bool
        ``"lazy"`` only: when the heuristic separation finds no violated cluster at a
        fractional point, solve Cussens's sub-IP (CP-SAT) for one (default False: in
        our measurements the heuristic alone closes the gap faster).
    n_greedy : int
        ASOBS passes (random orders) for the first incumbent and the solver's hint.

    Notes
    -----
    ``max_iterations`` counts SCIP nodes (``"lazy"``), cut rounds (``"cuts"``) or
    0.1 units of CP-SAT deterministic time (``"order"``). The last incumbent's
    ``bound`` is the final proven bound; ``info["optimal"]`` says whether optimality
    was proved.

    Examples
    --------
    >>> from bnsl_dist.cache import ParentSetCache
    >>> from bnsl_dist.search import Budget
    >>> c = ParentSetCache.from_lists([[((), -10.0), ((1,), -4.0)],
    ...                                [((), -8.0), ((0,), -5.0)]])
    >>> incs = list(ILP().run(c, Budget(seconds=10), np.random.default_rng(0)))
    >>> incs[-1].score, incs[-1].dag.parents, incs[-1].info["optimal"]
    (-12.0, ((1,), ()), True)

    References
    ----------
    J. Cussens, UAI 2011, §3-§4; M. Bartlett, J. Cussens, AIJ 244, 2017, §3-§5.
    """

    name = "ilp"
    exact = True

    def __init__(self, *, encoding: str = "lazy", node_cuts: bool = True, subip: bool = False,
                 n_greedy: int = 8) -> None:
        if encoding not in ENCODINGS:
            raise InvalidConfigError(f"ilp: unknown encoding {encoding!r}; choose from "
                                     f"{list(ENCODINGS)}")
        if int(n_greedy) < 1:
            raise InvalidConfigError(f"ilp: n_greedy must be >= 1, got {n_greedy}")
        self.encoding = encoding
        self.node_cuts = node_cuts
        self.subip = subip
        self.n_greedy = n_greedy

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int | None]:
        watch = budget.stopwatch()
        fam = Families(cache)
        seed = int(rng.integers(0, SEED_MAX))
        upper = float(fam.best.sum())

        def make(found: Found, bound: float) -> Incumbent:
            return Incumbent(found.elapsed, found.score, cache.dag_from_indices(found.chosen),
                             iterations=found.iterations, bound=bound,
                             info={"encoding": self.encoding, "optimal": False})

        hint = greedy_dag(fam, rng, self.n_greedy, start_deadline(watch))
        first = Found(watch.elapsed(), hint, fam.score(hint), upper, 0)
        return (yield from incumbents(first, upper, lambda: self._stream(fam, watch, seed, hint),
                                      make))

    def _stream(self, fam: Families, watch: Stopwatch, seed: int,
                hint: list[int]) -> Generator[Found, None, Final]:
        if self.encoding == "lazy":
            return scip_stream(watch, lambda emit, stopper: _scip_lazy(
                fam, watch, seed, hint, self.node_cuts, emit, stopper, self.subip))
        from bnsl_dist.search.exact import _ilp_cpsat as C

        work = C.cpsat_cuts if self.encoding == "cuts" else C.cpsat_order
        stopper = C.Stopper()
        return stream_thread(lambda emit: work(fam, watch, seed, hint, emit, stopper),
                             stopper.stop)


def solve_clique_ilp(cache: ParentSetCache, variables: Sequence[int],
                     time_limit: float | None = None) -> tuple[float, list[tuple[int, ...]]]:
    """The optimal DAG over ``variables`` (only cached sets inside them), by the ILP.

    The same contract as :func:`bnsl_dist.search.exact.dp.exact_dp`, for subsets too
    large for the DP (k-G / k-MAX initial cliques with k + 1 > ~20).

    Parameters
    ----------
    cache : ParentSetCache
    variables : sequence of int
        Original variable indices, distinct.
    time_limit : float, optional
        Seconds; when it ends before optimality is proved, the best DAG found is
        returned (always a valid DAG: the solver starts from a greedy one).

    Returns
    -------
    score : float
    parents : list of tuple of int
        For each listed variable, in the order given, its parent set (original indices).

    Raises
    ------
    InvalidConfigError
        Unknown or repeated variables, or a non-positive time limit.

    Examples
    --------
    >>> from bnsl_dist.cache import ParentSetCache
    >>> c = ParentSetCache.from_lists([[((), -10.0), ((1,), -4.0)],
    ...                                [((), -8.0), ((0,), -5.0)],
    ...                                [((), -1.0), ((0,), -0.5)]])
    >>> solve_clique_ilp(c, [1, 0])
    (-12.0, [(), (1,)])

    References
    ----------
    J. Cussens, UAI 2011; docs/ALGORITHMS.md §6 (ILP for small subproblems).
    """
    vs = [int(v) for v in variables]
    if len(set(vs)) != len(vs):
        raise InvalidConfigError("solve_clique_ilp: variables listed twice")
    bad = [v for v in vs if not 0 <= v < cache.n_vars]
    if bad:
        raise InvalidConfigError(f"solve_clique_ilp: variable indices {bad} out of range "
                                 f"0..{cache.n_vars - 1}")
    if time_limit is not None and not time_limit > 0:
        raise InvalidConfigError(f"solve_clique_ilp: time_limit must be positive, "
                                 f"got {time_limit}")
    if not vs:
        return 0.0, []
    sub, keep = cache.restrict(vs)
    budget = Budget(seconds=time_limit) if time_limit is not None else Budget(
        max_iterations=2**62)
    incs = list(ILP().run(sub, budget, np.random.default_rng(0)))
    last = incs[-1]
    return last.score, [tuple(sorted(keep[p] for p in ps)) for ps in last.dag.parents]
