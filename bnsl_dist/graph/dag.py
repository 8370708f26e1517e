"""DAG: the structure every optimizer returns, with the project's JSON form.

JSON everywhere in the project: ``{"nodes": [names], "parents": {name: [names]}}``.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.exceptions import NotADAGError

__all__ = ["DAG", "topological_order", "find_cycle", "strongly_connected_components"]


def find_cycle(parents: Sequence[Sequence[int]]) -> list[int] | None:
    """A directed cycle (list of nodes, each a parent of the next) or None.

    Examples
    --------
    >>> find_cycle([[2], [0], [1]]), find_cycle([[], [0]])
    ([1, 2, 0], None)
    """
    n = len(parents)
    color = np.zeros(n, dtype=np.int8)  # 0 new, 1 on stack, 2 done
    for root in range(n):
        if color[root]:
            continue
        stack: list[tuple[int, int]] = [(root, 0)]
        path: list[int] = []
        color[root] = 1
        path.append(root)
        while stack:
            v, i = stack[-1]
            ps = parents[v]
            if i < len(ps):
                stack[-1] = (v, i + 1)
                p = int(ps[i])
                if color[p] == 1:
                    cyc = path[path.index(p):]
                    return list(reversed(cyc))
                if color[p] == 0:
                    color[p] = 1
                    path.append(p)
                    stack.append((p, 0))
            else:
                color[v] = 2
                path.pop()
                stack.pop()
    return None


def topological_order(parents: Sequence[Sequence[int]]) -> list[int]:
    """Parents before children (Kahn's algorithm, smallest index first among ties).

    Examples
    --------
    >>> topological_order([[2], [], [1]])
    [1, 2, 0]
    """
    import heapq

    n = len(parents)
    indeg = np.array([len(p) for p in parents], dtype=np.int64)
    children: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(parents):
        for p in ps:
            children[int(p)].append(v)
    heap = [v for v in range(n) if indeg[v] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    while heap:
        v = heapq.heappop(heap)
        out.append(v)
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                heapq.heappush(heap, c)
    if len(out) != n:
        raise NotADAGError(f"the graph has a cycle through {find_cycle(parents)}")
    return out


def strongly_connected_components(parents: Sequence[Sequence[int]]) -> list[list[int]]:
    """SCCs of the graph with arcs p -> v for p in ``parents[v]``, parents first.

    The components come in topological order of the condensation (a component after
    every component holding a parent of one of its members), ties broken by smallest
    member; members of each component are sorted. Components from
    :func:`scipy.sparse.csgraph.connected_components`, the order from
    :func:`topological_order`.

    Examples
    --------
    >>> strongly_connected_components([[1], [0], [0, 3], [2], [1]])
    [[0, 1], [2, 3], [4]]
    """
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    n = len(parents)
    if n == 0:
        return []
    sizes = np.fromiter(map(len, parents), dtype=np.int64, count=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    arcs_to = np.fromiter(itertools.chain.from_iterable(parents), dtype=np.int64,
                          count=int(indptr[-1]))
    graph = csr_array((np.ones(arcs_to.size, dtype=np.int8), arcs_to, indptr), shape=(n, n))
    k, labels = connected_components(graph, directed=True, connection="strong")
    _, first = np.unique(labels, return_index=True)  # smallest member of each label
    rank = np.empty(k, dtype=np.int64)
    rank[np.argsort(first)] = np.arange(k)
    comp = rank[labels]  # components numbered by smallest member
    members: list[list[int]] = [[] for _ in range(k)]
    for v, c in enumerate(comp.tolist()):
        members[c].append(v)
    child_comp, parent_comp = comp[np.repeat(np.arange(n), sizes)], comp[arcs_to]
    cross = child_comp != parent_comp
    comp_parents: list[list[int]] = [[] for _ in range(k)]
    for c, p in set(zip(child_comp[cross].tolist(), parent_comp[cross].tolist(), strict=True)):
        comp_parents[c].append(p)
    return [members[c] for c in topological_order(comp_parents)]


@dataclass(frozen=True, eq=True)
class DAG:
    """A directed acyclic graph over ``n_vars`` named nodes, stored as parent sets.

    Build with :meth:`from_parents` (validates); parent tuples are sorted ascending.

    Examples
    --------
    >>> dag = DAG.from_parents([[], [0], [1, 0]], ["A", "B", "C"])
    >>> dag.parents, dag.n_arcs, dag.topological_order()
    (((), (0,), (0, 1)), 3, [0, 1, 2])
    >>> dag.to_json_dict()
    {'nodes': ['A', 'B', 'C'], 'parents': {'A': [], 'B': ['A'], 'C': ['A', 'B']}}
    """

    parents: tuple[tuple[int, ...], ...]
    names: tuple[str, ...]

    @classmethod
    def from_parents(cls, parents: Sequence[Sequence[int]],
                     names: Sequence[str] | None = None) -> DAG:
        n = len(parents)
        nm = tuple(f"X{i}" for i in range(n)) if names is None else tuple(str(s) for s in names)
        if len(nm) != n:
            raise NotADAGError(f"{len(nm)} names for {n} nodes")
        ps: list[tuple[int, ...]] = []
        for v, p in enumerate(parents):
            t = tuple(sorted(int(x) for x in p))
            if len(set(t)) != len(t):
                raise NotADAGError(f"node {nm[v]!r} lists a parent twice")
            for x in t:
                if not 0 <= x < n:
                    raise NotADAGError(f"node {nm[v]!r} has parent index {x} out of range")
                if x == v:
                    raise NotADAGError(f"node {nm[v]!r} is its own parent")
            ps.append(t)
        cyc = find_cycle(ps)
        if cyc is not None:
            raise NotADAGError("the graph has a cycle: " + " -> ".join(nm[c] for c in cyc))
        return cls(tuple(ps), nm)

    @classmethod
    def empty(cls, n_vars: int, names: Sequence[str] | None = None) -> DAG:
        return cls.from_parents([()] * n_vars, names)

    @property
    def n_vars(self) -> int:
        return len(self.parents)

    @property
    def n_arcs(self) -> int:
        return sum(len(p) for p in self.parents)

    def arcs(self) -> list[tuple[int, int]]:
        """(parent, child) pairs."""
        return [(p, v) for v, ps in enumerate(self.parents) for p in ps]

    def children(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in range(self.n_vars)]
        for v, ps in enumerate(self.parents):
            for p in ps:
                out[p].append(v)
        return out

    def topological_order(self) -> list[int]:
        return topological_order(self.parents)

    def adjacency(self) -> NDArray[np.bool_]:
        """a[i, j] = True when i -> j."""
        a = np.zeros((self.n_vars, self.n_vars), dtype=bool)
        for p, v in self.arcs():
            a[p, v] = True
        return a

    def max_indegree(self) -> int:
        return max((len(p) for p in self.parents), default=0)

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self) -> dict[str, Any]:
        return {"nodes": list(self.names),
                "parents": {self.names[v]: [self.names[p] for p in ps]
                            for v, ps in enumerate(self.parents)}}

    @classmethod
    def from_json_dict(cls, obj: Mapping[str, Any], *, names: Sequence[str] | None = None,
                       source: str = "DAG JSON", partial: bool = False) -> DAG:
        """Parse the project's DAG JSON. With ``names``, nodes are matched to them and
        every name must appear in the JSON, unless ``partial`` (the others get no parents).
        """
        if not isinstance(obj, Mapping) or "parents" not in obj:
            raise NotADAGError(f"{source}: expected an object with fields 'nodes' and 'parents'")
        par = obj["parents"]
        if not isinstance(par, Mapping):
            raise NotADAGError(f"{source}: field 'parents' must map names to lists of names")
        nodes = obj.get("nodes")
        if nodes is None:
            nodes = list(par)
        if not isinstance(nodes, list) or not all(isinstance(x, str) for x in nodes):
            raise NotADAGError(f"{source}: field 'nodes' must be a list of names")
        target = list(nodes) if names is None else list(names)
        idx = {s: i for i, s in enumerate(target)}
        for s in nodes:
            if s not in idx:
                raise NotADAGError(f"{source}: field 'nodes' names unknown variable {s!r}")
        plist: list[list[int]] = [[] for _ in target]
        for child, ps in par.items():
            if child not in idx:
                raise NotADAGError(f"{source}: field 'parents' names unknown variable {child!r}")
            if not isinstance(ps, list) or not all(isinstance(p, str) for p in ps):
                raise NotADAGError(f"{source}: field 'parents.{child}' must be a list of "
                                   "names")
            for p in ps:
                if p not in idx:
                    raise NotADAGError(f"{source}: field 'parents.{child}' names unknown "
                                       f"variable {p!r}")
                plist[idx[child]].append(idx[p])
        if names is not None and not partial:
            named = set(nodes) | set(par) | {p for ps in par.values() for p in ps}
            absent = [s for s in target if s not in named]
            if absent:
                shown = ", ".join(absent[:10]) + (", ..." if len(absent) > 10 else "")
                raise NotADAGError(f"{source}: names {len(target) - len(absent)} of the "
                                   f"{len(target)} data columns; missing: {shown} (allow a "
                                   "partial DAG, --allow-partial-dag, to score them as "
                                   "parentless)")
        try:
            return cls.from_parents(plist, target)
        except NotADAGError as exc:
            raise NotADAGError(f"{source}: {exc}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_json_dict(), indent=1)

    @classmethod
    def read_json(cls, path: str | os.PathLike[str], *,
                  names: Sequence[str] | None = None, partial: bool = False) -> DAG:
        """Read a DAG JSON file; see :meth:`from_json_dict`. A result of ``bnsl-dist
        learn`` (its DAG JSON in field ``dag``) is read as its DAG."""
        try:
            with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark is dropped
                obj = json.load(fh)
        except FileNotFoundError:
            raise NotADAGError(f"{path}: no such file") from None
        except json.JSONDecodeError as exc:
            raise NotADAGError(f"{path}, line {exc.lineno}, column {exc.colno}: invalid JSON: "
                               f"{exc.msg}") from None
        except UnicodeDecodeError:
            raise NotADAGError(f"{path}: not UTF-8 text") from None
        except RecursionError:
            raise NotADAGError(f"{path}: invalid JSON: nested too deeply") from None
        source = str(path)
        if isinstance(obj, Mapping) and "parents" not in obj \
                and isinstance(obj.get("dag"), Mapping):
            obj, source = obj["dag"], f"{path}, field 'dag'"
        return cls.from_json_dict(obj, names=names, source=source, partial=partial)
