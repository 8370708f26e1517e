"""Benchmark: what a replay on this machine can show, and the scale targets of issue 41.

* ``--curve``: the efficiency of one replay (the SEM grid whole, 16 workers) against its
  speed. A replay sleeps each task for its grid seconds ÷ the speed, while Dask's own
  cost per task (the scheduler's event loop, shared in this process with the workers
  and the client) stays in real seconds: the faster the replay, the larger that cost
  against the tasks, and the more the figure measures the machine instead of the
  schedule. :func:`fair_speed` is the rule the other replays follow.
* ``--variable-seconds``: a real build of r10's first variables (10,000 variables, the
  reduced grid's 0.06 s per variable), their exploration seconds kept in
  ``r10-variable-seconds.json`` (committed: the replay below reads them).
* ``--cache``: the 10,000-variable cache build alone (r10 at the full budget, 60 s per
  variable, then one cell) replayed on 16 and 64 worker threads, each variable taking
  its measured seconds brought to the full budget
  (:func:`~bnsl_dist.pipeline.plan.at_budget`; variable ``v`` takes the measured
  seconds of variable ``v mod m``).
* ``--rss N``: the client's peak resident memory replaying a grid of ``N`` zero-second
  cells (nltcs, k-G, ``N`` seeds, a given cache) on 16 worker threads; ``--plan-rss N``:
  the same grid's expansion and plan alone (no Dask).

Run: ``BNSL_BENCH_OUT=workflows/results/benchmarks python -m
workflows.benchmarks.replay_scale --curve`` (and the others); each writes
``replay-<what>.json``; ``python -m workflows.benchmarks.replay`` gathers them into
``replay.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import OUT_DIR, write_report, write_result

ROOT = Path(__file__).resolve().parents[2]
#: Real seconds of Dask's own work per task in a replay on this machine (the
#: ``scheduler_ms_per_task`` of the SEM grid's replay on 16 workers, idle machine: 7 ms).
OVERHEAD_S = 0.007
#: A fair replay sleeps every task but the shortest 5 % at least this many times
#: :data:`OVERHEAD_S`.
OVERHEAD_FACTOR = 50
#: ... unless the replay would take longer than this (real seconds; this machine's
#: benchmarks keep each replay to a few minutes): then as fast as that takes.
LONGEST_S = 150.0
#: The budget the committed reduced records of r10 were built at, and the full one.
REDUCED_PER_VARIABLE, FULL_PER_VARIABLE = 0.06, 60.0
VARIABLE_SECONDS = ROOT / "workflows" / "results" / "benchmarks" / "r10-variable-seconds.json"


def fair_speed(task_seconds: list[float], makespan_s: float, seconds: float,
               longest: float = LONGEST_S) -> float:
    """The speed of a replay of tasks of ``task_seconds`` (grid seconds) planned to take
    ``makespan_s``: the one that takes about ``seconds`` of real time, but no faster
    than leaves the 5th percentile of the tasks :data:`OVERHEAD_FACTOR` ×
    :data:`OVERHEAD_S` long, unless that would take more than ``longest`` real seconds.

    >>> fair_speed([60.0] * 100, 6000.0, 60.0)  # 100 x the real seconds; 171 the rule
    100.0
    >>> round(fair_speed([60.0] * 100, 24000.0, 60.0), 1)
    171.4
    >>> fair_speed([60.0] * 100, 60000.0, 60.0)  # the rule would take 350 s
    400.0
    """
    long = sorted(s for s in task_seconds if s > 0)
    p5 = long[len(long) // 20] if long else math.inf
    rule = p5 / (OVERHEAD_FACTOR * OVERHEAD_S)
    return max(1.0, makespan_s / longest, min(makespan_s / seconds, rule))


def overhead_factor(task_seconds: list[float], speed: float) -> float:
    """How many times :data:`OVERHEAD_S` the 5th percentile of the tasks sleeps at
    ``speed``."""
    long = sorted(s for s in task_seconds if s > 0)
    return round(long[len(long) // 20] / speed / OVERHEAD_S, 1) if long else math.inf


def curve(seconds: tuple[float, ...] = (20.0, 40.0, 120.0)) -> None:
    """``--curve``: the SEM grid whole on 16 workers at the speeds that take ``seconds``
    (real) by its plan."""
    from bnsl_dist.pipeline.plan import plan
    from workflows.benchmarks.replay import cells_of, records, replay

    grid = "sem-imputation-2018"
    _, cells = cells_of(grid, None)
    planned = plan(cells, 16, records(grid), grid=grid)
    rows = []
    for s in seconds:
        r = replay(grid, None, 16, speed=planned.makespan_s / s)
        rows.append(r)
        print(json.dumps(r), flush=True)
    write_report("replay-curve", {"grid": grid, "workers": 16, "runs": rows}, [
        "| speed | real s | replay efficiency | plan efficiency | replay / plan makespan |",
        "|---:|---:|---:|---:|---:|",
        *(f"| {r['speed']:g} | {r['real_seconds']:g} | {r['replay']['efficiency']:.3f} | "
          f"{r['plan']['efficiency']:.3f} | "
          f"{r['replay']['makespan_s'] / r['plan']['makespan_s']:.3f} |" for r in rows)])


def variable_seconds(m: int = 500) -> None:
    """``--variable-seconds``: r10's first ``m`` variables really explored at the
    reduced budget; their seconds and why each stopped, to
    :data:`VARIABLE_SECONDS`."""
    from bnsl_dist.cache.build import build_cache
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.run import load_data

    g = load_grid(ROOT / "configs" / "grids" / "asobs-ent-2018-reduced.yaml")
    ref = next(c.data for c in _r10_cells(g))
    data = load_data(ref)
    t0 = time.perf_counter()
    cache = build_cache(data, g.cache.model_copy(update={"path": None}),
                        variables=list(range(m)))
    wall = time.perf_counter() - t0
    stats = cache.meta["stats"]
    out = {"data": "r10 train", "n_vars": data.n_vars, "rows": data.n_samples,
           "cache": g.cache.model_dump(mode="json"), "variables": stats["variables"],
           "seconds": stats["seconds"], "stopped_by": stats["stopped_by"],
           "wall_seconds": round(wall, 1),
           "command": "python -m workflows.benchmarks.replay_scale --variable-seconds"}
    VARIABLE_SECONDS.write_text(json.dumps(out, indent=1) + "\n")
    print(VARIABLE_SECONDS, round(wall, 1), "s")


def _r10_cells(grid: Any) -> list[Any]:
    from bnsl_dist.pipeline.grid import expand_grid

    return [c for c in expand_grid(grid) if c.dataset == "r10"]


def cache_build(workers: int, seconds: float = 120.0,
                speed: float | None = None) -> dict[str, Any]:
    """The 10,000-variable cache build alone (see the module's description) replayed on
    ``workers`` threads at ``speed``, else at :func:`fair_speed` for about
    ``seconds``."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.pipeline.plan import (
        at_budget,
        grid_tasks,
        list_schedule,
        lower_bound,
        replay_model,
    )

    measured = json.loads(VARIABLE_SECONDS.read_text())["seconds"]
    g = GridConfig.model_validate({
        "name": "cache-10000", "seed": 1, "datasets": [{"name": "r10", "splits": ["train"]}],
        "cache": {"method": "independence", "score": "bic",
                  "seconds_per_variable": FULL_PER_VARIABLE, "max_indegree": None},
        "algorithms": [{"name": "asobs"}], "seeds": [0], "budget": {"seconds": 60}})
    cells = list(_r10_cells(g))
    model = replay_model(cells, None)
    (key,) = model.caches
    n = len(model.caches[key])
    model.caches[key] = tuple(at_budget(measured[v % len(measured)], REDUCED_PER_VARIABLE,
                                        FULL_PER_VARIABLE) for v in range(n))
    model.sources[key] = "measured"
    tasks = grid_tasks(cells, model, workers)
    sched = list_schedule(tasks, workers)
    bound = lower_bound({t.key: t.seconds for t in tasks}, {t.key: t.deps for t in tasks},
                        workers)
    if speed is None:
        speed = fair_speed([t.seconds for t in tasks], sched.makespan, seconds)
    with tempfile.TemporaryDirectory() as tmp, replay_client(workers) as client:
        t0 = time.perf_counter()
        replay_grid(client, g, tmp, None, speed=speed, records_name="r10-variable-seconds",
                    model=model)
        real = time.perf_counter() - t0
        report = json.loads((Path(tmp) / "reports" / "summary.json").read_text())
    out = {"workers": workers, "variables": n, "tasks": len(tasks), "speed": round(speed, 1),
           "overhead_factor": overhead_factor([t.seconds for t in tasks], speed),
           "real_seconds": round(real, 1), "work_s": round(sum(model.caches[key]), 1),
           "replay": report, "plan": {"makespan_s": round(sched.makespan, 1),
                                      "lower_bound_s": round(bound, 1),
                                      "efficiency": round(bound / sched.makespan, 4)}}
    print(json.dumps(out), flush=True)
    return out


