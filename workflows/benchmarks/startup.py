"""Benchmark: where the seconds of ``bnsl-dist learn CACHE --seconds S`` go.

A search of S seconds from a stored cache (``learn`` takes a ``.jkl`` as its source and
a search budget in seconds; ``--time-limit`` builds its own cache from data and refuses
one) is a longer process: the interpreter and the imports, the command's set-up (the
CLI, the specs, a local Dask cluster without ``--serial``), reading the cache, the
kernels' warm-up (compiled, or loaded from numba's disk cache), the search's per-cache
derivation (:func:`bnsl_dist.search.ordering.memetic.prepare`), the search, writing the
result, and the interpreter's exit. Each run is a fresh process (pinned with
``taskset``) running the CLI with timers around those functions; the process's own wall
and CPU seconds and each phase's are recorded (CPU seconds are what a machine shared with
other jobs does not distort). ``--modes cluster`` runs ``learn`` on its default local
cluster instead: the cache is then read and searched in the workers, and the phases
seen from the command are the cluster's start and close.

Run (cpu 0 of the development machine)::

    BNSL_BENCH_OUT=workflows/results/benchmarks nice -n 10 python -m \\
      workflows.benchmarks.startup --cpu 0 \\
      --caches c20ng=/work/runs/minobs-caches/c20ng.train.bic.jkl.gz cwebkb

writes ``startup.json`` and ``startup.md`` (``--name`` to change).
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import cache_path, write_report

#: The phases, in the order of a run; "set-up" is what the command does between them.
PHASES = ["interpreter", "imports", "set-up", "read", "warm-up", "prepare", "search",
          "write", "exit"]


class _Clock:
    """Wall and CPU seconds spent inside the timed functions, per phase."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def add(self, phase: str, wall: float, cpu: float) -> None:
        self.wall[phase] = self.wall.get(phase, 0.0) + wall
        self.cpu[phase] = self.cpu.get(phase, 0.0) + cpu

    def timed(self, phase: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            w, c = time.time(), time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.add(phase, time.time() - w, time.process_time() - c)
        return wrapper


def child(out: str, argv: list[str]) -> None:
    """Run ``bnsl-dist learn`` (``argv``) in this process with the phases timed; write
    the record to ``out`` at exit (atexit: after the command, before the interpreter's
    teardown)."""
    import atexit

    w0, c0 = time.time(), time.process_time()
    from bnsl_dist.cli import main

    clock = _Clock()
    clock.add("imports", time.time() - w0, time.process_time() - c0)
    import bnsl_dist.cache.jkl as jkl
    import bnsl_dist.cli.learn as learn
    import bnsl_dist.orchestrate.cluster as cluster
    import bnsl_dist.search.ordering.memetic as memetic
    import bnsl_dist.search.warmup as warmup

    for module, name, phase in ((jkl, "read_jkl", "read"), (warmup, "warm_up", "warm-up"),
                                (memetic, "_derive", "prepare"),
                                (learn, "write_result", "write")):
        setattr(module, name, clock.timed(phase, getattr(module, name)))
    search_run = memetic.Memetic.run

    def run(self: Any, *args: Any) -> Any:  # the search, less a derivation inside it
        w, c = time.time(), time.process_time()
        before = dict(clock.wall), dict(clock.cpu)
        n = yield from search_run(self, *args)
        clock.add("search", time.time() - w - (clock.wall.get("prepare", 0.0)
                                               - before[0].get("prepare", 0.0)),
                  time.process_time() - c - (clock.cpu.get("prepare", 0.0)
                                             - before[1].get("prepare", 0.0)))
        return n

    setattr(memetic.Memetic, "run", run)  # noqa: B010
    connect = cluster.connect

    class _Connect:  # the local cluster's start (enter) and close (exit), timed
        def __init__(self, **kw: Any) -> None:
            self.cm = connect(**kw)

        def __enter__(self) -> Any:
            return clock.timed("cluster start", self.cm.__enter__)()

        def __exit__(self, *exc: Any) -> Any:
            return clock.timed("cluster close", self.cm.__exit__)(*exc)

    setattr(cluster, "connect", _Connect)  # noqa: B010

    def record() -> None:
        Path(out).write_text(json.dumps({
            "start": w0, "end": time.time(), "cpu_end": time.process_time(),
            "wall": clock.wall, "cpu": clock.cpu}))

    atexit.register(record)
    main(["learn", *argv], prog_name="bnsl-dist")


def run_once(path: Path, seconds: float, mode: str, cpu: str | None,
             tmp: Path) -> dict[str, Any]:
    """One fresh process of ``learn``; its phases (wall and CPU seconds)."""
    rec_path, result = tmp / "phases.json", tmp / "result.json"
    rec_path.unlink(missing_ok=True)
    argv = [str(path), "--seconds", f"{seconds:g}", "-q", "-o", str(result),
            *(["--serial"] if mode == "serial" else [])]
    taskset = ["taskset", "-c", cpu] if cpu else []
    t0 = time.time()
    subprocess.run([*taskset, sys.executable, "-m", "workflows.benchmarks.startup",
                    "--child", str(rec_path), *argv], check=True)
    t1 = time.time()
    rec = json.loads(rec_path.read_text())
    wall, cpu_s = rec["wall"], rec["cpu"]
    wall["interpreter"] = rec["start"] - t0
    wall["exit"] = t1 - rec["end"]
    total = t1 - t0
    named = sum(v for k, v in wall.items() if k != "set-up")
    wall["set-up"] = total - named
    cpu_s["set-up"] = rec["cpu_end"] - sum(cpu_s.values())
    score = json.loads(result.read_text())["score"]
    return {"process_seconds": total, "wall": wall, "cpu": cpu_s, "score": score}


def markdown(result: dict[str, Any]) -> list[str]:
    lines = [f"# Start-up of `learn CACHE --seconds {result['seconds']:g}` (cpu "
             f"{result['cpu']})", "",
             "Wall seconds per phase of one fresh process (CPU seconds of the command's "
             "own process in brackets; the interpreter's start and exit are wall only). "
             f"{result['note']}", "", "Command: `" + result["command"] + "`", ""]
    for mode in result["modes"]:
        rows = {k: v for k, v in result["runs"].items() if v.get(mode)}
        if not rows:
            continue
        phases = [p for p in [*PHASES, "cluster start", "cluster close"]
                  if any(p in r[mode]["wall"] for r in rows.values())]
        lines += [f"## `learn {'--serial' if mode == 'serial' else '(local cluster)'}`",
                  "", "| cache (vars, sets) | process | " + " | ".join(phases) + " |",
                  "|---|---:|" + "---:|" * len(phases)]
        for name, r in rows.items():
            m = r[mode]
            cells = [f"{m['wall'][p]:.2f}" + (f" ({m['cpu'][p]:.2f})" if p in m["cpu"]
                                              else "") if p in m["wall"] else "-"
                     for p in phases]
            lines.append(f"| {name} ({r['n']}, {r['sets']:,}) | {m['process_seconds']:.2f}"
                         " | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--caches", nargs="+", default=["cwebkb"],
                   help="blip-is cache names, or NAME=PATH")
    p.add_argument("--seconds", type=float, default=10.0, help="the search's budget")
    p.add_argument("--modes", nargs="+", choices=["serial", "cluster"], default=["serial"])
    p.add_argument("--cpu", default="0", help="taskset CPU list ('' for none)")
    p.add_argument("--note", default="Measured on a 2-core machine shared with other jobs.")
    p.add_argument("--name", default="startup")
    a = p.parse_args(argv)
    caches = [cache_path(c) for c in a.caches]
    missing = [str(path) for _, path in caches if not path.is_file()]
    if missing:
        p.error(f"--caches: no such file {missing}")
    result: dict[str, Any] = {
        "seconds": a.seconds, "cpu": a.cpu or None, "modes": a.modes, "note": a.note,
        "command": " ".join(["python -m workflows.benchmarks.startup",
                             *map(shlex.quote, argv)]), "runs": {}}
    with tempfile.TemporaryDirectory() as d:
        for label, path in caches:
            from bnsl_dist.cache.jkl import read_jkl

            c = read_jkl(path)
            row = result["runs"][label] = {"n": c.n_vars, "sets": int(c.offsets[-1]),
                                           "path": str(path)}
            del c
            for mode in a.modes:
                row[mode] = run_once(path, a.seconds, mode, a.cpu or None, Path(d))
                print(label, mode, json.dumps(row[mode]), flush=True)
                print(write_report(a.name, result, markdown(result)), flush=True)


if __name__ == "__main__":
    main()
