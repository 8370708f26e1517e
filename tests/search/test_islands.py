"""Islands of memetic searches (bnsl_dist/search/ordering/islands.py): one island in
epochs is the plain search, migrants reach the next island, the epochs' bounds, and
the same seeds the same result (serial = Dask in tests/orchestrate/test_anytime.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.ordering.islands import (
    Island,
    epoch_bounds,
    ring,
    run_epoch,
    run_islands,
)
from bnsl_dist.search.ordering.memetic import MemeticSearch
from tests.naive import random_cache


@pytest.fixture(scope="module")
def cache():
    return random_cache(30, 3, max_sets_per_var=10, max_indegree=3)


def _key(incs):
    return [(i.score, i.dag, i.iterations) for i in incs]


@pytest.mark.parametrize("epochs", [1, 3, 7])
def test_one_island_in_epochs_is_the_plain_search(cache, epochs):
    opt = make_optimizer("memetic", population=4)
    plain = list(opt.run(cache, Budget(max_iterations=40), np.random.default_rng(5)))
    (tr,) = run_islands(opt, cache, Budget(max_iterations=40), [np.random.default_rng(5)],
                        epochs=epochs, migrants=2)
    assert _key(tr.incumbents) == _key(plain)
    assert tr.total_iterations == 40


def test_migrants_are_the_best_members_and_join_the_next_population(cache):
    opt = make_optimizer("memetic", population=6)
    budget = Budget(max_iterations=30)
    a = run_epoch(Island(MemeticSearch(opt, np.random.default_rng(1))), cache, budget, [],
                  (15, None), migrants=2)
    # the best member is the island's best DAG; its chosen sets score it
    assert a.migrants[0][0] == max(i.score for i in a.incumbents)
    assert a.migrants[0][0] > a.migrants[1][0]
    assert sum(cache.flat.scores[a.migrants[0][2]]) == pytest.approx(a.migrants[0][0])
    b = run_epoch(Island(MemeticSearch(opt, np.random.default_rng(2))), cache, budget,
                  a.migrants, (0, None), migrants=2)
    assert b.incumbents == [] and b.island.search.iterations == 0
    pop = b.island.search.pop
    assert sorted(pop.scores) == sorted(m[0] for m in a.migrants)
    assert any(np.array_equal(o, a.migrants[0][1]) for o in pop.orders)


def test_a_filling_population_sends_all_its_members(cache):
    opt = make_optimizer("memetic", population=20)
    budget = Budget(max_iterations=30)
    a = run_epoch(Island(MemeticSearch(opt, np.random.default_rng(1))), cache, budget, [],
                  (4, None), migrants=1)
    pop = a.island.search.pop
    assert not pop.full() and len(pop.scores) >= 2
    # every member, best first, each scored by its chosen sets
    assert [m[0] for m in a.migrants] == sorted(pop.scores, reverse=True)
    for score, order, chosen in a.migrants:
        assert sum(cache.flat.scores[chosen]) == pytest.approx(score)
        assert sorted(order.tolist()) == list(range(cache.flat.n))
    # once full, only the best ``migrants``
    b = run_epoch(a.island, cache, budget, [], (30, None), migrants=1)
    assert b.island.search.pop.full()
    assert [m[0] for m in b.migrants] == [max(b.island.search.pop.scores)]


def test_ring_sends_each_island_the_migrants_of_the_one_before():
    assert ring([["a"], ["b"], ["c"]]) == [["c"], ["a"], ["b"]]
    assert ring([["a"]]) == [[]]


def test_epoch_bounds_split_the_budget_in_its_unit():
    assert epoch_bounds(Budget(max_iterations=10), 3) == [(3, None), (6, None), (10, None)]
    assert epoch_bounds(Budget(seconds=6.0), 3) == [(None, 2.0), (None, 4.0), (None, 6.0)]
    assert epoch_bounds(Budget(seconds=6.0, max_iterations=9), 3)[-1] == (9, None)
    with pytest.raises(InvalidConfigError):
        epoch_bounds(Budget(max_iterations=10), 0)


def test_islands_same_seeds_same_runs(cache):
    opt = make_optimizer("memetic", population=4)

    def runs(epochs):
        return [_key(t.incumbents) for t in run_islands(
            opt, cache, Budget(max_iterations=60),
            [np.random.default_rng(s) for s in (3, 4)], epochs=epochs, migrants=2)]

    assert runs(6) == runs(6)
    # the first island alone is the plain search until the first migrants arrive
    alone = list(opt.run(cache, Budget(max_iterations=10), np.random.default_rng(3)))
    assert runs(6)[0][:len(alone)] == _key(alone)
