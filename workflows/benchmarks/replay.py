"""Benchmark: the papers' grids at full budget on 16 to 1,024 workers, without the cores.

Two measurements, both from the committed reduced records brought to the full budgets
(:func:`bnsl_dist.pipeline.plan.replay_model`):

* **plan**: every task ``grid run`` submits for the whole grid (caches as guided batches,
  cells), with its priorities, scheduled as Dask hands tasks out
  (:func:`bnsl_dist.pipeline.plan.plan`, what ``bnsl-dist grid plan`` prints): makespan,
  lower bound, efficiency (bound / makespan), CPU-hours, for asobs-ent-2018, kmax-2018
  and sem-imputation-2018 on 16, 64, 256 and 1,024 workers;
* **replay**: the real scheduler path (``grid run --replay``: Dask, the store, the
  records) with sleeping worker threads, on what a shared 2-core machine can pace (its
  Dask hands out a few hundred tasks a second, so a grid of 10^4-10^5 batches cannot be
  replayed in minutes): the SEM grid whole on 16 to 1,024 workers, pieces of the other
  two on 16 and 64; each beside the plan of the same piece (*fidelity*: the plan's
  makespan over the replay's, the check that the plan models Dask's schedule), at the
  fair speed (:func:`~workflows.benchmarks.replay_scale.fair_speed`).

Run (``BNSL_BENCH_OUT=workflows/results/benchmarks``): ``python -m
workflows.benchmarks.replay --replay I`` replays ``REPLAYS[I]`` (one at a time: each a
few minutes) into ``replay.json``, ``--plans`` plans the whole grids again (a minute),
and every call rewrites ``replay.md`` from the stored figures, with those of
:mod:`workflows.benchmarks.replay_scale` (the speed curve, the 10,000-variable cache,
the client's memory).
``--table``: every paper grid with committed reduced records on 64, 256 and 1,024
workers (the table of ``workflows/results/README.md``), ``plan_grids.json`` / ``.md``.
``--honesty``: a small grid really run on two workers, then replayed at speed 1 from its
own records (``replay-honesty.json`` / ``.md``; real minutes).
``--virtual I``: ``VIRTUAL[I]``, a whole grid on 16 to 1,024 workers, replayed on the
simulated clock (:mod:`bnsl_dist.orchestrate.virtual_clock`): the schedule Dask makes of
every task at exactly its seconds, whatever this machine's load.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import write_report

ROOT = Path(__file__).resolve().parents[2]
GRIDS = ("asobs-ent-2018", "kmax-2018", "sem-imputation-2018")
WORKERS = (16, 64, 256, 1024)
#: (grid, data sets or None for all, workers) replayed on Dask.
REPLAYS = (("sem-imputation-2018", None, 16), ("sem-imputation-2018", None, 64),
           ("sem-imputation-2018", None, 256), ("sem-imputation-2018", None, 1024),
           ("kmax-2018", ("nltcs", "kdd", "plants", "baudio"), 16),
           ("kmax-2018", ("nltcs", "kdd", "plants", "baudio"), 64),
           ("asobs-ent-2018", ("nltcs", "msnbc"), 16),
           ("asobs-ent-2018", ("nltcs", "msnbc", "kdd", "plants"), 64))
#: (grid, workers) replayed whole on the simulated clock (``--virtual I``).
VIRTUAL = tuple((g, w) for g in GRIDS for w in WORKERS)


def records(grid: str) -> Any:
    from bnsl_dist.results.export import read_records

    return read_records(ROOT / "workflows" / "results" / f"{grid}-reduced" / "records.parquet")


def cells_of(grid: str, datasets: tuple[str, ...] | None) -> tuple[Any, list[Any]]:
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid

    g = load_grid(ROOT / "configs" / "grids" / f"{grid}.yaml")
    return g, [c for c in expand_grid(g) if datasets is None or c.dataset in datasets]


def replay(grid: str, datasets: tuple[str, ...] | None, workers: int,
           seconds: float = 60.0, speed: float | None = None) -> dict[str, Any]:
    """``grid`` (its ``datasets`` only) replayed on ``workers`` threads
    (:func:`~bnsl_dist.orchestrate.replay.replay_layout`) at ``speed``, else at the fair
    speed for about ``seconds``
    (:func:`~workflows.benchmarks.replay_scale.fair_speed`), beside its plan."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.pipeline.plan import grid_tasks, plan, replay_model
    from workflows.benchmarks.replay_scale import fair_speed, overhead_factor

    g, cells = cells_of(grid, datasets)
    recs = records(grid)
    planned = plan(cells, workers, recs, grid=grid)
    durations = [t.seconds for t in grid_tasks(cells, replay_model(cells, recs), workers)]
    if speed is None:
        speed = fair_speed(durations, planned.makespan_s, seconds)
    with tempfile.TemporaryDirectory() as tmp, replay_client(workers) as client:
        t0 = time.perf_counter()
        replay_grid(client, g, tmp, recs, speed=speed, records_name=f"{grid}-reduced",
                    datasets=None if datasets is None else set(datasets))
        real = time.perf_counter() - t0
        report = json.loads((Path(tmp) / "reports" / "summary.json").read_text())
    return {"grid": grid, "datasets": list(datasets) if datasets else "all",
            "workers": workers, "cells": len(cells), "speed": round(speed, 1),
            "overhead_factor": overhead_factor(durations, speed),
            "real_seconds": round(real, 1), "replay": report, "plan": planned.to_dict()}


