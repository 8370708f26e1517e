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
from tests.naive_imputation import naive_completions, naive_marginal_argmax
from tests.naive_scores import exhaustive_cache_builder as exhaustive_builder


@pytest.fixture(scope="module")
def asia():
    net = read_bif(bundled_path("bif/asia.bif.gz"))
    truth = sample(net, 3000, np.random.default_rng(7))
    masked = mask_mcar(truth, 0.2, np.random.default_rng(8))
    return net, truth, masked


def _brute_mpe_logp(net, row, miss):
    return float(naive_completions(net, row, miss)[2].max())


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
                         searcher=_scripted_searcher(dags), carry=False, **kw)


def _best_of_history(res, dags):
    scores = [h.score for h in res.history]
    return dags[int(np.argmax(scores))], int(np.argmax(scores)) + 1


def test_fixed_point_stops_and_keeps_the_best(asia):
    net, _, masked = asia
    arcs = _one_arc_dags(net)
    dags = [arcs[0]] + [net.dag] * 4 + [arcs[1]]
    res = _sem_scripted(masked, dags, max_iterations=6, tolerance=0.01)
    # it stops at the first repeat that gains less than 1% on the best so far
    scores = [h.score for h in res.history]
    best_before = np.maximum.accumulate(scores)[:-1]
    stops = [t for t in range(2, len(dags)) if t < len(scores)
             and not scores[t] > best_before[t - 1] + 0.01 * abs(best_before[t - 1])]
    assert stops and len(scores) == stops[0] + 1 < len(dags)
    assert res.stop_reason == "fixed point" and res.converged
    best, it = _best_of_history(res, dags)
    assert res.network.dag == best and res.best_iteration == it
    # the returned completion is the best network's, with its order
    again = impute(res.network, masked, order=res.order or None)
    np.testing.assert_array_equal(res.completed.codes, again.codes)


def test_a_repeat_that_still_improves_goes_on(asia):
    """With tolerance 0 a repeated DAG stops the run only once its score (the completion
    refitted under it) no longer beats the best so far: checked against the history."""
    net, _, masked = asia
    arcs = _one_arc_dags(net)
    dags = [arcs[0]] + [net.dag] * 7
    res = _sem_scripted(masked, dags, max_iterations=8, patience=8, tolerance=0.0)
    scores = [h.score for h in res.history]
    best = np.maximum.accumulate(scores)
    # every repeat before the last improved on the best so far; the last did not
    for t in range(2, len(scores) - 1):
        assert scores[t] > best[t - 1]
    if res.stop_reason == "fixed point":
        assert not scores[-1] > best[-2]
    else:
        assert res.stop_reason == "max iterations" and len(scores) == 8
    assert len(scores) >= 3


def test_oscillation_is_detected(asia):
    net, _, masked = asia
    arcs = _one_arc_dags(net)
    dags = [net.dag, arcs[0], net.dag, arcs[0], net.dag]
    res = _sem_scripted(masked, dags, max_iterations=5, patience=5, tolerance=0.05)
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


