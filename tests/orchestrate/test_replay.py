"""``grid run --replay``: the real scheduler path with sleeping tasks reproduces the
schedule of a known small grid (list scheduling computed here, independently), stores
records that are never results, and keeps real and replayed folders apart."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.results.store import ResultStore

pytestmark = pytest.mark.dask

#: Cell budgets (grid seconds), distinct so that no two events of the schedule tie.
DURATIONS = [10.0, 8.0, 6.0, 5.0, 4.0, 2.4, 2.0]
#: Grid seconds per variable of nltcs's cache (16 variables: 8 s of work).
PER_VARIABLE = 0.5
SPEED = 5.0


def grid(built: bool = True, durations: list[float] = DURATIONS) -> GridConfig:
    """The cells of ``durations``, on a cache to build (``built``) or given as a file
    (never read by a replay)."""
    cache = {"method": "independence", "seconds_per_variable": PER_VARIABLE} if built \
        else {"method": "independence", "path": "/nowhere/nltcs-{split}.jkl"}
    return GridConfig.model_validate({
        "name": "replayed", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": cache,
        "algorithms": [{"name": "kg", "label": f"kg{i}", "k": [2], "budget": {"seconds": d}}
                       for i, d in enumerate(durations)],
        "seeds": [0], "budget": {"seconds": 1}})


def list_schedule(durations: list[float], workers: int, start: float) -> tuple[list[list[float]], float]:
    """Longest first, each to the worker free first (the lower number on a tie): the
    cells each worker runs, in order, and the makespan."""
    free = [start] * workers
    runs: list[list[float]] = [[] for _ in range(workers)]
    for d in sorted(durations, reverse=True):
        w = min(range(workers), key=lambda i: (free[i], i))
        runs[w].append(d)
        free[w] += d
    return runs, max(free)


def replay_stream(tmp_path, g: GridConfig, workers: int = 2, threads: int = 1):
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid

    with replay_client(workers, threads) as client:
        summary = replay_grid(client, g, tmp_path, None, speed=SPEED, fan_out_seconds=0.0)
        stream = client.get_task_stream()
    assert len(summary.computed) == len(g.algorithms) and not summary.failed
    return stream, json.loads((tmp_path / "reports" / "summary.json").read_text())


def computes(stream, keys) -> dict[str, list[tuple[float, float, str]]]:
    """Worker -> (start, stop, key) of each compute of ``keys``, in start order."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for r in stream:
        if r["key"] in keys:
            for s in r["startstops"]:
                if s["action"] == "compute":
                    out.setdefault(r["worker"], []).append((s["start"], s["stop"], r["key"]))
    return {w: sorted(v) for w, v in out.items()}


def test_a_replay_reproduces_the_list_schedule_of_a_small_grid(tmp_path):
    """Two workers, seven cells on a given cache: each worker runs the cells the
    independent list schedule (longest first, to the worker free first) gives it, in
    that order, and the makespan is the list schedule's (within Dask's overhead x the
    speed); the summary's bound and utilisation are the run's."""
    g = grid(built=False)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    stream, report = replay_stream(tmp_path, g)
    expected, makespan = list_schedule(DURATIONS, 2, start=0.0)
    got = sorted([cells[k].budget_seconds for _, _, k in runs]
                 for runs in computes(stream, cells).values())
    assert got == sorted(expected)
    assert report["workers"] == 2 and report["time_scale"] == SPEED
    assert makespan <= report["makespan_s"] <= makespan + 2.0  # 0.4 s of real overhead
    assert sum(DURATIONS) <= report["busy_s"] <= sum(DURATIONS) + 1.0
    assert report["lower_bound_s"] == pytest.approx(report["busy_s"] / 2, abs=1e-3)  # both rounded to ms
    assert report["utilisation"] == pytest.approx(
        report["busy_s"] / (2 * report["makespan_s"]), abs=1e-3)
    assert report["efficiency"] == pytest.approx(
        report["lower_bound_s"] / report["makespan_s"], abs=1e-3)
    assert report["scheduler_ms_per_task"] > 0 and report["client_peak_rss_bytes"] > 0
    recs = ResultStore(tmp_path).read_results()
    assert {r.status for r in recs} == {"replayed"}
    assert all(r.best_score is None or math.isnan(r.best_score) for r in recs)  # no score
    assert sorted(r.wall_seconds for r in recs) == sorted(DURATIONS)
    assert {r.outputs["replay"]["seconds_from"] for r in recs} == {"budget"}


