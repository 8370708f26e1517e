"""Quasi-determinism screening (qds-BNSL) around any registered structure learner.

Algorithm 1 finds the simplest ε-quasi-deterministic forest F_ε: candidate parents
π_ε(i) = {j : H_D(X_i|X_j) <= ε}; 2-cycles are broken keeping the direction with the
smaller conditional entropy; each variable keeps the candidate with the fewest states.
Algorithm 2 runs an inner learner on the roots R(F_ε) only and returns F_ε ∪ G_R.

Beyond the paper: the paper breaks only 2-cycles, which leaves longer cycles possible in
principle (i <- j <- k <- i); we break each remaining cycle at its weakest arc (largest
H(child|parent)), so the output is always a forest.

References
----------
Rahier, Marié, Girard, Forbes. "Individual treatment effect... / Screening Bayesian
network structure learning with quasi-determinism", 2018, §3 (Algorithms 1 and 2).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._rng import as_rng
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.scores.entropy import conditional_entropy_matrix
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.search.base import Budget, Incumbent, make_optimizer, register

__all__ = ["qd_forest", "epsilon_for_root_fraction", "Screening", "screen", "QDSResult", "QDS",
           "qds_learn"]


def qd_forest(cond_entropy: NDArray[np.float64], arities: NDArray[np.int64],
              epsilon: float) -> NDArray[np.int64]:
    """Algorithm 1: the parent of each variable in F_ε (-1 for roots).

    Parameters
    ----------
    cond_entropy : ndarray (n, n)
        ``cond_entropy[i, j] = H_D(X_i | X_j)``.
    arities : ndarray (n,)
    epsilon : float
        Threshold of quasi-determinism (nats).
    """
    h = np.asarray(cond_entropy, dtype=np.float64)
    n = h.shape[0]
    cand = h <= epsilon + 1e-12
    np.fill_diagonal(cand, False)
    # 2-cycles: j in π(i) and i in π(j); keep j -> i when H(i|j) <= H(j|i).
    both = np.triu(cand & cand.T, 1)
    ii, jj = np.nonzero(both)
    keep_j_to_i = h[ii, jj] <= h[jj, ii]
    cand[jj[keep_j_to_i], ii[keep_j_to_i]] = False
    cand[ii[~keep_j_to_i], jj[~keep_j_to_i]] = False
    parent = np.full(n, -1, dtype=np.int64)
    ar = np.asarray(arities, dtype=np.int64)
    for i in range(n):
        js = np.nonzero(cand[i])[0]
        if js.size:
            # fewest states; ties: smaller H(X_i|X_j), then smaller index
            order = np.lexsort((js, h[i, js], ar[js]))
            parent[i] = js[order[0]]
    _break_cycles(parent, h)
    return parent


def _break_cycles(parent: NDArray[np.int64], h: NDArray[np.float64]) -> None:
    """Each node has at most one parent: cut every cycle at its weakest arc."""
    n = parent.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 unvisited, 1 on current path, 2 done
    for s in range(n):
        path = []
        v = s
        while v != -1 and state[v] == 0:
            state[v] = 1
            path.append(v)
            v = int(parent[v])
        if v != -1 and state[v] == 1:  # found a cycle starting at v
            cyc = path[path.index(v):]
            weakest = max(cyc, key=lambda c: h[c, parent[c]])
            parent[weakest] = -1
        for u in path:
            state[u] = 2


def epsilon_for_root_fraction(cond_entropy: NDArray[np.float64], arities: NDArray[np.int64],
                              fraction: float) -> float:
    """ε_x: the smallest ε whose forest has at most ⌊x·n⌋ roots (binary search over the
    distinct conditional entropies; the root count falls as ε grows)."""
    if not 0.0 <= fraction <= 1.0:
        raise InvalidConfigError(f"root fraction must be in [0, 1], got {fraction}")
    n = cond_entropy.shape[0]
    target = int(np.floor(fraction * n))
    off = cond_entropy[~np.eye(n, dtype=bool)]
    values = np.unique(np.concatenate([[0.0], off]))
    lo, hi = 0, values.shape[0] - 1
    if int((qd_forest(cond_entropy, arities, values[hi]) < 0).sum()) > target:
        return float(values[hi])
    while lo < hi:
        mid = (lo + hi) // 2
        if int((qd_forest(cond_entropy, arities, values[mid]) < 0).sum()) <= target:
            hi = mid
        else:
            lo = mid + 1
    return float(values[lo])


CacheBuilder = Callable[[CategoricalData], ParentSetCache]


@dataclass
class Screening:
    """Algorithm 1 applied to a data set: the forest, its roots and their data."""

    epsilon: float
    forest_parent: NDArray[np.int64]
    roots: list[int]
    forest_score: float  # sum of the forest children's local scores
    names: tuple[str, ...]
    seconds: float

    def lift(self, root_dag: DAG) -> DAG:
        """F_ε ∪ G_R: the roots' DAG (over roots 0..m-1) joined with the forest."""
        return _merge(self.forest_parent, self.roots, root_dag, self.names)


