"""The grid runner on a real (local, multi-process) Dask cluster: results equal serial
runs, reruns skip finished cells, failures are recorded apart; the CLI."""

from __future__ import annotations

import itertools
import json
import re
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from bnsl_dist.cache.jkl import write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.cli import main
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import load_data, run_cell
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.results.store import ResultStore
from bnsl_dist.scores.local import LocalScorer

pytestmark = pytest.mark.dask

ALGORITHMS = [{"name": "kg", "k": [2]}, {"name": "kmax", "k": [2]}, {"name": "asobs-ent"}]


def write_nltcs_caches(folder: Path, splits=("valid", "test")) -> str:
    """Exhaustive in-degree-2 BIC caches of bundled nltcs; returns the path template."""
    for split in splits:
        data = load_data(DataRef(name="nltcs", split=split))
        sc = LocalScorer(data, "bic")
        n = data.n_vars
        lists = [[(ps, sc.score(v, ps)) for r in range(3)
                  for ps in itertools.combinations([u for u in range(n) if u != v], r)]
                 for v in range(n)]
        write_jkl(ParentSetCache.from_lists(lists, names=data.names).prune_dominated(),
                  folder / f"nltcs-{split}.jkl.gz")
    return str(folder / "nltcs-{split}.jkl.gz")


def small_grid(template: str, *, name: str = "tiny", iterations: int = 40,
               algorithms=None, seeds=(0, 1), splits=("valid", "test")) -> GridConfig:
    return GridConfig.model_validate({
        "name": name, "seed": 3,
        "datasets": [{"name": "nltcs", "splits": list(splits)}],
        "cache": {"method": "sequential", "max_indegree": 2, "path": template},
        "algorithms": algorithms or ALGORITHMS, "seeds": list(seeds),
        "budget": {"iterations": iterations, "seconds": 120,
                   "iteration_checkpoints": [10, iterations]},
        "comparisons": [{"a": "kmax", "b": "kg", "columns": ["k"]}]
        if algorithms is None else []})


def comparable(rec) -> tuple:
    """What an iteration budget makes reproducible: the best DAG and its score. (The
    intermediate incumbents of the k-tree learners depend on their time-sized batches.)"""
    return (rec.key, rec.best_score, rec.dag_json, rec.iteration_checkpoint_scores[-1])


@pytest.fixture(scope="module")
def caches(tmp_path_factory):
    return write_nltcs_caches(tmp_path_factory.mktemp("caches"))


@pytest.fixture(scope="module")
def client():
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=2, announce=False, memory_limit=None) as c:
        yield c


def test_grid_equals_serial_and_resumes(client, caches, tmp_path):
    from bnsl_dist.orchestrate.grid import run_grid

    grid = small_grid(caches)
    cells = expand_grid(grid)
    summary = run_grid(client, grid, tmp_path, progress=False)
    assert summary.skipped == 0 and not summary.failed
    assert sorted(summary.computed) == sorted(c.key for c in cells)
    store = ResultStore(tmp_path)
    got = {r.key: comparable(r) for r in store.read_results()}
    serial = {c.key: comparable(run_cell(c)) for c in cells}
    assert got == serial
    assert (tmp_path / "grids" / "tiny.json").is_file()
    assert summary.report is not None and summary.report.stat().st_size > 0
    # utilisation: the cells' compute time over wall × workers, stored beside the results
    assert summary.workers == 2 and summary.busy_seconds is not None
    assert summary.busy_seconds >= sum(r.elapsed for r in store.read_results())
    assert 0 < summary.utilisation <= 1
    (run,) = (tmp_path / "reports").glob("grid-run-tiny-*.json")
    assert json.loads(run.read_text()) | {"finished_at": None} == \
        summary.to_dict() | {"finished_at": None}
    again = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert again.skipped == len(cells) and again.computed == [] and again.failed == []


