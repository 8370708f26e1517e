"""Separation of cluster constraints (the acyclicity rows of the BNSL ILP).

Cluster C: ``sum_{v in C} sum_{S ∩ C = ∅} z[S, v] >= 1``. Integral points: the strongly
connected components of the chosen graph and a cycle in each (exact). Fractional
points: SCCs of thresholded LP arc weights (shrunk greedily) and short cycles
(heuristic), or Cussens's sub-IP solved with CP-SAT.

References
----------
J. Cussens, "Bayesian network learning with cutting planes", UAI 2011, §3-§4.
M. Bartlett, J. Cussens, "Integer linear programming for the Bayesian network structure
learning problem", Artificial Intelligence 244, 2017, §5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.graph.dag import strongly_connected_components
from bnsl_dist.search.exact._ilp_families import Families, bits

__all__ = ["integer_clusters", "fractional_clusters", "subip_clusters"]


def _cyclic_components(n: int, arcs: Sequence[tuple[int, int]]) -> list[list[int]]:
    """Strongly connected components of more than one node (arcs u -> v)."""
    parents: list[list[int]] = [[] for _ in range(n)]
    for u, v in arcs:
        parents[v].append(u)
    return [c for c in strongly_connected_components(parents) if len(c) > 1]


def integer_clusters(fam: Families, chosen: Sequence[int]) -> list[int]:
    """Violated cluster constraints of an integral choice: each non-trivial SCC of its
    graph, and one directed cycle inside each (empty list when the graph is a DAG)."""
    import networkx as nx  # not at the top: start-up imports every optimizer module

    arcs = [(p, v) for v, i in enumerate(chosen) for p in bits(fam.masks[int(i)])]
    out: list[int] = []
    comps = _cyclic_components(fam.n, arcs)
    if comps:
        g = nx.DiGraph()
        g.add_nodes_from(range(fam.n))
        g.add_edges_from(arcs)
    for comp in comps:
        cmask = sum(1 << v for v in comp)
        out.append(cmask)
        cyc = nx.find_cycle(g.subgraph(comp), source=comp[0])
        ymask = sum(1 << int(a) for a, _ in cyc)
        if ymask != cmask:
            out.append(ymask)
    return out


def fractional_clusters(fam: Families, x: NDArray[np.float64], *, tol: float = 1e-6,
                        min_violation: float = 1e-3, max_cuts: int = 50,
                        cycle_length: int = 8, max_cycles: int = 200) -> list[int]:
    """Heuristic separation of cluster constraints at a fractional point.

    Candidate clusters: the strongly connected components of the graphs of arcs
    ``u -> v`` whose LP weight ``sum_{S ∋ u} x[S, v]`` reaches a threshold (several
    thresholds), each shrunk greedily while that increases the violation, and the
    simple cycles (up to ``cycle_length`` nodes, ``max_cycles`` of them) of the arcs of
    weight >= 0.3. Returns the most violated clusters (violation >= ``min_violation``).
    """
    import networkx as nx

    n = fam.n
    sup = [int(i) for i in np.nonzero(x > tol)[0]]
    sx = [float(x[i]) for i in sup]
    sown = [1 << int(fam.owner[i]) for i in sup]
    smask = [fam.masks[i] for i in sup]
    w: dict[tuple[int, int], float] = {}
    for i, xi in zip(sup, sx, strict=True):
        v = int(fam.owner[i])
        for p in bits(fam.masks[i]):
            w[(p, v)] = w.get((p, v), 0.0) + xi
    if not w:
        return []

    def violation(cmask: int) -> float:
        act = 0.0
        for xi, ow, mk in zip(sx, sown, smask, strict=True):
            if ow & cmask and not mk & cmask:
                act += xi
        return 1.0 - act

    def shrink(cmask: int) -> tuple[int, float]:
        """Drop, while it helps, the member whose removal raises the violation most.
        Removing u loses u's open sets and gains the sets meeting C only in u."""
        viol = violation(cmask)
        while cmask.bit_count() > 2:
            delta: dict[int, float] = {}
            for xi, ow, mk in zip(sx, sown, smask, strict=True):
                if not ow & cmask:
                    continue
                inter = mk & cmask
                if not inter:
                    delta[ow] = delta.get(ow, 0.0) + xi  # u = owner: its open mass is lost
                elif not inter & (inter - 1):
                    delta[inter] = delta.get(inter, 0.0) - xi  # opened by removing inter
            best_u, best_d = 0, -1e-12
            for u in bits(cmask):
                d = delta.get(1 << u, 0.0)  # violation change = lost open mass - gained
                if d > best_d:
                    best_u, best_d = u, d
            if not best_d > 1e-12:
                break
            cmask &= ~(1 << best_u)
            viol += best_d
        return cmask, viol

    found: dict[int, float] = {}
    seen: set[int] = set()
    for thr in (tol, 0.3, 0.6):
        arcs = [a for a, val in w.items() if val >= thr]
        for comp in _cyclic_components(n, arcs):
            cmask = sum(1 << v for v in comp)
            if cmask in seen:
                continue
            seen.add(cmask)
            for c in (cmask, shrink(cmask)[0]):
                vi = violation(c)
                if vi >= min_violation:
                    found[c] = vi
    if cycle_length >= 2:
        g = nx.DiGraph()
        g.add_edges_from(a for a, val in w.items() if val >= 0.3)
        for t, cyc in enumerate(nx.simple_cycles(g, length_bound=cycle_length)):
            if t >= max_cycles:
                break
            c = sum(1 << v for v in cyc)
            if c not in found:
                vi = violation(c)
                if vi >= min_violation:
                    found[c] = vi
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
    return [c for c, _ in ranked[:max_cuts]]


