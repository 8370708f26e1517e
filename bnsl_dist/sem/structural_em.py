"""Structural EM with k-MAX (SEM-kMAX) for incomplete categorical data.

Hard EM: the E-step completes every record that has missing values with its most
probable completion under the current network (joint MPE given the record's observed
values; per-variable marginal argmax as an option); the M-step rebuilds the parent-set
cache on the completed data (independence selection), runs k-MAX for a
bounded-treewidth DAG (so the next E-step's inference stays exact and cheap), and fits
the CPTs. It starts from a random chain over all variables. The returned data are
completed by the best network with each missing cell's posterior-marginal argmax (the
completion that maximises the expected number of correct cells; the paper reports the
joint MPE completion of its last E-step: ``imputation="mpe"``).

Accumulated caches: each M-step's cache also gets every parent set of the earlier
M-steps' caches that it lacks, rescored on the new completed data (the explorations of
nearby completions: ~10 sets per variable survive each build's dominance pruning), and
loses those a cached subset dominates.

Carried families: each M-step's cache gets the parent sets of the previous iteration's
DAG and of the best DAG so far, scored on the new completed data, and the M-step keeps
the previous DAG when k-MAX's DAG scores worse on those data. An M-step therefore never
scores below keeping the previous structure, and hard EM's score climbs (the E-step's MPE
completion does not lower the likelihood under the current network, the refit raises it).

Both M-step budgets are work counts derived from the data
(:func:`~bnsl_dist.sem.budgets.sem_budgets`), so a
run depends only on its seed. The objective of hard EM, the BIC of the completed data
under the learned DAG, is tracked across iterations: the run keeps the best network so
far and stops at a fixed point (the DAG is Markov equivalent to the previous one: same
skeleton and v-structures, hence the same BIC on the same data, and the score did not
improve by more than ``tolerance`` (relative): the completion has settled too), at an
oscillation (equivalent to an earlier one, no improvement), when the best score has not
improved by more than ``tolerance`` for ``patience`` iterations, or at
``max_iterations``. A repeated structure whose score still improves goes on: its
refitted CPTs complete the data differently. Without these rules
the structure keeps changing: flipped arcs of equivalent DAGs, and the M-step's
approximations moving the score by ~0.1% around a plateau.

References
----------
M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang, "Efficient learning of
bounded-treewidth Bayesian networks from complete and incomplete data sets",
IJAR 95, 2018, §6 (Algorithm 2) and §7. N. Friedman, "The Bayesian structural EM
algorithm", UAI 1998.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._rng import as_rng
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.fit import fit_cpts
from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.search.base import Budget, Incumbent, make_optimizer
from bnsl_dist.sem.budgets import sem_cache_spec, sem_search_budget
from bnsl_dist.sem.imputation import EStep, complete_rows

__all__ = ["SEMIteration", "SEMResult", "structural_em", "random_chain", "initial_network",
           "equivalence_key", "carry_families", "add_sets", "next_iteration_fits"]

#: Completes rows: (network, elimination order, codes, missing mask, method) -> codes.
EStepRunner = Callable[[BayesianNetwork, Sequence[int] | None, NDArray[np.integer],
                        NDArray[np.bool_], str], NDArray[np.int64]]
CacheBuilder = Callable[[CategoricalData], ParentSetCache]
Searcher = Callable[[ParentSetCache, Budget, np.random.Generator], Incumbent]


@dataclass(frozen=True)
class SEMIteration:
    """One SEM iteration: the BIC of the completed data under the new DAG, the arcs that
    changed against the previous DAG, and the seconds of each step."""

    iteration: int
    score: float
    n_arcs: int
    arcs_added: int
    arcs_removed: int
    seconds: dict[str, float]
    #: The iteration's DAG, and whether the M-step kept the previous one (k-MAX's DAG
    #: scored worse on the completed data).
    dag: DAG | None = None
    kept_previous: bool = False


@dataclass
class SEMResult:
    """The best network of the run (highest completed-data BIC), the data completed by
    it (``imputation``), its elimination order (treewidth certificate), every iteration, and why the run
    stopped: ``"fixed point"`` (the DAG was Markov equivalent to the previous one),
    ``"oscillation"`` (to an earlier one; both without improvement), ``"no improvement"`` (patience exhausted),
    ``"complete data"`` (nothing to impute: one M-step), ``"max iterations"`` or
    ``"time limit"`` (the next iteration would not have ended in time); ``converged`` is
    False only for the last two."""

    network: BayesianNetwork
    completed: CategoricalData
    order: tuple[int, ...]
    history: list[SEMIteration] = field(default_factory=list)
    converged: bool = False
    stop_reason: str = "max iterations"
    best_iteration: int = 0


def random_chain(n_vars: int, rng: np.random.Generator) -> tuple[list[list[int]], list[int]]:
    """A chain X_p0 -> X_p1 -> ... over a random permutation; returns (parents, perm)."""
    perm = [int(v) for v in rng.permutation(n_vars)]
    parents: list[list[int]] = [[] for _ in range(n_vars)]
    for a, b in zip(perm, perm[1:], strict=False):
        parents[b] = [a]
    return parents, perm


def initial_network(data: CategoricalData, rng: np.random.Generator,
                    alpha: float = 1.0) -> tuple[BayesianNetwork, tuple[int, ...]]:
    """The random chain with CPTs fitted on the available cases of each family (the
    prior ``alpha`` spread as in :func:`~bnsl_dist.model.fit.fit_cpts`; a parent state
    never observed with the child gets a uniform row)."""
    parents, perm = random_chain(data.n_vars, rng)
    dag = DAG.from_parents(parents, data.names)
    miss = data.missing if data.missing is not None else np.zeros(data.codes.shape, bool)
    cpts = []
    ar = data.arities
    for v in range(data.n_vars):
        fam = list(dag.parents[v]) + [v]
        ok = ~miss[:, fam].any(axis=1)
        r = int(ar[v])
        q = int(np.prod([ar[p] for p in dag.parents[v]], dtype=np.int64)) if dag.parents[v] else 1
        j = np.zeros(int(ok.sum()), dtype=np.int64)
        if dag.parents[v]:
            j = data.codes[ok, dag.parents[v][0]].astype(np.int64)
        counts = np.bincount(j * r + data.codes[ok, v].astype(np.int64), minlength=q * r)
        smoothed = counts.reshape(q, r) + alpha / (q * r)
        tot = smoothed.sum(axis=1, keepdims=True)
        # nothing to count (alpha = 0, a parent state never seen with the child): uniform,
        # as fit_cpts does
        cpts.append(np.where(tot > 0, smoothed / np.where(tot > 0, tot, 1.0), 1.0 / r))
    states = tuple(tuple(data.state_label(v, k) for k in range(int(ar[v])))
                   for v in range(data.n_vars))
    # A chain has treewidth 1: eliminating from the tail is a perfect order.
    return BayesianNetwork(dag, states, tuple(cpts)), tuple(reversed(perm))


def equivalence_key(dag: DAG) -> tuple[frozenset[tuple[int, int]], frozenset[tuple[int, int, int]]]:
    """Skeleton and v-structures of ``dag``: equal keys iff the DAGs are Markov
    equivalent (Verma & Pearl, UAI 1990)."""
    skeleton = frozenset((min(a, b), max(a, b)) for a, b in dag.arcs())
    vs = frozenset((a, c, b) for c, ps in enumerate(dag.parents)
                   for a, b in itertools.combinations(sorted(ps), 2)
                   if (a, b) not in skeleton)
    return skeleton, vs


def carry_families(cache: ParentSetCache, scorer: LocalScorer,
                   dags: Sequence[DAG]) -> ParentSetCache:
    """``cache`` with every family of ``dags`` that it lacks added, scored by ``scorer``
    (on the data the cache was built from), so that a search over it can choose those
    families again. Returns ``cache`` itself when nothing is missing."""
    return add_sets(cache, scorer, [[dag.parents[v] for dag in dags]
                                    for v in range(cache.n_vars)])


def add_sets(cache: ParentSetCache, scorer: LocalScorer,
             sets: Sequence[Iterable[Iterable[int]]]) -> ParentSetCache:
    """``cache`` with the parent sets ``sets[v]`` of each variable ``v`` that it lacks
    added, scored by ``scorer``. Returns ``cache`` itself when nothing is missing."""
    extra: list[dict[tuple[int, ...], float]] = [{} for _ in range(cache.n_vars)]
    for v, family in enumerate(sets):
        for ps in family:
            key = tuple(sorted(int(p) for p in ps))
            if key not in extra[v] and not cache.has_set(v, key):
                extra[v][key] = scorer.score(v, key)
    if not any(extra):
        return cache
    lists = [cache.sets_of(v) + list(extra[v].items()) for v in range(cache.n_vars)]
    return ParentSetCache.from_lists(lists, names=cache.names, arities=cache.arities,
                                     meta=cache.meta, entropies=cache.entropies)


def _serial_e_step(net: BayesianNetwork, order: Sequence[int] | None,
                   codes: NDArray[np.integer], missing: NDArray[np.bool_],
                   method: str) -> NDArray[np.int64]:
    return complete_rows(net, order, codes, missing, method)  # type: ignore[arg-type]


def next_iteration_fits(history: Sequence[SEMIteration], time_left: float) -> bool:
    """Whether another EM iteration and the final completion would end within
    ``time_left`` seconds, at the mean time of the iterations so far and the last
    E-step's (the final completion is one more E-step). The first always runs.

    Examples
    --------
    >>> it = lambda e, m: SEMIteration(1, 0.0, 0, 0, 0, {"e_step": e, "cache": m},
    ...                                DAG.empty(2), False)
    >>> next_iteration_fits([], 0.0)
    True
    >>> next_iteration_fits([it(1.0, 3.0), it(1.0, 5.0)], 6.0)   # 5 s + 1 s
    True
    >>> next_iteration_fits([it(1.0, 3.0), it(1.0, 5.0)], 5.9)
    False
    """
    if not history:
        return True
    mean = sum(sum(h.seconds.values()) for h in history) / len(history)
    return mean + history[-1].seconds.get("e_step", 0.0) <= time_left


def structural_em(data: CategoricalData, *, k: int = 4, rng: np.random.Generator | int | None = None,
                  max_iterations: int = 10, e_step: EStep = "mpe",
                  cache: CacheSpec | None = None,
                  search_budget: Budget | None = None, score: str = "bic",
                  alpha: float = 1.0, cache_builder: CacheBuilder | None = None,
                  searcher: Searcher | None = None,
                  e_step_runner: EStepRunner | None = None,
                  on_iteration: Callable[[SEMIteration], None] | None = None,
                  tolerance: float = 1e-3, patience: int = 2,
                  carry: bool = True, accumulate: bool = False,
                  imputation: EStep | None = "marginal", time_limit: float | None = None,
                  started: float | None = None) -> SEMResult:
    """Learn a bounded-treewidth network from incomplete data and impute it (SEM-kMAX).

    Parameters
    ----------
    data : CategoricalData
        Data with a missing mask (complete data are accepted: one M-step is run).
    k : int
        Treewidth bound of k-MAX.
    rng : Generator, int or None
        Seeds the chain, every cache build and every k-MAX run.
    max_iterations : int
        Stop after this many iterations whatever the other rules say.
    e_step : {"mpe", "marginal"}
        Joint MPE completion (default) or per-variable marginal argmax.
    cache : CacheSpec, optional
        The M-step's cache build (default: :func:`~bnsl_dist.sem.budgets.sem_cache_spec`,
        independence selection with the exact-score budget of
        :func:`~bnsl_dist.sem.budgets.sem_budgets`; the paper's
        budget is ``CacheSpec(seconds_per_variable=1.0)``, not reproducible).
    search_budget : Budget, optional
        k-MAX's budget per iteration (default: the iterations of
        :func:`~bnsl_dist.sem.budgets.sem_budgets`).
    cache_builder, searcher, e_step_runner : callables, optional
        Replace the serial steps (the Dask driver passes distributed ones).
    on_iteration : callable, optional
        Called with each :class:`SEMIteration` as it completes (progress display).
    tolerance : float
        An iteration improves when its completed-data BIC exceeds the best so far by
        more than ``tolerance`` times its magnitude (>= 0; the default 1e-3 is about
        the size of the score's wandering once the imputation has settled).
    patience : int
        Stop after this many consecutive iterations without improvement (>= 1).
    carry : bool
        Add the previous and the best DAG's families to each M-step's cache and keep
        the previous DAG when k-MAX's scores worse on the new completed data (default);
        False runs the paper's M-step (k-MAX's DAG as it is).
    accumulate : bool
        Add every parent set of the earlier M-steps' caches that the new cache lacks,
        rescored on the new completed data (a few hundred scores against the build's
        ~10^5), and drop the sets a cached subset dominates: k-MAX chooses from the union
        of the explorations. False (default): each M-step's cache is its own build (plus
        the carried families), as in the paper; accumulating changed no imputation in
        the 20 paired runs of ``workflows/results/benchmarks/impute_accuracy.md``.
    imputation : {"marginal", "mpe"} or None
        The completion of the returned data by the best network: each missing cell's
        posterior-marginal argmax given its record's observed values (default: the
        completion that maximises the expected number of correct cells), the joint MPE
        (the paper's reported imputation, §6-7), or None: ``e_step``'s.
    time_limit : float, optional
        Seconds for the whole run, counted from ``started`` (a ``time.time()``; default
        now): no iteration starts that would not end in time with the final completion
        (:func:`next_iteration_fits`); the first always runs, and each keeps its M-step
        budgets. The best network so far is the result (stop reason ``"time limit"``).

    Returns
    -------
    SEMResult
        The best network (highest completed-data BIC over the iterations), the data
        completed by it, its elimination order (treewidth certificate), the history of
        every iteration and the stopping reason.
    """
    if k < 1:
        raise InvalidConfigError(f"k must be >= 1, got {k}")
    if max_iterations < 1:
        raise InvalidConfigError(f"max_iterations must be >= 1, got {max_iterations}")
    if not tolerance >= 0:
        raise InvalidConfigError(f"tolerance must be >= 0, got {tolerance}")
    if patience < 1:
        raise InvalidConfigError(f"patience must be >= 1, got {patience}")
    if not (np.isfinite(alpha) and alpha >= 0):
        raise InvalidConfigError(f"alpha must be a finite number >= 0, got {alpha}")
    for name, method in (("e_step", e_step), ("imputation", imputation)):
        if method not in ("mpe", "marginal") and not (name == "imputation" and method is None):
            raise InvalidConfigError(f"unknown {name} {method!r}; choose 'mpe' or 'marginal'")
    if time_limit is not None and not (math.isfinite(time_limit) and time_limit > 0):
        raise InvalidConfigError(f"time_limit must be a positive number of seconds, "
                                 f"got {time_limit}")
    deadline = None if time_limit is None \
        else (time.time() if started is None else started) + time_limit
    if data.n_vars < 2:
        raise DataError("structural EM needs at least two variables", path=data.source)
    gen = as_rng(rng)
    spec = sem_cache_spec(cache, score, data)
    if cache_builder is None:
        from bnsl_dist.cache import build_cache

        def cache_builder(d: CategoricalData) -> ParentSetCache:
            return build_cache(d, spec)

    budget = search_budget or sem_search_budget(data)
    kk = min(k, data.n_vars - 1)
    if searcher is None:
        def searcher(cache: ParentSetCache, b: Budget, g: np.random.Generator) -> Incumbent:
            best: Incumbent | None = None
            for inc in make_optimizer("kmax", k=kk).run(cache, b, g):
                best = inc
            if best is None:
                raise InvalidConfigError("k-MAX found no DAG within its budget")
            return best

    runner = e_step_runner or _serial_e_step
    missing = data.missing if data.missing is not None else np.zeros(data.codes.shape, bool)
    net, chain_order = initial_network(data, gen, alpha)
    order: tuple[int, ...] | None = chain_order  # None: k-MAX gave no elimination order
    history: list[SEMIteration] = []
    seen: dict[tuple[Any, Any], int] = {}
    best: tuple[float, BayesianNetwork, tuple[int, ...] | None, int] | None = None
    stale = 0
    reason = "max iterations"
    prev_dag: DAG = net.dag  # the chain is the first "previous structure"
    # the parent sets of the earlier M-steps' caches, per variable (insertion-ordered)
    pool: list[dict[tuple[int, ...], None]] = [{} for _ in range(data.n_vars)]
    for it in range(1, max_iterations + 1):
        if deadline is not None and not next_iteration_fits(history, deadline - time.time()):
            reason = "time limit"
            break
        t0 = time.perf_counter()
        codes = runner(net, order, data.codes, missing, e_step)
        completed = data.with_codes(codes, None)
        t1 = time.perf_counter()
        pc = cache_builder(completed)
        scorer = LocalScorer(completed, score)
        carried = [prev_dag] if best is None else [prev_dag, best[1].dag]
        rescorer = LocalScorer(completed, spec.score, spec.ess)
        if accumulate and pc is not None:
            fresh = [[ps for ps, _ in pc.sets_of(v)] for v in range(pc.n_vars)]
            union = add_sets(pc, rescorer, pool)
            pc = union if union is pc else union.prune_dominated()
            for v, sets in enumerate(fresh):
                pool[v].update(dict.fromkeys(sets))
        if carry and pc is not None:
            pc = carry_families(pc, rescorer, carried)
        t2 = time.perf_counter()
        inc = searcher(pc, budget, gen)
        t3 = time.perf_counter()
        dag = DAG.from_parents(inc.dag.parents, data.names)
        cert = inc.info.get("certificate")
        new_order = tuple(cert.order) if cert is not None else None
        total = float(scorer.score_parents(dag.parents).sum())
        kept = False
        if carry:
            prev_total = float(scorer.score_parents(prev_dag.parents).sum())
            if prev_total > total:  # the previous structure (and its order) stays
                dag, new_order, total, kept = prev_dag, order, prev_total, True
        order = new_order
        net = fit_cpts(dag, completed, alpha)
        t4 = time.perf_counter()
        old = set(prev_dag.arcs())
        new = set(dag.arcs())
        rec = SEMIteration(it, total, len(new), len(new - old), len(old - new),
                           {"e_step": t1 - t0, "cache": t2 - t1, "search": t3 - t2,
                            "fit": t4 - t3}, dag, kept)
        history.append(rec)
        if on_iteration is not None:
            on_iteration(rec)
        improved = best is None or total > best[0] + tolerance * abs(best[0])
        stale = 0 if improved else stale + 1
        if best is None or total > best[0]:
            best = (total, net, order, it)
        key = equivalence_key(dag)
        if data.missing is None:
            reason = "complete data"
        elif key in seen and not improved:
            reason = "fixed point" if seen[key] == it - 1 else "oscillation"
        elif stale >= patience:
            reason = "no improvement"
        if reason != "max iterations":
            break
        seen[key] = it
        prev_dag = dag
    assert best is not None
    _, net, order, best_it = best
    # the final completion with the best network
    codes = runner(net, order, data.codes, missing, imputation or e_step)
    completed = data.with_codes(codes, None)
    return SEMResult(net, completed, tuple(order) if order is not None else (), history,
                     reason not in ("max iterations", "time limit"), reason, best_it)
