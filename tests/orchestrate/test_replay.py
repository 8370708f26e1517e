"""``grid run --replay``: the real scheduler path with sleeping tasks reproduces the
schedule of a known small grid (list scheduling computed here, independently), stores
records that are never results, and keeps real and replayed folders apart."""

from __future__ import annotations

import json
import math
import time

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


def list_schedule(durations: list[float], workers: int, start: float
                  ) -> tuple[list[list[float]], float, dict[float, tuple[float, float]]]:
    """Longest first, each to the worker free first (the lower number on a tie): the
    cells each worker runs, in order, the makespan, and each duration's (start, end)
    (the durations distinct)."""
    free = [start] * workers
    runs: list[list[float]] = [[] for _ in range(workers)]
    when: dict[float, tuple[float, float]] = {}
    for d in sorted(durations, reverse=True):
        w = min(range(workers), key=lambda i: (free[i], i))
        runs[w].append(d)
        when[d] = (free[w], free[w] + d)
        free[w] += d
    return runs, max(free), when


def replay(tmp_path, g: GridConfig, workers: int = 2, threads: int = 1, **kw):
    """Replay ``g`` (every cache fanned out), on the simulated clock unless ``speed``
    is given: the summary, reports/summary.json, and the task stream."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid

    kw = kw or {"virtual_clock": True}
    with replay_client(workers, threads) as client:
        summary = replay_grid(client, g, tmp_path, None, fan_out_seconds=0.0, **kw)
        stream = client.get_task_stream()
    assert len(summary.computed) == len(g.algorithms) and not summary.failed
    return summary, json.loads((tmp_path / "reports" / "summary.json").read_text()), stream


def computes(stream, keys) -> dict[str, list[tuple[float, float, str]]]:
    """Worker -> (start, stop, key) of each compute of ``keys``, in start order."""
    out: dict[str, list[tuple[float, float, str]]] = {}
    for r in stream:
        if r["key"] in keys:
            for s in r["startstops"]:
                if s["action"] == "compute":
                    out.setdefault(r["worker"], []).append((s["start"], s["stop"], r["key"]))
    return {w: sorted(v) for w, v in out.items()}


def cell_times(summary, cells) -> dict[float, tuple[float, float]]:
    """Each cell's budget -> its (start, end) on the simulated clock (to 1e-9 s)."""
    out = {}
    for key, c in cells.items():
        ((a, b),) = summary.spans[key]
        out[c.budget_seconds] = (round(a, 9), round(b, 9))
    return out


def rounded(when: dict[float, tuple[float, float]]) -> dict[float, tuple[float, float]]:
    return {d: (round(a, 9), round(b, 9)) for d, (a, b) in when.items()}


def test_a_replay_on_a_simulated_clock_reproduces_the_list_schedule_of_a_small_grid(tmp_path):
    """Two workers, seven cells on a given cache, on the simulated clock: each cell
    starts and ends exactly when the independent list schedule (longest first, to the
    worker free first) starts and ends it, whatever the machine's load — the same in a
    second replay; each worker runs the list schedule's cells in its order; the
    summary's makespan is the list schedule's (19.4 s), and its bound, utilisation and
    efficiency follow from the cells' seconds."""
    g = grid(built=False)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    runs, makespan, when = list_schedule(DURATIONS, 2, start=0.0)
    assert makespan == pytest.approx(19.4)
    for folder in ("a", "b"):
        summary, report, stream = replay(tmp_path / folder, g)
        assert cell_times(summary, cells) == rounded(when)
        got = sorted([cells[k].budget_seconds for _, _, k in rs]  # on the workers' clocks
                     for rs in computes(stream, cells).values())
        assert got == sorted(runs)
        assert report["workers"] == 2 and report["time_scale"] == 1.0
        assert report["makespan_s"] == pytest.approx(makespan)
        assert report["busy_s"] == pytest.approx(sum(DURATIONS))
        assert report["lower_bound_s"] == pytest.approx(sum(DURATIONS) / 2)
        assert report["utilisation"] == pytest.approx(sum(DURATIONS) / (2 * makespan), abs=1e-4)
        assert report["efficiency"] == pytest.approx(sum(DURATIONS) / 2 / makespan, abs=1e-4)
        assert report["scheduler_ms_per_task"] > 0 and report["client_peak_rss_bytes"] > 0
        assert report["planning_s"] >= 0
    recs = ResultStore(tmp_path / "a").read_results()
    assert {r.status for r in recs} == {"replayed"}
    assert all(r.best_score is None or math.isnan(r.best_score) for r in recs)  # no score
    assert sorted(r.wall_seconds for r in recs) == sorted(DURATIONS)
    assert {r.outputs["replay"]["seconds_from"] for r in recs} == {"budget"}