def subip_clusters(fam: Families, x: NDArray[np.float64], *, tol: float = 1e-6,
                   min_violation: float = 1e-3, det_time: float = 0.05,
                   max_cuts: int = 20) -> list[int]:
    """Cluster cuts at a fractional point by Cussens's sub-IP, solved with CP-SAT.

    Binary ``I_v`` (v in C) and ``J_{S,v}`` (family (S, v) counted) for the families of
    the support with a non-empty S: maximise ``sum x[S,v] J[S,v] - sum I_v`` subject to
    ``J[S,v] <= I_v`` and ``J[S,v] <= sum_{u in S} I_u``; a cluster of value above
    ``-1`` violates its constraint (``sum_{v in C} sum_{S ∩ C ≠ ∅} x <= |C| - 1``).
    Every improving solution met within ``det_time`` (CP-SAT deterministic time, so the
    result is reproducible) gives a cut.

    References
    ----------
    J. Cussens, "Bayesian network learning with cutting planes", UAI 2011, §4;
    M. Bartlett, J. Cussens, AIJ 244, 2017, §5.2.
    """
    from ortools.sat.python import cp_model

    scale = 10_000
    fams = [int(i) for i in np.nonzero(x > tol)[0] if fam.masks[int(i)]]
    if not fams:
        return []
    m = cp_model.CpModel()
    verts = sorted({int(fam.owner[i]) for i in fams} |
                   {p for i in fams for p in bits(fam.masks[i])})
    iv = {v: m.new_bool_var(f"I{v}") for v in verts}
    terms = []
    for i in fams:
        v = int(fam.owner[i])
        j = m.new_bool_var(f"J{i}")
        m.add_implication(j, iv[v])
        m.add_bool_or([iv[p] for p in bits(fam.masks[i])] + [~j])
        terms.append((int(round(float(x[i]) * scale)), j))
    obj = sum(c * j for c, j in terms) - scale * sum(iv.values())
    m.add(obj >= -scale + int(min_violation * scale))
    m.add(sum(iv.values()) >= 2)
    m.maximize(obj)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = det_time
    found: list[int] = []

    class _Collect(cp_model.CpSolverSolutionCallback):
        def on_solution_callback(self) -> None:
            c = sum(1 << v for v in verts if self.boolean_value(iv[v]))
            if c not in found:
                found.append(c)

    solver.solve(m, _Collect())
    return found[::-1][:max_cuts]  # the best (last found) first