def screen(data: CategoricalData, *, epsilon: float | None = None,
           root_fraction: float | None = None, score: str = "bic",
           ess: float = 1.0) -> Screening:
    """Compute H_D(X_i|X_j), choose ε (directly or as ε_x) and the forest F_ε."""
    if epsilon is not None and root_fraction is not None:
        raise InvalidConfigError("give epsilon or root_fraction, not both")
    if epsilon is None and root_fraction is None:
        root_fraction = 0.5
    if epsilon is not None and epsilon < 0:
        raise InvalidConfigError(f"epsilon must be >= 0, got {epsilon}")
    t0 = time.perf_counter()
    h = conditional_entropy_matrix(data)
    eps = (float(epsilon) if epsilon is not None
           else epsilon_for_root_fraction(h, data.arities, float(root_fraction)))  # type: ignore[arg-type]
    parent = qd_forest(h, data.arities, eps)
    roots = [int(v) for v in np.nonzero(parent < 0)[0]]
    scorer = LocalScorer(data, score, ess)
    forest_score = float(sum(scorer.score(i, [int(parent[i])])
                             for i in range(data.n_vars) if parent[i] >= 0))
    return Screening(eps, parent, roots, forest_score, data.names, time.perf_counter() - t0)


@dataclass
class QDSResult:
    """Outcome of qds-BNSL: the DAG, the forest, the roots and the timings."""

    dag: DAG
    score: float
    epsilon: float
    forest_parent: NDArray[np.int64]
    roots: list[int]
    seconds: dict[str, float] = field(default_factory=dict)
    incumbents: list[Incumbent] = field(default_factory=list)


@register("qds")
class QDS:
    """qds-BNSL: screen quasi-deterministic arcs, learn the rest with ``inner``.

    It needs the data (the screening statistics and the roots' own cache), so it runs
    through :meth:`learn` (``bnsl-dist learn DATA --algorithm qds``); :meth:`run` on a
    ready cache is refused.

    Parameters
    ----------
    inner : str
        A registered optimizer run on the roots (default "asobs-ent").
    inner_params : mapping, optional
        Its hyper-parameters.
    epsilon, root_fraction : float, optional
        ε directly, or as ε_x with x the fraction of variables kept as roots
        (default: root_fraction 0.5 as in the paper's msnbc experiment).
    score : {"bic", "bdeu"}
        The score reported for the whole DAG (the roots' cache should use the same).
    """

    name: ClassVar[str] = "qds"
    exact: ClassVar[bool] = False
    needs_data: ClassVar[bool] = True

    def __init__(self, *, inner: str = "asobs-ent", inner_params: Mapping[str, Any] | None = None,
                 epsilon: float | None = None, root_fraction: float | None = None,
                 score: str = "bic", ess: float = 1.0) -> None:
        self.inner = inner
        self.inner_params = dict(inner_params or {})
        self.epsilon = epsilon
        self.root_fraction = root_fraction
        self.score = score
        self.ess = ess

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Iterator[Incumbent]:
        raise InvalidConfigError("qds screens the data itself: call QDS.learn(data, ...) or "
                                 "`bnsl-dist learn DATA --algorithm qds`, not on a cache")

    def learn(self, data: CategoricalData, budget: Budget, rng: np.random.Generator, *,
              cache_builder: CacheBuilder) -> Iterator[Incumbent]:
        """Screen, build the roots' cache with ``cache_builder``, run the inner learner.

        Yields incumbents over the whole variable set (forest ∪ roots' DAG); their
        ``elapsed`` includes screening and the cache build.
        """
        res = qds_learn(data, budget, rng, cache_builder=cache_builder, inner=self.inner,
                        inner_params=self.inner_params, epsilon=self.epsilon,
                        root_fraction=self.root_fraction, score=self.score, ess=self.ess)
        yield from res.incumbents


def qds_learn(data: CategoricalData, budget: Budget, rng: np.random.Generator | int | None, *,
              cache_builder: CacheBuilder, inner: str = "asobs-ent",
              inner_params: Mapping[str, Any] | None = None, epsilon: float | None = None,
              root_fraction: float | None = None, score: str = "bic",
              ess: float = 1.0) -> QDSResult:
    """Algorithm 2 (qds-BNSL). See :class:`QDS`."""
    gen = as_rng(rng)
    t0 = time.perf_counter()
    scr = screen(data, epsilon=epsilon, root_fraction=root_fraction, score=score, ess=ess)
    parent, roots, eps, forest_score = scr.forest_parent, scr.roots, scr.epsilon, scr.forest_score
    t_screen = time.perf_counter() - t0
    sub = data.select(roots)
    cache = cache_builder(sub)
    t_cache = time.perf_counter() - t0 - t_screen
    optimizer = make_optimizer(inner, **dict(inner_params or {}))
    remaining = None if budget.seconds is None else max(1e-3, budget.seconds -
                                                        (time.perf_counter() - t0))
    inner_budget = Budget(seconds=remaining, max_iterations=budget.max_iterations)
    incumbents: list[Incumbent] = []
    best = None
    for inc in optimizer.run(cache, inner_budget, gen):
        full = scr.lift(inc.dag)
        total = forest_score + inc.score
        best = (full, total)
        incumbents.append(Incumbent(elapsed=time.perf_counter() - t0, score=total, dag=full,
                                    iterations=inc.iterations,
                                    info={"epsilon": eps, "n_roots": len(roots)}))
    if best is None:
        raise InvalidConfigError(f"inner learner {inner!r} produced no DAG within the budget")
    return QDSResult(dag=best[0], score=best[1], epsilon=eps, forest_parent=parent,
                     roots=roots, incumbents=incumbents,
                     seconds={"screening": t_screen, "cache": t_cache,
                              "total": time.perf_counter() - t0})


def _merge(parent: NDArray[np.int64], roots: list[int], root_dag: DAG,
           names: tuple[str, ...]) -> DAG:
    parents: list[list[int]] = [[] for _ in names]
    for i, p in enumerate(parent):
        if p >= 0:
            parents[i] = [int(p)]
    for a, ps in enumerate(root_dag.parents):
        parents[roots[a]] = [roots[b] for b in ps]
    return DAG.from_parents(parents, names)
