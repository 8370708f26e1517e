"""The inference study of Scanagatta et al. (MLJ 2018, §6.3): queries, answers, errors.

One implementation for the ``kind: inference`` grid cells (:mod:`bnsl_dist.pipeline.run`)
and ``workflows/inference_study.py``:

* :func:`random_evidence` — P(e) queries: each sets ``n_evidence`` random variables to
  random states; drawn from the variables' arities only, so every model of one data
  set (they share its arities) answers the same queries for the same generator;
* :func:`query_variables` — marginal queries on a known network: its leaves, then
  random parents of leaves (§6.3, "Inference on synthetic data sets");
* :func:`study_engine` — exact inference on a junction tree (a treewidth certificate's
  order, else min-fill), or likelihood weighting when the tree exceeds the memory limit;
* :func:`answer_queries` — a model's answers (ln P(e) per query, marginals), time per
  query, exact or not, width of the elimination order;
* :func:`mae_pe`, :func:`mae_marginals` — the paper's mean absolute errors against a
  reference's answers (the unbounded model on real data, the true network on
  synthetic data); relative mae = mae of a bounded model / mae of the unbounded one.

References
----------
M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate structure learning
for large Bayesian networks", Machine Learning 107, 2018, §6.3, Figures 5-7, Table 5.
"""

from __future__ import annotations

import functools
import heapq
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.graph.dag import DAG
from bnsl_dist.graph.moral import moral_graph
from bnsl_dist.graph.treewidth import eliminate, elimination_width, min_fill_order
from bnsl_dist.inference.approximate import LikelihoodWeighting
from bnsl_dist.inference.engine import Engine, make_engine
from bnsl_dist.inference.junction_tree import JunctionTree
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["Answers", "random_evidence", "query_variables", "study_engine", "answer_queries",
           "mae_pe", "mae_marginals"]


