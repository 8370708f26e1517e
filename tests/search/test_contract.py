"""The optimizer contract, checked on EVERY registered optimizer (present and future).

Each test is parametrized over ``optimizer_names()``, so a newly registered optimizer is
checked as soon as its module is imported by ``bnsl_dist/search/__init__.py``.

Optimizers are built from the registry's declaration: the bounded-treewidth ones
(those declaring ``k``) get ``k = 3``, and ``k = 6`` for the brute-force test (a bound
that cannot bind on n <= 7, so an exact bounded-treewidth solver must reach the
unbounded optimum); every other parameter keeps its declared default.

What is checked (docs/ARCHITECTURE.md "Contracts that tie the stages together",
docs/CONVENTIONS.md "Tests"):
- the class has ``name`` and ``exact``, keyword-only hyper-parameters, and satisfies the
  ``Optimizer`` protocol;
- every incumbent is an acyclic DAG whose parent sets are all in the cache, whose
  reported score equals a fresh rescore, and which strictly improves on the previous
  one (elapsed and iterations never go back);
- a 1 s budget holds within 5% (+ 0.25 s absolute slack), measured around the run
  after a warm-up run (numba loading is not the optimizer's time);
- the same seed and iteration budget give the same incumbents (fresh instance or the
  same one reused: no state carries over), whatever the clock reads;
- exact optimizers (``cls.exact``) reach the brute-force optimum for n <= 7, and a
  reported ``bound`` is never below the optimum.
"""

from __future__ import annotations

import inspect
import math
import time
from typing import Any

import numpy as np
import pytest

from bnsl_dist.search import Budget, Optimizer, get_optimizer, make_optimizer, optimizer_names
from bnsl_dist.search.base import optimizer_info
from tests.naive import brute_force_best, naive_is_acyclic, random_cache

#: Optimizers that run on a cache (those that score families from the data, such as
#: tabu-data, have their own contract tests with data: tests/search/test_local.py).
NAMES = [n for n in optimizer_names()
         if not getattr(optimizer_info(n).cls, "needs_data", False)]
ITERS = 25
TIME_BUDGET = 1.0


def _make(name: str, exact: bool = False) -> Any:
    k = (6 if exact else 3) if optimizer_info(name).takes_k else None
    return make_optimizer(name, k)


def _run(name: str, cache, budget: Budget, seed: int = 0, opt: Any = None) -> list:
    opt = _make(name) if opt is None else opt
    return list(opt.run(cache, budget, np.random.default_rng(seed)))


@pytest.fixture(scope="module")
def caches():
    return [random_cache(12, 101, max_sets_per_var=10, max_indegree=3),
            random_cache(9, 202, max_sets_per_var=6, max_indegree=2)]