def replay_virtual(grid: str, workers: int) -> dict[str, Any]:
    """``grid`` whole replayed on ``workers`` threads on the simulated clock
    (``grid run --replay --virtual-clock``: every task exactly its grid seconds, Dask's
    own cost per task left out), beside its plan."""
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.pipeline.plan import plan

    g, cells = cells_of(grid, None)
    recs = records(grid)
    planned = plan(cells, workers, recs, grid=grid)
    with tempfile.TemporaryDirectory() as tmp, replay_client(workers) as client:
        t0 = time.perf_counter()
        replay_grid(client, g, tmp, recs, records_name=f"{grid}-reduced", virtual_clock=True)
        real = time.perf_counter() - t0
        report = json.loads((Path(tmp) / "reports" / "summary.json").read_text())
    return {"grid": grid, "workers": workers, "cells": len(cells),
            "real_seconds": round(real, 1), "replay": report, "plan": planned.to_dict()}


def paper_grids() -> list[str]:
    """Every full-budget paper grid with committed reduced records."""
    return sorted(p.name[:-len("-reduced")] for p in (ROOT / "workflows" / "results").iterdir()
                  if p.name.endswith("-reduced") and (p / "records.parquet").is_file()
                  and (ROOT / "configs" / "grids" / f"{p.name[:-len('-reduced')]}.yaml").is_file())


def table() -> None:
    """``--table``: every paper grid on 64, 256 and 1,024 workers (``grid plan``), for the
    results index; writes ``plan_grids.json`` and ``plan_grids.md``."""
    from bnsl_dist.pipeline.plan import plan

    rows = []
    for grid in paper_grids():
        _, cells = cells_of(grid, None)
        recs = records(grid)
        for w in (64, 256, 1024):
            rows.append(plan(cells, w, recs, grid=grid).to_dict())
            print(json.dumps(rows[-1]), flush=True)
    lines = ["| grid | cells | CPU-hours | peak memory per worker | 64 workers | 256 workers | "
             "1,024 workers |", "|---|---:|---:|---:|---:|---:|---:|"]
    for grid in paper_grids():
        rs = [r for r in rows if r["grid"] == grid]
        mem = rs[0]["peak_memory_per_worker_bytes"] / 2 ** 20
        lines.append(f"| {grid} | {rs[0]['cells']:,} | {rs[0]['cpu_hours']:,.0f} | "
                     f"{mem:,.0f} MiB | "
                     + " | ".join(f"{_hours(r['makespan_s'])} ({r['efficiency']:.2f})"
                                  for r in rs) + " |")
    write_report("plan_grids", {"plans": rows}, lines)


