"""SEM-kMAX: completions are brute-force MPEs, imputation beats the mode and nears the
true network, serial and Dask runs agree."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data import bundled_path
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.search import Budget
from bnsl_dist.sem import (
    complete_rows,
    imputation_accuracy,
    impute,
    mode_impute,
    random_chain,
    structural_em,
)
from tests.naive_scores import exhaustive_cache_builder as exhaustive_builder


@pytest.fixture(scope="module")
def asia():
    net = read_bif(bundled_path("bif/asia.bif.gz"))
    truth = sample(net, 3000, np.random.default_rng(7))
    masked = mask_mcar(truth, 0.2, np.random.default_rng(8))
    return net, truth, masked


def _brute_mpe_logp(net, row, miss):
    best = -np.inf
    idx = np.nonzero(miss)[0]
    for vals in itertools.product(*[range(int(net.arities[v])) for v in idx]):
        r = row.astype(np.int64).copy()
        r[idx] = vals
        best = max(best, float(net.log_prob_rows(r[None, :])[0]))
    return best


def test_completion_is_the_brute_force_mpe(asia):
    net, _, masked = asia
    rows = np.nonzero(masked.missing.any(axis=1))[0][:60]
    filled = complete_rows(net, None, masked.codes[rows], masked.missing[rows], "mpe")
    np.testing.assert_array_equal(filled[~masked.missing[rows]],
                                  masked.codes[rows][~masked.missing[rows]])
    got = net.log_prob_rows(filled)
    for a, r in enumerate(rows):
        assert got[a] == pytest.approx(_brute_mpe_logp(net, masked.codes[r],
                                                       masked.missing[r]), abs=1e-9)


def test_random_chain_spans_every_variable():
    parents, perm = random_chain(6, np.random.default_rng(0))
    assert sorted(perm) == list(range(6))
    assert sum(len(p) for p in parents) == 5
    assert parents[perm[0]] == []


def test_sem_beats_mode_and_nears_the_true_network(asia):
    net, truth, masked = asia
    res = structural_em(masked, k=2, rng=3, max_iterations=6,
                        cache_builder=exhaustive_builder("bic", max_indegree=2),
                        search_budget=Budget(max_iterations=200))
    acc_sem = imputation_accuracy(truth, masked, res.completed)
    acc_mode = imputation_accuracy(truth, masked, mode_impute(masked))
    acc_true = imputation_accuracy(truth, masked, impute(net, masked))
    assert acc_sem > acc_mode + 0.02
    assert acc_sem >= acc_true - 0.02
    assert res.history and res.history[0].iteration == 1
    assert res.completed.missing is None
    assert all(h.score <= 0 for h in res.history)
    # the final network's junction tree respects the treewidth bound
    from bnsl_dist.graph import TreewidthCertificate
    assert TreewidthCertificate(res.order, 2).check(res.network.dag)


def test_marginal_e_step_variant(asia):
    net, truth, masked = asia
    a = imputation_accuracy(truth, masked, impute(net, masked, method="marginal"))
    b = imputation_accuracy(truth, masked, impute(net, masked, method="mpe"))
    assert a > 0.5 and b > 0.5


@pytest.mark.dask
def test_dask_e_step_equals_serial(asia):
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.sem import DaskEStep

    _, _, masked = asia
    kwargs = dict(k=2, rng=11, max_iterations=3, cache_builder=exhaustive_builder("bic", max_indegree=2),
                  search_budget=Budget(max_iterations=100))
    serial = structural_em(masked, **kwargs)
    with connect(workers=2, announce=False, dashboard=False) as client:
        runner = DaskEStep(client, batch_size=200)
        dist = structural_em(masked, e_step_runner=runner, **kwargs)
        assert runner.n_tasks > 2
    np.testing.assert_array_equal(serial.completed.codes, dist.completed.codes)
    assert serial.network.dag == dist.network.dag


def _scripted_searcher(dags):
    """A searcher returning the given DAGs in turn (the cache is ignored)."""
    from bnsl_dist.search.base import Incumbent

    it = iter(dags)

    def searcher(cache, budget, gen):
        return Incumbent(0.0, 0.0, next(it))

    return searcher


def _one_arc_dags(net):
    """Distinct DAGs of one arc each, over the network's variables."""
    from bnsl_dist.graph.dag import DAG

    n = net.n_vars
    out = []
    for a, b in itertools.combinations(range(n), 2):
        parents = [[] for _ in range(n)]
        parents[b] = [a]
        out.append(DAG.from_parents(parents, net.dag.names))
    return out