class _Clock:
    """``time.time`` and ``time.perf_counter`` of the SEM module: still, but for the
    seconds a step adds (``advance``)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def time(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.mark.parametrize(("limit", "runs"), [(35.0, 3), (30.0, 3), (29.9, 2), (5.0, 1),
                                             (1e6, 6)])
def test_time_limit_starts_no_iteration_that_would_not_end_in_time(asia, monkeypatch,
                                                                  limit, runs):
    """Each M-step takes 10 s on a fake clock: an iteration starts only while the mean
    iteration time (10 s) fits in the time left (the final completion, an E-step of
    0 s here); the first always runs; no limit reached: the other rules end the run."""
    import importlib

    S = importlib.import_module("bnsl_dist.sem.structural_em")  # the module, not the function
    net, _, masked = asia
    clock = _Clock()
    monkeypatch.setattr(S, "time", clock)
    dags = _one_arc_dags(net)[:6]
    scripted = _scripted_searcher(dags)

    def ten_seconds(cache, budget, gen):
        clock.advance(10.0)
        return scripted(cache, budget, gen)

    res = structural_em(masked, k=3, rng=0, cache_builder=lambda d: None,
                        searcher=ten_seconds, carry=False, max_iterations=6, patience=10,
                        tolerance=0.0, time_limit=limit)
    assert len(res.history) == runs
    if runs < 6:
        assert res.stop_reason == "time limit" and not res.converged
    else:
        assert res.stop_reason == "max iterations"
    best, it = _best_of_history(res, dags)
    assert res.network.dag == best and res.best_iteration == it
    # the limit counts from ``started``: 20 s of the 35 spent before the call, so after
    # the first iteration (10 s) 5 s are left, too few for another (3 from now: above)
    clock.now = 5000.0
    scripted = _scripted_searcher(dags)
    again = structural_em(masked, k=3, rng=0, cache_builder=lambda d: None,
                          searcher=ten_seconds, carry=False, max_iterations=6, patience=10,
                          tolerance=0.0, time_limit=35.0, started=4980.0)
    assert len(again.history) == 1 and again.stop_reason == "time limit"


@pytest.mark.parametrize("bad", [{"tolerance": -1.0}, {"patience": 0},
                                 {"max_iterations": 0}, {"k": 0}, {"time_limit": 0.0},
                                 {"time_limit": float("nan")}, {"time_limit": -5.0}])
def test_bad_stopping_settings(asia, bad):
    from bnsl_dist.exceptions import InvalidConfigError

    _, _, masked = asia
    with pytest.raises(InvalidConfigError):
        structural_em(masked, **bad)


def test_default_budgets_scale_with_the_data_and_reproduce(asia):
    from bnsl_dist.sem.budgets import (
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
    assert got.expand_dominated is False  # the SEM's exploration (EXPAND_DOMINATED)
    # a spec whose budget is replaced gets it too, unless it sets expand_dominated
    unset = CacheSpec(score="bdeu")
    assert unset.expand_dominated is True  # CacheSpec's default, not the SEM's
    assert sem_cache_spec(unset, "bic", masked, scaled=True).expand_dominated is False
    given = CacheSpec(expand_dominated=True)
    assert sem_cache_spec(given, "bic", masked, scaled=True).expand_dominated is True
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
    dags = [arcs[0]] + [net.dag, flipped] * 3 + [arcs[1]]
    res = _sem_scripted(masked, dags, max_iterations=8, patience=8, tolerance=0.01)
    # alternating equivalent DAGs (never the same arcs twice in a row) make a fixed point
    assert res.stop_reason == "fixed point" and 3 <= len(res.history) < len(dags)
    assert res.history[-1].dag != res.history[-2].dag


def _recording_builder(inner, seen):
    """A cache builder that also keeps every completed data set it is given."""
    def build(d):
        seen.append(d)
        return inner(d)
    return build


@pytest.mark.parametrize("carry", [True, False])
def test_carried_families_never_score_below_the_previous_structure(asia, carry):
    """Each M-step's DAG, scored independently on that iteration's completed data, is at
    least the previous iteration's DAG there (carry=True); a starved k-MAX (3 iterations)
    without carrying falls below it somewhere (the rule is not vacuous)."""
    from bnsl_dist.scores.local import LocalScorer

    _, _, masked = asia
    completed = []
    res = structural_em(masked, k=2, rng=4, max_iterations=6, patience=6, tolerance=0.0,
                        cache_builder=_recording_builder(
                            exhaustive_builder("bic", max_indegree=2), completed),
                        search_budget=Budget(max_iterations=3), carry=carry)
    assert len(completed) == len(res.history) >= 3
    margins = []
    for t in range(1, len(res.history)):
        bic = LocalScorer(completed[t], "bic")
        now = float(bic.score_parents(res.history[t].dag.parents).sum())
        before = float(bic.score_parents(res.history[t - 1].dag.parents).sum())
        assert res.history[t].score == pytest.approx(now, abs=1e-6)
        margins.append(now - before)
    if carry:
        assert min(margins) >= -1e-6
        assert any(h.kept_previous for h in res.history)
    else:
        assert min(margins) < 0


def test_carry_families_adds_missing_sets_with_their_scores(asia):
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.scores.local import LocalScorer
    from bnsl_dist.sem.structural_em import carry_families

    _, truth, _ = asia
    base = exhaustive_builder("bic", max_indegree=1)(truth)
    n = truth.n_vars
    parents = [[] for _ in range(n)]
    parents[2] = [0, 1]  # not in a cache of at most one parent
    parents[3] = [0]  # already there
    dag = DAG.from_parents(parents, truth.names)
    got = carry_families(base, LocalScorer(truth, "bic"), [dag, dag])
    assert got.n_sets == base.n_sets + 1
    assert got.score_of(2, (0, 1)) == pytest.approx(LocalScorer(truth, "bic").score(2, [0, 1]))
    for v in range(n):
        for ps, s in base.sets_of(v):
            assert got.score_of(v, ps) == s
    # nothing to add: the same cache
    assert carry_families(base, LocalScorer(truth, "bic"), [DAG.from_parents(
        [[] for _ in range(n)], truth.names)]) is base


@pytest.mark.dask
@pytest.mark.parametrize("batch_size", [150, 100_000])
def test_distributed_sem_equals_serial(asia, batch_size, tmp_path):
    """An impute cell on Dask (the executor: M-step caches built by Dask tasks, the
    E-step in batches or in the client) gives the serial library run's networks, scores
    and completion for the same seed."""
    from bnsl_dist.data import write_csv
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.cell import Cell
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.pipeline.tasks.sem import ImputeTask

    _, _, masked = asia
    src = tmp_path / "masked.csv"
    write_csv(masked, src)
    cache = CacheSpec(scores_per_variable=40)
    cell = Cell(grid="impute", label="kmax", data=DataRef.parse(str(src), "mask"),
                cache=cache, seed=9, task=ImputeTask(k=2, max_iterations=4,
                                                     search_iterations=50,
                                                     batch_size=batch_size))
    assert cell.data is not None
    serial = structural_em(load_data(cell.data), k=2, rng=9, max_iterations=4, cache=cache,
                           search_budget=Budget(max_iterations=50))
    with connect(workers=2, announce=False, dashboard=False) as client:
        dist = execute([cell], client).outcomes[0]
    assert [h.score for h in serial.history] == [h.score for h in dist.history]
    assert [h.dag for h in serial.history] == [h.dag for h in dist.history]
    assert serial.network.dag == dist.network.dag and serial.order == dist.order
    np.testing.assert_array_equal(serial.completed.codes, dist.completed.codes)


def test_marginal_completion_is_the_brute_force_posterior_argmax():
    """complete_rows(..., "marginal") gives each missing cell the argmax of its posterior
    marginal computed by enumeration, on a random network with up to 5 missing cells
    per row."""
    from bnsl_dist.model.generate import random_network

    net = random_network(7, 2, arity_range=(2, 3), rng=5)
    rng = np.random.default_rng(6)
    codes = sample(net, 80, rng).codes
    miss = rng.random(codes.shape) < 0.45
    miss[miss.sum(axis=1) > 5] = False
    filled = complete_rows(net, None, codes, miss, "marginal")
    assert (miss.sum(axis=1) >= 2).sum() >= 20
    for a in range(codes.shape[0]):
        np.testing.assert_array_equal(filled[a], naive_marginal_argmax(net, codes[a], miss[a]))


def test_marginal_and_mpe_completions_differ_where_they_should():
    """A -> B with P(A=0)=0.4, B=0 when A=0, B uniform when A=1: the joint MPE of a row
    with both hidden is (0, 0) (0.4 > 0.3) but A's marginal argmax is 1 (0.6)."""
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.model.network import BayesianNetwork

    net = BayesianNetwork(DAG.from_parents([[], [0]], ["A", "B"]), (("0", "1"), ("0", "1")),
                          (np.array([[0.4, 0.6]]), np.array([[1.0, 0.0], [0.5, 0.5]])))
    codes = np.zeros((1, 2), dtype=np.int64)
    miss = np.ones((1, 2), dtype=bool)
    assert complete_rows(net, None, codes, miss, "mpe").tolist() == [[0, 0]]
    assert complete_rows(net, None, codes, miss, "marginal").tolist() == [[1, 0]]
    assert naive_marginal_argmax(net, codes[0], miss[0]).tolist() == [1, 0]


