"""The memetic search over orders: its kernels against plain-Python oracles, the known
optima it must reach, and its seed contract (the generic optimizer contract is in
test_contract.py, serial = Dask in tests/orchestrate/test_anytime.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search import Budget, make_optimizer
from bnsl_dist.search.ordering import _memetic_kernels as MK
from tests.naive import load_jkl, random_cache


def _naive_crossover(a: list[int], b: list[int], lo: int, hi: int) -> list[int]:
    kept = a[lo:hi]
    rest = [v for v in b if v not in kept]
    return rest[:lo] + kept + rest[lo:]


@pytest.mark.parametrize("seed", range(30))
def test_order_crossover_equals_the_naive_one(seed):
    rnd = np.random.default_rng(seed)
    n = int(rnd.integers(1, 12))
    a, b = rnd.permutation(n), rnd.permutation(n)
    lo, hi = sorted(rnd.integers(n + 1, size=2).tolist())
    out = np.empty(n, dtype=np.int64)
    MK.order_crossover(a, b, lo, hi, np.empty(n, dtype=np.bool_), out)
    assert out.tolist() == _naive_crossover(a.tolist(), b.tolist(), lo, hi)


@pytest.mark.parametrize("seed", range(30))
def test_move_variables_equals_list_moves(seed):
    rnd = np.random.default_rng(seed)
    n = int(rnd.integers(1, 12))
    order = rnd.permutation(n)
    src, dst = rnd.integers(n, size=4), rnd.integers(n, size=4)
    expect = order.tolist()
    for s, d in zip(src.tolist(), dst.tolist(), strict=True):
        expect.insert(d, expect.pop(s))
    out = np.empty(n, dtype=np.int64)
    MK.move_variables(order, src, dst, out)
    assert out.tolist() == expect


def _naive_shuffle(order, parents, u, k, keys):
    """Breadth first over the skeleton (neighbours in the order the arcs are listed:
    each variable's parents, variable by variable) from the variable at ``u`` of the
    list of every arc's ends (each variable as often as its degree), the first ``k``
    put back in their positions sorted by ``keys``."""
    n = len(order)
    nbrs: list[list[int]] = [[] for _ in range(n)]
    for v in range(n):
        for p in parents[v]:
            nbrs[v].append(p)
            nbrs[p].append(v)
    ends = [w for v in range(n) for w in nbrs[v]]
    start = ends[int(u * len(ends))] if ends else int(u * n)
    taken, head = [start], 0
    while head < len(taken) and len(taken) < k:
        for u in nbrs[taken[head]]:
            if u not in taken and len(taken) < k:
                taken.append(u)
        head += 1
    slots = sorted(order.index(v) for v in taken)
    out = list(order)
    for slot, v in zip(slots, sorted(taken, key=lambda v: keys[v]), strict=True):
        out[slot] = v
    return out, taken


@pytest.mark.parametrize("seed", range(40))
def test_shuffle_neighbourhood_equals_the_naive_one(seed):
    rnd = np.random.default_rng(seed)
    n = int(rnd.integers(1, 14))
    order = rnd.permutation(n)
    # a DAG consistent with a random order, as flat parent sets (one set per variable)
    topo = rnd.permutation(n)
    parents = [sorted(rnd.choice(topo[:i], size=min(i, int(rnd.integers(0, 3))),
                                 replace=False).tolist()) for i in range(n)]
    parents = [parents[int(np.flatnonzero(topo == v)[0])] for v in range(n)]
    par_offsets = np.cumsum([0] + [len(ps) for ps in parents]).astype(np.int64)
    par_flat = np.array([p for ps in parents for p in ps], dtype=np.int64)
    u, k = float(rnd.random()), int(rnd.integers(1, n + 2))
    keys = rnd.random(n)
    out = np.empty(n, dtype=np.int64)
    m = MK.shuffle_neighbourhood(order, np.arange(n, dtype=np.int64), par_offsets,
                                 par_flat, u, np.int64(k), keys, out)
    expect, taken = _naive_shuffle(order.tolist(), parents, u, k, keys)
    assert out.tolist() == expect
    assert m == len(taken)
    if any(parents) and k >= 2:  # the start has a neighbour: never an isolated variable
        assert m >= 2
    # outside the neighbourhood every variable keeps its position
    assert all(out[i] == order[i] for i in range(n) if order[i] not in taken)


def _final(cache, iters: int, seed: int = 0, **params):
    return list(make_optimizer("memetic", **params).run(
        cache, Budget(max_iterations=iters), np.random.default_rng(seed)))[-1]


@pytest.mark.parametrize(("name", "optimum"), [("wine.BIC.3.jkl.gz", -1258.4459086),
                                               ("child-5000.blip.jkl.gz", -71542.801)])
def test_reaches_bundled_optima(name, optimum):
    cache = load_jkl(name, bundled=True)
    for seed in range(3):
        inc = _final(cache, 60, seed)
        assert inc.score == pytest.approx(optimum, abs=1e-3), seed
        assert inc.iterations <= 60


def _trace(cache, iters, **params):
    return [(i.score, i.dag, i.iterations) for i in make_optimizer("memetic", **params).run(
        cache, Budget(max_iterations=iters), np.random.default_rng(3))]


def test_short_walks_first_only_above_the_threshold_and_still_exact(monkeypatch):
    from bnsl_dist.search.ordering import memetic

    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    # 20 variables: below SHORT_WALKS_FROM reach changes nothing
    assert _trace(cache, 12, reach=1) == _trace(cache, 12, reach=0)
    monkeypatch.setattr(memetic, "SHORT_WALKS_FROM", 0)
    # above it the walks are short first (another run), and the optimum is still reached
    assert _trace(cache, 12, reach=1) != _trace(cache, 12, reach=0)
    for seed in range(3):
        inc = _final(cache, 60, seed, reach=1)
        assert inc.score == pytest.approx(-71542.801, abs=1e-3), seed


def test_grow_breeds_while_the_population_fills_only_above_the_threshold(monkeypatch):
    """Above SHORT_WALKS_FROM, once the population holds two distinct local optima a
    share ``grow`` of the children are samples (the others bred); below it, and with
    ``grow`` 1, every start is a sample until the population (20) is full."""
    from bnsl_dist.search.ordering import memetic

    cache = load_jkl("child-5000.blip.jkl.gz", bundled=True)
    calls: list[int] = []
    real = memetic.entropy_orders

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(memetic, "entropy_orders", counted)

    def samples(**params):
        calls.clear()
        _trace(cache, 12, **params)
        return len(calls)

    assert samples(grow=0.0) == samples(grow=1.0) == 12
    assert _trace(cache, 12, grow=0.0) == _trace(cache, 12, grow=1.0)  # nothing drawn
    monkeypatch.setattr(memetic, "SHORT_WALKS_FROM", 0)
    assert samples(grow=1.0) == 12
    assert 2 <= samples(grow=0.0) < samples(grow=0.5) < 12
    for seed in range(3):  # and the optimum is still reached
        assert _final(cache, 60, seed, grow=0.0).score == pytest.approx(-71542.801,
                                                                        abs=1e-3), seed


SHARED = {"asia_10000.dat.3": -22466.3965465,
          "minobs_asia_1000_1.BDeu": -2333.8214091, "minobs_asia_250_1.BDeu": -594.2942017,
          "minobs_cancer_1000_1.BDeu": -2148.4965592,
          "minobs_earthquake_250_1.BDeu": -114.7500201,
          "minobs_sachs_1000_1.BDeu": -7664.0481910, "minobs_sachs_250_1.BDeu": -1970.5675718,
          "minobs_survey_1000_1.BDeu": -4003.6501759, "minobs_survey_250_1.BDeu": -1011.1887092}


def test_reaches_the_shared_caches_optima(shared_data):
    for stem, optimum in SHARED.items():
        cache = load_jkl(shared_data / "jkl" / f"{stem}.jkl.gz")
        assert _final(cache, 60).score == pytest.approx(optimum, abs=1e-6), stem


def test_same_seed_same_run_and_seeds_differ():
    cache = random_cache(30, 3, max_sets_per_var=10, max_indegree=3)

    def trace(seed):
        return [(i.score, i.dag, i.iterations) for i in make_optimizer(
            "memetic", population=4).run(cache, Budget(max_iterations=40),
                                         np.random.default_rng(seed))]

    assert trace(5) == trace(5)
    assert trace(5) != trace(6)


@pytest.mark.parametrize("bad", [{"population": 1}, {"crossover": 1.5}, {"mutation": -0.1},
                                 {"restart": 0}, {"keep": 0}, {"keep": 30},
                                 {"max_window": 0}, {"high_entropy": "middle"},
                                 {"shuffle": 1.1}, {"cluster": 2}, {"epochs": -1},
                                 {"migrants": 0}, {"migrants": 21}, {"reach": -1},
                                 {"grow": -0.1}, {"grow": 1.5}])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(InvalidConfigError, match="memetic"):
        make_optimizer("memetic", **bad)