def rss_grid(n_cells: int) -> Any:
    """A grid of ``n_cells`` cells (nltcs's test split, k-G at k = 2 for 1 s, ``n_cells``
    seeds) on a given cache file: no cache to build, nothing read by a replay."""
    from bnsl_dist.pipeline.config import GridConfig

    return GridConfig.model_validate({
        "name": f"rss-{n_cells}", "seed": 1, "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "path": "/nowhere/nltcs-{split}.jkl"},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": list(range(n_cells)),
        "budget": {"seconds": 1}})


def rss(n_cells: int, speed: float = 1e6) -> dict[str, Any]:
    """``--rss N``: the client's peak RSS replaying :func:`rss_grid` on 16 threads."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.orchestrate.summary import peak_rss_bytes

    g = rss_grid(n_cells)
    before = peak_rss_bytes()
    with tempfile.TemporaryDirectory() as tmp, replay_client(16) as client:
        t0 = time.perf_counter()
        replay_grid(client, g, tmp, None, speed=speed)
        real = time.perf_counter() - t0
        report = json.loads((Path(tmp) / "reports" / "summary.json").read_text())
    out = {"cells": n_cells, "real_seconds": round(real, 1),
           "peak_rss_before_bytes": before, "client_peak_rss_bytes":
           report["client_peak_rss_bytes"], "scheduler_ms_per_task":
           report["scheduler_ms_per_task"]}
    print(json.dumps(out), flush=True)
    return out


def plan_rss(n_cells: int) -> dict[str, Any]:
    """``--plan-rss N``: expansion, priorities and plan of :func:`rss_grid` alone."""
    from bnsl_dist.orchestrate.summary import peak_rss_bytes
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.pipeline.plan import plan

    t0 = time.perf_counter()
    cells = expand_grid(rss_grid(n_cells))
    p = plan(cells, 1024)
    out = {"cells": len(cells), "tasks": p.tasks, "seconds": round(time.perf_counter() - t0, 1),
           "peak_rss_bytes": peak_rss_bytes()}
    print(json.dumps(out), flush=True)
    return out


def _save(name: str, row: dict[str, Any], key: str) -> None:
    """Add ``row`` to ``replay-<name>.json``, in place of an earlier run of its ``key``."""
    path = OUT_DIR / f"replay-{name}.json"
    old = json.loads(path.read_text())["runs"] if path.is_file() else []
    write_result(f"replay-{name}", {"runs": [r for r in old if r.get(key) != row[key]]
                                    + [row]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--curve", action="store_true")
    ap.add_argument("--variable-seconds", type=int, metavar="M", default=0)
    ap.add_argument("--cache", type=int, metavar="WORKERS", default=0)
    ap.add_argument("--rss", type=int, metavar="CELLS", default=0)
    ap.add_argument("--plan-rss", type=int, metavar="CELLS", default=0)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--speed", type=float, default=None,
                    help="--cache's speed (default: the fair speed for --seconds)")
    args = ap.parse_args()
    if args.curve:
        curve()
    if args.variable_seconds:
        variable_seconds(args.variable_seconds)
    if args.cache:
        _save("cache", cache_build(args.cache, args.seconds, args.speed), "workers")
    if args.rss:
        _save("rss", rss(args.rss), "cells")
    if args.plan_rss:
        _save("plan-rss", plan_rss(args.plan_rss), "cells")


if __name__ == "__main__":
    main()
