"""Treewidth: elimination-order width, min-fill / min-degree upper bounds, certificates.

The treewidth of a DAG is the treewidth of its moral graph. An elimination order
certifies an upper bound: eliminating the vertices one by one in that order, linking the
remaining neighbours of each eliminated vertex into a clique, the width of the order is
the largest number of remaining neighbours met; the treewidth is the least width over
all orders. Every bounded-treewidth learner returns a :class:`TreewidthCertificate`.

Graphs are adjacency lists ``list[set[int]]`` (see :mod:`bnsl_dist.graph.moral`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bnsl_dist.exceptions import InfeasibleError, InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.graph.moral import moral_graph

__all__ = [
    "eliminate",
    "elimination_width",
    "min_fill_order",
    "min_degree_order",
    "TreewidthCertificate",
    "certify",
]


def _check_order(order: Sequence[int], n: int) -> list[int]:
    out = [int(v) for v in order]
    if len(out) != n or sorted(out) != list(range(n)):
        raise InvalidConfigError(f"an elimination order must list each of the {n} vertices "
                                 f"exactly once (got {len(out)} entries)")
    return out


def eliminate(g: list[set[int]], v: int) -> set[int]:
    """Eliminate ``v`` from the adjacency sets ``g`` in place: its neighbours become a
    clique (fill edges added) and lose ``v``; ``g[v]`` becomes empty. Returns ``v``'s
    neighbours at its elimination (the set ``g[v]`` was).

    Examples
    --------
    >>> g = [{1, 2}, {0}, {0}]
    >>> sorted(eliminate(g, 0)), g
    ([1, 2], [set(), {2}, {1}])
    """
    nb = g[v]
    for a in nb:
        g[a].discard(v)
        g[a].update(nb)
        g[a].discard(a)
    g[v] = set()
    return nb


def elimination_width(adj: Sequence[set[int]], order: Sequence[int]) -> int:
    """Width of an elimination order: the most later neighbours a vertex has when eliminated.

    Parameters
    ----------
    adj : sequence of set of int
        Undirected graph; ``adj[u]`` = neighbours of ``u``.
    order : sequence of int
        A permutation of ``0..n-1``; ``order[0]`` is eliminated first.

    Returns
    -------
    int
        The width (an upper bound on the treewidth; 0 for a graph without edges or
        vertices).

    Raises
    ------
    InvalidConfigError
        ``order`` is not a permutation of the vertices.

    Examples
    --------
    >>> cycle = [{1, 3}, {0, 2}, {1, 3}, {0, 2}]
    >>> elimination_width(cycle, [0, 1, 2, 3])
    2

    References
    ----------
    H. L. Bodlaender, A. M. C. A. Koster, "Treewidth computations I. Upper bounds",
    Information and Computation 208(3), 2010, §2 (elimination orderings).
    """
    n = len(adj)
    seq = _check_order(order, n)
    g = [set(s) for s in adj]
    width = 0
    for v in seq:
        width = max(width, len(eliminate(g, v)))
    return width


def _fill_in(g: list[set[int]], v: int) -> int:
    """Edges missing between the neighbours of v."""
    nb = list(g[v])
    missing = 0
    for i, a in enumerate(nb):
        ga = g[a]
        for b in nb[i + 1:]:
            if b not in ga:
                missing += 1
    return missing


def _greedy_order(adj: Sequence[set[int]], cost: Callable[[list[set[int]], int], int],
                  two_hop: bool, due: Callable[[], bool] | None = None
                  ) -> tuple[list[int], int]:
    """Eliminate repeatedly the vertex of least cost (ties: smallest index).

    Costs are recomputed only for the vertices an elimination can change: the
    neighbours of the eliminated vertex (and their neighbours when ``two_hop``).
    ``due()`` is asked before each elimination; once it says True the order is given
    up (:class:`TimeoutError`).
    """
    n = len(adj)
    g = [set(s) for s in adj]
    cur = [cost(g, v) for v in range(n)]
    heap = [(c, v) for v, c in enumerate(cur)]
    heapq.heapify(heap)
    done = [False] * n
    order: list[int] = []
    width = 0
    while heap:
        c, v = heapq.heappop(heap)
        if done[v] or c != cur[v]:
            continue
        if due is not None and due():
            raise TimeoutError(f"elimination order given up after {len(order)} of {n} "
                               f"vertices")
        done[v] = True
        order.append(v)
        nb = eliminate(g, v)
        width = max(width, len(nb))
        dirty = set(nb)
        if two_hop:
            for a in nb:
                dirty.update(g[a])
        for w in dirty:
            c2 = cost(g, w)
            if c2 != cur[w]:
                cur[w] = c2
                heapq.heappush(heap, (c2, w))
    return order, width


def min_fill_order(adj: Sequence[set[int]], due: Callable[[], bool] | None = None
                   ) -> tuple[list[int], int]:
    """Greedy min-fill elimination order and its width (an upper bound on treewidth).

    At each step the vertex whose elimination adds the fewest fill edges goes next
    (ties: smallest index). ``due``: asked before each elimination; True gives the
    order up (:class:`TimeoutError`): on a DAG whose fill is dense one order costs
    a minute (the greedy start of TWILP on cwebkb, width 130).

    Examples
    --------
    >>> min_fill_order([{1, 3}, {0, 2}, {1, 3}, {0, 2}])
    ([0, 1, 2, 3], 2)

    References
    ----------
    H. L. Bodlaender, A. M. C. A. Koster, "Treewidth computations I. Upper bounds",
    Information and Computation 208(3), 2010, §4.2 (GreedyFillIn).
    """
    return _greedy_order(adj, _fill_in, two_hop=True, due=due)


def min_degree_order(adj: Sequence[set[int]], due: Callable[[], bool] | None = None
                     ) -> tuple[list[int], int]:
    """Greedy min-degree elimination order and its width (an upper bound on treewidth);
    ``due`` as in :func:`min_fill_order`.

    Examples
    --------
    >>> min_degree_order([{1}, {0, 2}, {1}])
    ([0, 1, 2], 1)

    References
    ----------
    H. L. Bodlaender, A. M. C. A. Koster, "Treewidth computations I. Upper bounds",
    Information and Computation 208(3), 2010, §4.1 (GreedyDegree).
    """
    return _greedy_order(adj, lambda g, v: len(g[v]), two_hop=False, due=due)


@dataclass(frozen=True, slots=True)
class TreewidthCertificate:
    """An elimination order of a DAG's moral graph whose width is at most ``width``.

    Attributes
    ----------
    order : tuple of int
        A permutation of the DAG's nodes; ``order[0]`` is eliminated first. For a DAG
        grown inside a k-tree, the reverse insertion order (a perfect elimination order
        of the k-tree).
    width : int
        The bound certified: the treewidth of the DAG is at most ``width``.

    Examples
    --------
    >>> dag = DAG.from_parents([(), (0,), (0, 1)])
    >>> TreewidthCertificate((2, 1, 0), 2).check(dag)
    True
    >>> TreewidthCertificate((2, 1, 0), 1).check(dag)
    False
    """

    order: tuple[int, ...]
    width: int

    def width_on(self, dag: DAG) -> int:
        """The actual elimination width of the moral graph of ``dag`` in this order."""
        return elimination_width(moral_graph(dag), self.order)

    def check(self, dag: DAG) -> bool:
        """True when ``order`` is a permutation of the nodes whose elimination of the
        moral graph has width ``<= width``."""
        n = dag.n_vars
        if len(self.order) != n or sorted(self.order) != list(range(n)):
            return False
        return self.width_on(dag) <= self.width

    def to_json_dict(self) -> dict[str, Any]:
        return {"order": list(self.order), "width": int(self.width)}

    @classmethod
    def from_json_dict(cls, obj: dict[str, Any]) -> TreewidthCertificate:
        try:
            return cls(tuple(int(v) for v in obj["order"]), int(obj["width"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidConfigError(f"treewidth certificate: expected fields 'order' (list of "
                                     f"int) and 'width' (int): {exc}") from None


def certify(dag: DAG, k: int | None = None) -> TreewidthCertificate:
    """A treewidth certificate for any DAG, from the min-fill heuristic.

    Parameters
    ----------
    dag : DAG
    k : int, optional
        Required bound. When the min-fill order is wider than ``k`` the min-degree order
        is tried too.

    Returns
    -------
    TreewidthCertificate
        The order found and its width (an upper bound, not always the treewidth).

    Raises
    ------
    InfeasibleError
        ``k`` is given and neither heuristic finds an order of width ``<= k`` (the
        treewidth may still be ``<= k``).

    Examples
    --------
    >>> certify(DAG.from_parents([(), (0,), (1,)]))
    TreewidthCertificate(order=(0, 1, 2), width=1)

    References
    ----------
    docs/ALGORITHMS.md §5 (verification by a min-fill upper bound).
    """
    adj = moral_graph(dag)
    order, width = min_fill_order(adj)
    if k is not None and width > k:
        order2, width2 = min_degree_order(adj)
        if width2 < width:
            order, width = order2, width2
        if width > k:
            raise InfeasibleError(f"no elimination order of width <= {k} found for the DAG "
                                  f"(min-fill / min-degree give {width})")
    return TreewidthCertificate(tuple(order), width)
