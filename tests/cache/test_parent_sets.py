"""ParentSetCache's own views (flat arrays, bit masks) against per-set Python loops, and
its typed entropies: carried by restrict/prune, stored in .jkl, validated."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from bnsl_dist.cache import read_jkl, write_jkl
from bnsl_dist.cache.jkl import META_TAG
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import CacheFormatError, InvalidConfigError
from tests.naive import random_cache


@pytest.mark.parametrize("n", [1, 5, 70])  # 70 variables: two bitset words
def test_flat_views_match_a_loop_over_the_sets(n):
    cache = random_cache(n, n, max_sets_per_var=6)
    f = cache.flat
    sets = [(v, ps) for v in range(n) for ps, _ in cache.sets_of(v)]
    assert f.n == n and f.offsets.dtype == np.int64 and f.scores.dtype == np.float64
    assert f.owner.tolist() == [v for v, _ in sets]
    assert f.sizes.tolist() == [len(ps) for _, ps in sets]
    assert cache.set_masks == [sum(1 << p for p in ps) for _, ps in sets]
    words = cache.mask_words
    assert words.shape == (len(sets), (n + 63) // 64)
    for i, (_, ps) in enumerate(sets):
        as_int = sum(int(w) << (64 * j) for j, w in enumerate(words[i]))
        assert as_int == sum(1 << p for p in ps)
    assert cache.flat is f  # computed once


@pytest.mark.parametrize("n", [1, 6, 40])
def test_score_lookups_match_the_lists_the_cache_was_built_from(n):
    rng = np.random.default_rng(n)
    lists = []
    for v in range(n):
        others = [u for u in range(n) if u != v]
        sets = {(): float(rng.normal())}
        for _ in range(min(7, len(others))):
            size = int(rng.integers(1, min(3, len(others)) + 1))
            sets[tuple(sorted(int(x) for x in rng.choice(others, size, replace=False)))] = \
                float(rng.normal())
        items = [(tuple(rng.permutation(ps).tolist()), s) for ps, s in sets.items()]
        rng.shuffle(items)  # members and sets in any order
        lists.append(items)
    cache = ParentSetCache.from_lists(lists)
    empty = cache.empty_scores()
    for v, items in enumerate(lists):
        for ps, s in items:
            assert cache.score_of(v, ps) == s and cache.has_set(v, reversed(ps))
        sets_of_v = {tuple(sorted(ps)): s for ps, s in items}
        assert empty[v] == sets_of_v[()]
        absent = next(ps for ps in [(u,) for u in range(n) if u != v] + [(v,)]
                      if ps not in sets_of_v)
        assert not cache.has_set(v, absent)


def test_a_variable_without_the_empty_set_is_named():
    # bypasses from_lists (which refuses such a cache): sets (1,) of "a", () of "b"
    cache = ParentSetCache(("a", "b"), np.array([0, 1, 2]), np.array([-1.0, -2.0]),
                           np.array([0, 1, 1]), np.array([1]))
    with pytest.raises(KeyError, match="'a' has no empty parent set"):
        cache.empty_scores()
    with pytest.raises(KeyError, match="'a' has no empty parent set"):
        cache.score_of(0, ())
    assert cache.score_of(1, ()) == -2.0


def test_views_are_not_pickled_and_come_back_equal():
    cache = random_cache(8, 3)
    before = cache.flat, cache.set_masks, cache.mask_words
    cache.score_of(0, cache.sets_of(0)[0][0])
    cache.empty_scores()
    state = cache.__getstate__()
    assert not {"flat", "set_masks", "mask_words", "empty_index"} & set(state)
    assert state["_lookup"] is None
    back = pickle.loads(pickle.dumps(cache))
    assert np.array_equal(back.flat.owner, before[0].owner)
    assert back.set_masks == before[1] and np.array_equal(back.mask_words, before[2])


def test_a_cache_without_variables_has_no_flat_view():
    with pytest.raises(InvalidConfigError, match="no variables"):
        _ = ParentSetCache.from_lists([]).flat


def test_entropies_are_typed_validated_and_carried():
    h = [0.5, 0.25, 1.0, 0.0]
    cache = random_cache(4, 7, max_sets_per_var=4).prune_dominated()
    cache = ParentSetCache.from_lists([cache.sets_of(v) for v in range(4)], entropies=h)
    assert cache.entropies.dtype == np.float64 and cache.entropies.tolist() == h
    assert cache.prune_dominated().entropies.tolist() == h
    sub, keep = cache.restrict([2, 0])
    assert keep == [2, 0] and sub.entropies.tolist() == [1.0, 0.5]
    with pytest.raises(CacheFormatError, match="entropies"):
        ParentSetCache.from_lists([cache.sets_of(v) for v in range(4)], entropies=[1.0])
    with pytest.raises(CacheFormatError, match="entropies"):
        ParentSetCache.from_lists([cache.sets_of(v) for v in range(4)],
                                  entropies=[1.0, np.nan, 0.0, 0.0])


def test_entropies_round_trip_through_jkl_bit_for_bit(tmp_path):
    cache = random_cache(5, 2)
    h = np.random.default_rng(0).random(5) * 3
    cache.entropies = h
    write_jkl(cache, tmp_path / "c.jkl.gz")
    back = read_jkl(tmp_path / "c.jkl.gz")
    assert back.entropies.tolist() == h.tolist()  # exactly: JSON floats round-trip
    assert "entropies" not in back.meta
    write_jkl(random_cache(5, 2), tmp_path / "none.jkl")
    assert read_jkl(tmp_path / "none.jkl").entropies is None


def test_entropies_of_older_files_come_from_the_metadata(tmp_path):
    """Files written when entropies were a metadata key still give them."""
    p = tmp_path / "old.jkl"
    p.write_text(f'{META_TAG} {{"names":["a","b"],"meta":{{"entropies":[0.5,1.5]}}}}\n'
                 "2\n0 1\n-1.0 0\n1 1\n-2.0 0\n")
    back = read_jkl(p)
    assert back.entropies.tolist() == [0.5, 1.5] and back.names == ("a", "b")
    p.write_text(f'{META_TAG} {{"entropies":[0.5]}}\n2\n0 1\n-1.0 0\n1 1\n-2.0 0\n')
    with pytest.raises(CacheFormatError, match="entropies"):
        read_jkl(p)


@pytest.mark.parametrize("bad,msg", [
    ([((1, 1), -1.0), ((), -2.0)], "repeated"),  # was kept as the set (1, 1)
    ([((1, 2, 1), -1.0), ((), -2.0)], "repeated"),
    ([((0,), -1.0), ((), -2.0)], "own parent set"),
    ([((3,), -1.0), ((), -2.0)], "out of range"),
    ([((1,), -1.0), ((1,), -1.5), ((), -2.0)], "listed twice"),
    ([((1,), np.nan), ((), -2.0)], "non-finite"),
    ([((1,), -1.0)], "no empty parent set"),
])
def test_from_lists_refuses_a_malformed_set_naming_the_variable(bad, msg):
    ok = [((), -3.0)]
    with pytest.raises(CacheFormatError, match=msg) as err:
        ParentSetCache.from_lists([bad, ok, ok], names=["a", "b", "c"])
    assert "variable a" in str(err.value)