def honesty(seconds: float, seeds: int) -> None:
    """``--honesty``: a small grid really run on two local worker processes (nltcs's
    three splits, k-G at k = 2 for ``seconds`` each, ``seeds`` seeds: its caches fan out),
    then replayed at speed 1 from its own exported records (cells' wall times, caches'
    per-variable seconds) on two threads: the replay's makespan against the real one.
    Writes ``replay-honesty.json``."""
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.results.export import export_records, read_records

    g = GridConfig.model_validate({
        "name": "honesty", "seed": 5,
        "datasets": [{"name": "nltcs", "splits": ["train", "valid", "test"]}],
        "cache": {"method": "independence", "seconds_per_variable": 0.25},
        "algorithms": [{"name": "kg", "k": [2]}], "seeds": list(range(seeds)),
        "budget": {"seconds": seconds}})
    with tempfile.TemporaryDirectory() as tmp:
        real_dir, rep_dir = Path(tmp) / "real", Path(tmp) / "replay"
        with connect(workers=2, announce=False, dashboard=False) as client:
            real = run_grid(client, g, real_dir, progress=False, report=False)
        real_report = json.loads((real_dir / "reports" / "summary.json").read_text())
        recs = read_records(export_records(real_dir, Path(tmp) / "records.parquet"))
        with replay_client(2) as client:
            replay_grid(client, g, rep_dir, recs, speed=1.0, records_name="its own")
        rep_report = json.loads((rep_dir / "reports" / "summary.json").read_text())
    out = {"grid": g.model_dump(mode="json"), "cells": len(real.computed),
           "cache_records": len(recs.caches), "real": real_report, "replay": rep_report,
           "makespan_ratio": round(rep_report["makespan_s"] / real_report["makespan_s"], 4)}
    print(json.dumps(out))
    write_report("replay-honesty", out, [
        "| | makespan s | busy s | utilisation | efficiency |", "|---|---:|---:|---:|---:|",
        *(f"| {n} | {r['makespan_s']:.1f} | {r['busy_s']:.1f} | {r['utilisation']} | "
          f"{r['efficiency']} |" for n, r in (("real (2 processes)", real_report),
                                               ("replay at speed 1", rep_report))),
        "", f"replay / real makespan: {out['makespan_ratio']}"])


def _hours(s: float) -> str:
    return f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"


def _load(name: str) -> dict[str, Any]:
    from workflows.benchmarks._common import OUT_DIR

    path = OUT_DIR / f"{name}.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _piece(r: dict[str, Any]) -> str:
    return "all" if r["datasets"] == "all" else ", ".join(r["datasets"])


