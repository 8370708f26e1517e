"""POPS constraints: the parent relation graph, its SCC subproblems, top-p POPS.

The potentially optimal parent sets (POPS, the cached sets) of a variable X name its
*potential parents*: every Y in some cached set of X. The parent relation graph has an
arc Y -> X for each. Its strongly connected components, in topological order, split the
order-graph search into independent subproblems: the variables of component i choose
parents among the components before it and themselves only, so the optimum is the sum of
the subproblem optima (worst case sum 2^|scc| nodes instead of 2^n). Within a
subproblem, sets whose members inside the component are a superset of a better set's are
never chosen (members in earlier components are always available); dropping them can
split the component further, so the split is repeated to a fixpoint.

The top-p POPS constraint keeps, for each variable, only the cached sets inside the
union of its p best sets; :func:`top_p_bound` bounds how far the optimum of that smaller
problem can be from the unconstrained optimum.

References
----------
X. Fan, B. Malone, C. Yuan, "Finding optimal Bayesian network structures with
constraints learned from data", UAI 2014, sections 3 (POPS constraints, recursive
constraints) and 4 (top-p POPS and the suboptimality bound, eq. 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG, strongly_connected_components
from bnsl_dist.search.exact import _astar_kernels as K

__all__ = [
    "MAX_LOCAL_VARS",
    "Subproblem",
    "parent_relation_graph",
    "graph_density",
    "decompose",
    "top_p_cache",
    "TopPBound",
    "top_p_bound",
]

#: Most variables one order-graph subproblem may hold (nodes are uint64 bitmasks).
MAX_LOCAL_VARS = 63


def parent_relation_graph(cache: ParentSetCache) -> list[list[int]]:
    """Potential parents of each variable: members of any of its cached sets (sorted)."""
    return [cache.candidates(v) for v in range(cache.n_vars)]


def graph_density(parents: Sequence[Sequence[int]]) -> float:
    """Arcs divided by the n(n-1) possible arcs."""
    n = len(parents)
    return sum(len(p) for p in parents) / (n * (n - 1)) if n > 1 else 0.0


@dataclass(eq=False)
class Subproblem:
    """One order-graph search: variables ``variables`` (local index = position) placed
    after every variable of ``before`` (the earlier subproblems).

    ``set_mask``/``set_cost``/``set_off`` hold each local variable's undominated sets as
    local bitmasks with reduced costs (ascending; see :mod:`._astar_kernels`);
    ``base_cost`` = sum over the variables of their best cost (minus best log-score), so
    a path of reduced cost c costs ``base_cost + c``.
    """

    variables: NDArray[np.int64]
    before: NDArray[np.int64]
    set_off: NDArray[np.int64]
    set_mask: NDArray[np.uint64]
    set_cost: NDArray[np.float64]
    par: NDArray[np.uint64]
    chi: NDArray[np.uint64]
    base_cost: float
    tol: float

    @property
    def m(self) -> int:
        return len(self.variables)

    @property
    def full(self) -> np.uint64:
        return np.uint64((1 << self.m) - 1)

    def local_parents(self) -> list[list[int]]:
        """Local parent relation graph (after the local dominance pruning)."""
        return [[p for p in range(self.m) if (int(self.par[x]) >> p) & 1] for x in range(self.m)]


def _local_problem(cache: ParentSetCache, variables: Sequence[int],
                   before: Sequence[int]) -> Subproblem:
    n = cache.n_vars
    m = len(variables)
    local_pos = np.full(n, -2, dtype=np.int64)
    local_pos[np.asarray(before, dtype=np.int64)] = -1
    local_pos[np.asarray(variables, dtype=np.int64)] = np.arange(m)
    offs = [0]
    masks: list[NDArray[np.uint64]] = []
    costs: list[NDArray[np.float64]] = []
    base = 0.0
    scale = 0.0
    for v in variables:
        lo, hi = int(cache.offsets[v]), int(cache.offsets[v + 1])
        mk = np.empty(hi - lo, dtype=np.uint64)
        valid = np.empty(hi - lo, dtype=np.bool_)
        K.local_masks(cache.par_offsets, cache.par_flat, lo, hi, local_pos, mk, valid)
        sc = cache.scores[lo:hi][valid]
        mk = mk[valid]
        keep = np.empty(len(mk), dtype=np.bool_)
        K.undominated(mk, keep)  # cache rows are best-first
        best = float(cache.scores[lo])
        c = best - sc[keep]
        masks.append(mk[keep])
        costs.append(c)
        offs.append(offs[-1] + int(keep.sum()))
        base -= best
        scale += float(c.max()) if len(c) else 0.0
    set_mask = np.concatenate(masks) if masks else np.zeros(0, np.uint64)
    set_cost = np.concatenate(costs) if costs else np.zeros(0, np.float64)
    set_off = np.asarray(offs, dtype=np.int64)
    par = np.zeros(m, dtype=np.uint64)
    for x in range(m):
        seg = set_mask[set_off[x]:set_off[x + 1]]
        par[x] = np.bitwise_or.reduce(seg) if len(seg) else np.uint64(0)
    chi = np.zeros(m, dtype=np.uint64)
    for x in range(m):
        for p in range(m):
            if (int(par[x]) >> p) & 1:
                chi[p] |= np.uint64(1 << x)
    return Subproblem(np.asarray(variables, dtype=np.int64), np.asarray(before, dtype=np.int64),
                      set_off, set_mask, set_cost, par, chi, base,
                      1e-12 * (1.0 + scale + abs(base)))


def decompose(cache: ParentSetCache, split: bool = True,
              max_vars: int = MAX_LOCAL_VARS) -> list[Subproblem]:
    """The order-graph search as independent subproblems.

    With ``split`` the variables are split into the SCCs of the parent relation graph,
    in topological order, repeatedly (a component is split again when its locally
    undominated sets give a finer parent relation graph); without it there is one
    subproblem over all variables.

    Raises
    ------
    InvalidConfigError
        A subproblem with more than ``max_vars`` variables (nodes are 64-bit masks).

    Examples
    --------
    >>> c = ParentSetCache.from_lists([[((1,), -1.0), ((), -3.0)],   # x0 <- x1
    ...                                [((0,), -1.0), ((), -3.0)],   # x1 <- x0
    ...                                [((0,), -1.0), ((), -2.0)]])  # x2 <- x0
    >>> [s.variables.tolist() for s in decompose(c)]
    [[0, 1], [2]]
    """
    n = cache.n_vars
    if not split:
        if n > max_vars:
            raise InvalidConfigError(
                f"order-graph search without POPS constraints handles at most {max_vars} "
                f"variables; this cache has {n} (use constraints='on' or 'recursive')")
        return [_local_problem(cache, list(range(n)), [])] if n else []
    out: list[Subproblem] = []
    placed: list[int] = []
    pending = strongly_connected_components(parent_relation_graph(cache))
    pending.reverse()  # a stack: next component on top
    while pending:
        comp = pending.pop()
        if len(comp) > max_vars:
            raise InvalidConfigError(
                f"the parent relation graph has a strongly connected component of "
                f"{len(comp)} variables; the order-graph search handles at most {max_vars} "
                f"(try the top-p POPS constraint, p=...)")
        sub = _local_problem(cache, comp, placed)
        parts = strongly_connected_components(sub.local_parents()) if len(comp) > 1 else [[0]]
        if len(parts) > 1:
            for part in reversed(parts):
                pending.append([comp[i] for i in part])
            continue
        out.append(sub)
        placed.extend(comp)
    return out


def top_p_cache(cache: ParentSetCache, p: int) -> ParentSetCache:
    """The top-p POPS constraint: per variable keep only the sets inside the union of
    the members of its ``p`` best sets (the empty set always stays).

    Examples
    --------
    >>> c = ParentSetCache.from_lists([[((1,), -1.0), ((2,), -2.0), ((), -3.0)],
    ...                                [((), -1.0)], [((), -1.0)]])
    >>> top_p_cache(c, 1).sets_of(0)
    [((1,), -1.0), ((), -3.0)]
    """
    if p < 1:
        raise InvalidConfigError(f"top-p POPS needs p >= 1, got {p}")
    lists = []
    for v in range(cache.n_vars):
        sets = cache.sets_of(v)
        allowed: set[int] = set()
        for ps, _ in sets[:p]:
            allowed.update(ps)
        lists.append([(ps, s) for ps, s in sets if allowed.issuperset(ps)])
    return ParentSetCache.from_lists(lists, names=cache.names, arities=cache.arities,
                                     meta=dict(cache.meta, top_p=p), entropies=cache.entropies)


@dataclass(frozen=True, slots=True)
class TopPBound:
    """How far a network learned under the top-p POPS constraint can be from optimal.

    ``upper_bound`` is a proven upper bound on the best log-score of the *unconstrained*
    problem; ``epsilon`` = score(N) / upper_bound (>= 1 for negative log-scores; 1 proves
    N optimal). ``epsilon_paper`` is eq. 5 of Fan et al. as printed, kept for comparison:
    it is not a valid bound in general (see :func:`top_p_bound`).
    """

    epsilon: float
    epsilon_paper: float
    upper_bound: float
    n_pruned_sets: int


def _ratio(score: float, bound: float) -> float:
    if score == bound:
        return 1.0
    if bound < 0 and score < 0:
        return score / bound
    return float("inf")


def top_p_bound(cache: ParentSetCache, pruned: ParentSetCache, dag: DAG,
                kept_bound: float | None = None,
                rest_bound: Callable[[int], float] | None = None) -> TopPBound:
    """Suboptimality bound of a network ``dag`` learned on ``pruned`` (a top-p cache).

    Any DAG over the full cache either uses only kept sets, and then scores at most
    ``kept_bound`` (the optimum of the pruned problem, or a proven upper bound on it;
    default: the score of ``dag``, i.e. ``dag`` is optimal there), or gives some variable
    i a pruned set, and then scores at most s_i(P'_i) + R_i, where P'_i is i's best
    pruned set and R_i = ``rest_bound(i)`` bounds the total local score of all the
    other variables in any DAG (default: the sum of their best scores; a pattern
    database gives a tighter one). The upper bound is the larger of the two (taken equal
    to the score when within 1e-9 relative: rounding of sums in another order).

    The paper's eq. 5, adapted to log-scores, is
    ``epsilon_paper = s(N) / sum_i (s_i(P_i) + d_i)``, d_i = max(0, s_i(P'_i) - s_i(P_i)).
    It is not a bound: with x0 <- {x1} or {} (-1, -10), x1 <- {x0}, {x2} or {}
    (-1, -8, -10), x2 <- {} (0) and p = 1, the pruned optimum x0 <- {}, x1 <- {x0} (-11)
    gets epsilon_paper = 1, yet x1 <- {x2}, x0 <- {x1} scores -9.

    References
    ----------
    Fan, Malone & Yuan, UAI 2014, section 4, eq. 5.
    """
    n = cache.n_vars
    score = cache.score_dag(dag)
    kept = score if kept_bound is None else float(kept_bound)
    best = np.array([cache.best_score(v) for v in range(n)])
    total_best = float(best.sum())
    upper = kept
    denom_paper = 0.0
    n_pruned = 0
    for v in range(n):
        sv = cache.score_of(v, dag.parents[v])
        pruned_scores = [s for ps, s in cache.sets_of(v) if not pruned.has_set(v, ps)]
        n_pruned += len(pruned_scores)
        if not pruned_scores:
            denom_paper += sv
            continue
        best_pruned = max(pruned_scores)
        denom_paper += sv + max(0.0, best_pruned - sv)
        rest = total_best - best[v] if rest_bound is None else rest_bound(v)
        upper = max(upper, best_pruned + rest)
    if upper - score <= 1e-9 * max(1.0, abs(score)):
        upper = score  # equal up to rounding (a DAG cannot beat a proven bound)
    return TopPBound(_ratio(score, upper), _ratio(score, denom_paper), upper, n_pruned)
