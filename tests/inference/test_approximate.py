"""Likelihood weighting against brute-force enumeration, and the engine fallback."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.inference import (
    JunctionTree,
    JunctionTreeTooLargeError,
    LikelihoodWeighting,
    make_engine,
)
from tests.inference.naive_inference import (
    brute_marginals,
    brute_mpe,
    brute_prob_evidence,
    joint_table,
    random_network,
)


def test_estimates_converge_to_exact_values():
    rng = np.random.default_rng(0)
    net = random_network(7, rng, max_parents=2)
    ev = np.full((3, 7), -1)
    ev[0, 3] = 1
    ev[1, [0, 6]] = [0, 1]
    lw = LikelihoodWeighting(net, n_samples=60_000, rng=5)
    post = lw.posterior(ev)
    for b in range(3):
        pe = brute_prob_evidence(net, ev[b])
        assert np.exp(post.log_prob_evidence[b]) == pytest.approx(pe, rel=0.05)
        truth = brute_marginals(net, ev[b])
        for v in range(7):
            np.testing.assert_allclose(post.marginals[v][b], truth[v], atol=0.02)
            assert post.marginals[v][b].sum() == pytest.approx(1.0)


def test_seeded_runs_repeat_and_seeds_differ():
    rng = np.random.default_rng(1)
    net = random_network(6, rng)
    ev = np.full((2, 6), -1)
    ev[:, 2] = [0, 1]
    a = LikelihoodWeighting(net, n_samples=3000, rng=7, chunk=500).posterior(ev)
    b = LikelihoodWeighting(net, n_samples=3000, rng=7, chunk=500).posterior(ev)
    c = LikelihoodWeighting(net, n_samples=3000, rng=8, chunk=500).posterior(ev)
    np.testing.assert_array_equal(a.log_prob_evidence, b.log_prob_evidence)
    for v in range(6):
        np.testing.assert_array_equal(a.marginals[v], b.marginals[v])
    assert any(not np.array_equal(a.marginals[v], c.marginals[v]) for v in range(6))


def test_impossible_evidence_and_time_budget():
    rng = np.random.default_rng(2)
    net = random_network(5, rng, zeros=0.4)
    xs, p = joint_table(net)
    # an evidence row of probability zero, if the zeros made one; else a possible one
    impossible = xs[np.argmin(p)]
    lw = LikelihoodWeighting(net, n_samples=10**9, seconds=0.05, rng=0)
    out = lw.posterior(impossible[None])
    if p.min() == 0:
        assert out.log_prob_evidence[0] == -np.inf
        assert np.isnan(out.marginals[0]).all()
    else:
        assert np.isfinite(out.log_prob_evidence[0])
    # complete rows are scored exactly
    np.testing.assert_allclose(lw.log_prob_rows(xs[:5]), net.log_prob_rows(xs[:5]))


def test_best_particle_finds_the_mpe_of_a_small_network():
    rng = np.random.default_rng(3)
    net = random_network(5, rng, max_arity=2)
    ev = np.full((1, 5), -1)
    ev[0, 1] = 1
    best, _ = brute_mpe(net, ev[0])
    res = LikelihoodWeighting(net, n_samples=20_000, rng=0).mpe(ev)
    assert res.log_prob[0] == pytest.approx(np.log(best))
    assert net.log_prob_rows(res.assignment)[0] == pytest.approx(np.log(best))


def test_engine_fallback():
    rng = np.random.default_rng(4)
    net = random_network(6, rng)
    assert isinstance(make_engine(net), JunctionTree)
    with pytest.raises(JunctionTreeTooLargeError):
        make_engine(net, memory_limit=10)
    eng = make_engine(net, memory_limit=10, fallback="approximate", n_samples=100, rng=0)
    assert isinstance(eng, LikelihoodWeighting) and not eng.exact
    with pytest.raises(InvalidConfigError):
        make_engine(net, fallback="guess")  # type: ignore[arg-type]
    with pytest.raises(InvalidConfigError):
        LikelihoodWeighting(net, n_samples=0)


def _ancestors(parents, seed):
    """Naive oracle: the seed variables and every ancestor, by repeated parent lookups."""
    out = set(seed)
    frontier = list(seed)
    while frontier:
        for p in parents[frontier.pop()]:
            if p not in out:
                out.add(p)
                frontier.append(p)
    return out


def test_ancestral_topo_is_the_ancestral_closure_in_topological_order():
    from bnsl_dist.inference import _kernels as K

    rng = np.random.default_rng(6)
    for _trial in range(20):
        net = random_network(12, rng, max_parents=3)
        lw = LikelihoodWeighting(net, n_samples=1, rng=0)
        seed = rng.random(12) < 0.2
        got = K.ancestral_topo(lw._topo, lw._par_ptr, lw._par, seed)
        assert set(got.tolist()) == _ancestors(net.dag.parents, np.flatnonzero(seed).tolist())
        pos = {int(v): i for i, v in enumerate(got)}
        assert all(pos[p] < pos[int(v)] for v in got for p in net.dag.parents[int(v)])


def test_sampling_only_the_ancestors_estimates_the_same_answers():
    # evidence on two variables and a queried third: the barren variables are left out,
    # and P(e) and the queried posteriors still converge to the enumerated ones
    rng = np.random.default_rng(7)
    net = random_network(8, rng, max_parents=2)
    ev = np.full((2, 8), -1)
    ev[0, [2, 5]] = [1, 0]
    ev[1, 4] = 1
    query = [6, 1]
    for barren in (True, False):
        lw = LikelihoodWeighting(net, n_samples=60_000, rng=3, barren=barren)
        pe = lw.log_prob_evidence(ev)
        post = lw.posterior(ev, query)
        for b in range(2):
            exact = brute_prob_evidence(net, ev[b])
            assert np.exp(pe[b]) == pytest.approx(exact, rel=0.05)
            assert np.exp(post.log_prob_evidence[b]) == pytest.approx(exact, rel=0.05)
            truth = brute_marginals(net, ev[b])
            for v in query:
                np.testing.assert_allclose(post.marginals[v][b], truth[v], atol=0.02)
    sampled = LikelihoodWeighting(net, n_samples=1, rng=0)._sampled(
        ev[0].astype(np.int64), np.zeros(0, dtype=np.int64))
    assert set(sampled.tolist()) == _ancestors(net.dag.parents, [2, 5])
    assert len(sampled) < net.n_vars  # the pruning is exercised
