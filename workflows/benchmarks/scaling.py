"""Benchmark: how the Dask drivers scale with the number of workers, and what they cost.

For W = 1, 2, 4, ... up to the machine's cores (``--workers`` to choose), on a fresh
local cluster of W single-threaded workers each time:

* **cache build** — ``cache_of_held`` (the one route of a cache on Dask) of ``--data``
  with an exact-score budget
  (reproducible: the cache is checked equal to the serial one), against the serial
  ``build_cache``;
* **per-seed search** — the cells of ``--algorithm`` with an iteration
  budget, ``--seeds`` seeds (``orchestrate.execute.execute``), against ``learn`` run serially;
* **grid** — ``run_grid`` of a small grid (the data's splits × k-G/k-MAX × seeds, on
  caches written beforehand), against running its cells one after the other; with
  ``--grid-build-caches`` the grid builds its caches itself (those estimated at
  ``--fan-out-seconds`` or more as per-variable batches), against building each cache
  once and running the cells one after the other;

each with speed-up (serial wall / Dask wall) and utilisation (task compute seconds /
(wall × W)). Cluster start and the numba warm-up are timed apart, not inside the phases.

**Fixed overhead**: the tiny ``learn`` job of issue 15 (``--iterations 20
--scores-per-variable 50`` on bundled nltcs), as separate processes: ``--serial``, then
``--workers W`` (a fresh cluster), then ``--scheduler`` of a cluster started once with
``bnsl-dist cluster start`` and used once before (warm workers). Each is run
``--repeats`` times; the medians and the differences to ``--serial`` are reported. With
``--baseline TREE`` the same runs are made with the package of another checkout (its
folder put first on ``PYTHONPATH``), interleaved with this one's, and reported beside
them; ``--overhead-only`` skips the scaling part. The CPU seconds of each run (its
whole process tree: the forkserver and the workers included) are reported too, as they
tell what a loaded machine pays.

Run: ``python -m workflows.benchmarks.scaling [--data nltcs] [--workers 1 2]
[--scores-per-variable 400] [--iterations 3000] [--seeds 8]`` (writes out/scaling.json).
The run kept in workflows/results/benchmarks/scaling-2core.json: ``--data plants
--workers 1 2 --scores-per-variable 1500 --iterations 2000 --seeds 4 --grid-seeds 2
--grid-iterations 600 --repeats 3``. The fixed overhead kept in
scaling-2core-overhead.json: ``--overhead-only --workers 2 --repeats 5 --baseline
/work/main`` (this branch against main).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from workflows.benchmarks._common import tree_env, write_result

TINY = ["nltcs", "--iterations", "20", "--scores-per-variable", "50", "--seeds", "2", "-q"]


def _worker_counts(arg: list[int] | None) -> list[int]:
    if arg:
        return sorted(set(arg))
    cores = os.cpu_count() or 1
    out, w = [], 1
    while w < cores:
        out.append(w)
        w *= 2
    return [*out, cores]


def _same_cache(a: Any, b: Any) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k))
               for k in ("offsets", "scores", "par_offsets", "par_flat"))


def _grid(cache: dict[str, Any], dataset: str, path: str | None, splits: list[str],
          iterations: int, seeds: int) -> Any:
    from bnsl_dist.pipeline.config import GridConfig

    return GridConfig.model_validate({
        "name": "scaling", "seed": 1,
        "datasets": [{"name": dataset, "splits": splits, **({"path": path} if path else {})}],
        "cache": {"method": "independence", **cache},
        "algorithms": [{"name": "kg", "k": [2, 3]}, {"name": "kmax", "k": [2]}],
        "seeds": list(range(seeds)), "budget": {"iterations": iterations, "seconds": 600}})


def _cli(args: list[str], env: dict[str, str], keep: frozenset[int] = frozenset(),
         cwd: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one CLI run. On Linux the CPU is that of its whole
    process tree: this process is the subreaper of the run's orphans (the forkserver,
    its workers) and waits for them too (up to 10 s; ``keep``: children to leave alone,
    the reused cluster's); elsewhere only the direct child's."""
    import resource

    linux = sys.platform.startswith("linux")
    if linux:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from bnsl_dist.cli import main; main()", *args],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=cwd)
    wall = time.perf_counter() - t0
    deadline = time.monotonic() + 10.0
    while linux and time.monotonic() < deadline:
        orphans = _children() - keep
        if not orphans:
            break
        for pid in orphans:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.02)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _children() -> set[int]:
    """Process ids whose parent is this process (from /proc)."""
    me, out = os.getpid(), set()
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                out.add(int(d.name))
    return out


