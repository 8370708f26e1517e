"""Sequential exploration: every parent set by size, with lossless pruning.

docs/ALGORITHMS.md §3. Score ∅, then all sets of size 1, 2, …, d in lexicographic order,
until the budget ends. Two lossless prunings:

* **dominance**: P is dropped from the output when a proper subset scores at least as
  well (every proper subset of a generated set has been scored, see below, so the test
  is exact);
* **BIC penalty bound**: LL ≤ 0 gives BIC(X,P) ≤ −(ln N/2)(r_X−1) q(P). When that
  bound is ≤ the best score among P's subsets, neither P nor any superset can be
  optimal: P is not scored and no superset of P is generated. (BDeu: dominance only.)

Sets of size k are generated Apriori-style from the scored sets of size k−1: a set is a
candidate only if all its (k−1)-subsets were scored. A set with an unscored subset U is
itself pruned by the bound, because q grows with the set and U's bound already failed
against subsets that are also subsets of the set; so the generation loses nothing.

References
----------
de Campos, Ji. Efficient structure learning of Bayesian networks using constraints.
JMLR 12, 2011, §4 (the BIC bound on supersets). Teyssier, Koller. Ordering-based
search. UAI 2005, §3 (dominated parent sets).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

from bnsl_dist.cache.independence import ExploreStats
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.scores.registry import score_info

__all__ = ["explore_sequential"]

Family = tuple[tuple[int, ...], float]


def _join(level: list[tuple[int, ...]], alive: dict[tuple[int, ...], float]
          ) -> Iterator[tuple[int, ...]]:
    """Candidates of size k from the sorted scored sets of size k−1 (Apriori join)."""
    i = 0
    m = len(level)
    while i < m:
        prefix = level[i][:-1]
        j = i
        while j < m and level[j][:-1] == prefix:
            j += 1
        for a in range(i, j):
            xa = level[a][-1]
            for b in range(a + 1, j):
                cand = prefix + (xa, level[b][-1])
                # every (k-1)-subset must have been scored; the two joined ones were
                if all(cand[:p] + cand[p + 1:] in alive for p in range(len(cand) - 2)):
                    yield cand
        i = j


def explore_sequential(scorer: LocalScorer, child: int, *, max_indegree: int | None = None,
                       seconds: float | None = None, max_scores: int | None = None,
                       ) -> tuple[list[Family], ExploreStats]:
    """Sequential exploration of one variable's parent sets (inputs validated by caller).

    Parameters
    ----------
    scorer : LocalScorer
        Data, score ("bic" uses the penalty bound, "bdeu" only dominance) and ESS.
    child : int
        The variable.
    max_indegree : int, optional
        Largest set size d (default: no limit; with BIC the bound ends the search).
    seconds, max_scores : optional
        Budget: wall time and/or number of exact scores (∅ is always scored).

    Returns
    -------
    sets : list of (parents, score)
        All scored sets that no proper subset dominates, best first, ∅ last.
    stats : ExploreStats

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> x = np.array([[0, 0], [1, 1], [1, 1], [0, 0]] * 10)
    >>> sets, _ = explore_sequential(LocalScorer(CategoricalData.from_array(x)), 1)
    >>> [ps for ps, _ in sets]
    [(0,), ()]

    References
    ----------
    de Campos & Ji, JMLR 2011, §4.
    """
    t0 = time.perf_counter()
    n = scorer.n_vars
    ar = scorer.arities
    use_bound = score_info(scorer.score_name).penalty_bound
    pen = 0.5 * math.log(scorer.n_samples) * (int(ar[child]) - 1)
    d = n - 1 if max_indegree is None else min(int(max_indegree), n - 1)
    deadline = None if seconds is None else t0 + seconds
    others = [u for u in range(n) if u != child]

    s0 = scorer.score(child, ())
    n_scores = 1
    out: list[Family] = [((), s0)]
    prev: dict[tuple[int, ...], float] = {(): s0}  # best score among the subsets, itself incl.
    level: list[tuple[int, ...]] = [()]
    stopped = "complete"
    for k in range(1, d + 1):
        cur: dict[tuple[int, ...], float] = {}
        new_level: list[tuple[int, ...]] = []
        cands: Iterator[tuple[int, ...]] = ((y,) for y in others) if k == 1 else \
            _join(level, prev)
        for cand in cands:
            if max_scores is not None and n_scores >= max_scores:
                stopped = "scores"
                break
            if deadline is not None and time.perf_counter() >= deadline:
                stopped = "seconds"
                break
            best_sub = max(prev[cand[:p] + cand[p + 1:]] for p in range(k))
            if use_bound:
                q = 1.0
                for p in cand:
                    q *= float(ar[p])
                if -pen * q <= best_sub:
                    continue
            s = scorer.score(child, cand)
            n_scores += 1
            if s > best_sub:
                out.append((cand, s))
            cur[cand] = max(s, best_sub)
            new_level.append(cand)
        if stopped != "complete" or not new_level:
            break
        prev, level = cur, new_level
    out.sort(key=lambda it: (-it[1], -len(it[0]), it[0]))
    return out, ExploreStats(exact_scores=n_scores, seconds=time.perf_counter() - t0,
                             closed=n_scores, kept=len(out), stopped_by=stopped)