@pytest.mark.parametrize("imputation", ["marginal", "mpe", None])
def test_final_imputation_completes_with_the_best_network(asia, imputation):
    """The returned data are the best network's completion by ``imputation`` (None: the
    E-step's, here MPE): the posterior-marginal argmax of every cell by default, the
    brute-force joint MPE of every row with "mpe"."""
    _, _, masked = asia
    res = structural_em(masked, k=2, rng=3, max_iterations=3,
                        cache_builder=exhaustive_builder("bic", max_indegree=2),
                        search_budget=Budget(max_iterations=50), imputation=imputation)
    rows = np.nonzero(masked.missing.any(axis=1))[0][:40]
    for r in rows:
        got = res.completed.codes[r]
        if imputation == "marginal":
            np.testing.assert_array_equal(
                got, naive_marginal_argmax(res.network, masked.codes[r], masked.missing[r]))
        else:
            assert float(res.network.log_prob_rows(got[None, :])[0]) == pytest.approx(
                _brute_mpe_logp(res.network, masked.codes[r], masked.missing[r]), abs=1e-9)


def test_bad_imputation_method_is_rejected(asia):
    from bnsl_dist.exceptions import InvalidConfigError

    _, _, masked = asia
    with pytest.raises(InvalidConfigError, match="imputation"):
        structural_em(masked, imputation="joint")  # type: ignore[arg-type]


