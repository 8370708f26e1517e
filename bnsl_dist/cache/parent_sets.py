"""ParentSetCache: candidate parent sets and their local scores, per variable.

Per variable the sets are sorted best-first (ties: larger set first, then
lexicographic), the empty set always present and, after pruning, last. The data are
flattened into numpy arrays so that numba kernels answer the hot query "best set of v
that avoids / fits inside a set of variables" without Python objects. The views every
optimizer family reads (:attr:`ParentSetCache.flat`, the sets as bit masks) are cached
properties of the cache, computed once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache import _kernels as K
from bnsl_dist.exceptions import CacheFormatError, InvalidConfigError, NotADAGError
from bnsl_dist.graph.dag import DAG

__all__ = ["ParentSetCache", "FlatCache", "n_words", "bitset", "sort_key"]


def n_words(n_vars: int) -> int:
    """uint64 words of a bitset over ``n_vars`` variables."""
    return max(1, (n_vars + 63) // 64)


def bitset(members: Iterable[int], n_vars: int) -> NDArray[np.uint64]:
    """A bitset with the given members."""
    w = np.zeros(n_words(n_vars), dtype=np.uint64)
    for p in members:
        K.set_bit(w, int(p))
    return w


def sort_key(item: tuple[tuple[int, ...], float]) -> tuple[float, int, tuple[int, ...]]:
    """Best first; ties: larger set first, then lexicographic."""
    ps, s = item
    return (-s, -len(ps), ps)


@dataclass(frozen=True, slots=True)
class FlatCache:
    """A cache as the contiguous typed arrays the numba kernels read.

    Sets of variable ``v`` are ``offsets[v] .. offsets[v+1]-1``; the members of set ``i``
    are ``par_flat[par_offsets[i]:par_offsets[i+1]]``, it has ``sizes[i]`` members, child
    ``owner[i]`` and score ``scores[i]``.
    """

    n: int
    offsets: NDArray[np.int64]
    par_offsets: NDArray[np.int64]
    par_flat: NDArray[np.int64]
    scores: NDArray[np.float64]
    sizes: NDArray[np.int64]
    owner: NDArray[np.int64]


#: Derived views, recomputed on demand (never pickled).
_DERIVED = ("flat", "set_masks", "mask_words", "empty_index")


@dataclass(eq=False)
class ParentSetCache:
    """Candidate parent sets with scores, flattened for numba.

    Build with :meth:`from_lists`; read/write ``.jkl`` with :mod:`bnsl_dist.cache.jkl`.
    ``entropies`` holds H(X_v) per variable when the cache was built from data (the
    entropy-weighted order samplers read it); ``meta`` holds free-form settings.

    Examples
    --------
    >>> c = ParentSetCache.from_lists([[((1,), -1.0), ((), -2.0)], [((), -3.0)]])
    >>> c.flat.offsets.tolist(), c.flat.sizes.tolist(), c.flat.owner.tolist()
    ([0, 2, 3], [1, 0, 0], [0, 0, 1])
    >>> c.set_masks
    [2, 0, 0]
    """

    names: tuple[str, ...]
    offsets: NDArray[np.int64]
    scores: NDArray[np.float64]
    par_offsets: NDArray[np.int64]
    par_flat: NDArray[np.int64]
    arities: NDArray[np.int64] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    entropies: NDArray[np.float64] | None = None
    _lookup: list[dict[tuple[int, ...], int] | None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        self.scores = np.ascontiguousarray(self.scores, dtype=np.float64)
        self.par_offsets = np.ascontiguousarray(self.par_offsets, dtype=np.int64)
        self.par_flat = np.ascontiguousarray(self.par_flat, dtype=np.int64)
        if self.entropies is not None:
            h = np.asarray(self.entropies, dtype=np.float64)
            if h.shape != (self.n_vars,) or not np.all(np.isfinite(h)):
                raise CacheFormatError(f"entropies: expected {self.n_vars} finite values, got "
                                       f"shape {h.shape}")
            self.entropies = h

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in _DERIVED}
        state["_lookup"] = None
        return state

    # ------------------------------------------------------------------ building
    @classmethod
    def from_lists(cls, sets: Sequence[Iterable[tuple[Sequence[int], float]]], *,
                   names: Sequence[str] | None = None,
                   arities: Sequence[int] | NDArray[np.int64] | None = None,
                   meta: Mapping[str, Any] | None = None, source: str = "cache",
                   entropies: Sequence[float] | NDArray[np.float64] | None = None
                   ) -> ParentSetCache:
        """Build from, per variable, (parent set, score) pairs in any order.

        Raises
        ------
        CacheFormatError
            A variable without the empty set, a set containing its own child, an
            unknown variable or a repeated member, a duplicate set, or a non-finite score.
        """
        n = len(sets)
        nm = tuple(str(i) for i in range(n)) if names is None else tuple(str(s) for s in names)
        if len(nm) != n:
            raise CacheFormatError(f"{len(nm)} names for {n} variables", path=source)
        offsets = np.zeros(n + 1, dtype=np.int64)
        all_scores: list[float] = []
        all_sets: list[tuple[int, ...]] = []
        for v in range(n):
            items = [(tuple(sorted(int(p) for p in ps)), float(s)) for ps, s in sets[v]]
            seen: set[tuple[int, ...]] = set()
            for ps, s in items:
                if ps in seen:
                    raise CacheFormatError(f"variable {nm[v]}: parent set {list(ps)} listed twice",
                                           path=source)
                seen.add(ps)
                if not np.isfinite(s):
                    raise CacheFormatError(f"variable {nm[v]}: non-finite score {s}", path=source)
                if v in ps:
                    raise CacheFormatError(f"variable {nm[v]} is in its own parent set",
                                           path=source)
                if ps and (ps[0] < 0 or ps[-1] >= n):
                    raise CacheFormatError(f"variable {nm[v]}: parent index out of range 0..{n - 1}",
                                           path=source)
                if len(set(ps)) != len(ps):
                    raise CacheFormatError(f"variable {nm[v]}: parent set {list(ps)} has a "
                                           "repeated member", path=source)
            if () not in seen:
                raise CacheFormatError(f"variable {nm[v]} has no empty parent set", path=source)
            items.sort(key=sort_key)
            all_sets.extend(ps for ps, _ in items)
            all_scores.extend(s for _, s in items)
            offsets[v + 1] = offsets[v] + len(items)
        sizes = np.fromiter((len(s) for s in all_sets), dtype=np.int64, count=len(all_sets))
        par_offsets = np.zeros(len(all_sets) + 1, dtype=np.int64)
        np.cumsum(sizes, out=par_offsets[1:])
        par_flat = np.fromiter((p for s in all_sets for p in s), dtype=np.int64,
                               count=int(par_offsets[-1]))
        ar = None if arities is None else np.asarray(arities, dtype=np.int64)
        return cls(nm, offsets, np.asarray(all_scores, dtype=np.float64), par_offsets, par_flat,
                   ar, dict(meta or {}), None if entropies is None else np.asarray(entropies))

    # ------------------------------------------------------------------ access
    @property
    def n_vars(self) -> int:
        return len(self.names)

    @property
    def n_sets(self) -> int:
        return int(self.offsets[-1])

    def n_sets_of(self, v: int) -> int:
        return int(self.offsets[v + 1] - self.offsets[v])

    # ------------------------------------------------------------------ flat views
    @cached_property
    def flat(self) -> FlatCache:
        """The arrays the search kernels read (computed once).

        Raises
        ------
        InvalidConfigError
            The cache has no variables (nothing to search).
        """
        if self.n_vars < 1:
            raise InvalidConfigError("the cache has no variables")
        sizes = np.diff(self.par_offsets)
        owner = np.repeat(np.arange(self.n_vars, dtype=np.int64), np.diff(self.offsets))
        return FlatCache(self.n_vars, self.offsets, self.par_offsets, self.par_flat,
                         self.scores, sizes, owner)

    @cached_property
    def set_masks(self) -> list[int]:
        """Members of every set as a Python-int bit mask (any number of variables)."""
        po = self.par_offsets.tolist()
        pf = self.par_flat.tolist()
        masks = []
        for i in range(self.n_sets):
            m = 0
            for p in pf[po[i]:po[i + 1]]:
                m |= 1 << p
            masks.append(m)
        return masks

    @cached_property
    def mask_words(self) -> NDArray[np.uint64]:
        """Members of every set as a bitset row of :func:`n_words` uint64 words."""
        words = np.zeros((self.n_sets, n_words(self.n_vars)), dtype=np.uint64)
        rows = np.repeat(np.arange(self.n_sets), np.diff(self.par_offsets))
        np.bitwise_or.at(words, (rows, self.par_flat >> 6),
                         np.left_shift(np.uint64(1), (self.par_flat & 63).astype(np.uint64)))
        return words

    def parents_at(self, i: int) -> tuple[int, ...]:
        """Members of the set with global index ``i``."""
        return tuple(int(x) for x in self.par_flat[self.par_offsets[i]:self.par_offsets[i + 1]])

    def sets_of(self, v: int) -> list[tuple[tuple[int, ...], float]]:
        """(parent set, score) pairs of variable v, best first."""
        return [(self.parents_at(i), float(self.scores[i]))
                for i in range(self.offsets[v], self.offsets[v + 1])]

    def best_score(self, v: int) -> float:
        return float(self.scores[self.offsets[v]])

    def score_of(self, v: int, parents: Iterable[int]) -> float:
        """Score of a set that is in the cache (KeyError otherwise). The first query of a
        variable indexes its sets (only its own; the empty set needs no index)."""
        key = tuple(sorted(int(p) for p in parents))
        if not key:
            at = int(self.empty_index[v])
            if at < 0:
                raise self._no_empty(v)
            return float(self.scores[at])
        if self._lookup is None:
            self._lookup = [None] * self.n_vars
        index = self._lookup[v]
        if index is None:
            index = self._lookup[v] = {self.parents_at(i): i for i in range(self.offsets[v],
                                                                            self.offsets[v + 1])}
        return float(self.scores[index[key]])

    @cached_property
    def empty_index(self) -> NDArray[np.int64]:
        """Global index of each variable's empty parent set, read off the arrays once; -1
        where it has none (only in a cache made without :meth:`from_lists` or
        :func:`~bnsl_dist.cache.jkl.read_jkl`, which refuse such a cache)."""
        empty = np.flatnonzero(self.par_offsets[1:] == self.par_offsets[:-1])
        out = np.full(self.n_vars, -1, dtype=np.int64)
        out[np.searchsorted(self.offsets, empty, side="right") - 1] = empty
        return out

    def _no_empty(self, v: int) -> KeyError:
        return KeyError(f"variable {self.names[v]!r} has no empty parent set")

    def empty_scores(self) -> NDArray[np.float64]:
        """Score of every variable's empty parent set.

        Raises
        ------
        KeyError
            A variable has no empty set in the cache (the first one named).
        """
        missing = np.flatnonzero(self.empty_index < 0)
        if len(missing):
            raise self._no_empty(int(missing[0]))
        return self.scores[self.empty_index]

    def has_set(self, v: int, parents: Iterable[int]) -> bool:
        try:
            self.score_of(v, parents)
        except KeyError:
            return False
        return True

    def candidates(self, v: int) -> list[int]:
        """Variables appearing in at least one cached set of v (sorted)."""
        lo, hi = self.par_offsets[self.offsets[v]], self.par_offsets[self.offsets[v + 1]]
        return sorted(set(int(x) for x in self.par_flat[lo:hi]))

    # ------------------------------------------------------------------ queries
    def best_avoiding(self, v: int, forbidden: NDArray[np.uint64]) -> int:
        """Global index of v's best set with no member in the ``forbidden`` bitset."""
        return int(K.best_avoiding(self.offsets, self.par_offsets, self.par_flat, v, forbidden))

    def best_within(self, v: int, allowed: NDArray[np.uint64]) -> int:
        """Global index of v's best set whose members all lie in ``allowed`` (-1 if none)."""
        return int(K.best_within(self.offsets, self.par_offsets, self.par_flat, v, allowed))

    # ------------------------------------------------------------------ graphs
    def score_dag(self, dag: DAG) -> float:
        """Sum of cached local scores of a DAG's families (KeyError if one is missing)."""
        if dag.n_vars != self.n_vars:
            raise NotADAGError(f"the DAG has {dag.n_vars} nodes, the cache {self.n_vars}")
        return float(sum(self.score_of(v, ps) for v, ps in enumerate(dag.parents)))

    def dag_from_indices(self, chosen: Sequence[int] | NDArray[np.int64]) -> DAG:
        """The DAG that gives variable v the set with global index ``chosen[v]``."""
        return DAG.from_parents([self.parents_at(int(i)) for i in chosen], self.names)

    def restrict(self, variables: Sequence[int]) -> tuple[ParentSetCache, list[int]]:
        """The cache over a subset of variables, keeping only sets inside that subset.

        Returns the sub-cache (variables renumbered 0..m-1 in the given order) and the
        map from new to old indices.
        """
        keep = [int(v) for v in variables]
        pos = {v: i for i, v in enumerate(keep)}
        lists = []
        for v in keep:
            lists.append([(tuple(pos[p] for p in ps), s) for ps, s in self.sets_of(v)
                          if all(p in pos for p in ps)])
        ar = None if self.arities is None else self.arities[keep]
        h = None if self.entropies is None else self.entropies[keep]
        return ParentSetCache.from_lists(lists, names=[self.names[v] for v in keep], arities=ar,
                                         meta=self.meta, entropies=h), keep

    def with_entropies(self, entropies: Sequence[float] | NDArray[np.float64]
                       ) -> ParentSetCache:
        """The same cache with ``entropies`` (a new object: the arrays and the views
        already derived are shared, ``meta`` is copied; this one is left as it was, so a
        cache shared between callers, e.g. one a per-process cache returned, never
        changes under them)."""
        new = dict(self.__dict__)
        new["meta"] = dict(self.meta)
        out = object.__new__(type(self))
        out.__dict__.update(new)
        h = np.asarray(entropies, dtype=np.float64)
        if h.shape != (self.n_vars,) or not np.all(np.isfinite(h)):
            raise CacheFormatError(f"entropies: expected {self.n_vars} finite values, got "
                                   f"shape {h.shape}")
        out.entropies = h
        return out

    def prune_dominated(self) -> ParentSetCache:
        """Drop every set for which a cached proper subset scores at least as well."""
        lists = []
        for v in range(self.n_vars):
            kept: list[tuple[tuple[int, ...], float]] = []
            kept_sets: list[frozenset[int]] = []
            # Best first and, among equal scores, smaller first: a dominator comes earlier.
            for ps, s in sorted(self.sets_of(v), key=lambda it: (-it[1], len(it[0]), it[0])):
                fs = frozenset(ps)
                if any(k < fs for k in kept_sets):
                    continue
                kept.append((ps, s))
                kept_sets.append(fs)
            lists.append(kept)
        return ParentSetCache.from_lists(lists, names=self.names, arities=self.arities,
                                         meta=self.meta, entropies=self.entropies)

    def indegree_histogram(self) -> dict[int, int]:
        sizes = np.diff(self.par_offsets)
        vals, cnt = np.unique(sizes, return_counts=True)
        return {int(a): int(b) for a, b in zip(vals, cnt, strict=True)}

    def __repr__(self) -> str:
        return f"ParentSetCache(n_vars={self.n_vars}, n_sets={self.n_sets})"
