"""Greedy hill climbing with a tabu list and random restarts, on a parent-set cache.

The "sota-BNSL" baseline of the quasi-determinism paper (bnlearn's hill climbing with
10 random restarts and a 10-move tabu list). Start from the empty DAG; at each step
apply the best admissible move — add, remove or reverse one arc, keeping the graph
acyclic — that is not tabu; the tabu list holds the variable pairs of the last
``tabu_length`` moves. Non-improving moves are taken too (that is what the tabu list
is for) until ``max_no_improve`` steps in a row bring no new best; the climb then ends
at its best DAG. Each restart perturbs the best DAG so far (``perturb`` random
variables get a random acyclic cached set) and climbs again.

On a cache, a move is a move only when the families it produces are cached sets: an
arc change whose resulting parent set is not in the cache is not considered (the
cache is the search space, as for every other optimizer here). Pruned caches lack
many supersets, which limits arc additions; the restarts' perturbations jump between
arbitrary cached sets.

Move scores are incremental (:mod:`~bnsl_dist.search.ordering._hc_kernels`): a step
recomputes the moves of the one or two families it changed, not of the whole cache.

One iteration is one climb (the first from the empty DAG, then one per restart); the
run ends after ``1 + restarts`` climbs or when the budget ends, whichever is first
(``restarts=None``: restart until the budget ends).
"""

from __future__ import annotations

from collections.abc import Generator

import numpy as np

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.search.base import Budget, Incumbent, register
from bnsl_dist.search.ordering import _hc_kernels as HK
from bnsl_dist.search.ordering.obs import exact_total

__all__ = ["HillClimbTabu"]

#: Steps per kernel call between two clock checks: about this many cached sets scanned
#: per call (a step reads every set's move score once), at least one step and at most 64.
_CHUNK_WORK = 5_000_000


@register("hc-tabu")
class HillClimbTabu:
    """Hill climbing (add / remove / reverse one arc) with tabu list and restarts.

    Parameters
    ----------
    tabu_length : int
        Moves remembered; a move on the same pair of variables as one of them is tabu.
    max_no_improve : int
        Steps in a row without a new best after which a climb ends (bnlearn's
        ``max.tabu``, default equal to the tabu length).
    restarts : int or None
        Random restarts after the first climb (None: until the budget ends).
    perturb : int or None
        Random family changes at each restart (default max(3, n // 20)).

    References
    ----------
    M. Teyssier, D. Koller, UAI 2005, §5 (greedy hill climbing with a tabu list and
    random restarts as the baseline); T. Rahier, S. Marié, S. Girard, F. Forbes,
    "Fast Bayesian network structure learning using quasi-determinism screening",
    2018, §5 (sota-BNSL: 10 random restarts, tabu list of 10).
    """

    name = "hc-tabu"
    exact = False

    def __init__(self, *, tabu_length: int = 10, max_no_improve: int | None = None,
                 restarts: int | None = 10, perturb: int | None = None) -> None:
        self.tabu_length = tabu_length
        self.max_no_improve = max_no_improve
        self.restarts = restarts
        self.perturb = perturb
        self._check()  # where the spec is read (the registry builds one), not in each run

    def _check(self) -> None:
        if int(self.tabu_length) < 1:
            raise InvalidConfigError("hc-tabu: tabu_length must be >= 1")
        if self.restarts is not None and int(self.restarts) < 0:
            raise InvalidConfigError("hc-tabu: restarts must be >= 0")
        if (self.max_no_improve is not None and int(self.max_no_improve) < 1) \
                or (self.perturb is not None and int(self.perturb) < 0):
            raise InvalidConfigError("hc-tabu: max_no_improve must be >= 1, perturb >= 0")

    def run(self, cache: ParentSetCache, budget: Budget,
            rng: np.random.Generator) -> Generator[Incumbent, None, int]:
        """Yield improving incumbents; return the number of climbs run."""
        self._check()
        fc = cache.flat
        n = fc.n
        max_no_improve = int(self.tabu_length if self.max_no_improve is None
                             else self.max_no_improve)
        perturb = max(3, n // 20) if self.perturb is None else int(self.perturb)
        if max_no_improve < 1 or perturb < 0:
            raise InvalidConfigError("hc-tabu: max_no_improve must be >= 1, perturb >= 0")
        sizes = fc.sizes
        empty_rows = np.array([fc.offsets[v] + int(np.flatnonzero(
            sizes[fc.offsets[v]:fc.offsets[v + 1]] == 0)[0]) for v in range(n)],
            dtype=np.int64)
        chunk = max(1, min(64, _CHUNK_WORK // max(1, cache.n_sets)))
        rows = cache.n_sets
        moves = (np.empty(rows, dtype=np.int64), np.empty(rows, dtype=np.int64),
                 np.empty(rows, dtype=np.float64), np.empty(rows, dtype=np.int64),
                 np.empty(rows, dtype=np.float64), np.empty(n, dtype=np.float64))
        # kind, u, delta, reversal row, delta (per row); bound (per variable)
        ws = HK.workspace(n, fc.par_flat.shape[0])
        watch = budget.stopwatch()
        best = -np.inf
        best_chosen = empty_rows.copy()
        last = empty_rows  # the DAG the move arrays describe (after init_moves)
        climbs = 0
        while not watch.done():
            if self.restarts is not None and climbs > int(self.restarts):
                return watch.iterations
            if climbs == 0:
                chosen = empty_rows.copy()
            else:
                chosen = best_chosen.copy()
                HK.perturb(chosen, fc.offsets, fc.par_offsets, fc.par_flat,
                           rng.random(2 * perturb))
            climbs += 1
            climb_best = chosen.copy()
            start = exact_total(fc, chosen)
            tabu = np.full((int(self.tabu_length), 2), -1, dtype=np.int64)
            state = np.zeros(3, dtype=np.int64)
            fstate = np.array([start, start], dtype=np.float64)
            if climbs == 1:
                HK.init_moves(chosen, fc.offsets, fc.par_offsets, fc.par_flat, fc.scores,
                              *moves)
            else:  # the moves are those of the last climb's end: refresh what differs
                HK.refresh_moves(chosen, np.flatnonzero(chosen != last).astype(np.int64),
                                 fc.offsets, fc.par_offsets, fc.par_flat, fc.scores, *moves)
            fresh = True  # the workspace is built from this climb's start
            while True:
                over = HK.hc_steps(chosen, climb_best, fc.offsets, fc.par_offsets, fc.par_flat,
                                   fc.scores, *moves, tabu, state, fstate, max_no_improve,
                                   chunk, ws, fresh)
                fresh = False
                s = exact_total(fc, climb_best)
                if s > best:
                    best = s
                    best_chosen = climb_best.copy()
                    yield Incumbent(watch.elapsed(), s, cache.dag_from_indices(best_chosen),
                                    iterations=watch.iterations + 1)
                if over or watch.remaining() <= 0.0:
                    break
            last = chosen.copy()
            watch.tick()
        return watch.iterations
