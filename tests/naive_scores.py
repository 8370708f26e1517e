"""Naive reference implementations of the local scores (numpy + scipy), for tests only.

Written directly from ALGORITHMS.md §2 with no shared code: counts by a dictionary over
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