def test_a_window_of_cells_in_flight_keeps_the_list_schedule(tmp_path, monkeypatch):
    """With at most two cells in flight on two workers (the window, here as small as
    the cluster), the client sends the seven cells two first, then one per outcome, in
    priority order, and the simulated schedule is still exactly the list schedule. (The
    clock waits for the scheduler to take in every cell sent: when it trusted the
    client's word, the last cell, sent as the 2.4 s one ended at 17.4 s, started at
    18.0 s in about one run of three.)"""
    from distributed import Client

    import bnsl_dist.orchestrate.cells as cells_mod

    monkeypatch.setattr(cells_mod, "MIN_WINDOW", 2)
    monkeypatch.setattr(cells_mod, "WINDOW_PER_SLOT", 1)
    sent: list[int] = []
    compute = Client.compute

    def counted(self, tasks, **kw):
        sent.append(len(tasks))
        return compute(self, tasks, **kw)

    monkeypatch.setattr(Client, "compute", counted)
    g = grid(built=False)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    summary, report, _ = replay(tmp_path, g)
    assert sent == [2, 1, 1, 1, 1, 1]
    _, makespan, when = list_schedule(DURATIONS, 2, start=0.0)
    assert cell_times(summary, cells) == rounded(when)
    assert report["makespan_s"] == pytest.approx(makespan)


def test_a_replay_in_real_time_keeps_the_list_schedule_on_the_workers_clocks(tmp_path):
    """The same grid replayed in real time at speed 5: each worker runs the list
    schedule's cells in its order (distinct enough to survive a loaded machine), the
    summary reads in grid seconds (x 5) and never beats the list schedule."""
    g = grid(built=False)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    _, report, stream = replay(tmp_path, g, speed=SPEED)
    runs, makespan, _ = list_schedule(DURATIONS, 2, start=0.0)
    got = sorted([cells[k].budget_seconds for _, _, k in rs]
                 for rs in computes(stream, cells).values())
    assert got == sorted(runs)
    assert report["time_scale"] == SPEED
    assert report["makespan_s"] >= makespan and report["busy_s"] >= sum(DURATIONS)


def test_the_makespan_runs_from_the_first_task_submitted(tmp_path):
    """Planning (here a cost model taking 0.3 s a cell, so seconds before the first
    submission) is reported apart, in the summary's ``planning_seconds``, and not in
    its makespan (``cells_seconds``): before, the makespan's clock started before
    planning."""
    from functools import partial

    from bnsl_dist.orchestrate.cells import run_cells
    from bnsl_dist.orchestrate.replay import (
        ReplayRun,
        _run_cell,
        registered,
        replay_client,
    )
    from bnsl_dist.pipeline.plan import replay_model

    def slow_cost(cell):
        time.sleep(0.3)
        return cell.budget_seconds

    cells = expand_grid(grid(built=False, durations=[0.01, 0.02]))
    run = ReplayRun(replay_model(cells), 1.0, "")
    with registered(run) as token, replay_client(2, 1) as client:
        summary = run_cells(client, cells, ResultStore(tmp_path), cache_path=lambda c: None,
                            run=partial(_run_cell, token), cost=slow_cost)
    assert len(summary.computed) == 2
    assert summary.planning_seconds >= 0.6
    assert summary.cells_seconds < summary.planning_seconds
    assert summary.seconds >= summary.planning_seconds + summary.cells_seconds - 1e-6


def test_a_replayed_cache_is_fanned_out_and_precedes_its_cells(tmp_path):
    """The cache (16 variables x 0.5 s, fanned out on two workers as guided batches:
    four of 2 variables, eight of 1) runs on the simulated clock as the list schedule
    of its batches (largest first: done at 4 s), its storing task at that instant, then
    the cells as their list schedule from there; the summary's bound counts the cache
    before the cells."""
    from bnsl_dist.pipeline.cost import guided_batches

    g = grid(built=True)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    summary, report, _ = replay(tmp_path, g)
    sizes = [len(b) for b in guided_batches(range(16), 2)]
    parts = {k: ss for k, ss in summary.spans.items() if k.startswith("cache-part-")}
    assert sorted(b - a for ((a, b),) in parts.values()) == \
        pytest.approx(sorted(n * PER_VARIABLE for n in sizes))
    # the batches' seconds, distinct only by size: their list schedule's end
    free = [0.0, 0.0]
    for d in sorted((n * PER_VARIABLE for n in sizes), reverse=True):
        free[free.index(min(free))] += d
    cache_done = max(free)
    assert cache_done == pytest.approx(16 * PER_VARIABLE / 2)
    assert max(b for ((_, b),) in parts.values()) == pytest.approx(cache_done)
    (store_key,) = [k for k in summary.spans if k.startswith("cache-") and k not in parts]
    assert summary.spans[store_key] == [pytest.approx((cache_done, cache_done))]
    _, makespan, when = list_schedule(DURATIONS, 2, start=cache_done)
    assert cell_times(summary, cells) == rounded(when)
    assert report["makespan_s"] == pytest.approx(makespan)
    assert report["lower_bound_s"] == pytest.approx(cache_done + sum(DURATIONS) / 2)