def test_failures_are_recorded_apart(client, caches, tmp_path):
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.pipeline.grid import grid_status

    grid = small_grid(caches, name="bad", seeds=(0,), splits=("test",),
                      algorithms=[{"name": "dp", "params": {"max_vars": 4}},
                                  {"name": "kg", "label": "kg-ok", "k": [2]}])
    summary = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert len(summary.failed) == 1 and len(summary.computed) == 1
    store = ResultStore(tmp_path)
    (fail,) = store.read_failures()
    assert fail.status == "error" and "exceed the limit of 4" in fail.error
    assert "InvalidConfigError" in fail.traceback and fail.label == "dp"
    assert fail.extra["provenance"]["version"] and fail.extra["spec"]["search"]["algorithm"] \
        == "dp"
    assert [r.label for r in store.read_results()] == ["kg-ok"]
    st = grid_status(grid, tmp_path)
    assert st.counts() == {"done": 1, "failed": 1, "pending": 0, "total": 2}


def test_cli_dry_run_status_run_and_tables(client, caches, tmp_path):
    grid = small_grid(caches, name="cli", seeds=(0,), splits=("test",))
    gfile = tmp_path / "grid.yaml"
    gfile.write_text(json.dumps(grid.model_dump(mode="json")))  # JSON is YAML
    res_dir = tmp_path / "res"
    r = CliRunner().invoke(main, ["grid", "run", str(gfile), "--results", str(res_dir),
                                  "--dry-run", "--workers", "3"])
    assert r.exit_code == 0, r.output
    assert "3 cells" in r.output and "to run: 3" in r.output and "3 workers" in r.output
    r = CliRunner().invoke(main, ["grid", "status", str(gfile), "--results", str(res_dir)])
    assert r.exit_code == 0 and "0 done, 0 failed, 3 pending" in r.output
    addr = client.scheduler.address
    r = CliRunner().invoke(main, ["grid", "run", str(gfile), "--results", str(res_dir),
                                  "--scheduler", addr, "--no-progress", "--no-report"])
    assert r.exit_code == 0, r.output
    assert "3 computed" in r.output
    assert re.search(r"on 2 workers; utilisation (0\.\d\d|1\.00)\)", r.output), r.output
    (run,) = (res_dir / "reports").glob("grid-run-cli-*.json")
    assert 0 < json.loads(run.read_text())["utilisation"] <= 1
    r = CliRunner().invoke(main, ["grid", "status", str(gfile), "--results", str(res_dir),
                                  "--json"])
    assert json.loads(r.output)["done"] == 3
    r = CliRunner().invoke(main, ["tables", str(res_dir)])
    assert r.exit_code == 0, r.output
    md = (res_dir / "tables" / "tables.md").read_text()
    assert "kmax" in md and "k=2" in md
    assert (res_dir / "tables" / "cli__kmax_vs_kg.hist.png").is_file()
    assert (res_dir / "tables" / "cli__kmax_vs_kg.curve.png").is_file()


def test_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "g.yaml"
    bad.write_text("name: x\nbogus: 1\n")
    r = CliRunner().invoke(main, ["grid", "run", str(bad), "--results", str(tmp_path)])
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "g.yaml" in r.output
    r = CliRunner().invoke(main, ["grid", "run", str(bad), "--results", str(tmp_path),
                                  "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert r.exit_code == 2 and "at most one" in r.output
    (tmp_path / "empty").mkdir()
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "empty")])
    assert r.exit_code == 2 and "no results" in r.output


def test_builds_each_cache_once(client, tmp_path):
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.pipeline.forecast import plan_grid

    grid = GridConfig.model_validate({
        "name": "built", "datasets": [{"name": "nltcs", "splits": ["valid", "test"]}],
        "cache": {"method": "independence", "scores_per_variable": 30},
        "algorithms": [{"name": "kg", "k": [2, 3]}], "seeds": [0, 1],
        "budget": {"iterations": 20}})
    assert len(plan_grid(grid, tmp_path).caches_to_build) == 2
    summary = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert len(summary.computed) == 8 and not summary.failed
    files = sorted((tmp_path / "caches").glob("*.jkl.gz"))
    assert len(files) == 2
    assert len({r.cache_key for r in ResultStore(tmp_path).read_results()}) == 2
    assert plan_grid(grid, tmp_path).caches_to_build == ()