def _sem_scripted(masked, dags, **kw):
    return structural_em(masked, k=3, rng=0, cache_builder=lambda d: None,
                         searcher=_scripted_searcher(dags), **kw)


def _best_of_history(res, dags):
    scores = [h.score for h in res.history]
    return dags[int(np.argmax(scores))], int(np.argmax(scores)) + 1


def test_fixed_point_stops_and_keeps_the_best(asia):
    net, _, masked = asia
    arcs = _one_arc_dags(net)
    dags = [arcs[0], net.dag, net.dag, arcs[1]]
    res = _sem_scripted(masked, dags, max_iterations=4)
    assert [h.iteration for h in res.history] == [1, 2, 3]
    assert res.stop_reason == "fixed point" and res.converged
    best, it = _best_of_history(res, dags)
    assert res.network.dag == best and res.best_iteration == it
    # the returned completion is the best network's, with its order
    again = impute(res.network, masked, order=res.order or None)
    np.testing.assert_array_equal(res.completed.codes, again.codes)


def test_oscillation_is_detected(asia):
    net, _, masked = asia
    arcs = _one_arc_dags(net)
    dags = [net.dag, arcs[0], net.dag, arcs[0], net.dag]
    res = _sem_scripted(masked, dags, max_iterations=5, patience=5)
    assert len(res.history) == 3
    assert res.stop_reason == "oscillation" and res.converged
    best, it = _best_of_history(res, dags)
    assert res.network.dag == best


def test_patience_stops_when_the_score_stalls(asia):
    """The true DAG first, then distinct one-arc DAGs (far worse BIC): the run stops
    after ``patience`` iterations without improvement and returns the first network."""
    net, _, masked = asia
    dags = [net.dag] + _one_arc_dags(net)[:8]
    res = _sem_scripted(masked, dags, max_iterations=8, patience=3)
    scores = [h.score for h in res.history]
    assert len(scores) == 4 and all(s < scores[0] for s in scores[1:])
    assert res.stop_reason == "no improvement" and res.best_iteration == 1
    assert res.network.dag == net.dag
    capped = _sem_scripted(masked, dags, max_iterations=2, patience=3)
    assert capped.stop_reason == "max iterations" and not capped.converged
    assert len(capped.history) == 2


def test_tolerance_counts_small_gains_as_stalls(asia):
    net, _, masked = asia
    dags = _one_arc_dags(net)[:6]
    free = _sem_scripted(masked, dags, max_iterations=6, patience=1, tolerance=0.0)
    scores = [h.score for h in free.history]
    # with tolerance 1, no gain is large enough: the second iteration already stalls
    strict = _sem_scripted(masked, dags, max_iterations=6, patience=1, tolerance=1.0)
    assert len(strict.history) == 2 and strict.stop_reason == "no improvement"
    # with tolerance 0 the run goes on while each iteration beats the best so far
    best = np.maximum.accumulate(scores)
    first_stall = next((i for i in range(1, len(scores)) if not scores[i] > best[i - 1]),
                       None)
    assert len(scores) == (len(dags) if first_stall is None else first_stall + 1)


@pytest.mark.parametrize("bad", [{"tolerance": -1.0}, {"patience": 0},
                                 {"max_iterations": 0}, {"k": 0}])