@pytest.mark.parametrize("accumulate", [True, False])
def test_accumulated_cache_holds_every_earlier_set_rescored(asia, accumulate):
    """With ``accumulate`` each M-step searches a cache holding every set of the earlier
    builds, scored (independently) on its own completed data, unless a cached proper
    subset scores at least as well; without it, only its build and the carried
    families. The builds differ (a 12-score budget on changing data), so the union is
    not vacuous."""
    from bnsl_dist.cache import build_cache
    from bnsl_dist.scores.local import LocalScorer
    from bnsl_dist.search.base import make_optimizer

    _, _, masked = asia
    spec = CacheSpec(scores_per_variable=12)
    built, searched = [], []

    def builder(d):
        built.append((d, build_cache(d, spec)))
        return built[-1][1]

    def searcher(cache, budget, gen):
        searched.append(cache)
        return list(make_optimizer("kmax", k=2).run(cache, budget, gen))[-1]

    res = structural_em(masked, k=2, rng=2, max_iterations=4, patience=4, tolerance=0.0,
                        cache=spec, cache_builder=builder, searcher=searcher,
                        search_budget=Budget(max_iterations=30), accumulate=accumulate)
    assert len(searched) == len(res.history) >= 3
    added = 0
    for t in range(1, len(searched)):
        data_t, build_t = built[t]
        bic = LocalScorer(data_t, "bic")
        fams = {(v, tuple(sorted(ps))) for dag in [h.dag for h in res.history[:t]]
                for v, ps in enumerate(dag.parents)}
        for v in range(data_t.n_vars):
            got = dict(searched[t].sets_of(v))
            earlier = {ps for _, c in built[:t] for ps, _ in c.sets_of(v)}
            for ps in earlier - set(dict(build_t.sets_of(v))):
                s = bic.score(v, ps)
                if accumulate:
                    if ps in got:
                        assert got[ps] == pytest.approx(s, abs=1e-9)
                        added += 1
                    else:
                        assert any(set(q) < set(ps) and sq >= s - 1e-9
                                   for q, sq in got.items())
                else:
                    assert ps not in got or (v, ps) in fams
    assert (added > 0) == accumulate


