"""KTree: an incremental k-tree, the scaffold of bounded-treewidth structure learning.

A k-tree starts from a (k+1)-clique; every new node joins an existing k-clique, which
creates k new k-cliques (the joined clique minus one member, plus the new node, for
each member). A DAG whose every family (node plus parents) lies in one (k+1)-clique of
a k-tree has a moral graph inside the k-tree, hence treewidth at most k, and the
reverse insertion order is a perfect elimination order that certifies it.

Clique ids are stable and deterministic: ids ``0..k`` are the initial clique without
its member ``0..k``; joining clique ``c`` with node ``v`` appends k ids, one per member
position of ``c``, each being ``c`` with the member at that position replaced by ``v``.
The numba learners in :mod:`bnsl_dist.search.treewidth` follow the same numbering, so
their runs can be replayed here (:meth:`KTree.replay`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.treewidth import TreewidthCertificate

__all__ = ["KTree"]


class KTree:
    """An incremental k-tree over integer node labels.

    Parameters
    ----------
    k : int
        The treewidth bound (>= 1).
    clique : sequence of int
        The initial (k+1)-clique, ``k + 1`` distinct nodes (inserted in this order).

    Examples
    --------
    >>> t = KTree(2, [0, 1, 2])          # the triangle; 2-cliques 0:{1,2} 1:{0,2} 2:{0,1}
    >>> t.add(3, t.fitting_cliques([0, 1])[0])
    [3, 4]
    >>> [t.clique(c) for c in (3, 4)]
    [(3, 1), (0, 3)]
    >>> sorted(t.fitting_cliques([1, 3])), t.perfect_elimination_order()
    ([3], [3, 2, 1, 0])

    References
    ----------
    H. P. Patil, "On the structure of k-trees", J. Combinatorics, Information and System
    Sciences 11(2-4), 1986. M. Scanagatta et al., "Approximate structure learning for
    large Bayesian networks", Machine Learning 107, 2018, §5.1 (k-trees), §5.2 (k-G).
    """

    def __init__(self, k: int, clique: Sequence[int]) -> None:
        if k < 1:
            raise InvalidConfigError(f"a k-tree needs k >= 1, got k={k}")
        members = [int(v) for v in clique]
        if len(members) != k + 1 or len(set(members)) != k + 1:
            raise InvalidConfigError(f"the initial clique of a {k}-tree needs {k + 1} distinct "
                                     f"nodes, got {members}")
        self.k = k
        self._cliques: list[tuple[int, ...]] = []
        self._containing: dict[int, list[int]] = {v: [] for v in members}
        self._adj: dict[int, set[int]] = {v: set(members) - {v} for v in members}
        self._order: list[int] = list(members)
        for j in range(k + 1):
            self._new_clique(tuple(members[:j] + members[j + 1:]))

    def _new_clique(self, members: tuple[int, ...]) -> int:
        cid = len(self._cliques)
        self._cliques.append(members)
        for v in members:
            self._containing[v].append(cid)
        return cid

    # ------------------------------------------------------------------ growing
    def add(self, v: int, clique_id: int) -> list[int]:
        """Join node ``v`` to the k-clique ``clique_id``; return the ids of the k new cliques.

        Raises
        ------
        InvalidConfigError
            ``v`` is already in the tree, or ``clique_id`` is not a clique id.
        """
        v = int(v)
        if v in self._containing:
            raise InvalidConfigError(f"node {v} is already in the k-tree")
        if not 0 <= clique_id < len(self._cliques):
            raise InvalidConfigError(f"no k-clique with id {clique_id} "
                                     f"(the tree has {len(self._cliques)})")
        base = self._cliques[clique_id]
        self._containing[v] = []
        self._adj[v] = set(base)
        for u in base:
            self._adj[u].add(v)
        self._order.append(v)
        return [self._new_clique(base[:p] + (v,) + base[p + 1:]) for p in range(self.k)]

    @classmethod
    def replay(cls, k: int, insertion_order: Sequence[int],
               attach: Sequence[int]) -> KTree:
        """Rebuild a k-tree from its insertion order and, per inserted node after the
        initial ``k + 1``, the id of the clique it joined (``attach[i]`` for
        ``insertion_order[i]``; entries of the initial clique are ignored)."""
        order = [int(v) for v in insertion_order]
        if len(attach) != len(order):
            raise InvalidConfigError("replay: insertion order and attach ids differ in length")
        t = cls(k, order[:k + 1])
        for v, c in zip(order[k + 1:], attach[k + 1:], strict=True):
            t.add(v, int(c))
        return t

    # ------------------------------------------------------------------ queries
    @property
    def nodes(self) -> list[int]:
        """The nodes in insertion order."""
        return list(self._order)

    @property
    def n_cliques(self) -> int:
        return len(self._cliques)

    def __contains__(self, v: object) -> bool:
        return v in self._containing

    def __len__(self) -> int:
        return len(self._order)

    def clique(self, clique_id: int) -> tuple[int, ...]:
        """Members of a k-clique (in the order of the numbering rule)."""
        return self._cliques[clique_id]

    def cliques(self) -> list[tuple[int, ...]]:
        return list(self._cliques)

    def cliques_containing(self, v: int) -> list[int]:
        """Ids of the k-cliques that contain node ``v`` (ascending); [] if ``v`` is absent."""
        return list(self._containing.get(int(v), ()))

    def fitting_cliques(self, parent_set: Iterable[int]) -> list[int]:
        """Ids of the k-cliques that contain every member of ``parent_set`` (ascending).

        Found by intersecting the clique lists of the members, shortest list first. The
        empty set fits every clique; a set with a node outside the tree fits none.
        """
        ps = sorted({int(p) for p in parent_set})
        if not ps:
            return list(range(len(self._cliques)))
        lists = [self._containing.get(p) for p in ps]
        if any(lst is None for lst in lists):
            return []
        lists.sort(key=len)  # type: ignore[arg-type]
        out = set(lists[0])  # type: ignore[arg-type]
        for lst in lists[1:]:
            out.intersection_update(lst)  # type: ignore[arg-type]
            if not out:
                break
        return sorted(out)

    def neighbors(self, v: int) -> set[int]:
        return set(self._adj[int(v)])

    def adjacency(self) -> dict[int, set[int]]:
        """The k-tree's undirected graph, node -> neighbours."""
        return {v: set(nb) for v, nb in self._adj.items()}

    def perfect_elimination_order(self) -> list[int]:
        """The reverse insertion order: each node, when eliminated, has at most k remaining
        neighbours and they form a clique."""
        return self._order[::-1]

    def certificate(self) -> TreewidthCertificate:
        """Certificate (reverse insertion order, width k) for any DAG over the nodes
        ``0..n-1`` whose families lie inside the (k+1)-cliques of this tree."""
        return TreewidthCertificate(tuple(self.perfect_elimination_order()), self.k)
