"""The M-steps' budgets of structural EM (SEM-kMAX), scaled to the data: the exact scores
per variable of each cache build and k-MAX's iterations (:func:`sem_budgets`), the cache
spec and search budget a run or a grid cell uses (:func:`sem_cache_spec`,
:func:`sem_search_budget`), and when a run is faster without Dask
(:func:`prefer_serial`). Pure arithmetic on the data's shape: planning reads it before
any data are loaded.

References
----------
M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang, "Efficient learning of
bounded-treewidth Bayesian networks from complete and incomplete data sets",
IJAR 95, 2018, §7 (1 s per variable and n seconds of k-MAX per M-step; §7.4 the
budgets' tuning study).
"""

from __future__ import annotations

from typing import Any, Protocol

from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.search.base import Budget

__all__ = ["CACHE_ROW_SCORES", "CACHE_SCORES_RANGE", "EXPAND_DOMINATED", "SEARCH_ITERATIONS_RANGE",
           "SEARCH_WORK", "SERIAL_ROW_VISITS", "DataShape", "prefer_serial", "sem_budgets",
           "sem_cache_spec", "sem_search_budget"]


#: Default M-step budgets (:func:`sem_budgets`): exact scores per variable are
#: ``CACHE_ROW_SCORES / N`` clipped to ``CACHE_SCORES_RANGE``; k-MAX iterations are
#: ``SEARCH_WORK / n`` clipped to ``SEARCH_ITERATIONS_RANGE``.
CACHE_ROW_SCORES = 24_000_000
CACHE_SCORES_RANGE = (2_000, 20_000)
SEARCH_WORK = 1_200_000
SEARCH_ITERATIONS_RANGE = (200, 20_000)


def sem_budgets(n_vars: int, n_samples: int) -> tuple[int, int]:
    """The default M-step budgets for data of ``n_vars`` variables and ``n_samples``
    rows: (exact scores per variable of the cache build, k-MAX iterations).

    An exact score costs O(N), so ``CACHE_ROW_SCORES / N`` scores per variable keep the
    cache build at a fixed number of row visits per variable (the role of the paper's
    1 s per variable), within 2,000–20,000: 8,000 at N = 3,000 (1 s gives about 3·10^4
    there), where 2,000 imputed 0.3–0.4 points worse over 5 seeds and 4x both budgets
    gained 0.1 points more on 16 variables but 0.6 on 60
    (``workflows/results/benchmarks/impute_accuracy.md``); the cost is about twice
    2,000's. A k-MAX iteration costs O(n²) (the argmax over
    the outside variables at each insertion), so ``SEARCH_WORK / n`` iterations keep
    the search at O(n) per SEM iteration (the paper's n seconds), within 200–20,000:
    20,000 at n = 60, where 2,000 imputed about 0.2 points worse (see
    ``workflows/benchmarks/impute.py``).
    """
    lo, hi = CACHE_SCORES_RANGE
    scores = int(min(hi, max(lo, round(CACHE_ROW_SCORES / max(1, n_samples)))))
    lo, hi = SEARCH_ITERATIONS_RANGE
    iterations = int(min(hi, max(lo, round(SEARCH_WORK / max(1, n_vars)))))
    return scores, iterations


#: :func:`prefer_serial`: row visits of one M-step's cache build (variables x exact
#: scores per variable x rows) up to which a local Dask cluster costs more than it saves.
SERIAL_ROW_VISITS = 4_000_000_000


def prefer_serial(n_vars: int, n_samples: int) -> bool:
    """Whether a run with the default budgets is faster serial than on a local cluster.

    At 3,000 x 60 (1.44·10^9 row visits per cache build) a 2-worker local cluster's
    start and warm-up cost more than the fan-out of the cache build saves
    (``workflows/results/benchmarks/impute.md``): serial wins up to ~3x that work.
    """
    scores = sem_budgets(n_vars, n_samples)[0]
    return n_vars * scores * n_samples <= SERIAL_ROW_VISITS


#: Whether the M-step's independence selection expands the sets that a subset one member
#: smaller dominates (:class:`~bnsl_dist.cache.spec.CacheSpec`'s ``expand_dominated``) in
#: the default build. False: at 3,000 x 60 the exploration then ends (its open list
#: empty) at about a third of the CPU time of the paper's within the same score budget
#: and reaches deeper families: higher completed-data BIC and MPE accuracy on all 5
#: repetitions of a 60-variable problem, identical runs on nltcs's 16 variables
#: (``workflows/results/benchmarks/impute_accuracy.md``).
EXPAND_DOMINATED = False


