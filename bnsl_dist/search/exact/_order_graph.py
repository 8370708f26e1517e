"""The order graph of one subproblem, over the numba kernels of
:mod:`._astar_kernels`: its open and closed lists (a linear-probing hash table of the
nodes, a binary heap on f, the frozen nodes of AWA*), grown on demand within a memory
cap (:class:`NodeLists`); the greedy order a search starts from (:func:`greedy_order`);
and a subproblem's best order, its cost and proven bound (:class:`SubState`). The
searches that drive them (A*, AWA*, BFBnB) are :mod:`bnsl_dist.search.exact.astar`.
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.search.exact import _astar_kernels as K
from bnsl_dist.search.exact.heuristics import PatternDatabase
from bnsl_dist.search.exact.pops import Subproblem

__all__ = ["ST_BUDGET", "ST_MEMORY", "NodeLists", "SubState", "greedy_order"]

#: What :meth:`NodeLists.step` returns besides the kernels' statuses: the iteration
#: budget or the deadline reached; the lists could not grow within the memory cap.
ST_BUDGET = 10
ST_MEMORY = 11


def _load(keys: NDArray[np.uint64]) -> int:
    """Most entries in the linear-probing table before it doubles."""
    return len(keys) * 7 // 10


class NodeLists:
    """Open/closed lists of one subproblem's order-graph search (see the kernels)."""

    def __init__(self, sub: Subproblem, heur: PatternDatabase, mode: int, recursive: bool,
                 max_bytes: int) -> None:
        self.sub, self.heur, self.mode, self.recursive = sub, heur, mode, recursive
        self.max_bytes = max_bytes
        cap = 1 << 8
        self.keys = np.full(cap, K.EMPTY_KEY, dtype=np.uint64)
        self.gval = np.zeros(cap)
        self.last = np.full(cap, -1, dtype=np.int8)
        self.flag = np.zeros(cap, dtype=np.uint8)
        self.heap = np.zeros((cap, 4), dtype=np.int64)
        self.susp = np.zeros(64, dtype=np.uint64)
        self.ctr = np.zeros(K.N_COUNTERS, dtype=np.int64)
        self.ctr[K.C_LEVEL] = -1
        self.h_start = heur.value(int(sub.full))
        K.tab_insert(self.keys, np.uint64(0))
        self.ctr[K.C_ENTRIES] = 1
        K.push_node(self.heap, self.ctr, mode, sub.m, 0, self.h_start, np.uint64(0), 0.0)
        self.peak_bytes = self.nbytes

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.keys, self.gval, self.last, self.flag, self.heap,
                                      self.susp))

    @property
    def expanded(self) -> int:
        return int(self.ctr[K.C_EXPANDED])

    @property
    def generated(self) -> int:
        return int(self.ctr[K.C_GENERATED])

    def _grow(self) -> bool:
        m = self.sub.m
        new_cap = len(self.keys) * (2 if self.ctr[K.C_ENTRIES] + m > _load(self.keys) else 1)
        new_h = len(self.heap) * (2 if self.ctr[K.C_HEAP] + m > len(self.heap) else 1)
        new_s = len(self.susp) * (2 if self.ctr[K.C_SUSP] + 1 > len(self.susp) else 1)
        extra = ((new_cap - len(self.keys)) * 18 + (new_h - len(self.heap)) * 32
                 + (new_s - len(self.susp)) * 8)
        if self.nbytes + extra > self.max_bytes:
            return False
        if new_cap != len(self.keys):
            keys = np.full(new_cap, K.EMPTY_KEY, dtype=np.uint64)
            gval, last = np.zeros(new_cap), np.full(new_cap, -1, dtype=np.int8)
            flag = np.zeros(new_cap, dtype=np.uint8)
            K.rehash(self.keys, self.gval, self.last, self.flag, keys, gval, last, flag)
            self.keys, self.gval, self.last, self.flag = keys, gval, last, flag
        if new_h != len(self.heap):
            self._resize_heap(new_h)
        if new_s != len(self.susp):
            self.susp = np.concatenate([self.susp, np.zeros(new_s - len(self.susp), np.uint64)])
        self.peak_bytes = max(self.peak_bytes, self.nbytes)
        return True

    def step(self, max_exp: int, ub: float, window: int, deadline: float = np.inf) -> int:
        """Expand up to ``max_exp`` nodes, growing the lists as needed (not past the
        ``deadline``, a perf_counter time); returns the kernel's status, or ST_BUDGET /
        ST_MEMORY when the lists could not grow."""
        s, h = self.sub, self.heur
        target = self.expanded + max_exp
        while True:
            st = K.search_chunk(s.full, s.set_off, s.set_mask, s.set_cost, s.par, s.chi,
                                self.recursive, h.var_group, h.var_bit, h.goff, h.table,
                                self.keys, self.gval, self.last, self.flag, self.heap,
                                self.susp, self.ctr, self.mode, window, ub,
                                s.tol, target - self.expanded, _load(self.keys))
            if st != K.ST_GROW:
                return int(st)
            if time.perf_counter() > deadline:
                return ST_BUDGET
            if not self._grow():
                return ST_MEMORY

    def begin_iteration(self) -> None:
        """AWA*: frozen nodes reopen; the deepest expanded layer is forgotten."""
        need = int(self.ctr[K.C_HEAP] + self.ctr[K.C_SUSP])
        if len(self.heap) < need:
            self._resize_heap(max(need, 2 * len(self.heap)))
        self.peak_bytes = max(self.peak_bytes, self.nbytes)
        s, h = self.sub, self.heur
        K.restore_suspended(s.full, h.var_group, h.var_bit, h.goff, h.table, self.keys,
                            self.gval, self.flag, self.heap, self.susp, self.ctr, self.mode)
        self.ctr[K.C_LEVEL] = -1
        self.ctr[K.C_FROZEN] = 0

    def order_to(self, key: int) -> NDArray[np.int64]:
        out = np.empty(bin(key).count("1"), dtype=np.int64)
        K.trace_order(self.keys, self.last, np.uint64(key), out)
        return out

    def frontier_bound(self) -> float:
        s, h = self.sub, self.heur
        return float(K.frontier_min_f(s.full, h.var_group, h.var_bit, h.goff, h.table,
                                      self.keys, self.gval, self.flag, self.heap, self.susp,
                                      self.ctr, self.mode))

    def best_partial(self) -> int | None:
        """Best-first search: the open node of least f (None when the open list is empty)."""
        K.drop_stale(self.heap, self.keys, self.gval, self.flag, self.ctr)
        return int(self.heap[0, 2]) if self.ctr[K.C_HEAP] > 0 else None

    def _resize_heap(self, size: int) -> None:
        heap = np.zeros((size, 4), dtype=np.int64)
        heap[:len(self.heap)] = self.heap
        self.heap = heap


def greedy_order(sub: Subproblem, heur: PatternDatabase, recursive: bool,
            prefix: NDArray[np.int64] | None = None) -> NDArray[np.int64]:
    """A complete local order: ``prefix`` then the successor of least f at each step."""
    out = np.empty(sub.m, dtype=np.int64)
    key = 0
    pos = 0
    if prefix is not None:
        out[:len(prefix)] = prefix
        pos = len(prefix)
        for x in prefix:
            key |= 1 << int(x)
    K.greedy_complete(np.uint64(key), sub.full, sub.set_off, sub.set_mask, sub.set_cost,
                      sub.par, sub.chi, recursive, heur.var_group, heur.var_bit, heur.goff,
                      heur.table, out, pos)
    return out


class SubState:
    """Best order, its reduced cost, a proven lower bound and the solved flag."""

    def __init__(self, sub: Subproblem, heur: PatternDatabase, recursive: bool) -> None:
        self.order = greedy_order(sub, heur, recursive)
        self.cost = float(K.path_cost(self.order, sub.set_off, sub.set_mask, sub.set_cost))
        self.lower = min(heur.value(int(sub.full)), self.cost)
        self.solved = self.lower >= self.cost - sub.tol
        self.search: NodeLists | None = None
