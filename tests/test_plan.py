"""The replay model and the planner (no Dask): list scheduling against brute force, the
lower bound under every schedule, durations from committed records, the priorities."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.pipeline.config import GridConfig, load_grid
from bnsl_dist.pipeline.cost import fits_threads, priorities
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.learn import learn_cells
from bnsl_dist.pipeline.plan import (
    Task,
    at_budget,
    cell_twin_key,
    list_schedule,
    lower_bound,
    plan,
    record_twin_key,
    replay_model,
)
from bnsl_dist.pipeline.specs import CacheSpec, DataRef, SearchSpec
from bnsl_dist.results.export import read_records
from bnsl_dist.search.spec import BudgetSpec

ROOT = Path(__file__).resolve().parents[1]
KMAX = ROOT / "workflows" / "results" / "kmax-2018-reduced" / "records.parquet"


def optimum(durations: list[float], workers: int) -> float:
    """The best makespan of independent tasks: every assignment tried."""
    best = float("inf")
    for assign in itertools.product(range(workers), repeat=len(durations)):
        load = [0.0] * workers
        for d, w in zip(durations, assign, strict=True):
            load[w] += d
        best = min(best, max(load))
    return best


def greedy(durations: list[float], workers: int) -> float:
    """Longest first, each to the least-loaded worker (tasks all ready at once)."""
    load = [0.0] * workers
    for d in sorted(durations, reverse=True):
        load[load.index(min(load))] += d
    return max(load)


@pytest.mark.parametrize("seed", range(6))
def test_list_schedule_is_longest_first_and_bounded_by_the_optimum(seed):
    import random

    rnd = random.Random(seed)
    durations = [float(rnd.randint(1, 20)) for _ in range(7)]
    workers = rnd.choice([2, 3])
    tasks = [Task(f"t{i}", d, d) for i, d in enumerate(durations)]  # priority = length
    sched = list_schedule(tasks, workers)
    opt = optimum(durations, workers)
    assert sched.makespan == greedy(durations, workers)
    assert lower_bound({t.key: t.seconds for t in tasks}, {}, workers) <= opt <= sched.makespan
    assert sched.makespan <= opt * (4 / 3 - 1 / (3 * workers)) + 1e-9  # Graham's LPT bound
    assert sched.busy == sum(durations)


def test_a_cell_waits_for_its_cache_and_the_bound_counts_the_cache_first():
    """Four 5-s batches and a 0-s storing task before two 10-s cells on two workers: the
    batches end at 10, the cells at 20; the caches-then-a-cell bound is also 20 (the
    work bound, 15, is not reached)."""
    parts = [Task(f"p{i}", 5.0, 10.0 + i) for i in range(4)]
    store = Task("s", 0.0, 20.0, tuple(t.key for t in parts))
    cells = [Task(f"c{i}", 10.0, float(i), ("s",)) for i in range(2)]
    tasks = [*parts, store, *cells]
    sched = list_schedule(tasks, 2)
    assert sched.makespan == 20.0
    assert min(sched.runs[c.key][1] for c in cells) == 10.0
    assert lower_bound({t.key: t.seconds for t in tasks}, {t.key: t.deps for t in tasks},
                       2) == 20.0


def test_recorded_wall_times_are_brought_to_the_full_budget():
    """Each kmax-2018 cell replays its kmax-2018-reduced twin: a run that used its whole
    3.6 s takes 3,600 s plus the same overhead, one that ended sooner x 1,000; caches
    per variable likewise against 0.06 s -> 60 s (from the rows read here)."""
    recs = read_records(KMAX)
    rows = {(r["dataset"], r["split"], r["label"], r["k"], int(r["seed"])): r
            for r in recs.table.to_pylist()}
    cells = expand_grid(load_grid(ROOT / "configs" / "grids" / "kmax-2018.yaml"))
    model = replay_model(cells, recs)
    for c in cells[:40]:
        r = rows[cell_twin_key(c)[:5]]
        w = r["wall_seconds"]
        assert model.cells[c.key] == pytest.approx(w - 3.6 + 3600 if w >= 3.6 else w * 1000)
        assert model.sources[c.key] == "scaled"
        per = r["cache_seconds"] / r["n_vars"]
        full = per - 0.06 + 60 if per >= 0.06 else per * 1000
        assert model.caches[c.cache_job.key] == pytest.approx((full,) * r["n_vars"])
    assert at_budget(2.0, None, 3600.0) == 2.0


def test_cells_without_records_replay_their_budget():
    g = GridConfig.model_validate({
        "name": "b", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "seconds_per_variable": 2.0},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0, 1],
        "budget": {"seconds": 30}})
    cells = expand_grid(g)
    model = replay_model(cells)
    assert [model.cells[c.key] for c in cells] == [30.0, 30.0]
    assert model.caches[cells[0].cache_job.key] == (2.0,) * 16  # nltcs: 16 variables
    p = plan(cells, 4, grid="b")
    assert p.cells == 2 and p.cpu_hours == pytest.approx((60 + 32) / 3600)
    # fanned out on 4: batches of the 32 s end at 8 s, the two cells at 38 s
    assert p.makespan_s == pytest.approx(38.0)


def test_the_surplus_beyond_one_wave_runs_as_soon_as_its_cache_exists():
    """Five cells on two slots: the three of the cheaper cache are early (above every
    cache), the two of the larger cache the last wave (below every cache)."""
    g = GridConfig.model_validate({
        "name": "w", "datasets": [{"name": "nltcs"}, {"name": "msnbc"}],
        "cache": {"method": "independence", "seconds_per_variable": 1.0},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0, 1, 2],
        "budget": {"seconds": 30}})
    cells = [c for c in expand_grid(g)][:5]
    sizes = {c.cache_job.key: 16.0 if c.dataset == "nltcs" else 17.0 for c in cells}
    pr = priorities(cells, sizes, 2)
    early = [c for c in cells if pr.cells[c.key] > max(pr.caches.values())]
    late = [c for c in cells if pr.cells[c.key] < min(pr.caches.values())]
    assert {c.dataset for c in early} == {"nltcs"} and len(early) == 3
    assert {c.dataset for c in late} == {"msnbc"} and len(late) == 2
    assert pr.store > max(pr.cells.values())
    assert priorities(cells, sizes, 0).cells == priorities(cells, sizes, 5).cells  # none early


def test_grid_plan_cli_prints_the_plan_and_json(tmp_path):
    grid = ROOT / "configs" / "grids" / "smoke.yaml"
    res = CliRunner().invoke(main, ["grid", "plan", str(grid), "--workers", "2",
                                    "--workers", "8"])
    assert res.exit_code == 0, res.output
    assert "expected makespan" in res.output and "CPU-hours" in res.output
    res = CliRunner().invoke(main, ["grid", "plan", str(grid), "--workers", "2", "--json"])
    out = json.loads(res.output)
    assert out[0]["workers"] == 2 and out[0]["cells"] > 0
    assert out[0]["makespan_s"] >= out[0]["lower_bound_s"] > 0


def test_a_built_cache_keeps_its_variables_seconds_and_the_records_carry_them(tmp_path):
    """ensure_cache writes the cache record beside the cache (each variable's
    exploration seconds, as the cache's own stats say); an export of a folder whose
    result uses that cache carries it; the replay model sleeps those seconds."""
    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.pipeline.run import ensure_cache
    from bnsl_dist.results.export import export_records
    from bnsl_dist.results.records import CellResult
    from bnsl_dist.results.store import ResultStore

    g = GridConfig.model_validate({
        "name": "t", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "scores_per_variable": 20},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": [0], "budget": {"seconds": 1}})
    (cell,) = expand_grid(g)
    store = ResultStore(tmp_path)
    path = ensure_cache(cell.cache_job, store.cache_path(cell.cache_job.key))
    stats = read_jkl(path).meta["stats"]
    times = store.read_cache_times()[cell.cache_job.key]
    assert times["n_vars"] == 16
    assert times["variable_seconds"] == pytest.approx(
        [dict(zip(stats["variables"], stats["seconds"], strict=True))[v] for v in range(16)],
        abs=1e-4)
    store.write_result(CellResult(
        key=cell.key, grid="t", dataset="nltcs", split="train", algorithm="kg", label="kg",
        params="{}", k=2, seed=0, budget_seconds=1.0, budget_iterations=None,
        best_score=-1.0, dag_json="{}", n_vars=16, n_samples=1, wall_seconds=1.5,
        cache_key=cell.cache_job.key, cache_seconds=times["build_seconds"],
        spec=json.dumps(cell.json_dict())))
    recs = read_records(export_records(tmp_path, tmp_path / "r.parquet"))
    assert recs.caches == {cell.cache_job.key: times}
    model = replay_model([cell], recs)
    assert model.caches[cell.cache_job.key] == tuple(times["variable_seconds"])
    assert model.cells[cell.key] == 1.5 and model.sources[cell.key] == "record"


def _search(algorithm, iters):
    return SearchSpec(algorithm=algorithm, budget=BudgetSpec.with_default_checkpoints(None, iters))


def test_small_jobs_fit_threads():
    """The rule against its estimate worked out by hand: (1e-8 s x variables x exact
    scores x samples) + (1e-7 s x seeds x iterations x variables**2 x exact scores) <= 1 s,
    and only for work bounded by exact budgets."""
    def cells(spv=50, iters=20, seeds=2, algorithm="asobs-ent", **cache):
        return learn_cells(DataRef(name="nltcs"), CacheSpec(scores_per_variable=spv, **cache),
                           _search(algorithm, iters), seeds)

    # the tiny job of issue 15: 1e-8*16*50*16181 + 1e-7*2*20*16*16*50 = 0.129 + 0.051 s
    assert fits_threads(cells(), 16, 16181)
    # 1e-8 * 16 * 50 * n = 1 s at n = 125 000 samples (no search: 1e-7*1*1*16*800 ~ 0)
    assert fits_threads(cells(iters=1, seeds=1), 16, 124_000)
    assert not fits_threads(cells(iters=1, seeds=1), 16, 126_000)
    # 1e-7 * 2 * it * 16 * 800 = 1 s at it = 390.6 iterations (no samples)
    assert fits_threads(cells(iters=390), 16, 1)
    assert not fits_threads(cells(iters=391), 16, 1)
    # book-sized (500 variables): far above
    assert not fits_threads(cells(), 500, 8700)
    # unbounded work: a time budget, a cache time budget, an exact optimizer, a cache file
    seconds = learn_cells(DataRef(name="nltcs"), CacheSpec(scores_per_variable=50),
                          SearchSpec(algorithm="asobs-ent", budget={"seconds": 0.1}), 2)
    assert not fits_threads(seconds, 16, 10)
    assert not fits_threads(cells(seconds_per_variable=0.01), 16, 10)
    assert not fits_threads(cells(algorithm="dp"), 16, 10)
    given = learn_cells(None, CacheSpec(path="c.jkl"), _search("asobs-ent", 20), 2)
    assert not fits_threads(given, 16, 10)


def test_sem_records_are_twins_by_their_missing_rate_and_budget_scale():
    """A SEM record's twin key reads its rate and budget scale from its ``sem`` column
    (the committed records hold them in their older ``extra``), as the cell stored in
    its ``spec`` has them; the full grid's cells replay their reduced twins."""
    records = read_records(ROOT / "workflows" / "results" / "sem-imputation-2018-reduced"
                           / "records.parquet")
    rows = records.table.to_pylist()
    for r in rows:
        sem = json.loads(r["spec"])["sem"]
        assert record_twin_key(r)[5:] == (sem["missing_rate"], sem.get("budget_scale", 1.0))
    assert {record_twin_key(r)[6] for r in rows} == {0.5, 1.0, 2.0}
    cells = expand_grid(load_grid(ROOT / "configs" / "grids" / "sem-imputation-2018.yaml"))
    twins = {record_twin_key(r) for r in rows}
    found = [c for c in cells if cell_twin_key(c) in twins][:30]
    assert found
    model = replay_model(found, records)
    assert {model.sources[c.key] for c in found} == {"scaled"}
