"""Quasi-determinism screening (qds-BNSL): a stage before any registered structure learner.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray
from pydantic import Field, NonNegativeFloat, model_validator

from bnsl_dist._rng import as_rng
from bnsl_dist._spec import Spec, make
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.scores.entropy import conditional_entropy_matrix
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.search.base import Budget, Incumbent, make_optimizer

__all__ = ["qd_forest", "epsilon_for_root_fraction", "ScreeningSpec", "Screening", "screen",
           "QDSResult", "qds_learn"]


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


class ScreeningSpec(Spec):
    """The screening stage: ε directly, or ε_x with x the fraction of variables kept
    as roots (default x = 0.5, the paper's msnbc experiment). The forest is scored
    with the cache's score.

    Examples
    --------
    >>> ScreeningSpec().root_fraction
    0.5
    """

    epsilon: NonNegativeFloat | None = Field(
        default=None, description="qds screening: quasi-determinism threshold (nats).")
    root_fraction: float | None = Field(
        default=None, ge=0.0, le=1.0, description="qds screening: choose epsilon so that "
        "this fraction of variables stay roots (0.5 when screening without epsilon).")

    @model_validator(mode="before")
    @classmethod
    def _one(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if data.get("epsilon") is not None and data.get("root_fraction") is not None:
                raise ValueError("give epsilon or root_fraction, not both")
            if data.get("epsilon") is None and data.get("root_fraction") is None:
                return {**data, "root_fraction": 0.5}
        return data


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
        parents: list[list[int]] = [[] for _ in self.names]
        for i, p in enumerate(self.forest_parent):
            if p >= 0:
                parents[i] = [int(p)]
        for a, ps in enumerate(root_dag.parents):
            parents[self.roots[a]] = [self.roots[b] for b in ps]
        return DAG.from_parents(parents, self.names)

    def lift_incumbent(self, inc: Incumbent, elapsed: float | None = None) -> Incumbent:
        """An incumbent of the roots' search as one over all variables (score and bound
        plus the forest's score; a treewidth certificate of the roots' DAG is dropped)."""
        return Incumbent(elapsed=inc.elapsed if elapsed is None else elapsed,
                         score=self.forest_score + inc.score, dag=self.lift(inc.dag),
                         iterations=inc.iterations,
                         bound=None if inc.bound is None else self.forest_score + inc.bound,
                         info={**{k: v for k, v in inc.info.items() if k != "certificate"},
                               "epsilon": self.epsilon, "n_roots": len(self.roots)})

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "n_roots": len(self.roots), "roots": self.roots,
                "forest_parent": [int(p) for p in self.forest_parent],
                "forest_score": self.forest_score, "seconds": self.seconds}


def screen(data: CategoricalData, spec: ScreeningSpec | None = None, *, score: str = "bic",
           ess: float = 1.0, **settings: Any) -> Screening:
    """Compute H_D(X_i|X_j), choose ε (``spec.epsilon``, or ε_x for
    ``spec.root_fraction``) and the forest F_ε, scored with ``score``.
    ``settings`` are the spec's fields as keywords (instead of ``spec``)."""
    if spec is None:
        spec = make(ScreeningSpec, settings)
    elif settings:
        raise InvalidConfigError("give either a ScreeningSpec or keyword settings, not both")
    t0 = time.perf_counter()
    h = conditional_entropy_matrix(data)
    eps = (float(spec.epsilon) if spec.epsilon is not None
           else epsilon_for_root_fraction(h, data.arities, float(spec.root_fraction or 0.0)))
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


def qds_learn(data: CategoricalData, budget: Budget, rng: np.random.Generator | int | None, *,
              cache_builder: CacheBuilder, inner: str = "asobs-ent-last",
              inner_params: Mapping[str, Any] | None = None, k: int | None = None,
              epsilon: float | None = None, root_fraction: float | None = None,
              score: str = "bic", ess: float = 1.0) -> QDSResult:
    """Algorithm 2 (qds-BNSL) in one call: screen, build the roots' cache with
    ``cache_builder``, run the registered optimizer ``inner`` (with ``inner_params`` and
    treewidth bound ``k`` where it takes one) on it (for what is left
    of the budget's seconds) and lift its DAGs back. Incumbents' ``elapsed`` include
    screening and the cache build. The pipeline runs the same stages with the cache as
    its own task (:mod:`bnsl_dist.pipeline`)."""
    gen = as_rng(rng)
    t0 = time.perf_counter()
    scr = screen(data, epsilon=epsilon, root_fraction=root_fraction, score=score, ess=ess)
    t_screen = time.perf_counter() - t0
    cache = cache_builder(data.select(scr.roots))
    t_cache = time.perf_counter() - t0 - t_screen
    optimizer = make_optimizer(inner, k, **dict(inner_params or {}))
    remaining = None if budget.seconds is None else max(1e-3, budget.seconds -
                                                        (time.perf_counter() - t0))
    inner_budget = Budget(seconds=remaining, max_iterations=budget.max_iterations)
    incumbents = [scr.lift_incumbent(inc, time.perf_counter() - t0)
                  for inc in optimizer.run(cache, inner_budget, gen)]
    if not incumbents:
        raise InvalidConfigError(f"inner learner {inner!r} produced no DAG within the budget")
    best = incumbents[-1]
    return QDSResult(dag=best.dag, score=best.score, epsilon=scr.epsilon,
                     forest_parent=scr.forest_parent, roots=scr.roots, incumbents=incumbents,
                     seconds={"screening": t_screen, "cache": t_cache,
                              "total": time.perf_counter() - t0})