def test_a_grid_run_in_this_process_stores_what_two_workers_store(client, tmp_path):
    """``run_grid`` without a client (the executor's serial route into a store) and on two
    workers: the same cache files (timings aside), the same records and the same failure
    records; a rerun of either skips every stored cell."""
    from bnsl_dist.orchestrate.grid import run_grid

    grid = GridConfig.model_validate({
        "name": "twice", "seed": 5,
        "datasets": [{"name": "nltcs", "splits": ["valid", "test"]}],
        "cache": {"method": "independence", "scores_per_variable": 30},
        "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs"},
                       {"name": "dp", "params": {"max_vars": 4}}],
        "seeds": [0, 1], "budget": {"iterations": 20, "iteration_checkpoints": [10, 20]}})
    stored = {}
    for name, c in (("serial", None), ("dask", client)):
        summary = run_grid(c, grid, tmp_path / name, progress=False, report=False)
        assert len(summary.computed) == 8 and len(summary.failed) == 4
        store = ResultStore(tmp_path / name)
        stored[name] = (
            sorted(comparable(r) for r in store.read_results()),
            sorted((f.key, f.status, f.error) for f in store.read_failures()),
            {f.name: _without_timings(f) for f in store.caches_dir.glob("*.jkl.gz")})
        again = run_grid(c, grid, tmp_path / name, progress=False, report=False)
        # stored cells skipped, failed ones tried again (a rerun retries failures)
        assert again.skipped == 8 and again.computed == [] and len(again.failed) == 4
    assert len(stored["serial"][2]) == 2
    assert stored["serial"] == stored["dask"]


def test_qds_grid_cells_are_ok_and_equal_qds_learn(client, tmp_path):
    """Screening is a stage: every cell of a small qds grid (any optimizer after the
    screen) runs through the grid runner, and each lifted DAG is the one qds_learn
    finds with the same cache settings, stream and budget."""
    from bnsl_dist.cache import build_cache
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.search import Budget
    from bnsl_dist.search.qds import qds_learn

    grid = GridConfig.model_validate({
        "name": "qds-tiny", "seed": 5, "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "sequential", "score": "bdeu", "max_indegree": 2,
                  "scores_per_variable": 80},
        "algorithms": [{"name": "hc-tabu", "label": "sota"},
                       {"name": "hc-tabu", "label": "qds-x0.5",
                        "screening": {"root_fraction": 0.5}},
                       {"name": "asobs", "label": "qds-eps", "screening": {"epsilon": 0.05}},
                       {"name": "kmax", "k": [2], "label": "qds-kmax",
                        "screening": {"root_fraction": 0.5}}],
        "seeds": [0], "budget": {"iterations": 8}})
    summary = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert not summary.failed and len(summary.computed) == 4
    recs = {r.label: r for r in ResultStore(tmp_path).read_results()}
    assert all(r.status in ("ok", "optimal") for r in recs.values())
    data = load_data(DataRef(name="nltcs", split="test"))
    scorer = LocalScorer(data, "bdeu")
    for cell in expand_grid(grid):
        rec = recs[cell.label]
        dag = json.loads(rec.dag_json)
        pos = {n: i for i, n in enumerate(data.names)}
        parents = [sorted(pos[p] for p in dag["parents"][n]) for n in data.names]
        assert rec.best_score == pytest.approx(
            sum(scorer.score(v, ps) for v, ps in enumerate(parents)), rel=1e-9)
        if cell.screening is None:
            continue
        ref = qds_learn(data, Budget(max_iterations=8), cell.rng(),
                        cache_builder=lambda d: build_cache(d, grid.cache),
                        inner=cell.algorithm, inner_params=dict(cell.search.params),
                        k=cell.k, epsilon=cell.screening.epsilon,
                        root_fraction=cell.screening.root_fraction, score="bdeu")
        assert [list(p) for p in ref.dag.parents] == parents
        assert rec.best_score == pytest.approx(ref.score, rel=1e-12)
        assert rec.outputs["screening"]["n_roots"] == len(ref.roots)