@pytest.mark.parametrize(("workers", "threads"), [(2, 1), (1, 2)])
def test_cells_of_a_cache_run_as_the_list_schedule_after_it(tmp_path, workers, threads):
    """Four cells (10, 8, 6, 5 s) waiting on a fanned-out cache, two worker threads (two
    workers, or one of two threads), on the simulated clock: once the cache is stored,
    each free thread takes the longest cell left (the independent list schedule: 10
    then 5, 8 then 6; 15 s), and the cache's 8 s of batches are spread over both threads
    (its batches sized for two threads, not for one worker: 4 s). Given to workers as
    soon as they were ready (too few to be queued by Dask's own rule), the cells
    spanned 15.9 s; and one worker of two threads built the cache as one task."""
    durations = [10.0, 8.0, 6.0, 5.0]
    g = grid(built=True, durations=durations)
    cells = {f"cell-{c.key}": c for c in expand_grid(g)}
    summary, report, _ = replay(tmp_path, g, workers, threads)
    parts = [ss for k, ss in summary.spans.items() if k.startswith("cache-part-")]
    assert len(parts) > 2  # guided batches for two threads
    cache_done = 16 * PER_VARIABLE / 2
    assert max(b for ((_, b),) in parts) == pytest.approx(cache_done)
    _, makespan, when = list_schedule(durations, 2, start=cache_done)
    assert makespan - cache_done == pytest.approx(15.0)
    assert cell_times(summary, cells) == rounded(when)
    assert report["makespan_s"] == pytest.approx(makespan)


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


def test_grid_run_replays_on_a_simulated_clock(tmp_path):
    """``grid run --replay R --virtual-clock``: the records of a first replay (the cells'
    budgets as wall seconds) replayed on the simulated clock give the list schedule's
    makespan exactly; ``--virtual-clock`` without ``--replay``, or with ``--stop-at``:
    one line, exit 2."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.results.export import export_records

    g = grid(built=False)
    (tmp_path / "grid.yaml").write_text(json.dumps(g.model_dump(mode="json")))
    with replay_client(2) as client:
        replay_grid(client, g, tmp_path / "first", None, virtual_clock=True)
    records = tmp_path / "records.parquet"
    export_records(tmp_path / "first", records)
    base = ["grid", "run", str(tmp_path / "grid.yaml"), "--no-progress"]
    res = CliRunner().invoke(main, [*base, "--results", str(tmp_path / "r"), "--replay",
                                    str(records), "--workers", "2", "--virtual-clock"])
    assert res.exit_code == 0, res.output
    assert "on a simulated clock" in res.output
    report = json.loads((tmp_path / "r" / "reports" / "summary.json").read_text())
    assert report["makespan_s"] == pytest.approx(list_schedule(DURATIONS, 2, 0.0)[1])
    res = CliRunner().invoke(main, [*base, "--results", str(tmp_path / "s"),
                                    "--virtual-clock"])
    assert res.exit_code == 2 and "--virtual-clock: only with --replay" in res.output
    res = CliRunner().invoke(main, [*base, "--results", str(tmp_path / "t"), "--replay",
                                    str(records), "--virtual-clock", "--stop-at", "1h"])
    assert res.exit_code == 2 and "--stop-at" in res.output


def test_stop_at_expects_the_like_cells_a_worker_has_run(tmp_path):
    """``--stop-at`` on Dask: four alike cells (seeds) with nothing stored to go by, each
    sleeping 4 s, on two workers, 8 s before the stop time: the first two start (each
    expected to take 0 s); when a worker is free again, about 4 s are left and its next
    cell is expected to take as long as the one it has just run: not started (no
    record). Before, the estimate was fixed when the cells were submitted, 0 s for each,
    and both started, to end past the stop time (the SEM rerun's workers each started
    one 12-minute cell 3 to 6 minutes before the stop)."""
    from functools import partial

    from bnsl_dist.orchestrate.cells import run_cells
    from bnsl_dist.orchestrate.replay import ReplayRun, _run_cell, registered, replay_client
    from bnsl_dist.pipeline.plan import replay_model

    g = GridConfig.model_validate({
        "name": "alike", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "path": "/nowhere/nltcs-{split}.jkl"},
        "algorithms": [{"name": "kg", "k": [2], "budget": {"seconds": 4}}],
        "seeds": [0, 1, 2, 3], "budget": {"seconds": 1}})
    cells = expand_grid(g)
    store = ResultStore(tmp_path)
    run = ReplayRun(replay_model(cells), 1.0, "")
    with registered(run) as token, replay_client(2, 1) as client:
        summary = run_cells(client, cells, store, cache_path=lambda c: None,
                            run=partial(_run_cell, token), stop_at=time.time() + 8.0)
    assert len(summary.computed) == 2 and not summary.failed
    assert sorted(summary.computed + summary.not_started) == sorted(c.key for c in cells)
    assert store.done_keys() == set(summary.computed)
