"""TWILP: exact learning of Bayesian networks of bounded treewidth by integer programming.

Variables (Parviainen, Farahani, Lagergren 2014, §4): ``z[S, v]`` (v takes the cached
parent set S) and ``y[i, j]`` (arc i -> j of the *root graph* on ``N' = N ∪ R``, with
``|R| = k`` extra root nodes). Constraints:

- (1) one parent set per variable; (2) every ``i in N`` has ``k`` children in the
  y-graph; (3) ``nk - k(k+1)/2`` y-arcs inside N;
- (4)-(5) the moral graph of the z-graph lies in the skeleton of the y-graph
  (aggregated per pair and child: ``sum_{S ∋ j} z[S, i] <= y[i,j] + y[j,i]`` and
  ``sum_{S ⊇ {i,j}} z[S, v] <= y[i,j] + y[j,i]``, which imply the paper's per-set
  rows and are tighter);
- (6) the children of a node form a tournament; (7)-(8) roots have no children in N
  and form a transitive tournament; (9) no 2-cycles; (10) no 3-cycles;
- (11) cluster constraints (z acyclic) and (12) ``sum_{i,j in W} y[i,j] <=
  k|W| - k(k+1)/2`` (no induced subgraph denser than a k-tree), both exponential
  families, **added lazily**: separated exactly on integral candidates (the SCCs and
  a cycle of the z-graph; for a cyclic y-graph the set ``W = C ∪ (children(v_l) \\ C)``
  of a prime cycle ``C``, Lemma 2-3) and heuristically on fractional LP points at the
  branch-and-bound nodes. (12) is separated over ``W ⊆ N'``: it holds for every
  subset of a k-tree's vertices, and the y-graph of a root graph is one.

A y-graph satisfying these is a k-tree on N' whose orientation is a perfect
elimination order: every learned DAG comes with a :class:`TreewidthCertificate`.

The feasibility heuristic of §5.2 runs on the LP point of every node (and on a greedy
DAG before the solve): two DAGs (each variable's set of largest LP value; its best
scoring set with a non-zero value), made acyclic by removing a feedback arc set
(Eades-Lin-Smyth order), then arcs are removed (the cheapest, inside the bag where
the min-fill elimination exceeds width k) until min-fill / min-degree certify
treewidth <= k. Families are mapped to their best cached subsets on the way. Within a
seconds budget the arc removal stops at the deadline and one pass finishes the DAG
(:func:`~bnsl_dist.search.exact._twilp_heuristics.chordal_cut`): each min-fill order
costs up to a minute on large greedy DAGs.

Solved by SCIP through OR-Tools MathOpt (branch-and-cut with lazy constraints). Anytime:
each better DAG with the proven bound; ``info["certificate"]`` on every incumbent.
The first incumbent is the better of two cuts of a greedy DAG (that arc removal, and
the one pass alone). Budgets: ``seconds`` -> the whole run (the start's arc removal, the
model, SCIP's time limit); ``max_iterations`` -> SCIP node limit, and ``n`` eliminations
per node for the start's arc removal.

References
----------
P. Parviainen, H. S. Farahani, J. Lagergren, "Learning bounded tree-width Bayesian
networks using integer linear programming", AISTATS 2014, §3 (root graphs), §4 (the
ILP), §5 (cuts and the feasibility heuristic).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError, NotADAGError
from bnsl_dist.graph import (
    TreewidthCertificate,
    moral_graph,
)
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
)
from bnsl_dist.search.exact._ilp_families import (
    Families,
    bits,
    greedy_dag,
    lp_order,
    order_search,
    start_deadline,
)
from bnsl_dist.search.exact._ilp_separation import fractional_clusters, integer_clusters
from bnsl_dist.search.exact._twilp_heuristics import (
    STARTS,
    best_subset,
    feasibility_heuristic,
    fit_treewidth,
    order_width,
    root_graph_arcs,
    start_dag,
)

__all__ = ["TWILP", "fit_treewidth", "root_graph_arcs", "feasibility_heuristic"]


# ---------------------------------------------------------------------------- separation
def _prime_cycle_sets(ych: list[set[int]], n: int, k: int) -> list[list[int]]:
    """Violated (12) sets of an integral, cyclic y-graph: W = C ∪ (children(v_l) \\ C)
    for a prime cycle C (Lemma 2); the SCCs as a fallback."""
    import networkx as nx  # not at the top: start-up imports every optimizer module

    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    for u in range(n):
        for v in ych[u]:
            if v < n and not any(v in ych[w] for w in ych[u] if w != v):
                g.add_edge(u, v)
    cands: list[set[int]] = []
    try:
        cyc = nx.find_cycle(g)
        cset = {int(a) for a, _ in cyc}
        last = int(cyc[-1][0])
        cands.append(cset | (ych[last] - cset))
        cands.append(cset | set().union(*(ych[u] for u in cset)))
    except nx.NetworkXNoCycle:
        pass
    full = nx.DiGraph()
    full.add_nodes_from(range(n + k))
    full.add_edges_from((u, v) for u in range(n + k) for v in ych[u])
    cands.extend(set(c) for c in nx.strongly_connected_components(full) if len(c) > 1)
    out = []
    for w in cands:
        arcs = sum(1 for u in w for v in ych[u] if v in w)
        if len(w) >= k and arcs > k * len(w) - k * (k + 1) // 2:
            out.append(sorted(w))
    return out[:2]


def _fractional_dense_sets(yh: NDArray[np.float64], n: int, k: int,
                           min_violation: float = 1e-3, max_cuts: int = 10) -> list[list[int]]:
    """Heuristic separation of (12) at a fractional point: local search from the SCCs of
    the thresholded y-graph, adding / removing the node that raises the violation
    ``sum_{W} y - (k|W| - k(k+1)/2)`` most."""
    import networkx as nx

    m = yh + yh.T
    seeds: set[frozenset[int]] = set()
    for thr in (0.5, 0.9):
        g = nx.DiGraph()
        g.add_nodes_from(range(n + k))
        us, vs = np.nonzero(yh >= thr)
        g.add_edges_from(zip(us.tolist(), vs.tolist(), strict=True))
        seeds.update(frozenset(c) for c in nx.strongly_connected_components(g) if len(c) > 2)
    found: dict[frozenset[int], float] = {}
    for seed in sorted(seeds, key=sorted):
        inw = np.zeros(n + k, dtype=bool)
        inw[list(seed)] = True
        for _ in range(2 * (n + k)):
            links = m[:, inw].sum(axis=1)  # links of every node into W
            gain = np.where(inw, k - (links - np.diag(m)), links - k)
            u = int(np.argmax(gain))
            if gain[u] <= 1e-9:
                break
            inw[u] = not inw[u]
        w = np.nonzero(inw)[0]
        viol = yh[np.ix_(w, w)].sum() - (k * len(w) - k * (k + 1) / 2)
        if len(w) > k + 1 and viol >= min_violation:
            found[frozenset(w.tolist())] = float(viol)
    ranked = sorted(found.items(), key=lambda kv: (-kv[1], sorted(kv[0])))
    return [sorted(w) for w, _ in ranked[:max_cuts]]


# ---------------------------------------------------------------------------- the ILP
class _Model:
    """The TWILP model in MathOpt: z per cached set, y per arc i -> j (i in N)."""

    def __init__(self, fam: Families, k: int, lazy_triangles: bool) -> None:
        mo = load_mathopt()
        n = fam.n
        self.fam, self.k, self.n = fam, k, n
        m = self.model = mo.Model(name="twilp")
        self.z = [m.add_binary_variable() for _ in range(fam.n_sets)]
        # y[i][j] for i in N, j in N' \ {i}; roots: y[r][s] = 1 for r < s, fixed (7)-(8).
        self.y: dict[tuple[int, int], Any] = {
            (i, j): m.add_binary_variable() for i in range(n) for j in range(n + k) if j != i}
        self.yvars = list(self.y.values())
        self.ykeys = list(self.y.keys())
        self.yi = np.array([a for a, _ in self.ykeys], dtype=np.int64)
        self.yj = np.array([b for _, b in self.ykeys], dtype=np.int64)
        self.base_id = self.z[0].id if self.z else self.yvars[0].id
        self.n_vars = len(self.z) + len(self.yvars)
        fs = mo.fast_sum
        y = self.y
        for v in range(n):  # (1)
            m.add_linear_constraint(fs(self.z[i] for i in fam.sets_of(v)) == 1.0)
        for i in range(n):  # (2)
            m.add_linear_constraint(fs(y[i, j] for j in range(n + k) if j != i) == float(k))
        m.add_linear_constraint(  # (3)
            fs(y[i, j] for i in range(n) for j in range(n) if j != i)
            == float(n * k - k * (k + 1) // 2))
        # (4)-(5), aggregated per (pair, child).
        pair_sets: dict[tuple[int, int, int], list[int]] = {}
        for i in range(fam.n_sets):
            v = int(fam.owner[i])
            mem = list(bits(fam.masks[i]))
            for a in mem:
                pair_sets.setdefault((min(a, v), max(a, v), v), []).append(i)
            for x in range(len(mem)):
                for b in mem[x + 1:]:
                    pair_sets.setdefault((mem[x], b, v), []).append(i)
        for (a, b, _v), idx in sorted(pair_sets.items()):
            m.add_linear_constraint(fs(self.z[i] for i in idx) - y[a, b] - y[b, a] <= 0.0)
        for i in range(n if not lazy_triangles else 0):  # (6): children form a tournament
            for j in range(n + k):
                for t in range(j + 1, n + k):
                    if i in (j, t) or (j >= n and t >= n):
                        continue
                    e = (y[j, t] if j < n else 0.0) + (y[t, j] if t < n else 0.0)
                    m.add_linear_constraint(y[i, j] + y[i, t] - e <= 1.0)
        for i in range(n):  # (9); pairs with a root are trivial (7)
            for j in range(i + 1, n):
                m.add_linear_constraint(y[i, j] + y[j, i] <= 1.0)
        for i in range(n if not lazy_triangles else 0):  # (10): no 3-cycles (roots: none)
            for j in range(i + 1, n):
                for t in range(j + 1, n):
                    m.add_linear_constraint(y[i, j] + y[j, t] + y[t, i] <= 2.0)
                    m.add_linear_constraint(y[i, t] + y[t, j] + y[j, i] <= 2.0)
        rel = fam.scores - fam.best[fam.owner]
        for i, c in enumerate(rel.tolist()):
            if c != 0.0:
                m.objective.set_linear_coefficient(self.z[i], c)
        m.objective.offset = float(fam.best.sum())
        m.objective.is_maximize = True

    def cluster(self, cmask: int, lazy: bool) -> Any:
        idx, lb, ub = self.fam.cluster_row(cmask)
        return generated_row([self.z[i] for i in idx], 1.0, lb, ub, lazy)

    def dense(self, w: Sequence[int], lazy: bool) -> Any:
        """(12) over W ⊆ N' (root-root arcs are constants)."""
        n, k = self.n, self.k
        ws = list(w)
        const = sum(1 for a in ws for b in ws if n <= a < b)
        terms = [self.y[a, b] for a in ws for b in ws if a != b and a < n]
        return generated_row(terms, 1.0, -np.inf,
                             float(k * len(ws) - k * (k + 1) // 2 - const), lazy)

    def values(self, sol: dict[Any, float]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(z values, y matrix over N' x N') from a (sparse) solution."""
        n, k = self.n, self.k
        flat = np.zeros(self.n_vars)
        for var, val in sol.items():
            flat[var.id - self.base_id] = val
        nz = len(self.z)
        yh = np.zeros((n + k, n + k))
        yh[self.yi, self.yj] = flat[nz:]
        for a in range(k):
            yh[n + a, n + a + 1:] = 1.0
        return flat[:nz], yh

    def triangle_rows(self, yh: NDArray[np.float64], lazy: bool, min_violation: float = 1e-3,
                      max_rows: int = 200) -> list[Any]:
        """The most violated rows of (6) and (10) at ``yh``."""
        n = self.n
        m = yh + yh.T
        # (6): y[i,j] + y[i,l] - y[j,l] - y[l,j] <= 1, i in N, j < l in N' (not both roots)
        v6 = yh[:n, :, None] + yh[:n, None, :] - m[None, :, :] - 1.0
        ii, jj, ll = np.nonzero(v6 > min_violation)
        keep = (jj < ll) & (jj != ii) & (ll != ii) & (jj < n)  # j < l, so l may be a root
        # (10): y[i,j] + y[j,l] + y[l,i] <= 2 on N (each 3-cycle once: i smallest)
        a = yh[:n, :n]
        v10 = a[:, :, None] + a[None, :, :] + a.T[:, None, :] - 2.0
        i3, j3, l3 = np.nonzero(v10 > min_violation)
        keep3 = (i3 < j3) & (i3 < l3) & (j3 != l3)
        rows = [(float(v6[i, j, t]), 6, int(i), int(j), int(t))
                for i, j, t in zip(ii[keep], jj[keep], ll[keep], strict=True)]
        rows += [(float(v10[i, j, t]), 10, int(i), int(j), int(t))
                 for i, j, t in zip(i3[keep3], j3[keep3], l3[keep3], strict=True)]
        rows.sort(key=lambda r: (-r[0], r[1:]))
        out = []
        y = self.y
        for _, kind, i, j, t in rows[:max_rows]:
            if kind == 6:
                vs = [y[i, j], y[i, t], y[j, t]] + ([y[t, j]] if t < n else [])
                cs = [1.0, 1.0, -1.0] + ([-1.0] if t < n else [])
                out.append(generated_row(vs, cs, -np.inf, 1.0, lazy))
            else:
                out.append(generated_row([y[i, j], y[j, t], y[t, i]], 1.0, -np.inf, 2.0, lazy))
        return out

    def hint(self, chosen: Sequence[int], order: Sequence[int]) -> dict[Any, float]:
        vals = dict.fromkeys(self.z, 0.0)
        for i in chosen:
            vals[self.z[i]] = 1.0
        vals.update(dict.fromkeys(self.yvars, 0.0))
        adj = moral_graph(self.fam.parents(chosen))
        for a, b in root_graph_arcs(adj, order, self.k):
            if a < self.n:
                vals[self.y[a, b]] = 1.0
        return vals


def _y_order(ych: list[set[int]], n: int) -> list[int]:
    """Elimination order of an integral root graph: its topological order on N,
    sources first (each eliminated node's neighbours are its k children, a clique)."""
    parents: list[list[int]] = [[] for _ in range(n)]
    for u in range(n):
        for v in ych[u]:
            if v < n:
                parents[u].append(v)  # reversed arcs: children before parents
    from bnsl_dist.graph import topological_order

    return topological_order(parents)[::-1]


def _solve(fam: Families, k: int, watch: Stopwatch, seed: int, hint: tuple[list[int], list[int]],
           node_cuts: bool, lazy_triangles: bool, emit: Callable[[Found], None],
           stopper: ScipStop) -> Final:
    mo = load_mathopt()
    n = fam.n
    # built only when its estimated cost fits before the deadline (see ilp._scip_lazy):
    # a Python call per variable, n (n + k) arc variables (cr52, 889 variables: minutes)
    tm = stopper.attempt("twilp.model", fam.n_sets + n * (n + k),
                         lambda: _Model(fam, k, lazy_triangles))
    if tm is None:
        return Final(None, False, 0)
    best = [fam.score(hint[0])]

    def record(chosen: list[int], order: list[int], bound: float | None, it: int) -> None:
        s = fam.score(chosen)
        if s > best[0]:
            best[0] = s
            emit(Found(watch.elapsed(), chosen, s, bound, it, tuple(order)))

    def integral(sol: dict[Any, float], out: Any, bound: float | None, it: int) -> None:
        x, yh = tm.values(sol)
        chosen = fam.chosen_from_values(x)
        rows = tm.triangle_rows(yh, True, 0.5) if lazy_triangles else []
        ych = [set(np.nonzero(yh[u] > 0.5)[0].tolist()) for u in range(n + k)]
        cuts = integer_clusters(fam, chosen)
        dense = [] if rows else _prime_cycle_sets(ych, n, k)
        if out is not None:
            out.generated_constraints.extend(rows)
            for c in cuts:
                out.generated_constraints.append(tm.cluster(c, True))
            for w in dense:
                out.generated_constraints.append(tm.dense(w, True))
        if not cuts and not dense and not rows:
            try:
                order = _y_order(ych, n)
            except NotADAGError:  # pragma: no cover - Lemmas 2-4 exclude it; stay safe
                order, width, _ = order_width(fam.parents(chosen), k)
                if width > k:
                    return
            record(chosen, order, bound, it)

    def body(data: Any, out: Any) -> None:
        st = data.mip_stats
        it = int(st.explored_nodes)
        if data.event == mo.Event.MIP_SOLUTION:
            integral(data.solution, out, st.dual_bound, it)
            return
        x, yh = tm.values(data.solution)
        # each step only when its estimated cost fits before the deadline (see ScipStop)
        for ch, order in stopper.attempt("twilp.repair", fam.n_sets,
                                         lambda: _lp_heuristic(fam, x, k, stopper)) or ():
            record(ch, order, st.dual_bound, it)
        out.generated_constraints.extend(
            stopper.attempt("twilp.separate", fam.n_sets, lambda: _node_rows(x, yh)) or ())

    def _node_rows(x: NDArray[np.float64], yh: NDArray[np.float64]) -> list[Any]:
        rows = list(tm.triangle_rows(yh, True)) if lazy_triangles else []
        rows.extend(tm.cluster(c, False) for c in fractional_clusters(fam, x))
        rows.extend(tm.dense(w, False) for w in _fractional_dense_sets(yh, n, k))
        return rows

    return solve_scip(tm.model, watch, stopper, seed, tm.hint(*hint), node_cuts,
                      scip_callback(stopper, node_cuts, best, body),
                      lambda sol, nodes: integral(sol, None, None, nodes))


def _lp_heuristic(fam: Families, x: NDArray[np.float64], k: int, stop: ScipStop,
                  tol: float = 1e-6) -> list[tuple[list[int], list[int]]]:
    """§5.2 on an LP point (by LP value; by score among the non-zero sets), plus the DAG
    of ASOBS + swaps on the LP's Eades-Lin-Smyth order, cut down to treewidth k (each
    within ``stop``'s deadline, :func:`fit_treewidth`)."""
    by_val, by_score = [], []
    for v in range(fam.n):
        lo, hi = fam.start[v], fam.start[v + 1]
        nz = [lo + int(j) for j in np.nonzero(x[lo:hi] > tol)[0]]
        by_val.append(sorted(nz, key=lambda i: (-x[i], i))[:1])
        by_score.append(nz[:1])  # sets are stored best first
    by_order = order_search(fam, np.asarray([lp_order(fam, x, tol)]))
    return [feasibility_heuristic(fam, by_val, k, stop),
            feasibility_heuristic(fam, by_score, k, stop), fit_treewidth(fam, by_order, k, stop)]


@register("twilp")
class TWILP:
    """Exact bounded-treewidth structure learning (TWILP) on OR-Tools / SCIP; anytime.

    Parameters
    ----------
    k : int
        Treewidth bound (>= 1); bounds >= n - 1 do not bind.
    node_cuts : bool
        Separate (11) / (12) at fractional LP points and run the §5.2 heuristic at
        every node (default True).
    lazy_triangles : bool
        Add the O(n^3) rows (6) and (10) lazily too, separated by enumeration at every
        LP point and integral candidate (default True: the model of a 37-variable
        problem otherwise starts with ~40,000 rows and its root LP alone takes
        seconds). ``False`` puts them all in the model, as the paper does.
    n_greedy : int
        ASOBS passes for the first DAG (then cut down to treewidth k).
    start : {"best", "fit", "cut"}
        How the first DAG is cut down to treewidth k: arc removal until min-fill /
        min-degree certify it (``"fit"``), the one-pass chordal cut (``"cut"``), or the
        better of the two (default; see docs/ALGORITHMS.md §5, TWILP).

    Notes
    -----
    Every incumbent has ``info["certificate"]``, a :class:`TreewidthCertificate` of
    width <= k, and ``info["optimal"]``; ``bound`` is the solver's proven bound.
    ``max_iterations`` counts SCIP branch-and-bound nodes; it also bounds the start's
    arc removal to ``max_iterations * n`` eliminations (as many min-fill orders of n
    variables as nodes), then the one-pass cut finishes it.

    Examples
    --------
    >>> from bnsl_dist.cache import ParentSetCache
    >>> from bnsl_dist.search import Budget
    >>> c = ParentSetCache.from_lists([[((), -9.0)], [((0,), -1.0), ((), -9.0)],
    ...                                [((0, 1), -1.0), ((), -9.0)]])
    >>> last = list(TWILP(k=1).run(c, Budget(seconds=20), np.random.default_rng(0)))[-1]
    >>> last.score, last.info["certificate"].check(last.dag)
    (-19.0, True)

    References
    ----------
    P. Parviainen, H. S. Farahani, J. Lagergren, AISTATS 2014, §4-§5.
    """

    name = "twilp"
    exact = True

    def __init__(self, *, k: int, node_cuts: bool = True, lazy_triangles: bool = True,
                 n_greedy: int = 8, start: str = "best") -> None:
        if int(k) != k or k < 1:
            raise InvalidConfigError(f"twilp: k must be an integer >= 1, got {k!r}")
        if int(n_greedy) < 1:
            raise InvalidConfigError(f"twilp: n_greedy must be >= 1, got {n_greedy}")
        if start not in STARTS:
            raise InvalidConfigError(f"twilp: start must be one of {STARTS}, got {start!r}")
        self.k = k
        self.start = start
        self.node_cuts = node_cuts
        self.lazy_triangles = lazy_triangles
        self.n_greedy = n_greedy

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int | None]:
        watch = budget.stopwatch()
        fam = Families(cache)
        n = fam.n
        k = min(int(self.k), max(n - 1, 0))
        seed = int(rng.integers(0, SEED_MAX))
        upper = float(fam.best.sum())

        def make(found: Found, bound: float) -> Incumbent:
            dag = cache.dag_from_indices(found.chosen)
            cert = TreewidthCertificate(tuple(int(v) for v in found.extra), k)
            if not cert.check(dag):  # pragma: no cover - the orders are valid by construction
                raise AssertionError("twilp: invalid treewidth certificate")
            return Incumbent(found.elapsed, found.score, dag, iterations=found.iterations,
                             bound=bound,
                             info={"certificate": cert, "k": int(self.k), "optimal": False})

        if k == 0:  # n <= 1: the empty DAG, whose score is the upper bound (optimal)
            chosen, order = [best_subset(fam, v, 0) for v in range(n)], list(range(n))
        else:  # cut down within the cell's deadline and / or n eliminations per node
            greedy = greedy_dag(fam, rng, self.n_greedy, start_deadline(watch))
            its = watch.budget.max_iterations
            chosen, order = start_dag(
                fam, greedy, k, self.start,
                None if watch.budget.seconds is None else ScipStop(watch.remaining),
                None if its is None else int(its) * n)
        first = Found(watch.elapsed(), chosen, fam.score(chosen), upper, 0, tuple(order))
        return (yield from incumbents(first, upper, lambda: scip_stream(
            watch, lambda emit, stopper: _solve(fam, k, watch, seed, (chosen, order),
                                                self.node_cuts, self.lazy_triangles, emit,
                                                stopper)), make))
