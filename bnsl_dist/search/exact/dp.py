"""Exact structure learning by dynamic programming over variable subsets.

The best DAG over a set S decomposes into a sink v (a variable with no child in S)
that takes its best cached parent set inside S \\ {v}, plus the best DAG over S \\ {v}:

    F(S) = max_{v in S} F(S \\ {v}) + BestScore(v, S \\ {v}),   F(∅) = 0.

Filling F over all 2^m subsets in increasing integer order (subsets come first) and
backtracking the chosen sinks gives an optimal DAG. ``BestScore(v, U)`` is either read
from a per-variable table of the best cached set inside every U (m·2^(m-1) int32
entries; used for m <= 20 when variables have many sets) or found by scanning v's sets
best-first until one fits (pruned caches, larger m).

Memory: 9·2^m bytes (F and the sinks) — 0.3 GB at m = 25, the default limit.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, register
from bnsl_dist.search.exact import _dp_kernels as K

__all__ = ["exact_dp", "exact_dp_indices", "ExactDP", "MAX_DP_VARS"]

#: Largest number of variables the DP accepts by default.
MAX_DP_VARS = 25
_TABLE_MAX_VARS = 20
_TABLE_MIN_SETS_PER_VAR = 64


def _local_sets(cache: ParentSetCache, variables: Sequence[int]
                ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64],
                           NDArray[np.int64]]:
    """Per local variable its cached sets inside ``variables``, as bit masks, best first."""
    pos = {v: i for i, v in enumerate(variables)}
    starts = np.zeros(len(variables) + 1, dtype=np.int64)
    masks: list[int] = []
    scores: list[float] = []
    gidx: list[int] = []
    for i, v in enumerate(variables):
        for g in range(int(cache.offsets[v]), int(cache.offsets[v + 1])):
            mask = 0
            for p in cache.par_flat[cache.par_offsets[g]:cache.par_offsets[g + 1]]:
                j = pos.get(int(p))
                if j is None:
                    break
                mask |= 1 << j
            else:
                masks.append(mask)
                scores.append(float(cache.scores[g]))
                gidx.append(g)
        starts[i + 1] = len(masks)
    return (starts, np.asarray(masks, dtype=np.int64), np.asarray(scores, dtype=np.float64),
            np.asarray(gidx, dtype=np.int64))


def _check_variables(cache: ParentSetCache, variables: Sequence[int] | None,
                     max_vars: int) -> list[int]:
    vs = list(range(cache.n_vars)) if variables is None else [int(v) for v in variables]
    if len(set(vs)) != len(vs):
        raise InvalidConfigError("exact_dp: variables listed twice")
    bad = [v for v in vs if not 0 <= v < cache.n_vars]
    if bad:
        raise InvalidConfigError(f"exact_dp: variable indices {bad} out of range "
                                 f"0..{cache.n_vars - 1}")
    if len(vs) > max_vars:
        raise InvalidConfigError(f"exact_dp: {len(vs)} variables exceed the limit of "
                                 f"{max_vars} (2^n subsets); use an ILP or A* solver")
    return vs


def exact_dp_indices(cache: ParentSetCache, variables: Sequence[int] | None = None, *,
                     max_vars: int = MAX_DP_VARS, method: str = "auto"
                     ) -> tuple[float, NDArray[np.int64]]:
    """Like :func:`exact_dp`, returning the chosen sets' global indices in the cache.

    ``method`` is "table", "scan" or "auto" (tables for up to 20 variables with more
    than 64 sets each on average, else scanning).
    """
    vs = _check_variables(cache, variables, max_vars)
    m = len(vs)
    if m == 0:
        return 0.0, np.zeros(0, dtype=np.int64)
    if method not in ("auto", "table", "scan"):
        raise InvalidConfigError(f"exact_dp: unknown method {method!r}")
    starts, masks, scores, gidx = _local_sets(cache, vs)
    if np.any(starts[1:] == starts[:-1]):  # pragma: no cover - a cache always holds ∅
        raise InvalidConfigError("exact_dp: a variable has no parent set inside the subset")
    f = np.empty(1 << m, dtype=np.float64)
    last = np.empty(1 << m, dtype=np.int8)
    # Scanning stops at the first fitting set, which is cheap on pruned caches; tables
    # pay off when variables have many sets (unpruned caches).
    dense = len(masks) > _TABLE_MIN_SETS_PER_VAR * m
    use_table = method == "table" or (method == "auto" and m <= _TABLE_MAX_VARS and dense)
    if use_table:
        tab = K.best_set_tables(starts, masks, scores, m)
        K.order_dp_table(tab, scores, m, f, last)
    else:
        K.order_dp_scan(starts, masks, scores, m, f, last)
    rows = np.full(m, -1, dtype=np.int64)
    K.backtrack(starts, masks, last, m, rows)
    return float(f[-1]), gidx[rows]


def exact_dp(cache: ParentSetCache, variables: Sequence[int] | None = None, *,
             max_vars: int = MAX_DP_VARS) -> tuple[float, list[tuple[int, ...]]]:
    """The optimal DAG over ``variables`` using only cached sets inside them.

    Parameters
    ----------
    cache : ParentSetCache
        Candidate parent sets with scores.
    variables : sequence of int, optional
        The variables (original indices) to learn a DAG over; default all. Only the
        cached sets whose members all lie in ``variables`` are used.
    max_vars : int
        Refuse larger problems (the DP needs 2^m time and memory).

    Returns
    -------
    score : float
        The optimum (sum of the chosen local scores).
    parents : list of tuple of int
        For each listed variable, in the order given, its parent set (original indices).

    Raises
    ------
    InvalidConfigError
        Unknown or repeated variables, or more than ``max_vars`` of them.

    Examples
    --------
    >>> from bnsl_dist.cache import ParentSetCache
    >>> c = ParentSetCache.from_lists([[((), -10.0), ((1,), -4.0)],
    ...                                [((), -8.0), ((0,), -5.0)]])
    >>> exact_dp(c)
    (-12.0, [(1,), ()])

    References
    ----------
    T. Silander, P. Myllymäki, "A simple approach for finding the globally optimal
    Bayesian network structure", UAI 2006, §3 (sinks and best parent sets over
    subsets).
    """
    score, chosen = exact_dp_indices(cache, variables, max_vars=max_vars)
    return score, [cache.parents_at(int(g)) for g in chosen]


@register("dp")
class ExactDP:
    """Exact optimizer: dynamic programming over all subsets (n <= ``max_vars``).

    Yields a single incumbent, the optimum, with ``bound`` equal to its score. The DP
    cannot stop half-way: the budget is not consulted (it runs in 2^n·n steps).

    References
    ----------
    T. Silander, P. Myllymäki, UAI 2006, §3.
    """

    name = "dp"
    exact = True

    def __init__(self, *, max_vars: int = MAX_DP_VARS) -> None:
        if isinstance(max_vars, bool) or not isinstance(max_vars, int | np.integer) \
                or max_vars < 1:  # where the spec is read, not in each run
            raise InvalidConfigError(f"dp: max_vars must be an integer >= 1, got "
                                     f"{max_vars!r}")
        self.max_vars = max_vars

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield the optimum (bound = score); return 1 (one iteration)."""
        watch = budget.stopwatch()
        score, chosen = exact_dp_indices(cache, max_vars=self.max_vars)
        watch.tick()
        dag = cache.dag_from_indices(chosen)
        yield Incumbent(watch.elapsed(), score, dag, iterations=watch.iterations, bound=score)
        return watch.iterations
