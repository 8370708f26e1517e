"""Naive oracles for parent-set exploration tests (numpy only, no project code).

``naive_score`` counts families with ``np.unique`` and applies the formulas of
docs/ALGORITHMS.md §2 directly; ``non_dominated`` enumerates every subset of the other
variables and keeps those that no proper subset scores at least as well.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy.special import gammaln


def naive_score(codes: np.ndarray, arities: np.ndarray, child: int, parents: tuple[int, ...],
                score: str = "bic", ess: float = 1.0) -> float:
    codes = np.asarray(codes, dtype=np.int64)
    n = codes.shape[0]
    r = int(arities[child])
    q = 1.0
    cfg = np.zeros(n, dtype=np.int64)
    for p in parents:
        cfg = cfg * int(arities[p]) + codes[:, p]
        q *= float(arities[p])
    _, nj = np.unique(cfg, return_counts=True)
    _, njk = np.unique(cfg * r + codes[:, child], return_counts=True)
    if score == "bdeu":
        aj, ajk = ess / q, ess / (q * r)
        return float(np.sum(gammaln(aj) - gammaln(aj + nj))
                     + np.sum(gammaln(ajk + njk) - gammaln(ajk)))
    ll = float(np.sum(njk * np.log(njk)) - np.sum(nj * np.log(nj)))
    if score == "ll":
        return ll
    return ll - 0.5 * math.log(n) * (r - 1) * q


def all_scores(codes, arities, child, score="bic", ess=1.0, max_size=None):
    """{parent set (sorted tuple): score} for every subset of the other variables."""
    n = codes.shape[1]
    others = [u for u in range(n) if u != child]
    top = len(others) if max_size is None else min(max_size, len(others))
    out = {}
    for k in range(top + 1):
        for ps in itertools.combinations(others, k):
            out[ps] = naive_score(codes, arities, child, ps, score, ess)
    return out


def non_dominated(scores: dict[tuple[int, ...], float], tol: float = 1e-9):
    """(kept, ambiguous): sets no proper subset dominates, and those within ``tol``
    (relative) of their best proper subset, whose status rounding could flip."""
    best_incl: dict[tuple[int, ...], float] = {}
    kept, ambiguous = {}, set()
    for ps in sorted(scores, key=len):
        s = scores[ps]
        subs = [best_incl[ps[:i] + ps[i + 1:]] for i in range(len(ps))]
        best_sub = max(subs) if subs else -math.inf
        best_incl[ps] = max(s, best_sub)
        if s > best_sub:
            kept[ps] = s
        if subs and abs(s - best_sub) <= tol * max(1.0, abs(s)):
            ambiguous.add(ps)
    return kept, ambiguous


def assert_same_families(got, kept, ambiguous, rel=1e-9):
    """``got`` (list of (set, score)) equals ``kept`` up to the ambiguous sets."""
    got_d = dict(got)
    assert len(got_d) == len(got), "a set listed twice"
    a = set(got_d) - ambiguous
    b = set(kept) - ambiguous
    assert a == b, (sorted(a - b)[:5], sorted(b - a)[:5])
    for ps in a:
        assert math.isclose(got_d[ps], kept[ps], rel_tol=rel, abs_tol=1e-9), ps