def report(plans: list[dict[str, Any]], replays: list[dict[str, Any]],
           virtual: list[dict[str, Any]] | None = None) -> Path:
    """``replay.json`` and ``replay.md``: the plans, the replays, and what
    :mod:`workflows.benchmarks.replay_scale` stored (the speed curve, the
    10,000-variable cache, the client's memory)."""
    lines = ["# The papers' grids at full budget on 16 to 1,024 workers (replay model)", "",
             "`python -m workflows.benchmarks.replay`: the committed reduced records "
             "brought to the full budgets; targets: efficiency (lower bound / makespan) "
             ">= 0.95 on 16, 64 and 256 workers, >= 0.9 on 1,024.", "",
             "## Plan: every task of the whole grid, as Dask hands them out", "",
             "| grid | workers | cells | tasks | makespan (h) | lower bound (h) | "
             "efficiency | CPU-hours |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {p['grid']} | {p['workers']} | {p['cells']} | {p['tasks']} | "
              f"{p['makespan_s'] / 3600:.2f} | {p['lower_bound_s'] / 3600:.2f} | "
              f"{p['efficiency']:.3f} | {p['cpu_hours']:,.0f} |" for p in plans]
    lines += ["", "## Replay on Dask (sleeping worker threads) beside the plan of the same "
              "piece", "", "Each at the fair speed (`replay_scale.fair_speed`: about "
              "`--seconds` of real time, but the shortest 5 % of the tasks at least 50 x "
              "Dask's 7 ms per task on this machine, unless that takes over 150 s; "
              "*x overhead*: what the shortest 5 % got), on at most 16 worker objects "
              "(`replay_layout`). *fidelity*: plan makespan / replay makespan.", "",
              "| grid | data sets | workers | speed | x overhead | real s | replay makespan "
              "(h) | plan makespan (h) | replay efficiency | plan efficiency | fidelity | "
              "utilisation | scheduler ms/task |",
              "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['grid']} | {_piece(r)} | {r['workers']} | {r['speed']:g} | "
              f"{r.get('overhead_factor', '')} | "
              f"{r['real_seconds']:g} | {r['replay']['makespan_s'] / 3600:.2f} | "
              f"{r['plan']['makespan_s'] / 3600:.2f} | {r['replay']['efficiency']:.3f} | "
              f"{r['plan']['efficiency']:.3f} | "
              f"{r['plan']['makespan_s'] / r['replay']['makespan_s']:.3f} | "
              f"{r['replay']['utilisation']:.3f} | "
              f"{r['replay']['scheduler_ms_per_task']:.2f} |" for r in replays]
    if virtual:
        lines += ["", "## Whole grids replayed on a simulated clock", "",
                  "`--virtual I` (`grid run --replay --virtual-clock`): the real scheduler "
                  "path, each task waiting exactly its grid seconds on a clock that moves "
                  "only when nothing else can happen (Dask's own cost per task left out, "
                  "and the machine's load with it). *fidelity*: plan makespan / replay "
                  "makespan.", "",
                  "| grid | workers | cells | tasks | real s | replay makespan (h) | plan "
                  "makespan (h) | replay efficiency | plan efficiency | fidelity |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['grid']} | {r['workers']} | {r['cells']} | {r['replay']['tasks']} | "
                  f"{r['real_seconds']:g} | {r['replay']['makespan_s'] / 3600:.2f} | "
                  f"{r['plan']['makespan_s'] / 3600:.2f} | {r['replay']['efficiency']:.3f} | "
                  f"{r['plan']['efficiency']:.3f} | "
                  f"{r['plan']['makespan_s'] / r['replay']['makespan_s']:.3f} |"
                  for r in virtual]
    curve = _load("replay-curve").get("runs", [])
    if curve:
        lines += ["", "## The same replay, faster: the scheduler's cost against the tasks",
                  "", "sem-imputation-2018 whole on 16 workers (`replay_scale --curve`).", "",
                  "| speed | real s | replay efficiency | fidelity | scheduler ms/task |",
                  "|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['speed']:g} | {r['real_seconds']:g} | "
                  f"{r['replay']['efficiency']:.3f} | "
                  f"{r['plan']['makespan_s'] / r['replay']['makespan_s']:.3f} | "
                  f"{r['replay']['scheduler_ms_per_task']:.2f} |" for r in curve]
    cache = _load("replay-cache").get("runs", [])
    if cache:
        lines += ["", "## The 10,000-variable cache build alone", "",
                  "r10 (10,000 variables) at 60 s per variable, each variable's seconds "
                  "from a real build of r10 at 0.06 s per variable "
                  "(`r10-variable-seconds.json`) brought to the full budget; "
                  "`replay_scale --cache W`. Target: efficiency >= 0.9.", "",
                  "| workers | tasks | speed | real s | replay makespan (h) | plan makespan "
                  "(h) | replay efficiency | plan efficiency |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['workers']} | {r['tasks']} | {r['speed']:g} | {r['real_seconds']:g} "
                  f"| {r['replay']['makespan_s'] / 3600:.2f} | "
                  f"{r['plan']['makespan_s'] / 3600:.2f} | {r['replay']['efficiency']:.3f} | "
                  f"{r['plan']['efficiency']:.3f} |"
                  for r in sorted(cache, key=lambda r: r["workers"])]
    rss = _load("replay-rss").get("runs", []) + _load("replay-plan-rss").get("runs", [])
    if rss:
        lines += ["", "## The client's peak memory", "",
                  "Zero-second cells (`replay_scale --rss N`: replayed on 16 threads; "
                  "`--plan-rss N`: expansion and plan alone, no Dask). Target: <= 1 GB "
                  "with 100,000 cells.", "", "| cells | what | real s | peak RSS (MiB) |",
                  "|---:|---|---:|---:|"]
        lines += [f"| {r['cells']:,} | {'plan' if 'tasks' in r else 'replay'} | "
                  f"{r.get('real_seconds', r.get('seconds'))} | "
                  f"{(r.get('client_peak_rss_bytes') or r['peak_rss_bytes']) / 2**20:,.0f} |"
                  for r in rss]
    client = _load("replay-client-rss").get("runs", [])
    if client:
        lines += ["", "## The client's peak memory, the client alone", "",
                  "Zero-second cells through `run_grid` on a scheduler and a 16-thread "
                  "worker in processes of their own (`replay_rss --cells N`). Target: "
                  "<= 1 GB with 100,000 cells.", "",
                  "| cells | real s | client before (MiB) | client peak (MiB) | scheduler "
                  "peak (MiB) | worker peak (MiB) |", "|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {r['cells']:,} | {r['real_seconds']:g} | "
                  f"{r['client_rss_before_bytes'] / 2**20:,.0f} | "
                  f"{r['client_peak_rss_bytes'] / 2**20:,.0f} | "
                  f"{r['scheduler_peak_rss_bytes'] / 2**20:,.0f} | "
                  f"{r['worker_peak_rss_bytes'] / 2**20:,.0f} |" for r in client]
    return write_report("replay", {"plans": plans, "replays": replays,
                                   "virtual": virtual or []}, lines)