def test_a_replayed_cache_is_fanned_out_and_precedes_its_cells(tmp_path):
    """The cache (16 variables x 0.5 s, fanned out on two workers) runs as batches of
    its variables' seconds, the cells only after its storing task; the makespan is at
    least the cache's work shared by two plus the cells' list schedule after it, and the
    summary's bound counts the cache before the cells."""
    g = grid(built=True)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    stream, report = replay_stream(tmp_path, g)
    parts = {str(r["key"]) for r in stream if str(r["key"]).startswith("cache-part-")}
    batches = [b - a for runs in computes(stream, parts).values() for a, b, _ in runs]
    assert sum(batches) * SPEED == pytest.approx(16 * PER_VARIABLE, rel=0.1)
    last_batch = max(b for runs in computes(stream, parts).values() for _, b, _ in runs)
    first_cell = min(a for runs in computes(stream, cells).values() for a, _, _ in runs)
    assert first_cell >= last_batch
    cache_done = 16 * PER_VARIABLE / 2
    assert report["makespan_s"] >= cache_done + list_schedule(DURATIONS, 2, 0.0)[1] - 0.5
    assert report["lower_bound_s"] >= cache_done + min(DURATIONS) - 0.5


@pytest.mark.parametrize(("workers", "threads"), [(2, 1), (1, 2)])
def test_cells_of_a_cache_run_as_the_list_schedule_after_it(tmp_path, workers, threads):
    """Four cells (10, 8, 6, 5 s) waiting on a fanned-out cache, two worker threads (two
    workers, or one of two threads): once the cache is stored, each free thread takes
    the longest cell left (the independent list schedule: 10 then 5, 8 then 6; 15 s),
    and the cache's 8 s of batches are spread over both threads (its batches sized for
    two threads, not for one worker). Given to workers as soon as they were ready (too
    few to be queued by Dask's own rule), the cells spanned 15.9 s; and one worker of two
    threads built the cache as one task."""
    durations = [10.0, 8.0, 6.0, 5.0]
    g = grid(built=True, durations=durations)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    stream, report = replay_stream(tmp_path, g, workers, threads)
    parts = {str(r["key"]) for r in stream if str(r["key"]).startswith("cache-part-")}
    assert len(parts) > 2  # guided batches for two threads
    runs = [sorted(r["startstops"][0]["start"] for r in stream if str(r["key"]) in parts)]
    assert runs[0][1] - runs[0][0] < 0.5 / SPEED  # two batches at once
    order = sorted(([cells[k].budget_seconds for _, _, k in rs]
                    for rs in computes(stream, cells).values()), key=lambda o: -o[0])
    if threads > 1:  # one worker: its two threads' cells interleave in one list
        order = [sorted(order[0], reverse=True)]
        assert order == [[10.0, 8.0, 6.0, 5.0]]
    else:
        expected, makespan = list_schedule(durations, 2, start=0.0)
        assert order == expected == [[10.0, 5.0], [8.0, 6.0]]
    cells_span = max(b for rs in computes(stream, cells).values() for _, b, _ in rs) \
        - min(a for rs in computes(stream, cells).values() for a, _, _ in rs)
    assert 15.0 - 0.2 <= cells_span * SPEED <= 15.0 + 0.6  # the workers' clocks differ


def test_a_replayed_folder_resumes_and_refuses_a_real_run(tmp_path):
    """A second replay into the same folder finds every cell stored; a real run refuses
    the folder, and a replay refuses a folder of real results (one line, exit 2)."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid

    g = grid()
    (tmp_path / "grid.yaml").write_text(json.dumps(g.model_dump(mode="json")))
    with replay_client(2) as client:
        replay_grid(client, g, tmp_path / "r", None, speed=100.0)
        again = replay_grid(client, g, tmp_path / "r", None, speed=100.0)
    assert again.skipped == len(DURATIONS) and not again.computed
    res = CliRunner().invoke(main, ["grid", "run", str(tmp_path / "grid.yaml"), "--results",
                                    str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == 2 and "holds a replay" in res.output
    real = tmp_path / "real"
    (real / "results").mkdir(parents=True)
    (real / "results" / "x.parquet").write_bytes(b"")
    records = tmp_path / "none.parquet"
    from bnsl_dist.results.export import export_records

    export_records(tmp_path / "r", records)
    res = CliRunner().invoke(main, ["grid", "run", str(tmp_path / "grid.yaml"), "--results",
                                    str(real), "--replay", str(records), "--workers", "2"])
    assert res.exit_code == 2 and "holds real results" in res.output
