"""ASOBS-ENT's direction: the paper's variant (``asobs-ent``, ``winasobs-ent``) offers the
high-entropy variables the most parent sets, i.e. ASOBS processes them first; the
``*-last`` variants process them last.

The cache makes the variable ASOBS processes first visible in the DAG: every variable has
two sets, the empty one and "all the others" (one better by the same amount for all). The
first variable processed has no descendants yet and takes all the others as parents;
after that every variable is an ancestor of it, so its "all the others" set holds a
descendant and it keeps the empty set. Every DAG then scores the same (no local search
moves anything), and the one variable with parents is the one processed first.

The oracle is the paper's sampling rule, enumerated over all permutations: positions
filled one by one with probability proportional to the entropy of the unplaced variables
(Scanagatta et al. 2018, §4.2). The paper offers "plenty of parent sets" to the variables
that rule picks first, so in the paper's variant the variable processed first is the first
pick (P = H_i / Σ H); in the ``-last`` variants it is the last pick.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from bnsl_dist.cache import ParentSetCache
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.spec import SearchSpec

H = np.array([1.0, 2.0, 4.0, 8.0, 16.0])  # entropies, the last variable the highest
RUNS = 400


def _cache() -> ParentSetCache:
    n = len(H)
    return ParentSetCache.from_lists(
        [[((), -10.0), (tuple(u for u in range(n) if u != v), -9.0)] for v in range(n)])


def _pick_probabilities(which: int) -> np.ndarray:
    """P(variable i is the rule's ``which``-th pick), over all permutations (brute force)."""
    p = np.zeros(len(H))
    for perm in itertools.permutations(range(len(H))):
        prob, left = 1.0, H.sum()
        for v in perm:
            prob *= H[v] / left
            left -= H[v]
        p[perm[which]] += prob
    return p


def _first_processed(name: str) -> np.ndarray:
    """How often each variable is the one with parents (processed first), one sampled
    order per seed."""
    cache = _cache()
    counts = np.zeros(len(H), dtype=np.int64)
    for seed in range(RUNS):
        opt = make_optimizer(name, entropies=H.tolist())
        incs = list(opt.run(cache, Budget(max_iterations=1), np.random.default_rng(seed)))
        with_parents = [v for v, ps in enumerate(incs[-1].dag.parents) if ps]
        assert len(with_parents) == 1, with_parents
        counts[with_parents[0]] += 1
    return counts


@pytest.mark.parametrize(("name", "which"), [("asobs-ent", 0), ("winasobs-ent", 0),
                                             ("asobs-ent-last", -1),
                                             ("winasobs-ent-last", -1)])
def test_which_variables_asobs_ent_processes_first(name, which):
    counts = _first_processed(name)
    expected = _pick_probabilities(which)
    assert stats.chisquare(counts, expected * RUNS).pvalue > 1e-4
    top = int(np.argmax(H))
    if which == 0:
        # the highest-entropy variable gets the most parent sets in about 16/31 = 52% of
        # the orders; processed last it would in 1% (P = 0.0099): 160 of 400 cannot
        # happen by chance in the wrong direction (binomial tail < 1e-100)
        assert expected[top] > 0.5 and counts[top] >= 160
    else:
        assert expected[top] < 0.02 and counts[top] <= 20
        assert counts[int(np.argmin(H))] >= 160  # the lowest-entropy one gets them


def test_specs_name_the_direction():
    """A spec of an entropy-sampling ASOBS always names ``high_entropy``, so cells of the
    paper's variant never share a key (or a record) with those the project ran as
    ``asobs-ent`` before (high-entropy variables last, no ``high_entropy`` named)."""
    def spec(name, **params):
        return SearchSpec(algorithm=name, params=params, budget={"seconds": 1.0})

    assert spec("asobs-ent").params == {"high_entropy": "first"}
    assert spec("winasobs-ent").params == {"high_entropy": "first"}
    assert spec("asobs-ent-last").params == {"high_entropy": "last"}
    assert spec("asobs-ent", high_entropy="last").params == {"high_entropy": "last"}
    assert spec("asobs", sampler="entropy").params == {"sampler": "entropy",
                                                        "high_entropy": "first"}
    assert spec("asobs").params == {} and spec("winasobs").params == {}
    assert spec("asobs-ent").optimizer().high_entropy == "first"
    assert spec("winasobs-ent-last").optimizer().high_entropy == "last"


def test_the_registry_shows_each_names_defaults():
    """`bnsl-dist algorithms` (and `learn --param`'s help) lists what each name runs."""
    from bnsl_dist.search.base import optimizer_info

    def defaults(name):
        return {h.name: h.default for h in optimizer_info(name).hyperparameters}

    assert {k: defaults("asobs-ent")[k] for k in ("sampler", "local_search", "high_entropy")} \
        == {"sampler": "entropy", "local_search": "swap", "high_entropy": "first"}
    assert defaults("winasobs-ent-last")["high_entropy"] == "last"
    assert defaults("winasobs-ent-last")["local_search"] == "window"
    assert defaults("asobs")["sampler"] == "uniform"
    assert defaults("kg-ent")["entropies"] is None  # a None that is no class default
