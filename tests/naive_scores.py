"""Naive reference implementations of the local scores (numpy + scipy), for tests only.

Written directly from docs/ALGORITHMS.md §2 with no shared code: counts by a dictionary over
row tuples, BDeu with scipy's gammaln.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
from scipy.special import gammaln


def family_counts(codes: np.ndarray, child: int, parents: list[int]) -> dict[tuple, Counter]:
    table: dict[tuple, Counter] = {}
    for row in np.asarray(codes, dtype=np.int64):
        key = tuple(int(row[p]) for p in parents)
        table.setdefault(key, Counter())[int(row[child])] += 1
    return table


def naive_ll(codes, child, parents):
    ll = 0.0
    for cnt in family_counts(codes, child, parents).values():
        nj = sum(cnt.values())
        for c in cnt.values():
            ll += c * math.log(c / nj)
    return ll


def naive_bic(codes, arities, child, parents):
    n = codes.shape[0]
    q = float(np.prod([float(arities[p]) for p in parents])) if parents else 1.0
    return naive_ll(codes, child, parents) - 0.5 * math.log(n) * (arities[child] - 1) * q


def naive_bdeu(codes, arities, child, parents, ess=1.0):
    r = int(arities[child])
    q = float(np.prod([float(arities[p]) for p in parents])) if parents else 1.0
    aj, ajk = ess / q, ess / (q * r)
    s = 0.0
    for cnt in family_counts(codes, child, parents).values():
        nj = sum(cnt.values())
        s += gammaln(aj) - gammaln(aj + nj)
        for k in range(r):
            s += gammaln(ajk + cnt.get(k, 0)) - gammaln(ajk)
    return s


def naive_entropy(codes, child, parents=()):
    return -naive_ll(codes, child, list(parents)) / codes.shape[0]


def exhaustive_cache_builder(score: str = "bic", max_indegree: int | None = None):
    """A cache builder scoring every parent set (up to ``max_indegree``) exactly and
    pruning nothing: an oracle-grade cache for tests of what runs on top of a cache."""
    import itertools

    from bnsl_dist.cache import ParentSetCache
    from bnsl_dist.scores import LocalScorer

    def build(data):
        s = LocalScorer(data, score)
        n = data.n_vars
        d = n - 1 if max_indegree is None else max_indegree
        lists = []
        for v in range(n):
            others = [u for u in range(n) if u != v]
            lists.append([(ps, s.score(v, list(ps))) for k in range(d + 1)
                          for ps in itertools.combinations(others, k)])
        return ParentSetCache.from_lists(lists, names=data.names, arities=data.arities)

    return build