class DataShape(Protocol):
    """What the M-step budgets read of the data: its variables and rows (a
    :class:`CategoricalData`, or a shape known before the data are read)."""

    @property
    def n_vars(self) -> int: ...

    @property
    def n_samples(self) -> int: ...


def sem_cache_spec(cache: CacheSpec | None, score: str, data: DataShape, *,
                   scaled: bool = False, scale: float = 1.0) -> CacheSpec:
    """The M-step's cache build: ``cache`` when given, else independence selection with
    ``score``; its budget is the exact-score count of :func:`sem_budgets` (reproducible)
    when ``cache`` is None or ``scaled`` (``cache``'s own budget is then replaced), else
    ``cache``'s (``seconds_per_variable``: the paper's wall-clock protocol). The
    data-scaled build also takes :data:`EXPAND_DOMINATED` unless ``cache`` sets
    ``expand_dominated`` explicitly (then its setting stays). ``scale`` multiplies the
    budget, whichever it is (the paper's tuning study, §7.4).

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data.dataset import CategoricalData
    >>> d = CategoricalData.from_array(np.zeros((3000, 60), int))
    >>> spec = sem_cache_spec(CacheSpec(score="bdeu"), "bic", d, scaled=True)
    >>> spec.score, spec.seconds_per_variable, spec.scores_per_variable == sem_budgets(60, 3000)[0]
    ('bdeu', None, True)
    >>> spec.expand_dominated, sem_cache_spec(CacheSpec(), "bic", d).expand_dominated
    (False, True)
    >>> sem_cache_spec(CacheSpec(expand_dominated=True), "bic", d, scaled=True).expand_dominated
    True
    >>> sem_cache_spec(CacheSpec(seconds_per_variable=0.05), "bic", d, scale=2).seconds_per_variable
    0.1
    >>> sem_cache_spec(None, "bic", d, scale=0.5).scores_per_variable == sem_budgets(60, 3000)[0] // 2
    True
    """
    if cache is not None and not scaled:
        spec = cache
    else:
        scores = sem_budgets(data.n_vars, data.n_samples)[0]
        base: dict[str, Any] = cache.model_dump() if cache is not None else {"score": score}
        if cache is None or "expand_dominated" not in cache.model_fields_set:
            base["expand_dominated"] = EXPAND_DOMINATED
        spec = CacheSpec(**{**base, "seconds_per_variable": None,
                            "scores_per_variable": scores})
    if scale == 1.0:
        return spec
    update: dict[str, Any] = {}
    if spec.seconds_per_variable is not None:
        update["seconds_per_variable"] = spec.seconds_per_variable * scale
    if spec.scores_per_variable is not None:
        update["scores_per_variable"] = max(1, round(spec.scores_per_variable * scale))
    return spec.model_copy(update=update)


def sem_search_budget(data: DataShape, seconds_per_variable: float | None = None,
                      cap: Budget | None = None, *, scale: float = 1.0) -> Budget:
    """k-MAX's budget per M-step: ``seconds_per_variable`` x variables wall seconds when
    given (the paper's protocol: 1; not reproducible), else the iterations of
    :func:`sem_budgets` (reproducible), multiplied by ``scale`` (the paper's tuning
    study, §7.4); within ``cap``'s seconds and iterations, when set (a seconds cap keeps
    the run reproducible only while it does not bind).

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data.dataset import CategoricalData
    >>> d = CategoricalData.from_array(np.zeros((3000, 60), int))
    >>> sem_search_budget(d) == Budget(max_iterations=sem_budgets(60, 3000)[1])
    True
    >>> sem_search_budget(d, 0.5, Budget(seconds=20.0, max_iterations=100))
    Budget(seconds=20.0, max_iterations=100)
    >>> sem_search_budget(d, 0.05, scale=2.0).seconds
    6.0
    """
    seconds = None if seconds_per_variable is None \
        else seconds_per_variable * data.n_vars * scale
    iterations = None if seconds is not None \
        else max(1, round(sem_budgets(data.n_vars, data.n_samples)[1] * scale))
    if cap is not None:
        seconds = _least(seconds, cap.seconds)
        iterations = _least(iterations, cap.max_iterations)
    return Budget(seconds=seconds, max_iterations=iterations)


def _least(a: Any, b: Any) -> Any:
    """The smaller of two optional limits (None: no limit)."""
    return b if a is None else a if b is None else min(a, b)
