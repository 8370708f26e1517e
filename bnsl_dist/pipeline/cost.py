"""What a grid's work costs, before any of it runs (no Dask): the data's shape from the
registry or a file's first line, a cell's time budget in worker seconds, a cache's
estimated build work, the order work is handed out in (longest first), and the guided
batches a large cache fans out in, and whether a small ``learn`` fits a local cluster of
threads. The orchestration (:mod:`bnsl_dist.orchestrate.grid`,
:mod:`bnsl_dist.orchestrate.explore`) submits by these; the planner
(:mod:`bnsl_dist.pipeline.plan`) simulates the same submission with them."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from bnsl_dist.exceptions import DataError
from bnsl_dist.pipeline.cell import CacheJob, Cell
from bnsl_dist.pipeline.specs import DataRef

__all__ = ["ASSUMED_ROWS", "FAN_OUT_SECONDS", "SCORE_SECONDS", "SCORE_SECONDS_PER_ROW",
           "THREADS_MAX_SECONDS", "Priorities", "builds_cache", "cache_sizes", "cache_work",
           "cell_budget_seconds", "cell_cost", "fits_threads", "guided_batches",
           "n_vars_hint", "priorities", "shape_hint"]


def n_vars_hint(ref: DataRef | None) -> int | None:
    return None if ref is None else shape_hint(ref)[0]


def shape_hint(ref: DataRef) -> tuple[int | None, int | None]:
    """(variables, rows) of the split ``ref`` names: a data file's from its first line
    and line ends (:func:`~bnsl_dist.data.io.peek_shape`), a registered data set's from
    the registry alone (nothing is read or made); None where neither says."""
    if ref.path is not None:
        try:
            from bnsl_dist.data.io import peek_shape

            file = ref.file
            shape = None if file is None else peek_shape(file)
        except DataError:  # an unset environment variable: the run says so
            shape = None
        return shape if shape is not None else (None, None)
    try:
        from bnsl_dist.datasets.catalog import load_catalog

        cat = load_catalog()
        spec = cat.dataset(ref.name).spec
        n = getattr(spec, "n_vars", None)
        if n is None and getattr(spec, "network", None):
            n = getattr(cat.network(spec.network).spec, "n_vars", None)
        part = spec.splits.get(ref.split)
        rows = getattr(part, "n_rows", None) or getattr(part, "n_samples", None)
    except Exception:  # noqa: BLE001 - a hint only
        return None, None
    return (int(n) if n else None), (int(rows) if rows else None)



class _Shape(NamedTuple):
    n_vars: int
    n_samples: int


def builds_cache(cell: Cell) -> bool:
    """Whether ``grid run`` builds the cell's cache as tasks of its own: not for a cache
    file the spec names, nor for a SEM cell (its M-steps build theirs inside the cell)."""
    return cell.kind != "sem" and cell.cache_job.given_path is None


def cell_budget_seconds(cell: Cell) -> float | None:
    """The worker seconds a cell's time budgets allow at most (None: not bounded in
    seconds): its search budget; for a SEM cell, its M-steps' budgets as the cell sets
    them (:func:`~bnsl_dist.sem.budgets.sem_cache_spec` and
    :func:`~bnsl_dist.sem.budgets.sem_search_budget`: the cache's seconds per
    variable and k-MAX's seconds, capped by the cell's budget) times the EM iteration
    cap, its E-steps not counted; None when either M-step budget is a count
    (data-scaled) or the data's size is unknown."""
    if cell.sem is None:
        return cell.budget_seconds
    from bnsl_dist.sem.budgets import sem_cache_spec, sem_search_budget

    sem = cell.sem
    n, rows = shape_hint(cell.data) if cell.data is not None else (None, None)
    if n is None:
        return None
    shape = _Shape(n, rows or 1)  # the rows matter to the count budgets alone
    cache = sem_cache_spec(cell.cache, cell.cache.score, shape,
                           scaled=sem.cache_budget == "data", scale=sem.budget_scale)
    search = sem_search_budget(shape, sem.search_seconds_per_variable, cell.budget,
                               scale=sem.budget_scale)
    if cache.seconds_per_variable is None or search.seconds is None:
        return None
    return sem.max_em_iterations * (cache.seconds_per_variable * n + search.seconds)



def cell_cost(cell: Cell) -> float:
    """A rough cost used only to order work (longest first): the time budget, else the
    iteration budget scaled by the number of variables; times a SEM cell's budget scale
    (its M-steps' budgets: a tuning study's x2 cells before its x0.5 ones, which the
    cells' common time cap left in any order)."""
    n = n_vars_hint(cell.data) or 100
    scale = 1.0 if cell.sem is None else float(cell.sem.budget_scale)
    if cell.budget_seconds is not None:
        return float(cell.budget_seconds) * (1.0 + 1e-6 * n) * scale
    return float(cell.budget_iterations or 1) * n * 1e-4 * scale