def test_shipped_qds_grid_runs_every_cell(client, tmp_path, shared_data):
    """configs/grids/qds-2018.yaml, shrunk to one seed and small budgets, runs through
    the grid runner with every cell ok."""
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.pipeline.config import load_grid

    full = load_grid(Path(__file__).resolve().parents[2] / "configs/grids/qds-2018.yaml")
    grid = full.model_copy(update={
        "seeds": (0,), "budget": full.budget.model_copy(update={
            "seconds": 30.0, "iterations": 2, "checkpoints": (1.0,)}),
        "cache": full.cache.model_copy(update={"seconds_per_variable": None,
                                               "scores_per_variable": 20,
                                               "max_indegree": 1})})
    summary = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert not summary.failed and len(summary.computed) == len(full.algorithms)


def test_long_cells_start_first(caches, tmp_path):
    """On one worker the cells start in decreasing cost order (budget x variables),
    whatever their order in the grid."""
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.pipeline.cost import cell_cost

    grid = small_grid(caches, name="order", seeds=(0, 1), splits=("test",),
                      algorithms=[{"name": "kg", "k": [2], "budget": {"iterations": 20}},
                                  {"name": "kg", "label": "kg-long", "k": [2],
                                   "budget": {"iterations": 300}},
                                  {"name": "kg", "label": "kg-mid", "k": [2],
                                   "budget": {"iterations": 100}}])
    cells = {f"cell-{c.key}": c for c in expand_grid(grid)}
    with connect(workers=1, announce=False, dashboard=False) as client:
        summary = run_grid(client, grid, tmp_path, progress=False, report=False)
        stream = client.get_task_stream()
    assert len(summary.computed) == 6
    starts = sorted((min(s["start"] for s in r["startstops"] if s["action"] == "compute"),
                     r["key"]) for r in stream if r["key"] in cells)
    labels = [cells[k].label for _, k in starts]
    assert labels == ["kg-long", "kg-long", "kg-mid", "kg-mid", "kg", "kg"]
    costs = [cell_cost(cells[k]) for _, k in starts]
    assert costs == sorted(costs, reverse=True)


