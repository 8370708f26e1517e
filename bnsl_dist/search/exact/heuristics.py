"""Admissible, consistent heuristics for the order-graph search of one subproblem.

Both heuristics are additive pattern databases: the local variables are split into
groups, each with a table giving, for every subset S of the group still to be placed, a
lower bound on the cost of placing S. The *simple* heuristic (Yuan, Malone & Wu 2011)
uses one singleton group per variable: every remaining variable takes its best set,
ignoring acyclicity (with reduced costs it is 0). The *static pattern database*
(Yuan & Malone 2012) uses a few large groups and enforces acyclicity inside each:
h_G(S) = min over X in S of h_G(S - X) + BestScore(X, V - S), computed once by dynamic
programming over the subsets of G; the heuristic of a node U is the sum over groups of
h_G(G - U). Acyclicity is only lost between groups, so variables that want each other
as parents should share a group. With two groups (the paper's choice) the candidates
are Kernighan-Lin min-cut bisections of the undirected parent relation graph, weighted by
the best sets only (top-1 POPS, as in Fan et al. section 7) or by every set (weight
1 / (1 + reduced cost)), and a breadth-first walk over the top-1 graph cut into halves;
the one with the largest h(start) is kept (only the all-sets bisection for groups of
more than 20, whose tables take seconds to fill). More groups: the better of the
breadth-first cut and repeated all-sets bisection of the largest part.

References
----------
C. Yuan, B. Malone, "Learning optimal Bayesian networks: a shortest path perspective",
JAIR 48, 2013, sections 4.1-4.2 (simple heuristic, k-cycle conflict heuristic, static
pattern databases). X. Fan, B. Malone, C. Yuan, UAI 2014, section 5 (pattern databases
per strongly connected component).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.exact import _astar_kernels as K
from bnsl_dist.search.exact.pops import Subproblem, decompose

__all__ = ["PatternDatabase", "HEURISTICS", "make_heuristic", "partition_groups", "rest_bound"]

HEURISTICS = ("simple", "pdb")

#: Largest group of a static pattern database (its table has 2**size entries).
MAX_GROUP_SIZE = 24


@dataclass(eq=False)
class PatternDatabase:
    """Additive pattern databases of one subproblem (layout in :mod:`._astar_kernels`)."""

    groups: list[list[int]]
    var_group: NDArray[np.int64]
    var_bit: NDArray[np.int64]
    goff: NDArray[np.int64]
    table: NDArray[np.float64]
    seconds: float = 0.0
    partition: str = "singletons"

    @property
    def nbytes(self) -> int:
        return int(self.table.nbytes + self.var_group.nbytes + self.var_bit.nbytes
                   + self.goff.nbytes)

    def value(self, remaining: int) -> float:
        """h of the node whose unplaced local variables are the bitmask ``remaining``."""
        idx = np.empty(len(self.goff), dtype=np.int64)
        return float(K.heuristic_value(np.uint64(remaining), self.var_group, self.var_bit,
                                       self.goff, self.table, idx))


def partition_groups(sub: Subproblem, n_groups: int) -> list[list[int]]:
    """Split the local variables into ``n_groups`` groups of balanced sizes, walking the
    undirected graph of each variable's best set breadth-first (lowest index first)."""
    m = sub.m
    adj: list[set[int]] = [set() for _ in range(m)]
    for x in range(m):
        best = int(sub.set_mask[sub.set_off[x]])
        for p in range(m):
            if (best >> p) & 1:
                adj[x].add(p)
                adj[p].add(x)
    seen = [False] * m
    walk: list[int] = []
    for root in range(m):
        if seen[root]:
            continue
        seen[root] = True
        queue = deque([root])
        while queue:
            v = queue.popleft()
            walk.append(v)
            for w in sorted(adj[v]):
                if not seen[w]:
                    seen[w] = True
                    queue.append(w)
    sizes = [m // n_groups + (1 if k < m % n_groups else 0) for k in range(n_groups)]
    groups, pos = [], 0
    for s in sizes:
        groups.append(sorted(walk[pos:pos + s]))
        pos += s
    return [g for g in groups if g]


def _bisection(sub: Subproblem, all_sets: bool, max_size: int | None = None
               ) -> list[list[int]]:
    """Kernighan-Lin min-cut bisection (seed 0) of the undirected parent relation graph;
    with ``max_size``, the largest part is bisected again until every part fits."""
    import networkx as nx  # not at the top: start-up imports every optimizer module

    g = nx.Graph()
    g.add_nodes_from(range(sub.m))
    for x in range(sub.m):
        hi = sub.set_off[x + 1] if all_sets else sub.set_off[x] + 1
        for r in range(sub.set_off[x], hi):
            w = 1.0 / (1.0 + float(sub.set_cost[r]))
            mk = int(sub.set_mask[r])
            for p in range(sub.m):
                if (mk >> p) & 1:
                    old = g.get_edge_data(x, p, {"weight": 0.0})["weight"]
                    g.add_edge(x, p, weight=old + w)
    parts = [list(range(sub.m))]
    while True:
        parts.sort(key=lambda p: (-len(p), p))
        if len(parts) > 1 and (max_size is None or len(parts[0]) <= max_size):
            return sorted(sorted(p) for p in parts)
        a, b = nx.algorithms.community.kernighan_lin_bisection(g.subgraph(parts[0]),
                                                               weight="weight", seed=0)
        parts[0:1] = [sorted(a), sorted(b)]


def _pdb(sub: Subproblem, groups: list[list[int]], partition: str) -> PatternDatabase:
    tables = []
    for g in groups:
        out = np.empty(1 << len(g), dtype=np.float64)
        K.build_pdb(np.asarray(g, dtype=np.int64), sub.set_off, sub.set_mask, sub.set_cost, out)
        tables.append(out)
    return _assemble(sub, groups, tables, 0.0, partition)


def _assemble(sub: Subproblem, groups: list[list[int]], tables: list[NDArray[np.float64]],
              seconds: float, partition: str) -> PatternDatabase:
    var_group = np.zeros(sub.m, dtype=np.int64)
    var_bit = np.zeros(sub.m, dtype=np.int64)
    for k, g in enumerate(groups):
        for j, x in enumerate(g):
            var_group[x] = k
            var_bit[x] = j
    goff = np.zeros(len(groups), dtype=np.int64)
    if groups:
        goff[1:] = np.cumsum([len(t) for t in tables])[:-1]
    table = np.concatenate(tables) if tables else np.zeros(1)
    return PatternDatabase(groups, var_group, var_bit, goff, table, seconds, partition)


def make_heuristic(sub: Subproblem, kind: str = "pdb", group_size: int = 24) -> PatternDatabase:
    """The heuristic of a subproblem: ``"simple"`` or ``"pdb"`` (static pattern databases
    with groups of at most ``group_size`` variables, at least two groups).

    Raises
    ------
    InvalidConfigError
        An unknown kind, or a group size outside 1..24.
    """
    if kind not in HEURISTICS:
        raise InvalidConfigError(f"heuristic must be one of {HEURISTICS}, got {kind!r}")
    if not 1 <= group_size <= MAX_GROUP_SIZE:
        raise InvalidConfigError(f"pattern-database group size must be in 1..{MAX_GROUP_SIZE}, "
                                 f"got {group_size}")
    t0 = time.perf_counter()
    m = sub.m
    n_groups = max(2, -(-m // group_size))
    if kind == "simple" or m <= 2:
        best = _pdb(sub, [[x] for x in range(m)], "singletons")
    elif n_groups > 2:
        full = int(sub.full)
        cands = [("breadth-first", partition_groups(sub, n_groups)),
                 ("kl-recursive", _bisection(sub, True, group_size))]
        best = max((_pdb(sub, g, name) for name, g in cands), key=lambda h: h.value(full))
    else:
        makers: list[tuple[str, Callable[[], Any]]] = [
            ("kl-all-sets", lambda: _bisection(sub, True))]
        if -(-m // 2) <= 20:
            makers += [("kl-top1", lambda: _bisection(sub, False)),
                       ("breadth-first", lambda: partition_groups(sub, 2))]
        full = int(sub.full)
        best = max((_pdb(sub, make(), name) for name, make in makers),
                   key=lambda h: h.value(full))  # the first of equals
    best.seconds = time.perf_counter() - t0
    return best


def rest_bound(cache: ParentSetCache, kind: str = "pdb",
               group_size: int = 24) -> Callable[[int], float] | None:
    """R_i of :func:`.pops.top_p_bound`: an upper bound on the summed log-scores of every
    variable but i in any DAG over ``cache``, from the heuristics of its (SCC)
    subproblems: h of the node where only i is placed. None when a component is too
    large for an order-graph subproblem (the caller then uses the best scores)."""
    try:
        parts = [(s, make_heuristic(s, kind, group_size)) for s in decompose(cache)]
    except InvalidConfigError:
        return None
    total = sum(s.base_cost + h.value(int(s.full)) for s, h in parts)
    where = {int(v): (k, x) for k, (s, _) in enumerate(parts) for x, v in enumerate(s.variables)}

    def rest(i: int) -> float:
        k, x = where[i]
        s, h = parts[k]
        drop = h.value(int(s.full)) - h.value(int(s.full) & ~(1 << x))
        return -(total - drop) - float(cache.best_score(i))

    return rest