def test_registry_is_not_empty():
    assert {"dp", "asobs", "kmax"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_declared_parameters_are_the_signature(name):
    """The registry's declaration is the keyword-only signature: every declared default
    builds the optimizer, every declared type is a real annotation."""
    info = optimizer_info(name)
    sig = inspect.signature(get_optimizer(name).__init__)
    assert [h.name for h in info.hyperparameters] == [
        p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
    assert info.takes_k == ("k" in sig.parameters)
    with pytest.raises(Exception, match="no parameter 'no_such_param'"):
        make_optimizer(name, 3 if info.takes_k else None, no_such_param=1)


@pytest.mark.parametrize("name", NAMES)
def test_class_contract(name):
    cls = get_optimizer(name)
    assert cls.name == name
    assert isinstance(cls.exact, bool)
    sig = inspect.signature(cls.__init__)
    for p in list(sig.parameters.values())[1:]:
        assert p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD), f"{name}: {p.name} not keyword-only"
    assert isinstance(_make(name), Optimizer)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", NAMES)
def test_incumbents_are_valid_and_improving(name, caches):
    for cache in caches:
        incs = _run(name, cache, Budget(max_iterations=ITERS))
        assert incs, f"{name} yielded no incumbent"
        prev_score, prev_t, prev_it = -math.inf, 0.0, 0
        for inc in incs:
            parents = inc.dag.parents
            assert len(parents) == cache.n_vars
            assert naive_is_acyclic(parents)
            for v, ps in enumerate(parents):
                assert cache.has_set(v, ps), f"{name}: {v} <- {ps} is not a cached set"
            rescored = sum(cache.score_of(v, ps) for v, ps in enumerate(parents))
            assert inc.score == pytest.approx(rescored, rel=1e-9, abs=1e-9)
            assert inc.score > prev_score
            assert inc.elapsed >= prev_t
            assert inc.iterations >= prev_it
            if inc.bound is not None:
                assert inc.bound >= inc.score - 1e-6
            prev_score, prev_t, prev_it = inc.score, inc.elapsed, inc.iterations


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", NAMES)
def test_time_budget_holds(name, caches):
    cache = caches[0]
    _run(name, cache, Budget(max_iterations=2))  # warm-up: load the numba kernels
    opt = _make(name)
    t0 = time.perf_counter()
    incs = list(opt.run(cache, Budget(seconds=TIME_BUDGET), np.random.default_rng(1)))
    wall = time.perf_counter() - t0
    assert incs
    assert wall <= 1.05 * TIME_BUDGET + 0.25, f"{name} ran {wall:.3f} s on a 1 s budget"
    assert all(inc.elapsed <= wall + 1e-6 for inc in incs)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_result(name, caches):
    cache = caches[0]
    budget = Budget(max_iterations=ITERS)
    opt = _make(name)
    runs = [_run(name, cache, budget, seed=7),
            _run(name, cache, budget, seed=7, opt=opt),
            _run(name, cache, budget, seed=7, opt=opt)]  # the same instance twice
    sigs = [[(inc.score, inc.dag.parents, inc.iterations) for inc in r] for r in runs]
    assert sigs[0] == sigs[1] == sigs[2]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", NAMES)
def test_iteration_budget_does_not_read_the_clock(name, caches, monkeypatch):
    """A machine far slower or faster than this one: every clock the package reads
    (``time``'s perf_counter, thread_time, time, monotonic, and the ASOBS kernel timer)
    jumps 1,000 s or creeps 1 ns per reading, in turn, so that whatever is sized or
    chosen by timing (batches, chunks, kernels) goes another way; the incumbents of an
    iteration budget (score, DAG, iteration, bound) stay those of the plain run."""
    import itertools

    from bnsl_dist.search.ordering import obs

    def sig(incs: list) -> list:
        return [(i.score, i.dag.parents, i.iterations, i.bound) for i in incs]

    cache, budget = caches[0], Budget(max_iterations=ITERS)
    want = sig(_run(name, cache, budget, seed=7))
    steps = itertools.cycle((1000.0, 1e-9, 1e-9))
    now = [0.0]

    def clock() -> float:
        now[0] += next(steps)
        return now[0]

    for attr in ("perf_counter", "thread_time", "time", "monotonic"):
        monkeypatch.setattr(time, attr, clock)
    monkeypatch.setattr(obs, "_clock", clock)
    got = sig(_run(name, cache, budget, seed=7))
    monkeypatch.undo()
    assert got == want


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", NAMES)
def test_exact_optimizers_match_brute_force(name):
    cls = get_optimizer(name)
    if not cls.exact:
        pytest.skip(f"{name} is a heuristic")
    rng = np.random.default_rng(2024)
    for n in (1, 3, 5, 6, 7, 7):
        cache = random_cache(n, rng, max_sets_per_var=7, max_indegree=3)
        opt_score, _ = brute_force_best(cache)
        incs = list(_make(name, exact=True).run(cache, Budget(seconds=60),
                                                np.random.default_rng(0)))
        assert incs[-1].score == pytest.approx(opt_score, rel=1e-9, abs=1e-9)
        for inc in incs:
            if inc.bound is not None:
                assert inc.bound >= opt_score - 1e-6


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"max_iterations": 1e3}, "max_iterations"), ({"max_iterations": 2.5}, "max_iterations"),
    ({"max_iterations": "10"}, "max_iterations"), ({"max_iterations": True}, "max_iterations"),
    ({"seconds": "5"}, "seconds"), ({"seconds": True}, "seconds"),
    ({"seconds": 1.0, "max_iterations": np.float64(4)}, "max_iterations")])
def test_budget_rejects_values_of_the_wrong_type_naming_the_field(kwargs, field):
    """Budget(max_iterations=1e3) used to be accepted: asobs then ran 884 orders and
    failed with "TypeError: 'float' object cannot be interpreted as an integer" (kg
    likewise); a string raised a bare TypeError from a comparison."""
    from bnsl_dist.exceptions import InvalidConfigError

    with pytest.raises(InvalidConfigError, match=field):
        Budget(**kwargs)
    assert Budget(max_iterations=np.int64(3)).max_iterations == 3
    assert Budget(seconds=2).seconds == 2 and Budget(seconds=np.float32(0.5)).seconds == 0.5