#: Worker seconds of one exact score on ``N`` rows, for :func:`cache_work`:
#: ``SCORE_SECONDS + SCORE_SECONDS_PER_ROW * N`` (independence selection at 3,000 scores
#: per variable on the 2-core development machine: 1.0e-9 to 1.9e-9 s per score and row
#: from dna's 1,600 rows to msnbc's 291,326, ``python -m workflows.benchmarks.score_cost``;
#: a 16-core machine's cores were ~1.7x slower).
SCORE_SECONDS = 1e-6
SCORE_SECONDS_PER_ROW = 2.5e-9
#: ... the rows assumed where a registry entry does not give them.
ASSUMED_ROWS = 10_000

#: Caches estimated at this many worker seconds or more fan out
#: (:func:`bnsl_dist.orchestrate.cells.run_cells`). A threshold chosen, not measured:
#: ``python -m workflows.benchmarks.scaling --grid-build-caches --fan-out-seconds S``
#: times a grid at another.
FAN_OUT_SECONDS = 10.0


def cache_work(job: CacheJob) -> float | None:
    """Estimated worker seconds to build ``job``'s cache: variables x the per-variable
    time budget, or x exact scores x the seconds of one score on the data's rows
    (:data:`SCORE_SECONDS_PER_ROW`; the smaller when both are set; independence
    selection with neither: 1 s a variable; sequential exploration with neither: every
    set up to the in-degree). None when the number of variables is unknown (a data
    file not there yet, or not readable) or screening decides it."""
    if job.data is None or job.screening is not None:
        return None
    n, rows = shape_hint(job.data)
    if n is None:
        return None
    per_score = SCORE_SECONDS + SCORE_SECONDS_PER_ROW * (rows or ASSUMED_ROWS)
    spec = job.cache
    per = [float(spec.seconds)] if spec.seconds is not None else []
    if spec.scores_per_variable is not None:
        per.append(spec.scores_per_variable * per_score)
    if not per:
        k = n - 1 if spec.max_indegree is None else min(spec.max_indegree, n - 1)
        per.append(1.0 if spec.method == "independence"
                   else sum(math.comb(n - 1, r) for r in range(k + 1)) * per_score)
    return n * min(per)


def cache_sizes(cells: Sequence[Cell], cache_path: Callable[[Cell], str | None],
                cost: Callable[[Cell], float] = cell_cost
                ) -> tuple[dict[str, float], dict[str, Cell]]:
    """Each cache the ``cells`` need (those ``cache_path`` names): its size for ordering
    (:func:`cache_work`, else the cost of its longest cell) and the first cell needing it,
    by cache key."""
    sizes: dict[str, float] = {}
    first: dict[str, Cell] = {}
    for c in cells:
        if cache_path(c) is not None:
            ck = c.cache_job.key
            sizes[ck] = max(sizes.get(ck, 0.0), cost(c))
            first.setdefault(ck, c)
    for ck, c in first.items():
        work = cache_work(c.cache_job)
        if work is not None:
            sizes[ck] = work
    return sizes, first


def guided_batches(variables: Sequence[int], n_workers: int,
                   batch_size: int | None = None) -> list[list[int]]:
    """Split ``variables`` into batches: ``batch_size`` each when given, else shrinking
    ones (ceil(left / (4 W)), at least 1), so the last tasks are single variables."""
    todo = list(variables)
    if batch_size is not None:
        return [todo[i:i + batch_size] for i in range(0, len(todo), batch_size)]
    out = []
    i = 0
    while i < len(todo):
        size = max(1, math.ceil((len(todo) - i) / (4 * max(1, n_workers))))
        out.append(todo[i:i + size])
        i += size
    return out


class Priorities(NamedTuple):
    """Dask priorities (higher runs first) of a grid's tasks: each cell's (by key), each
    pending cache's (by cache key: its one task, or the base of its batches, which take
    priorities in (base, base + 1)), and the storing tasks' (above all)."""

    cells: dict[str, float]
    caches: dict[str, float]
    store: float


