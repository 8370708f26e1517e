"""Naive reference implementations for the search tests (pure Python, no shared kernels).

Shared by every search test: others import these, so keep the signatures stable.

- :func:`random_cache` — a random small :class:`ParentSetCache` (∅ for every variable).
- :func:`brute_force_best` — the optimal DAG of a small cache, by enumerating every
  variable order (every DAG is consistent with some order, and given an order each
  variable independently takes its best set among its predecessors).
- :func:`naive_best_for_order` — the best DAG consistent with one order (= plain OBS
  without swaps).
- :func:`naive_asobs` — ASOBS for one order (walked from its end, as in the paper),
  re-deriving descendants by graph search after every choice (no bitsets).
- :func:`naive_asobs_search` — the whole ASOBS loop over given batches of orders (pass,
  topological order nearest the sampled one, OBS, adjacent-swap sweeps; every order
  that improves, at its index), re-deriving every family from the set lists.
- :func:`naive_is_acyclic` — Kahn's algorithm on a parents list.
- :func:`load_jkl` — a ``.jkl`` cache through ``bnsl_dist.cache.read_jkl`` when it
  exists, else a minimal test-only parser (``bundled=True``: a file of
  ``bnsl_dist/_bundled/jkl/``).

Everything works on ``cache.sets_of(v)`` lists only, never on the flattened arrays or
the numba kernels that the code under test uses.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache

__all__ = [
    "random_cache",
    "brute_force_best",
    "naive_best_for_order",
    "naive_asobs",
    "naive_asobs_search",
    "naive_is_acyclic",
    "naive_descendants",
    "load_jkl",
]


def random_cache(n_vars: int, rng: np.random.Generator | int | None = None, *,
                 max_sets_per_var: int = 8, max_indegree: int = 3,
                 names: Sequence[str] | None = None) -> ParentSetCache:
    """A random cache: per variable ∅ plus up to ``max_sets_per_var - 1`` random sets.

    Scores are random but shaped like real ones: ∅ scores about -100, and a set
    scores higher the more its members are "liked" by the child (a random affinity
    matrix), minus a size penalty, plus noise — so that good sets overlap, dominance
    happens, and cycles are tempting. Scores are rounded to 1e-6 and made distinct per
    variable so optima are unique with high probability.
    """
    rng = np.random.default_rng(rng)
    n = int(n_vars)
    if n < 1:
        raise ValueError("n_vars must be >= 1")
    affinity = rng.gamma(1.0, 10.0, size=(n, n))
    lists: list[list[tuple[tuple[int, ...], float]]] = []
    for v in range(n):
        others = [u for u in range(n) if u != v]
        base = -100.0 - float(rng.uniform(0, 20))
        items: dict[tuple[int, ...], float] = {(): round(base, 6)}
        n_sets = int(rng.integers(1, max(1, max_sets_per_var) + 1))
        tries = 0
        while len(items) < n_sets and others and tries < 20 * max_sets_per_var:
            tries += 1
            size = int(rng.integers(1, min(max_indegree, len(others)) + 1))
            ps = tuple(sorted(int(x) for x in rng.choice(others, size=size, replace=False)))
            if ps in items:
                continue
            gain = float(affinity[v, list(ps)].sum()) - 6.0 * size + float(rng.normal(0, 4))
            s = round(base + gain, 6)
            while s in items.values():
                s = round(s - 1e-6, 6)
            items[ps] = s
        lists.append(list(items.items()))
    return ParentSetCache.from_lists(lists, names=names)


def _best_subset_sets(cache: ParentSetCache) -> list[list[tuple[frozenset[int], float]]]:
    return [[(frozenset(ps), s) for ps, s in cache.sets_of(v)] for v in range(cache.n_vars)]


def naive_best_for_order(cache: ParentSetCache, order: Sequence[int]
                         ) -> tuple[float, list[tuple[int, ...]]]:
    """Each variable takes its best cached set made of variables earlier in ``order``."""
    sets = _best_subset_sets(cache)
    n = cache.n_vars
    parents: list[tuple[int, ...]] = [()] * n
    total = 0.0
    before: set[int] = set()
    for v in order:
        best = max(((s, ps) for ps, s in sets[v] if ps <= before), key=lambda t: t[0])
        parents[v] = tuple(sorted(best[1]))
        total += best[0]
        before.add(v)
    return total, parents


def brute_force_best(cache: ParentSetCache) -> tuple[float, list[tuple[int, ...]]]:
    """The optimal DAG score and parent sets, by trying every order (n <= 8).

    Given an order the best consistent DAG decomposes per variable; the best over all
    orders is the optimum over all DAGs built from cached sets.
    """
    n = cache.n_vars
    if n > 8:
        raise ValueError("brute force is for n <= 8")
    sets = _best_subset_sets(cache)
    memo: dict[tuple[int, frozenset[int]], tuple[float, frozenset[int]]] = {}

    def best(v: int, before: frozenset[int]) -> tuple[float, frozenset[int]]:
        key = (v, before)
        if key not in memo:
            memo[key] = max(((s, ps) for ps, s in sets[v] if ps <= before),
                            key=lambda t: t[0])
        return memo[key]

    best_total = -np.inf
    best_parents: list[tuple[int, ...]] = []
    for order in itertools.permutations(range(n)):
        total = 0.0
        chosen: list[frozenset[int]] = [frozenset()] * n
        before: frozenset[int] = frozenset()
        for v in order:
            s, ps = best(v, before)
            total += s
            chosen[v] = ps
            before = before | {v}
        if total > best_total:
            best_total = total
            best_parents = [tuple(sorted(c)) for c in chosen]
    return float(best_total), best_parents


def naive_is_acyclic(parents: Sequence[Sequence[int]]) -> bool:
    """Kahn's algorithm."""
    n = len(parents)
    indeg = [len(p) for p in parents]
    children: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(parents):
        for p in ps:
            children[p].append(v)
    stack = [v for v in range(n) if indeg[v] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                stack.append(c)
    return seen == n


def naive_descendants(parents: Sequence[Sequence[int]], v: int) -> set[int]:
    """Descendants of v (excluding v) by depth-first search over children."""
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    for u, ps in enumerate(parents):
        for p in ps:
            children[p].append(u)
    out: set[int] = set()
    stack = [v]
    while stack:
        u = stack.pop()
        for c in children[u]:
            if c not in out:
                out.add(c)
                stack.append(c)
    return out


def naive_asobs(cache: ParentSetCache, order: Sequence[int]
                ) -> tuple[float, list[tuple[int, ...]]]:
    """ASOBS for one order, walked from its last variable to its first: each variable
    takes its best cached set with no member among its current descendants
    (recomputed from scratch every time)."""
    sets = _best_subset_sets(cache)
    n = cache.n_vars
    parents: list[tuple[int, ...]] = [()] * n
    total = 0.0
    for v in reversed(list(order)):
        desc = naive_descendants(parents, v)
        s, ps = max(((s, ps) for ps, s in sets[v] if not (ps & desc)), key=lambda t: t[0])
        parents[v] = tuple(sorted(ps))
        total += s
    return total, parents


def _best_family(sets: list[tuple[frozenset[int], float]], allowed: set[int]
                 ) -> tuple[float, frozenset[int]]:
    return max(((s, ps) for ps, s in sets if ps <= allowed), key=lambda t: t[0])


def _topological_near(parents: Sequence[Sequence[int]], order: Sequence[int]) -> list[int]:
    """Kahn's algorithm taking, among the ready variables, the earliest in ``order``."""
    rank = {v: k for k, v in enumerate(order)}
    left = {v: set(ps) for v, ps in enumerate(parents)}
    out: list[int] = []
    while left:
        v = min((u for u, ps in left.items() if not ps), key=rank.__getitem__)
        out.append(v)
        del left[v]
        for ps in left.values():
            ps.discard(v)
    return out


def _naive_swaps(sets: list[list[tuple[frozenset[int], float]]], order: list[int]
                 ) -> tuple[float, list[frozenset[int]]]:
    """OBS on ``order`` then plain sweeps of improving adjacent swaps (> 1e-9)."""
    n = len(order)
    fam = [(0.0, frozenset())] * n
    for k, v in enumerate(order):
        fam[v] = _best_family(sets[v], set(order[:k]))
    improved = True
    while improved:
        improved = False
        for k in range(n - 1):
            a, b = order[k], order[k + 1]
            before = set(order[:k])
            na = _best_family(sets[a], before | {b})
            nb = _best_family(sets[b], before)
            if (na[0] + nb[0]) - (fam[a][0] + fam[b][0]) > 1e-9:
                order[k], order[k + 1] = b, a
                fam[a], fam[b] = na, nb
                improved = True
    return sum(f[0] for f in fam), [f[1] for f in fam]


def naive_asobs_search(cache: ParentSetCache, batches: Sequence[Sequence[Sequence[int]]]
                       ) -> list[tuple[int, list[tuple[int, ...]]]]:
    """ASOBS with swaps (``asobs``, ``local_search="swap"``) over the given batches of
    orders: per order the ASOBS pass, a topological order of its DAG nearest the
    sampled order, OBS on it and adjacent-swap sweeps; every DAG that beats every
    earlier one is reported with the index (from 1) of its order. Scores are summed
    per family, as the optimizer does."""
    sets = _best_subset_sets(cache)
    best = -np.inf
    done = 0
    out: list[tuple[int, list[tuple[int, ...]]]] = []
    for batch in batches:
        for order in batch:
            done += 1
            _, parents = naive_asobs(cache, order)
            score, dag = _naive_swaps(sets, _topological_near(parents, order))
            if score > best:
                best = score
                out.append((done, [tuple(sorted(ps)) for ps in dag]))
    return out


def load_jkl(path: str | Path, *, bundled: bool = False) -> ParentSetCache:
    """Read a ``.jkl`` / ``.jkl.gz`` cache with the library's reader (``bundled``: a file
    shipped in the package's ``_bundled/jkl``)."""
    from bnsl_dist.cache import read_jkl

    if bundled:
        from bnsl_dist.data.registry import bundled_path

        path = bundled_path(f"jkl/{path}")
    return read_jkl(path)