def random_evidence(arities: Sequence[int] | NDArray[np.integer], n_queries: int,
                    n_evidence: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``n_queries`` evidence rows (-1: unobserved): ``n_evidence`` distinct variables
    each, set to uniformly drawn states.

    Examples
    --------
    >>> ev = random_evidence([2, 3, 2, 4], 3, 2, np.random.default_rng(0))
    >>> ev.shape, [int((row >= 0).sum()) for row in ev]
    ((3, 4), [2, 2, 2])
    """
    ar = np.asarray(arities, dtype=np.int64)
    n = ar.size
    ev = np.full((n_queries, n), -1, dtype=np.int64)
    for i in range(n_queries):
        vs = rng.choice(n, size=min(n_evidence, n), replace=False)
        ev[i, vs] = rng.integers(0, ar[vs])
    return ev


def query_variables(net: BayesianNetwork, n: int, rng: np.random.Generator) -> list[int]:
    """``n`` variables of ``net`` (fewer when it has fewer leaves and parents of leaves):
    its leaves in random order, then random parents of leaves (paper §6.3)."""
    children = net.dag.children()
    leaves = [v for v in range(net.n_vars) if not children[v]]
    rng.shuffle(leaves)
    q = [int(v) for v in leaves[:n]]
    pool = sorted({p for v in leaves for p in net.dag.parents[v]} - set(q))
    rng.shuffle(pool)
    return q + [int(v) for v in pool[:max(0, n - len(q))]]


def _min_degree_within(adj: Sequence[set[int]], arities: NDArray[np.int64],
                       max_entries: int) -> int | None:
    """Width of the greedy min-degree elimination of ``adj``, or None as soon as one of
    its cliques has a table of more than ``max_entries`` entries. The early stop keeps
    a network far too wide for a junction tree (thousands of variables, cliques of
    hundreds) from costing the quadratic fill-in work of a full elimination."""
    g = [set(s) for s in adj]
    heap = [(len(s), v) for v, s in enumerate(g)]
    heapq.heapify(heap)
    done = [False] * len(g)
    width = 0
    while heap:
        d, v = heapq.heappop(heap)
        if done[v] or d != len(g[v]):
            continue
        nb = g[v]
        if math.prod(int(arities[u]) for u in nb) * int(arities[v]) > max_entries:
            return None
        done[v] = True
        width = max(width, len(nb))
        for a in eliminate(g, v):
            heapq.heappush(heap, (len(g[a]), a))
    return width


def study_engine(net: BayesianNetwork, order: Sequence[int] | None, *, memory_limit: int,
                 n_samples: int, rng: np.random.Generator | np.random.SeedSequence | int
                 ) -> tuple[Engine, int | None]:
    """(engine, width): a junction tree on ``order`` (default: min-fill) when it fits in
    ``memory_limit`` bytes, else likelihood weighting with ``n_samples`` particles per
    query. ``width`` is the width of the elimination order; without ``order``, None
    when a min-degree elimination already meets a clique over the memory limit (then
    no junction tree is tried)."""
    adj = moral_graph(net.dag)
    if order is None:
        if _min_degree_within(adj, net.arities, max(1, memory_limit // 8)) is None:
            return LikelihoodWeighting(net, n_samples=n_samples, rng=rng), None
        order, width = min_fill_order(adj)
    else:
        width = elimination_width(adj, order)
    eng = make_engine(net, order, memory_limit=memory_limit, fallback="approximate",
                      n_samples=n_samples, rng=rng)  # type: ignore[arg-type]
    return eng, int(width)


@dataclass(frozen=True)
class Answers:
    """One model's answers to the study's queries.

    ``log_pe`` — ln P(e) per P(e) query; ``marginals`` — P(X_v) per queried variable;
    ``pe_seconds`` and ``marginal_seconds`` — seconds per query (kernels compiled
    beforehand, so compilation is not timed); ``exact`` — junction tree (True) or likelihood
    weighting; ``width`` — width of the elimination order (the treewidth bound's
    certificate for bounded models, min-fill otherwise; None when not computed, see
    :func:`study_engine`).
    """

    log_pe: NDArray[np.float64]
    marginals: list[NDArray[np.float64]]
    pe_seconds: float | None
    marginal_seconds: float | None
    exact: bool
    width: int | None

    def to_json_dict(self) -> dict[str, Any]:
        return {"log_pe": [float(x) for x in self.log_pe],
                "marginals": [[float(x) for x in m] for m in self.marginals],
                "pe_seconds_per_query": self.pe_seconds,
                "marginal_seconds_per_query": self.marginal_seconds,
                "exact": bool(self.exact), "width": self.width}

    @classmethod
    def from_json_dict(cls, d: dict[str, Any]) -> Answers:
        return cls(np.asarray(d["log_pe"], dtype=np.float64),
                   [np.asarray(m, dtype=np.float64) for m in d["marginals"]],
                   d["pe_seconds_per_query"], d["marginal_seconds_per_query"],
                   bool(d["exact"]), d["width"])


@functools.cache
def _warm_up() -> None:
    """Compile (or load) the inference kernels once per process — sparse and dense
    junction-tree rows, marginals, likelihood weighting — on a two-variable network,
    so compilation never lands in a timed query."""
    dag = DAG.from_parents([(), (0,)])
    net = BayesianNetwork(dag, (("0", "1"), ("0", "1")),
                          (np.array([[0.5, 0.5]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    ev = np.array([[0, -1], [-1, 1]], dtype=np.int64)
    for sparse in (True, False):
        jt = JunctionTree(net, sparse=sparse)
        jt.log_prob_evidence(ev)
        jt.marginals(None, [1])
    LikelihoodWeighting(net, n_samples=8, rng=0).log_prob_evidence(ev)
    LikelihoodWeighting(net, n_samples=8, rng=0).marginals(None, [1])


def answer_queries(net: BayesianNetwork, order: Sequence[int] | None,
                   evidence: NDArray[np.int64], query: Sequence[int], *, memory_limit: int,
                   n_samples: int, rng: np.random.SeedSequence,
                   marginal_samples: int | None = None) -> Answers:
    """``net``'s answers to the P(e) queries ``evidence`` and the marginal queries
    ``query`` (no evidence), with an engine from :func:`study_engine`; likelihood
    weighting draws ``n_samples`` particles per P(e) query and ``marginal_samples``
    (default ``n_samples``) for the marginals."""
    eng, width = study_engine(net, order, memory_limit=memory_limit, n_samples=n_samples,
                              rng=rng)
    m_eng: Engine = eng
    if not eng.exact and marginal_samples not in (None, n_samples):
        m_eng = LikelihoodWeighting(net, n_samples=int(marginal_samples or n_samples),
                                    rng=rng)
    _warm_up()
    log_pe = np.zeros(0)
    pe_s = None
    if len(evidence):
        t = time.perf_counter()
        log_pe = np.asarray(eng.log_prob_evidence(evidence), dtype=np.float64)
        pe_s = (time.perf_counter() - t) / len(evidence)
    margs: list[NDArray[np.float64]] = []
    m_s = None
    if len(query):
        t = time.perf_counter()
        out = m_eng.marginals(None, list(query))
        m_s = (time.perf_counter() - t) / len(query)
        margs = [np.asarray(out[v][0], dtype=np.float64) for v in query]
    return Answers(log_pe, margs, pe_s, m_s, bool(eng.exact), width)


def mae_pe(log_pe: Sequence[float] | NDArray[np.float64],
           reference: Sequence[float] | NDArray[np.float64]) -> float:
    """mean_i |P_i(e) - P̂_i(e)| (the paper's mae; answers given as natural logs).

    >>> round(mae_pe(np.log([0.1, 0.2]), np.log([0.2, 0.2])), 12)
    0.05
    """
    a, b = np.asarray(log_pe, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    if a.shape != b.shape or a.size == 0:
        raise ValueError(f"mae of {a.size} answers against {b.size} reference answers")
    return float(np.mean(np.abs(np.exp(a) - np.exp(b))))


def mae_marginals(marginals: Sequence[Sequence[float] | NDArray[np.float64]],
                  reference: Sequence[Sequence[float] | NDArray[np.float64]]) -> float:
    """Mean over queried variables of the mean absolute difference across states.

    >>> round(mae_marginals([[0.5, 0.5], [0.1, 0.9]], [[0.6, 0.4], [0.1, 0.9]]), 12)
    0.05
    """
    if len(marginals) != len(reference) or not len(marginals):
        raise ValueError(f"mae of {len(marginals)} marginals against {len(reference)}")
    diffs = [float(np.mean(np.abs(np.asarray(m, dtype=np.float64)
                                  - np.asarray(r, dtype=np.float64))))
             for m, r in zip(marginals, reference, strict=True)]
    return float(np.mean(diffs))
