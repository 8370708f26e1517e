"""Seeded random Bayesian networks: the project's stand-in for BNgenerator.

A random topological order is drawn first. The variable at position ``t`` of the order
gets an in-degree ``d = min(u, t)``, ``u`` uniform on ``0 .. max_indegree`` (so the
first ``max_indegree`` variables of the order take their largest in-degree more often
than the others), and ``d`` distinct parents among its ``t`` predecessors, at log-uniform distances back in the order
(``P(distance = k)`` roughly proportional to ``1/k``), so that most arcs are local —
as in the sparse, locally connected graphs BNgenerator produces — with a long tail of
distant ones. Arities are uniform on ``arity_range``; every CPT row is an independent
symmetric Dirichlet draw.

References
----------
J. S. Ide and F. G. Cozman, "Random generation of Bayesian networks", SBIA 2002,
section 3 (the generator the papers used; this module reproduces its role, not its
Markov chain). M. Scanagatta et al., "Approximate structure learning for large Bayesian
networks", Machine Learning 107, 2018, section 5 (the r0-r14 benchmark networks).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._rng import as_rng
from bnsl_dist.data.dataset import MAX_STATES
from bnsl_dist.exceptions import DataError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["random_network", "random_dag"]


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < low:
        raise DataError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _pick_parents(t: int, d: int, gen: np.random.Generator) -> NDArray[np.int64]:
    """``d`` distinct distances in ``1..t``, log-uniform, in the order they were drawn."""
    if d == 0:
        return np.zeros(0, dtype=np.int64)
    if 2 * d >= t:  # dense corner: exact weighted draw without replacement
        k = np.arange(1, t + 1, dtype=np.float64)
        w = np.log1p(1.0 / k)
        return gen.choice(np.arange(1, t + 1), size=d, replace=False, p=w / w.sum())
    chosen: list[int] = []
    while len(chosen) < d:
        draws = np.floor(np.exp(gen.random(2 * d) * np.log(t + 1.0))).astype(np.int64)
        for x in draws.tolist():
            x = min(max(x, 1), t)
            if x not in chosen:
                chosen.append(x)
                if len(chosen) == d:
                    break
    return np.array(chosen, dtype=np.int64)


def random_dag(n_vars: int, max_indegree: int, rng: np.random.Generator | int | None = None,
               *, arities: NDArray[np.int64] | None = None,
               max_parent_configs: int | None = None) -> DAG:
    """A random DAG with local structure (see the module docstring).

    With ``arities`` and ``max_parent_configs``, a candidate parent is skipped when it
    would make the product of the parents' arities exceed ``max_parent_configs``.

    Examples
    --------
    >>> dag = random_dag(30, 3, rng=0)
    >>> dag.n_vars, dag.max_indegree() <= 3, dag == random_dag(30, 3, rng=0)
    (30, True, True)
    """
    n = _check_int("n_vars", n_vars, 1)
    kmax = _check_int("max_indegree", max_indegree, 0)
    if max_parent_configs is not None and arities is None:
        raise DataError("max_parent_configs needs the arities")
    gen = as_rng(rng)
    order = gen.permutation(n)
    degrees = gen.integers(0, kmax + 1, size=n)
    parents: list[tuple[int, ...]] = [()] * n
    for t in range(1, n):
        d = min(int(degrees[t]), t)
        dist = _pick_parents(t, d, gen)
        cand = order[t - dist]
        if max_parent_configs is not None and arities is not None:
            keep, q = [], 1
            for p in cand.tolist():
                if q * int(arities[p]) <= max_parent_configs:
                    keep.append(p)
                    q *= int(arities[p])
            parents[order[t]] = tuple(sorted(keep))
        else:
            parents[order[t]] = tuple(sorted(cand.tolist()))
    return DAG.from_parents(parents, [f"X{i}" for i in range(n)])


def random_network(n_vars: int, max_indegree: int, arity_range: tuple[int, int] = (2, 4),
                   concentration: float = 1.0,
                   rng: np.random.Generator | np.random.SeedSequence | int | None = None,
                   max_parent_configs: int | None = None) -> BayesianNetwork:
    """A seeded random discrete Bayesian network.

    Parameters
    ----------
    n_vars : int
        Number of variables (named ``X0 .. X{n_vars-1}``; states ``s0, s1, ...``).
    max_indegree : int
        Largest number of parents of any variable.
    arity_range : (int, int)
        Inclusive range of the number of states of each variable (uniform).
    concentration : float
        Parameter of the symmetric Dirichlet of each CPT row (1 = uniform over the
        simplex; small values give near-deterministic rows).
    rng : Generator, SeedSequence, int or None
        Randomness; the same seed gives the same network.
    max_parent_configs : int, optional
        Upper bound on the number of parent configurations of each variable.

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    DataError
        Bad parameters.

    References
    ----------
    J. S. Ide and F. G. Cozman, "Random generation of Bayesian networks", SBIA 2002,
    section 3; M. Scanagatta et al., Machine Learning 107, 2018, section 5.

    Examples
    --------
    >>> net = random_network(50, 3, rng=7)
    >>> net.n_vars, net.dag.max_indegree() <= 3
    (50, True)
    >>> sorted(set(net.arities.tolist())) <= [2, 3, 4]
    True
    """
    n = _check_int("n_vars", n_vars, 1)
    _check_int("max_indegree", max_indegree, 0)
    try:
        lo, hi = (int(x) for x in arity_range)
    except (TypeError, ValueError):
        raise DataError(f"arity_range must be two integers, got {arity_range!r}") from None
    if not 1 <= lo <= hi <= MAX_STATES:
        raise DataError(f"arity_range must satisfy 1 <= low <= high <= {MAX_STATES}, "
                        f"got {arity_range!r}")
    if not np.isfinite(concentration) or concentration <= 0:
        raise DataError(f"concentration must be positive, got {concentration!r}")
    if max_parent_configs is not None:
        _check_int("max_parent_configs", max_parent_configs, 1)
    gen = as_rng(rng)
    arities = gen.integers(lo, hi + 1, size=n).astype(np.int64)
    dag = random_dag(n, max_indegree, gen, arities=arities,
                     max_parent_configs=max_parent_configs)
    sizes = [int(np.prod(arities[list(ps)], dtype=np.int64)) * int(arities[v])
             for v, ps in enumerate(dag.parents)]
    gamma = gen.standard_gamma(float(concentration), size=int(sum(sizes)))
    cpts = []
    start = 0
    for v in range(n):
        r = int(arities[v])
        block = gamma[start:start + sizes[v]].reshape(-1, r)
        start += sizes[v]
        tot = block.sum(axis=1, keepdims=True)
        zero = tot[:, 0] <= 0.0  # all draws underflowed (tiny concentration): uniform row
        if zero.any():
            block[zero] = 1.0
            tot[zero] = r
        cpts.append(block / tot)
    states = tuple(tuple(f"s{k}" for k in range(int(a))) for a in arities)
    return BayesianNetwork(dag, states, tuple(cpts))