def test_a_sem_tuning_study_orders_its_cells_by_budget_scale():
    """The SEM grid's cells share one time cap; their M-step budgets, and so their
    times, scale with the budget scale: the x2 cells of a data set cost the most."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.cost import cell_cost

    grid = load_grid(Path(__file__).resolve().parents[2] / "configs" / "grids"
                     / "sem-imputation-2018-reduced.yaml")
    cells = [c for c in expand_grid(grid) if c.dataset == "ad" and c.seed == 0
             and c.sem.missing_rate == 0.2]
    by_scale = sorted(cells, key=cell_cost)
    assert [c.sem.budget_scale for c in by_scale] == [0.5, 1.0, 2.0]
    assert cell_cost(by_scale[2]) == pytest.approx(4 * cell_cost(by_scale[0]))


def test_a_sem_grid_plan_bounds_its_cells_by_their_m_step_budgets(tmp_path):
    """--dry-run's time budgets for a SEM grid: per cell the EM iteration cap times one
    M-step's cache (seconds per variable x scale x variables) and k-MAX (the same, capped
    by the cell's budget, which also bounds k-MAX's data-scaled iterations), here
    recomputed from the grid file's numbers; a data-scaled cache (a count of scores, not
    seconds) gives no bound."""
    import yaml

    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.forecast import format_plan, plan_grid

    path = Path(__file__).resolve().parents[2] / "configs/grids/sem-imputation-2018-reduced.yaml"
    raw = yaml.safe_load(path.read_text())
    grid = load_grid(path)
    plan = plan_grid(grid, tmp_path, {"ad"})
    n, sem = 1556, raw["sem"]  # ad's variables (the registry's)
    want = 0.0
    for c in plan.pending:
        m_step = raw["cache"]["seconds_per_variable"] * n * c.sem.budget_scale
        search = min(sem["search_seconds_per_variable"] * n * c.sem.budget_scale,
                     raw["budget"]["seconds"])
        want += sem["max_em_iterations"] * (m_step + search)
    assert len(plan.pending) == 60 and plan.search_seconds == pytest.approx(want)
    text = format_plan(plan, 2)
    assert "M-step time budgets x the EM iteration cap" in text and "at most" in text
    # k-MAX by its data-scaled iterations: the cell's seconds cap still bounds it
    capped = grid.model_copy(update={"sem": grid.sem.model_copy(
        update={"search_seconds_per_variable": None})})
    want = sum(sem["max_em_iterations"] * (raw["cache"]["seconds_per_variable"] * n
                                           * c.sem.budget_scale + raw["budget"]["seconds"])
               for c in plan.pending)
    assert plan_grid(capped, tmp_path, {"ad"}).search_seconds == pytest.approx(want)
    # the cache by its data-scaled count of scores: no bound in seconds
    counts = grid.model_copy(update={"sem": grid.sem.model_copy(
        update={"cache_budget": "data"})})
    assert plan_grid(counts, tmp_path, {"ad"}).search_seconds is None


# ------------------------------------------------------------- caches fanned out per variable
FANNED = {"name": "fan", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["test"]}],
          "cache": {"method": "independence", "scores_per_variable": 40, "max_indegree": 3},
          "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs-ent"}], "seeds": [0],
          "budget": {"iterations": 10}}


def _without_timings(path: Path) -> tuple[dict, list[str]]:
    """A cache file's metadata less its timings, and every other line as written."""
    import gzip

    from bnsl_dist.cache.jkl import META_TAG

    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    (meta_line,) = [ln for ln in lines if ln.startswith(META_TAG)]
    meta = json.loads(meta_line[len(META_TAG):])
    assert meta["meta"].pop("build_seconds") > 0
    assert len(meta["meta"]["stats"].pop("seconds")) == 16
    return meta, [ln for ln in lines if ln is not meta_line]


def test_fanned_out_cache_file_equals_the_one_task_build(client, tmp_path):
    """A cache forced through the per-variable fan-out (threshold 0) is written as the
    one-task build (ensure_cache, run here as the oracle) writes it, timings aside:
    batched for one worker or for two, and inside a grid run whose cells then equal
    those of a grid run on the one-task build."""
    from bnsl_dist.orchestrate.explore import submit_cache_build
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.pipeline.run import ensure_cache

    grid = GridConfig.model_validate(FANNED)
    job = expand_grid(grid)[0].cache_job
    oracle = _without_timings(Path(ensure_cache(job, str(tmp_path / "one.jkl.gz"))))
    for w in (1, 2):
        fut = submit_cache_build(client, job, str(tmp_path / f"fan{w}.jkl.gz"), 16, w,
                                 priority=0, store_priority=1)
        assert _without_timings(Path(fut.result())) == oracle
    runs = {}
    for name, threshold in (("fanned", 0.0), ("one-task", float("inf"))):
        since = time.time()
        summary = run_grid(client, grid, tmp_path / name, progress=False, report=False,
                           fan_out_seconds=threshold)
        assert len(summary.computed) == 2 and not summary.failed
        # the stream's own start filter bisects a buffer that two workers fill out of
        # order, so it can hand back the fan-out batches of the run before: filter here
        keys = {str(r["key"]) for r in client.get_task_stream(start=since)
                if min(ss["start"] for ss in r["startstops"]) >= since}
        assert any(k.startswith("cache-part-") for k in keys) == (name == "fanned")
        (f,) = (tmp_path / name / "caches").glob("*.jkl.gz")
        assert _without_timings(f) == oracle
        runs[name] = sorted((r.key, r.best_score, r.dag_json)
                            for r in ResultStore(tmp_path / name).read_results())
    assert runs["fanned"] == runs["one-task"]