def fixed_overhead(workers: int, repeats: int, tmp: Path,
                   baseline: str | None = None) -> dict[str, Any]:
    """Median wall (and CPU) seconds of the tiny learn job: serial, fresh cluster,
    reused cluster; with ``baseline``, the same runs of that checkout interleaved."""
    import bnsl_dist
    from bnsl_dist.orchestrate.cluster import start_cluster, stop_cluster

    trees = {"this": tree_env(Path(bnsl_dist.__file__).resolve().parents[1])}
    if baseline is not None:
        trees["baseline"] = tree_env(baseline)
    out = str(tmp / "learn.json")
    kinds = ("serial", "fresh_cluster", "reused_cluster")
    runs: dict[str, dict[str, list[tuple[float, float]]]] = {
        t: {k: [] for k in kinds} for t in trees}
    info = start_cluster(tmp / "cluster", workers=workers)
    keep = frozenset(_children())  # the reused cluster's processes
    try:
        args = {"serial": ["--serial"], "fresh_cluster": ["--workers", str(workers)],
                "reused_cluster": ["--scheduler", info["address"]]}
        for env in trees.values():  # numba's disk cache warm; the reused workers warm
            _cli(["learn", *TINY, "--serial", "-o", out], env, keep, tmp)
            _cli(["learn", *TINY, *args["reused_cluster"], "-o", out], env, keep, tmp)
        for _ in range(repeats):  # interleaved, so that load drifts hit all alike
            for kind in kinds:
                for t, env in trees.items():
                    runs[t][kind].append(
                        _cli(["learn", *TINY, *args[kind], "-o", out], env, keep, tmp))
    finally:
        stop_cluster(tmp / "cluster")
    result: dict[str, Any] = {"workers": workers, "repeats": repeats}
    for t, by_kind in runs.items():
        med = {k: round(statistics.median(w for w, _ in v), 3) for k, v in by_kind.items()}
        cpu = {k: round(statistics.median(c for _, c in v), 3) for k, v in by_kind.items()}
        row = {"median_seconds": med, "median_cpu_seconds": cpu,
               "all_seconds": {k: [round(w, 3) for w, _ in v] for k, v in by_kind.items()},
               "overhead_vs_serial": {k: round(med[k] - med["serial"], 3)
                                      for k in ("fresh_cluster", "reused_cluster")},
               "cpu_overhead_vs_serial": {k: round(cpu[k] - cpu["serial"], 3)
                                          for k in ("fresh_cluster", "reused_cluster")}}
        if t == "this":
            result.update(row)
        else:
            result["baseline"] = {"tree": baseline, **row}
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="nltcs", help="data set (bundled or registered)")
    ap.add_argument("--data-path", default=None, help="data file template ({split})")
    ap.add_argument("--workers", type=int, nargs="+", default=None)
    ap.add_argument("--scores-per-variable", type=int, default=400)
    ap.add_argument("--algorithm", default="asobs-ent")
    ap.add_argument("--iterations", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--grid-scores-per-variable", type=int, default=100,
                    help="exact scores per variable of the grid's caches")
    ap.add_argument("--grid-iterations", type=int, default=1500)
    ap.add_argument("--grid-seeds", type=int, default=3)
    ap.add_argument("--grid-build-caches", action="store_true",
                    help="the grid builds its caches (timed) instead of reading files")
    ap.add_argument("--fan-out-seconds", type=float, default=None,
                    help="with --grid-build-caches: caches estimated at this many worker "
                    "seconds fan out per variable [run_grid's default]")
    ap.add_argument("--repeats", type=int, default=3, help="fixed-overhead repeats")
    ap.add_argument("--skip-overhead", action="store_true")
    ap.add_argument("--overhead-only", action="store_true",
                    help="only the fixed overhead (no scaling part)")
    ap.add_argument("--baseline", default=None, metavar="TREE",
                    help="fixed overhead of another checkout too (e.g. main's), interleaved")
    ap.add_argument("--note", default="", help="free text stored with the figures "
                    "(e.g. the machine's load)")
    ap.add_argument("--name", default="scaling", help="output file out/<name>.json")
    args = ap.parse_args()
    settings = {k: v for k, v in vars(args).items() if k not in ("name", "note")}
    if args.overhead_only:
        tmp = Path(tempfile.mkdtemp(prefix="bnsl-scaling-"))
        only: dict[str, Any] = {"settings": settings, "note": args.note,
                                "load_average_at_start": os.getloadavg()}
        only["fixed_overhead"] = fixed_overhead(max(_worker_counts(args.workers)),
                                                args.repeats, tmp, args.baseline)
        only["load_average_at_end"] = os.getloadavg()
        print(write_result(args.name, only))
        return

    from bnsl_dist.cache import build_cache, write_jkl
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.orchestrate.explore import cache_of_held
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.orchestrate.workers import register_warmup
    from bnsl_dist.pipeline import CacheSpec, DataRef, SearchSpec, learn, learn_cells, load_data
    from bnsl_dist.pipeline.cost import FAN_OUT_SECONDS
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.pipeline.run import ensure_cache, run_cell
    from bnsl_dist.search.warmup import algorithm_spec, warm_up

    def split_data(split: str) -> Any:
        return load_data(DataRef(name=args.data, split=split, path=args.data_path))

    counts = _worker_counts(args.workers)
    data = split_data("train")
    build = {"method": "independence", "scores_per_variable": args.scores_per_variable}
    # per-seed search cells on a cache given in memory (the spec's path is never read)
    search_cells = learn_cells(None, CacheSpec(path="in-memory.jkl"),
                               SearchSpec(algorithm=args.algorithm,
                                          budget={"iterations": args.iterations}),
                               args.seeds)
    tmp = Path(tempfile.mkdtemp(prefix="bnsl-scaling-"))
    splits = ["train", "valid", "test"]
    grid_cache: dict[str, Any] = {"scores_per_variable": args.grid_scores_per_variable}
    if not args.grid_build_caches:
        for s in splits:  # the grid's caches, written before any timing
            write_jkl(build_cache(split_data(s), method="independence",
                                  scores_per_variable=args.grid_scores_per_variable),
                      tmp / f"{args.data}-{s}.jkl")
        grid_cache = {"path": str(tmp / "{dataset}-{split}.jkl")}
    grid = _grid(grid_cache, args.data, args.data_path, splits, args.grid_iterations,
                 args.grid_seeds)
    cells = expand_grid(grid)
    fan_out = FAN_OUT_SECONDS if args.fan_out_seconds is None else args.fan_out_seconds

    specs = [algorithm_spec(args.algorithm)] + [algorithm_spec(c.algorithm, c.search.params,
                                                              c.k) for c in cells]
    t0 = time.perf_counter()  # the serial runs' kernels, as the workers' below: untimed
    warm_up(cache_methods=("independence",), algorithms=specs)
    serial_warmup = time.perf_counter() - t0
    t0 = time.perf_counter()
    serial_cache = build_cache(data, **build)
    serial = {"cache_build": time.perf_counter() - t0}
    t0 = time.perf_counter()
    serial_search = learn(search_cells, serial_cache)
    serial["search"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for c in cells:  # each distinct cache built once, as the grid runner does
        run_cell(c, None if c.cache_job.given_path is not None else ensure_cache(
            c.cache_job, tmp / "serial-caches" / f"{c.cache_job.key}.jkl.gz"))
    serial["grid"] = time.perf_counter() - t0
    serial["cache_build_task_seconds"] = float(sum(serial_cache.meta["stats"]["seconds"]))

    rows = []
    for w in counts:
        row: dict[str, Any] = {"workers": w}
        t0 = time.perf_counter()
        with connect(workers=w, announce=False, dashboard=False) as client:
            row["cluster_start_seconds"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            register_warmup(client, cache_methods=("independence",), algorithms=specs)
            row["warmup_seconds"] = round(time.perf_counter() - t0, 3)
            t0 = time.perf_counter()
            cache = cache_of_held(client, data, CacheSpec(**build), warmed=True)
            wall = time.perf_counter() - t0
            busy = float(sum(cache.meta["stats"]["seconds"]))
            row["cache_build"] = {"wall_seconds": round(wall, 3),
                                  "speedup": round(serial["cache_build"] / wall, 3),
                                  "utilisation": round(busy / (wall * w), 3),
                                  "equal_to_serial": _same_cache(cache, serial_cache)}
            t0 = time.perf_counter()
            res = execute(search_cells, client, caches={
                search_cells[0].cache_job.key: cache}).learn_result()
            wall = time.perf_counter() - t0
            busy = sum(r.seconds for r in res.runs)
            row["search"] = {"wall_seconds": round(wall, 3),
                             "speedup": round(serial["search"] / wall, 3),
                             "utilisation": round(busy / (wall * w), 3),
                             "equal_to_serial": res.score == serial_search.score}
            summary = run_grid(client, grid, tmp / f"grid-{w}", progress=False, report=False,
                               warmup=False, fan_out_seconds=fan_out)
            row["grid"] = {"cells": len(cells), "wall_seconds": round(summary.seconds, 3),
                           "speedup": round(serial["grid"] / summary.seconds, 3),
                           "utilisation": None if summary.utilisation is None
                           else round(summary.utilisation, 3),
                           "failed": len(summary.failed)}
        rows.append(row)
        print(row, file=sys.stderr, flush=True)
    payload: dict[str, Any] = {
        "settings": settings,
        "note": args.note, "n_vars": data.n_vars, "n_samples": data.n_samples,
        "load_average_at_start": os.getloadavg(),
        "serial_warmup_seconds": round(serial_warmup, 3),
        "serial_seconds": {k: round(v, 3) for k, v in serial.items()}, "by_workers": rows}
    if not args.skip_overhead:
        payload["fixed_overhead"] = fixed_overhead(max(counts), args.repeats, tmp,
                                                   args.baseline)
    payload["load_average_at_end"] = os.getloadavg()
    print(write_result(args.name, payload))


if __name__ == "__main__":
    main()
