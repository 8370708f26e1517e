"""Brute-force oracles for inference tests: enumerate every joint assignment.

Nothing here uses the junction tree or its kernels: the joint is the product of CPT
entries read row by row (project CPT layout: first parent fastest), for networks small
enough to enumerate (a few thousand joint states).
"""

from __future__ import annotations

import itertools

import numpy as np

from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["joint_table", "brute_prob_evidence", "brute_marginals", "brute_mpe",
           "random_network"]


def joint_table(net: BayesianNetwork) -> tuple[np.ndarray, np.ndarray]:
    """(assignments (S, n), probabilities (S,)) over every joint assignment."""
    ar = [len(s) for s in net.states]
    xs = np.array(list(itertools.product(*[range(r) for r in ar])), dtype=np.int64)
    p = np.ones(len(xs))
    for v in range(net.n_vars):
        j = np.zeros(len(xs), dtype=np.int64)
        radix = 1
        for q in net.dag.parents[v]:
            j += xs[:, q] * radix
            radix *= ar[q]
        p *= net.cpts[v][j, xs[:, v]]
    return xs, p


def _consistent(xs: np.ndarray, ev: np.ndarray) -> np.ndarray:
    obs = ev >= 0
    return np.all((xs[:, obs] == ev[obs]), axis=1)


def brute_prob_evidence(net: BayesianNetwork, ev: np.ndarray) -> float:
    xs, p = joint_table(net)
    return float(p[_consistent(xs, ev)].sum())


def brute_marginals(net: BayesianNetwork, ev: np.ndarray) -> list[np.ndarray]:
    xs, p = joint_table(net)
    m = _consistent(xs, ev)
    pe = p[m].sum()
    out = []
    for v in range(net.n_vars):
        r = len(net.states[v])
        out.append(np.bincount(xs[m, v], weights=p[m], minlength=r) / pe)
    return out


def brute_mpe(net: BayesianNetwork, ev: np.ndarray) -> tuple[float, np.ndarray]:
    """(max P(x, e), the set of maximising assignments as rows)."""
    xs, p = joint_table(net)
    m = _consistent(xs, ev)
    pm = np.where(m, p, -1.0)
    best = pm.max()
    return float(best), xs[np.isclose(pm, best, rtol=1e-12, atol=0)]


def random_network(n_vars: int, rng: np.random.Generator, *, max_parents: int = 3,
                   max_arity: int = 3, density: float = 0.6, zeros: float = 0.0
                   ) -> BayesianNetwork:
    """A random DAG (parents among earlier variables of a random order) with Dirichlet
    CPTs; ``zeros`` is the chance of each CPT entry being set to 0 (deterministic bits)."""
    perm = rng.permutation(n_vars)
    parents: list[list[int]] = [[] for _ in range(n_vars)]
    for i in range(1, n_vars):
        cand = perm[:i]
        k = min(len(cand), int(rng.integers(0, max_parents + 1)))
        if rng.random() < density and k:
            parents[perm[i]] = sorted(int(x) for x in rng.choice(cand, size=k, replace=False))
    dag = DAG.from_parents(parents)
    ar = rng.integers(2, max_arity + 1, size=n_vars)
    cpts = []
    for v in range(n_vars):
        q = int(np.prod([ar[p] for p in dag.parents[v]]))
        t = rng.dirichlet(np.ones(ar[v]) * 0.7, size=q)
        if zeros:
            t = np.where(rng.random(t.shape) < zeros, 0.0, t)
            t[t.sum(axis=1) == 0, 0] = 1.0
            t /= t.sum(axis=1, keepdims=True)
        cpts.append(t)
    states = tuple(tuple(f"s{k}" for k in range(r)) for r in ar)
    return BayesianNetwork(dag, states, tuple(cpts))