def main() -> None:
    from bnsl_dist.pipeline.plan import plan

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plans", action="store_true", help="plan the whole grids again")
    ap.add_argument("--replay", type=int, action="append", default=[], metavar="I",
                    help=f"run REPLAYS[I] (0-{len(REPLAYS) - 1}), in place of its earlier run")
    ap.add_argument("--table", action="store_true",
                    help="only the plan of every paper grid on 64, 256 and 1,024 workers")
    ap.add_argument("--virtual", type=int, action="append", default=[], metavar="I",
                    help=f"replay VIRTUAL[I] (0-{len(VIRTUAL) - 1}) whole on the simulated "
                         "clock, in place of its earlier run")
    ap.add_argument("--seconds", type=float, default=90.0,
                    help="about how long each Dask replay takes (real seconds)")
    ap.add_argument("--honesty", action="store_true",
                    help="only the real run on two workers against its replay at speed 1")
    args = ap.parse_args()
    if args.table:
        table()
        return
    if args.honesty:
        honesty(8.0, 5)
        return
    old = _load("replay")
    plans, replays = old.get("plans", []), old.get("replays", [])
    if args.plans or not plans:
        plans = []
        for grid in GRIDS:
            _, cells = cells_of(grid, None)
            recs = records(grid)
            for w in WORKERS:
                t0 = time.perf_counter()
                p = plan(cells, w, recs, grid=grid).to_dict()
                plans.append({**p, "plan_seconds": round(time.perf_counter() - t0, 1)})
                print(json.dumps(plans[-1]), flush=True)
    for i in args.replay:
        g, d, w = REPLAYS[i]
        r = replay(g, d, w, args.seconds)
        print(json.dumps(r), flush=True)
        same = (g, "all" if d is None else list(d), w)
        replays = [x for x in replays if (x["grid"], x["datasets"], x["workers"]) != same]
        replays.append(r)
    virtual = old.get("virtual", [])
    for i in args.virtual:
        g, w = VIRTUAL[i]
        r = replay_virtual(g, w)
        print(json.dumps(r), flush=True)
        virtual = [x for x in virtual if (x["grid"], x["workers"]) != (g, w)] + [r]
    virtual.sort(key=lambda r: VIRTUAL.index((r["grid"], r["workers"])))
    order = {(g, "all" if d is None else ", ".join(d), w): i for i, (g, d, w) in enumerate(REPLAYS)}
    replays.sort(key=lambda r: order.get((r["grid"], _piece(r), r["workers"]), len(order)))
    print(report(plans, replays, virtual))


if __name__ == "__main__":
    main()