def failing_explore(job, variables):
    """A batch that fails when it holds variable 7 (run on the workers)."""
    from bnsl_dist.orchestrate.explore import explore_job

    if 7 in variables:
        raise RuntimeError("batch with variable 7 broke")
    return explore_job(job, variables)


def test_a_failed_batch_fails_its_cache_and_every_cell(client, tmp_path):
    """One failing batch of a fanned-out cache: no cache file, a failure record naming
    the batch's error for each cell of that cache, no result."""
    from bnsl_dist.orchestrate.grid import run_cells

    grid = GridConfig.model_validate(FANNED)
    cells = expand_grid(grid)
    store = ResultStore(tmp_path)
    summary = run_cells(client, cells, store, fan_out_seconds=0.0, explore=failing_explore,
                        cache_path=lambda c: str(store.cache_path(c.cache_job.key)))
    assert sorted(summary.failed) == sorted(c.key for c in cells) and not summary.computed
    fails = store.read_failures()
    assert len(fails) == 2 and all(f.status == "error" for f in fails)
    assert all("batch with variable 7 broke" in f.error for f in fails)
    assert store.read_results() == [] and not list(store.caches_dir.glob("*"))


def test_workers_that_join_late_are_waited_for(caches, tmp_path, monkeypatch):
    """A batch cluster (SLURM, PBS, Kubernetes: ``open_client`` does not wait for its
    workers) may have none while its jobs queue. The no-worker timeout counts only once
    a worker has been seen: a worker that joins after it ran the grid to the end (it
    gave up with GridInterrupted "no worker left" before any worker had come)."""
    from distributed import Client, LocalCluster

    import bnsl_dist.orchestrate.cells as C
    import bnsl_dist.orchestrate.grid as G

    grid = small_grid(caches, name="late", seeds=(0,), splits=("test",),
                      algorithms=[{"name": "kg", "k": [2]}])
    checks: list[int | None] = []
    real = C.connected_workers
    with LocalCluster(n_workers=0, processes=False, threads_per_worker=1,
                      dashboard_address=None) as cluster, Client(cluster) as client:

        def connected(c):
            n = real(c)
            checks.append(n)
            if checks.count(0) == 4:  # workerless for 3 checks of the drain, 1 s apart
                cluster.scale(1)
                client.wait_for_workers(1)
            return n

        monkeypatch.setattr(C, "connected_workers", connected)  # the drain's
        summary = G.run_grid(client, grid, tmp_path, progress=False, report=False,
                             no_worker_timeout=0.01)
    assert checks[:4] == [0, 0, 0, 0]
    (cell,) = expand_grid(grid)
    assert summary.computed == [cell.key] and not summary.failed
    assert comparable(ResultStore(tmp_path).read_results()[0]) == comparable(run_cell(cell))


def dies_on_seed_1(cell, cache):
    """run_cell, but the cell of seed 1 kills its worker process (as an out-of-memory
    kill or a crash in native code would), every time it runs."""
    import os
    import time

    if cell.seed == 1:
        time.sleep(3.0)  # what ran before on this worker is gathered meanwhile
        os._exit(1)
    return run_cell(cell, cache)


def test_a_cell_that_kills_its_worker_is_a_killed_failure(caches, tmp_path):
    """A cell whose worker died under it as often as the scheduler allows (KilledWorker)
    is a failure record of status 'killed' (retried by a rerun like any failure); the
    other cells are stored and the run ends normally. (It was 'interrupted': the run
    raised GridInterrupted 'rerun to resume', and every rerun ran it into the same
    deaths, so the grid never completed and no 'killed' record was ever written.)"""
    import dask

    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.grid import run_cells

    grid = small_grid(caches, name="killer", seeds=(0, 1), splits=("test",),
                      algorithms=[{"name": "kg", "k": [2]}])
    good, bad = expand_grid(grid)
    store = ResultStore(tmp_path)
    # the good cell first (cost: seed 0 highest); the bad one dies a while after it
    # starts, so that the good result has left the worker by then
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            connect(workers=1, announce=False, dashboard=False) as client:
        summary = run_cells(client, [good, bad], store, cache_path=lambda c: None,
                            run=dies_on_seed_1, cost=lambda c: -c.seed)
    assert summary.computed == [good.key] and summary.failed == [bad.key], summary
    assert not summary.interrupted and "KilledWorker" in summary.errors[bad.key]
    (fail,) = store.read_failures()
    assert fail.key == bad.key and fail.status == "killed" and "KilledWorker" in fail.error
    assert comparable(store.read_results()[0]) == comparable(run_cell(good))