def test_bad_stopping_settings(asia, bad):
    from bnsl_dist.exceptions import InvalidConfigError

    _, _, masked = asia
    with pytest.raises(InvalidConfigError):
        structural_em(masked, **bad)


def test_default_budgets_scale_with_the_data_and_reproduce(asia):
    from bnsl_dist.sem.structural_em import (
        CACHE_SCORES_RANGE,
        SEARCH_ITERATIONS_RANGE,
        sem_budgets,
        sem_cache_spec,
    )

    # exact scores per variable fall as rows grow (each score costs O(N)), k-MAX
    # iterations fall as variables grow (each costs O(n^2)), both within their ranges
    rows = [100, 1_000, 3_000, 10_000, 100_000, 10_000_000]
    scores = [sem_budgets(60, r)[0] for r in rows]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert min(scores) == CACHE_SCORES_RANGE[0] and max(scores) == CACHE_SCORES_RANGE[1]
    its = [sem_budgets(n, 3_000)[1] for n in (2, 60, 600, 6_000, 60_000)]
    assert its == sorted(its, reverse=True) and its[0] > its[-1]
    assert min(its) == SEARCH_ITERATIONS_RANGE[0] and max(its) == SEARCH_ITERATIONS_RANGE[1]
    _, _, masked = asia
    got = sem_cache_spec(None, "bic", masked)
    assert got.scores_per_variable == sem_budgets(masked.n_vars, masked.n_samples)[0]
    assert got.seconds_per_variable is None and got.method == "independence"
    # a caller's spec wins
    paper = CacheSpec(seconds_per_variable=1.0)
    assert sem_cache_spec(paper, "bic", masked) is paper
    # the defaults are work counts: the same seed gives the same run
    a = structural_em(masked, k=2, rng=5, max_iterations=3)
    b = structural_em(masked, k=2, rng=5, max_iterations=3)
    assert a.network.dag == b.network.dag
    np.testing.assert_array_equal(a.completed.codes, b.completed.codes)
    assert [h.score for h in a.history] == [h.score for h in b.history]


def _reverse_covered_arc(dag):
    """An equivalent DAG: a covered arc a -> b (parents(b) = parents(a) + a) reversed
    (Chickering, UAI 1995, Lemma 1)."""
    from bnsl_dist.graph.dag import DAG

    for a, b in dag.arcs():
        if set(dag.parents[b]) == set(dag.parents[a]) | {a}:
            parents = [list(p) for p in dag.parents]
            parents[b].remove(a)
            parents[a].append(b)
            return DAG.from_parents(parents, dag.names)
    raise AssertionError("no covered arc")


def test_equivalent_dags_count_as_a_repeat(asia):
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.scores.local import LocalScorer
    from bnsl_dist.sem.structural_em import equivalence_key

    net, truth, masked = asia
    flipped = _reverse_covered_arc(net.dag)
    assert flipped != net.dag
    # equivalent DAGs: same key and (independent check) the same BIC
    bic = LocalScorer(truth, "bic")
    assert bic.score_parents(flipped.parents).sum() == pytest.approx(
        bic.score_parents(net.dag.parents).sum(), abs=1e-6)
    assert equivalence_key(flipped) == equivalence_key(net.dag)
    # a v-structure a -> c <- b differs from the chain a -> c -> b with the same skeleton
    vee = DAG.from_parents([[], [], [0, 1]], ["a", "b", "c"])
    chain = DAG.from_parents([[], [2], [0]], ["a", "b", "c"])
    assert equivalence_key(vee)[0] == equivalence_key(chain)[0]
    assert equivalence_key(vee) != equivalence_key(chain)
    arcs = _one_arc_dags(net)
    res = _sem_scripted(masked, [arcs[0], net.dag, flipped, arcs[1]], max_iterations=4,
                        patience=4)
    assert len(res.history) == 3 and res.stop_reason == "fixed point"