def priorities(cells: Sequence[Cell], sizes: Mapping[str, float], slots: int,
               cost: Callable[[Cell], float] = cell_cost) -> Priorities:
    """The order ``grid run`` hands work out in, on ``slots`` worker threads
    (0: unknown), for ``cells`` whose pending caches have the estimated ``sizes``
    (cache key -> work, :func:`cache_sizes`; a cell whose cache is stored or given needs
    none).

    All but the last ``slots`` cells are *early*: those of the cheapest caches (then
    the longest), run before any other cache's batches as soon as their cache exists;
    the last ``slots`` cells (of the largest caches) run after every batch, as one
    last wave that fills every worker. Caches: the early cells' first, each group the
    largest first; cells: longest first within each group. Without early cells every
    cache comes before every cell; with ``slots`` unknown, too. Why: cells run for
    their whole (long) budget and a cache's batches are short, so cells that all start
    when the caches are done run in waves of ``slots``, the last one part-empty (1,350
    one-hour cells on 1,024 workers: a second hour for 326 of them); started during the
    cache build, the surplus leaves one full wave (the replay model's makespan of
    asobs-ent-2018 on 1,024 workers: 3.7 h -> 3.0 h, ``bnsl-dist grid plan``)."""
    surplus = max(0, len(cells) - slots) if slots > 0 else 0
    # each cell's key, cost and cache key once (hashes and registry look-ups: seconds
    # for 10^5 cells when recomputed in every sort)
    keys = [c.key for c in cells]
    costs = [cost(c) for c in cells]
    caches = [c.cache_job.key for c in cells]
    order = range(len(cells))
    early = sorted(order, key=lambda i: (sizes.get(caches[i], 0.0), -costs[i]))[:surplus]
    is_early = [False] * len(cells)
    for i in early:
        is_early[i] = True
    early_caches = {caches[i] for i in early if caches[i] in sizes}
    out_cells: dict[str, float] = {}
    out_caches: dict[str, float] = {}
    p = 0.0
    for i in sorted((i for i in order if not is_early[i]), key=costs.__getitem__):
        out_cells[keys[i]] = p
        p += 1
    for group in ([k for k in sizes if k not in early_caches], list(early_caches)):
        for ck in sorted(group, key=lambda k: (sizes[k], k)):
            p += 1
            out_caches[ck] = p
    for i in sorted(early, key=costs.__getitem__):
        p += 1
        out_cells[keys[i]] = p
    return Priorities(out_cells, out_caches, p + 1)


#: A job whose serial work is estimated below this many seconds runs on a local cluster
#: of threads (:func:`fits_threads`): a cluster of processes costs more to start (its
#: forkserver imports the package again and loads the kernels: 3-6 CPU seconds on 2
#: cores; a fresh cluster of processes +11.9 s wall / +6.1 CPU s over a serial run, of
#: threads +1.1 s / +0.6 CPU s, ``python -m workflows.benchmarks.scaling --overhead-only``)
#: than threads can lose to the GIL on such a job (at most its serial time).
THREADS_MAX_SECONDS = 1.0
#: Upper bounds of the serial seconds, ``python -m workflows.benchmarks.threads_cost``
#: (nltcs, plants, book on the loaded 2-core development machine): per variable x exact
#: score x sample of a cache build (1.2-9.0 ns; :data:`SCORE_SECONDS_PER_ROW`, measured by
#: ``score_cost``, is the same cost per score and row), and per seed x iteration x
#: variable**2 x exact score per variable of a search (memetic and winasobs(-ent), the
#: slowest per iteration: 21-72 ns; every other optimizer fits_threads admits under 4 ns).
CACHE_SECONDS_PER_UNIT = 1e-8
SEARCH_SECONDS_PER_UNIT = 1e-7


def fits_threads(cells: Sequence[Cell], n_vars: int, n_samples: int) -> bool:
    """Whether ``learn`` of ``cells`` on data of ``n_vars`` x ``n_samples`` is small
    enough for a local cluster of threads (:data:`THREADS_MAX_SECONDS`): only when its
    work is bounded by exact budgets — a cache built from the data with an exact-score
    budget, an iteration budget and an optimizer that is neither exact nor scored from
    the data. Then the result is the same on threads or processes (the same seed, the
    same result); only the wall time differs."""
    from bnsl_dist.search.base import optimizer_info

    c0 = cells[0]
    cache, budget = c0.cache, c0.search.budget
    info = optimizer_info(c0.algorithm)
    if (c0.cache_job.given_path is not None or cache.scores_per_variable is None
            or cache.seconds_per_variable is not None or budget.seconds is not None
            or budget.iterations is None or info.exact
            or getattr(info.cls, "needs_data", False)):
        return False
    scores = n_vars * cache.scores_per_variable
    estimate = (CACHE_SECONDS_PER_UNIT * scores * n_samples
                + SEARCH_SECONDS_PER_UNIT * len(cells) * budget.iterations * n_vars * scores)
    return estimate <= THREADS_MAX_SECONDS
