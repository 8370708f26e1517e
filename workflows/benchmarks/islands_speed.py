"""Benchmark: how fast each memetic run of a MINOBS measurement searched, from its trace.

A one-core run (``memetic``) and each island of a two-worker run (``memetic@2``: the
seeds of ``bnsl-dist learn --seed S --seeds 2``) follow a trajectory fixed by their seed
until the island's first exchange. Replayed here with the same seeds (and the code of the
measurement: ``--params``), counting the window search's kernel calls (chunks of at most
50,000 block steps, the bulk of the work), every incumbent of the measurement's trace is
matched by its score to its replayed point: the measurement's wall seconds for a known
amount of work. Seconds per chunk of the one-core run against each island's says whether
an island searched as fast as one core, on the measurement's own (idle) machine, while
this replay may run on any loaded core: it counts work, its own seconds are not used.

Run (one core, niced: the replay is work, not timing)::

    BNSL_BENCH_OUT=workflows/results/benchmarks taskset -c 0 nice -n 10 \\
      python -m workflows.benchmarks.islands_speed \\
      --measurement workflows/results/benchmarks/minobs_two_workers.json \\
      --cache cwebkb --seeds 0 --cpu-seconds 6 --params reach=0

writes ``islands_speed.json`` and ``islands_speed.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

from workflows.benchmarks._common import machine, write_report


class _Spent(Exception):
    """The replay's CPU seconds are spent."""


def replay(cache: Any, rng: Any, params: dict[str, Any], cpu_seconds: float
           ) -> list[tuple[float, int, int]]:
    """(score, iteration, chunks so far) of each incumbent of one memetic search, until
    ``cpu_seconds`` of this process's CPU time."""
    from bnsl_dist.search import Budget
    from bnsl_dist.search.ordering import _window_kernels as window_kernels
    from bnsl_dist.search.ordering.memetic import Memetic, MemeticSearch

    kernel = window_kernels.window_search
    chunks = [0]
    end = time.process_time() + cpu_seconds

    def counted(*args: Any) -> Any:
        if time.process_time() > end:
            raise _Spent
        chunks[0] += 1
        return kernel(*args)

    rows: list[tuple[float, int, int]] = []
    search = MemeticSearch(Memetic(**params), rng)
    with mock.patch.object(window_kernels, "window_search", counted):
        try:
            for inc in search.advance(cache, Budget(seconds=1e9).stopwatch()):
                rows.append((inc.score, inc.iterations, chunks[0]))
        except _Spent:
            pass
    return rows


def speed(rows: list[tuple[float, int, int]], trace: list[list[float]]
          ) -> dict[str, Any]:
    """The replayed incumbents found in the measurement's ``trace`` (elapsed, score, to
    1e-4): its seconds at the first (the start-up in its clock: the first ASOBS pass is
    a few ms of it) and at the last, and its milliseconds per chunk between the first
    after a chunk and the last."""
    at = {round(s, 4): t for t, s in trace}
    hits = [(at[round(s, 4)], s, it, ch) for s, it, ch in rows if round(s, 4) in at]
    out: dict[str, Any] = {"matched": len(hits), "replayed": len(rows)}
    worked = [h for h in hits if h[3] > 0]
    if not worked or worked[-1][3] == worked[0][3]:
        return out
    (t0, _, _, c0), (t, s, it, ch) = worked[0], worked[-1]
    return {**out, "first_seconds": hits[0][0], "seconds": t, "score": s,
            "iterations": it, "chunks": ch, "ms_per_chunk": 1000 * (t - t0) / (ch - c0)}


def measure(measurement: Path, label: str, seeds: list[int], cpu_seconds: float,
            params: dict[str, Any]) -> dict[str, Any]:
    import numpy as np

    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.pipeline import CacheSpec, SearchSpec, learn_cells

    row = json.loads(measurement.read_text())["table"][label]
    cache = read_jkl(row["path"])
    replay(cache, np.random.default_rng(0), params, 0.0)  # the set-up, kernels loaded
    out: list[dict[str, Any]] = []
    for seed in seeds:
        single = [r for r in row["runs"]["memetic"] if r["seed"] == seed][0]
        out.append({"run": f"memetic seed {seed}", **speed(
            replay(cache, np.random.default_rng(seed), params, cpu_seconds),
            single["trace"])})
        print(out[-1], flush=True)
        two = [r for r in row["runs"]["memetic@2"] if r["seed"] == seed][0]
        cells = learn_cells(None, CacheSpec(path=row["path"]),
                            SearchSpec(algorithm="memetic", budget={"seconds": 60}), 2,
                            base_seed=seed)
        for c in cells:
            out.append({"run": f"memetic@2 seed {seed} island {c.seed}", **speed(
                replay(cache, c.rng(), params, cpu_seconds), two["trace"])})
            print(out[-1], flush=True)
    return {"measurement": str(measurement), "cache": label, "seeds": seeds,
            "cpu_seconds": cpu_seconds, "params": params, "runs": out}


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [f"# Speed of each run of {result['measurement']} ({result['cache']})", "",
             "Each run's trajectory replayed (same seeds, memetic "
             f"{result['params'] or 'defaults'}, {result['cpu_seconds']:g} CPU s each), "
             "the window-search chunks counted; the measurement's wall seconds at the last "
             "incumbent matched by score.", "",
             f"Command: `{result['command']}`", "",
             "| run | incumbents matched | first incumbent, s | last matched, s | iteration "
             "| chunks | ms per chunk |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in result["runs"]:
        if "chunks" not in r:
            lines.append(f"| {r['run']} | {r['matched']}/{r['replayed']} | | | | | |")
            continue
        lines.append(f"| {r['run']} | {r['matched']}/{r['replayed']} "
                     f"| {r['first_seconds']:.3f} | {r['seconds']:.3f} "
                     f"| {r['iterations']} | {r['chunks']} | {r['ms_per_chunk']:.2f} |")
    return lines + [""]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--measurement", type=Path, required=True,
                   help="a JSON of workflows.benchmarks.minobs with memetic and memetic@2")
    p.add_argument("--cache", required=True, help="its cache label (e.g. cwebkb)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    p.add_argument("--cpu-seconds", type=float, default=6.0,
                   help="CPU seconds of each replay (within the first exchange)")
    p.add_argument("--params", nargs="*", default=[],
                   help="memetic parameters of the measured code, key=integer")
    p.add_argument("--name", default="islands_speed")
    a = p.parse_args(argv)
    params = {k: int(v) for k, v in (x.split("=", 1) for x in a.params)}
    result = {"machine": machine(), "command": " ".join(["python", "-m",
                                                         "workflows.benchmarks.islands_speed",
                                                         *(argv or sys.argv[1:])]),
              **measure(a.measurement, a.cache, a.seeds, a.cpu_seconds, params)}
    print(write_report(a.name, result, markdown(result)))


if __name__ == "__main__":
    main()