def test_a_cache_of_exact_scores_is_sized_by_its_rows(tmp_path):
    """A cache's estimated work grows with the rows of its split, as the registry's own
    file lists them (read here with yaml, not through the catalog): at 3,000 exact scores
    per variable, msnbc's train split (17 variables) is estimated above nltcs's (16) in
    the ratio of their variables and per-score seconds, and ordered first though their
    cells cost the same; a data file holding nltcs's train split is estimated as the
    registered split; a data file not there has no estimate and is sized by its cells."""
    from importlib import resources

    import yaml

    from bnsl_dist.pipeline.cost import (
        SCORE_SECONDS,
        SCORE_SECONDS_PER_ROW,
        cache_sizes,
        cache_work,
        cell_cost,
    )

    reg = yaml.safe_load((resources.files("bnsl_dist.datasets") / "registry"
                          / "twenty.yaml").read_text())["datasets"]
    grid = GridConfig.model_validate({
        "name": "rows", "seed": 1, "cache": {"method": "independence",
                                             "scores_per_variable": 3000},
        "datasets": [{"name": "nltcs", "splits": ["train"]},
                     {"name": "msnbc", "splits": ["train", "test"]}],
        "algorithms": [{"name": "asobs"}], "seeds": [0], "budget": {"iterations": 10}})
    cells = {(c.dataset, c.split): c for c in expand_grid(grid)}
    work = {k: cache_work(c.cache_job) for k, c in cells.items()}
    for (name, split), w in work.items():
        spec = reg[name]
        rows = spec["splits"][split]["n_rows"]
        assert w == pytest.approx(spec["n_vars"] * 3000 * (SCORE_SECONDS
                                                           + SCORE_SECONDS_PER_ROW * rows))
    assert work[("msnbc", "train")] > work[("msnbc", "test")] > work[("nltcs", "train")]
    sizes, first = cache_sizes(list(cells.values()), lambda c: "x")
    assert sorted(sizes, key=sizes.__getitem__, reverse=True)[0] \
        == cells[("msnbc", "train")].cache_job.key
    assert {first[k].dataset for k in sizes} == {"nltcs", "msnbc"}
    from bnsl_dist.data import resolve_data, write_csv

    write_csv(resolve_data("nltcs/train"), tmp_path / "nltcs.csv")
    filed = GridConfig.model_validate({**grid.model_dump(mode="json"), "datasets": [
        {"name": "copy", "path": str(tmp_path / "nltcs.csv")}]})
    (copy,) = expand_grid(filed)
    assert cache_work(copy.cache_job) == work[("nltcs", "train")]
    filed = GridConfig.model_validate({**grid.model_dump(mode="json"), "datasets": [
        {"name": "mine", "path": "elsewhere/mine.csv"}]})
    (cell,) = expand_grid(filed)
    assert cache_work(cell.cache_job) is None
    assert cache_sizes([cell], lambda c: "x")[0] == {cell.cache_job.key: cell_cost(cell)}