def _hand_available_case_cpt(codes, miss, arities, child, parent, alpha):
    """P(child | parent) from the rows where both are observed, the prior alpha spread
    as alpha / (q r) per cell, uniform rows where there is nothing to count (as
    fit_cpts): plain loops over the rows."""
    r = arities[child]
    q = 1 if parent is None else arities[parent]
    table = np.zeros((q, r))
    for row, m in zip(codes, miss, strict=True):
        if m[child] or (parent is not None and m[parent]):
            continue
        table[0 if parent is None else row[parent], row[child]] += 1
    table += alpha / (q * r)
    tot = table.sum(axis=1, keepdims=True)
    return np.where(tot > 0, table / np.where(tot > 0, tot, 1), 1.0 / r)


@pytest.mark.parametrize("alpha", [0.0, 1.0])
@pytest.mark.parametrize("seed", range(4))
def test_initial_chain_cpts_are_available_case_counts(alpha, seed):
    # a parent state never observed together with its child (every row with X1 = 2
    # has its other cells missing) left a 0/0 CPT row with alpha = 0: NaN, now uniform
    from bnsl_dist.data import CategoricalData
    from bnsl_dist.sem.structural_em import initial_network

    rng = np.random.default_rng(seed)
    arities = [2, 3, 2]
    codes = np.column_stack([rng.integers(0, a, 40) for a in arities])
    miss = rng.random(codes.shape) < 0.3
    miss[codes[:, 1] == 2] = [True, False, True]
    codes[miss] = 0
    data = CategoricalData.from_array(codes, arities=arities, missing=miss)
    net, order = initial_network(data, np.random.default_rng(seed), alpha)
    assert sorted(order) == [0, 1, 2]
    for v in range(3):
        ps = net.dag.parents[v]
        want = _hand_available_case_cpt(codes, miss, arities, v, ps[0] if ps else None, alpha)
        np.testing.assert_allclose(net.cpts[v], want, rtol=1e-12)


@pytest.mark.parametrize("alpha", [-1.0, float("nan")])
def test_bad_alpha_is_rejected_before_any_work(alpha):
    # a negative prior made the first chain's CPT rows negative where a count was 0:
    # "CPT of 'X1': rows must be distributions" instead of naming alpha
    from bnsl_dist.data import CategoricalData
    from bnsl_dist.exceptions import InvalidConfigError

    codes = np.array([[0, 0], [0, 1], [1, 0], [0, 0]])
    miss = np.array([[False, False], [False, True], [True, False], [False, False]])
    data = CategoricalData.from_array(codes, arities=[2, 2], missing=miss)
    with pytest.raises(InvalidConfigError, match="alpha must be a finite number >= 0"):
        structural_em(data, alpha=alpha, rng=0)


def test_imputation_accuracy_counts_the_masked_cells_and_rejects_bad_input():
    from bnsl_dist.data import CategoricalData
    from bnsl_dist.exceptions import DataError

    truth = CategoricalData.from_array(np.array([[0, 1], [1, 1], [2, 0]]), arities=[3, 2])
    miss = np.array([[True, False], [False, True], [True, True]])
    masked = truth.with_codes(np.where(miss, 0, truth.codes), miss)
    completed = truth.with_codes(np.array([[0, 1], [1, 0], [1, 0]]))
    # masked cells: (0,0) right, (1,1) wrong, (2,0) wrong, (2,1) right
    assert imputation_accuracy(truth, masked, completed) == 0.5
    # a mask with no missing cell gave NaN (and numpy's "Mean of empty slice")
    none = truth.with_codes(truth.codes, np.zeros((3, 2), dtype=bool))
    with pytest.raises(DataError, match="no missing cells"):
        imputation_accuracy(truth, none, completed)
    # data of other shapes gave an IndexError from the boolean mask
    with pytest.raises(DataError, match="different shapes"):
        imputation_accuracy(truth, masked, truth.with_codes(truth.codes[:2]))