# ------------------------------------------------------------------ --stop-at
def test_cells_that_would_overrun_the_stop_time_do_not_start(client, caches, tmp_path):
    """A cell starts only if it would end by ``stop_at`` at its expected wall time; one
    that would not leaves no record (pending), and the others run as without."""
    from bnsl_dist.orchestrate.grid import run_cells

    grid = small_grid(caches, name="stop", seeds=(0, 1, 2), splits=("test",),
                      algorithms=[{"name": "kg", "k": [2]}])
    cells = expand_grid(grid)
    store = ResultStore(tmp_path)
    summary = run_cells(client, cells, store, cache_path=lambda c: None,
                        stop_at=time.time() + 3600,
                        expected={cells[0].key: 7200.0, cells[1].key: 60.0})
    assert summary.not_started == [cells[0].key] and not summary.failed
    assert sorted(summary.computed) == sorted(c.key for c in cells[1:])
    assert store.done_keys() == {c.key for c in cells[1:]} and store.read_failures() == []
    assert {r.key: comparable(r) for r in store.read_results()} == \
        {c.key: comparable(run_cell(c)) for c in cells[1:]}
    assert "1 not started (too late for the stop time)" in str(summary)
    assert summary.to_dict()["not_started"] == 1


@pytest.mark.parametrize("fan_out", [0.0, 1e9], ids=["batches", "one-task"])
def test_a_cache_not_started_in_time_leaves_its_cells_pending(client, tmp_path, fan_out):
    """Past the stop time a cache does not start (as one task or as batches): no file,
    no record, every cell of it not started."""
    from bnsl_dist.orchestrate.grid import run_cells

    cells = expand_grid(GridConfig.model_validate(FANNED))
    store = ResultStore(tmp_path)
    summary = run_cells(client, cells, store, fan_out_seconds=fan_out,
                        cache_path=lambda c: str(store.cache_path(c.cache_job.key)),
                        stop_at=time.time() - 1.0)
    assert sorted(summary.not_started) == sorted(c.key for c in cells)
    assert not summary.computed and not summary.failed and not summary.interrupted
    assert store.read_results() == [] and store.read_failures() == []
    assert not list(store.caches_dir.glob("*"))


def test_grid_run_stop_at_expects_the_stored_cells_wall_times(client, caches, tmp_path):
    """``grid run --stop-at``: a cell is expected to take the mean wall time of the stored
    cells like it; exit status 3 while cells are left, 0 once the rest ran."""
    import dataclasses

    one = small_grid(caches, name="walls", seeds=(0,), splits=("test",),
                     algorithms=[{"name": "kg", "k": [2]}])
    three = small_grid(caches, name="walls", seeds=(0, 1, 2), splits=("test",),
                       algorithms=[{"name": "kg", "k": [2]}])
    gfile = tmp_path / "grid.yaml"
    res = tmp_path / "res"
    args = ["grid", "run", str(gfile), "--results", str(res), "--scheduler",
            client.scheduler.address, "--no-progress", "--no-report"]
    gfile.write_text(json.dumps(one.model_dump(mode="json")))
    assert CliRunner().invoke(main, args).exit_code == 0
    store = ResultStore(res)
    (rec,) = store.read_results()
    store.write_result(dataclasses.replace(rec, wall_seconds=2 * 3600.0))  # a 2-hour cell
    gfile.write_text(json.dumps(three.model_dump(mode="json")))
    for workers, stop, fits in ((2, "3h", 2), (1, "3h", 1), (2, "1h", 0)):
        r = CliRunner().invoke(main, ["grid", "run", str(gfile), "--results", str(res),
                                      "--dry-run", "--workers", str(workers),
                                      "--stop-at", stop])
        assert r.exit_code == 0, r.output
        assert f"about {fits} of 2 cells would run on {workers} workers" in r.output
    r = CliRunner().invoke(main, [*args, "--stop-at", "1h"])
    assert r.exit_code == 3, r.output
    assert "2 not started" in r.output and "rerun the same command" in r.output
    assert "about 0 of 2 cells would run on 2 workers" in r.output  # said at the start
    assert store.done_keys() == {rec.key}
    r = CliRunner().invoke(main, [*args, "--stop-at", "3h"])
    assert r.exit_code == 0, r.output
    assert store.done_keys() == {c.key for c in expand_grid(three)}
    r = CliRunner().invoke(main, [*args, "--stop-at", "soon"])
    assert r.exit_code == 2 and "--stop-at" in r.output and "'soon'" in r.output
