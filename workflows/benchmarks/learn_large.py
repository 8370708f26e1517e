"""Benchmark: ``bnsl-dist learn`` of a large registered data set on a local cluster —
its wall time against its budgets, and the client's memory.

Issue 15's bar: ``learn r10 --workers 16 --seconds 60 --seconds-per-variable 0.02``
(10,000 variables, N = 5,000) ends within the cache budget (``seconds-per-variable`` x
variables / workers) + the search budget + 15 s, with the client (the command's own
process, not its workers) at no more than 1 GB resident.

The command runs as a child process; its peak resident set is read from
``/proc/PID/status`` (``VmHWM``, the kernel's high-water mark, polled until it exits:
the last poll is at most ``POLL`` seconds before the end); stopped by SIGTERM (a
``timeout``), it writes how long the command had run and its peak so far. The data set is made
available (``fetch``: a recipe is materialised) and the kernels compiled before the
timed run, so neither counts.

Run: ``python -m workflows.benchmarks.learn_large [--data r10] [--workers 16]
[--seconds 60] [--seconds-per-variable 0.02] [--seeds N] [--phases]``; writes
``out/<--name>.json``. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import train_data, write_result
from workflows.benchmarks.peers import CLI, WARM

POLL = 0.1


class Stopped(Exception):
    """This process got SIGTERM."""


def _stop(signum: int, frame: Any) -> None:
    raise Stopped


def _peak_rss_mb(pid: int) -> float | None:
    """The process's peak resident set (VmHWM) in MiB, or None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def run(data: str, workers: int, seconds: float, per_variable: float, seeds: int | None,
        phases: bool = False) -> dict[str, Any]:
    """One timed ``learn``: wall, peak client RSS, its result's score and seconds (and,
    with ``phases``, the wall time of each of its phases: :mod:`._phased`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        env = None
        if phases:
            env = {**os.environ, "BNSL_PHASES_OUT": str(Path(tmp) / "phases.json")}
        head = ["-m", "workflows.benchmarks._phased"] if phases else ["-c", CLI]
        cmd = [sys.executable, *head, "learn", data, "--workers", str(workers),
               "--seconds", f"{seconds:g}", "--seconds-per-variable", f"{per_variable:g}",
               "-q", "-o", str(out)]
        if seeds is not None:
            cmd += ["--seeds", str(seeds)]
        t0 = time.perf_counter()
        err_file = Path(tmp) / "stderr.txt"  # a file, not a pipe: a pipe nobody reads while
        with err_file.open("w") as log:     # the command runs would stop it once full
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env)
            peak = 0.0
            try:
                while proc.poll() is None:
                    rss = _peak_rss_mb(proc.pid)
                    peak = max(peak, rss or 0.0)
                    time.sleep(POLL)
                wall = time.perf_counter() - t0
                signal.signal(signal.SIGTERM, signal.SIG_IGN)  # ended: write what it measured
            except Stopped:  # SIGTERM (e.g. `timeout`): say how far it got, then stop it
                proc.terminate()
                return {"finished": False, "stopped_after_seconds": round(
                    time.perf_counter() - t0, 3), "client_peak_rss_mb": round(peak, 1)}
        if proc.returncode != 0:
            raise RuntimeError(f"learn exited {proc.returncode}: "
                               f"{err_file.read_text().strip()[-2000:]}")
        res = json.loads(out.read_text())
        row = {"finished": True, "wall_seconds": round(wall, 3),
               "client_peak_rss_mb": round(peak, 1), "score": res.get("score"),
               "cache_seconds": (res.get("cache") or {}).get("seconds"),
               "seed_search_seconds": [round(r["seconds"], 3) for r in res.get("runs", [])]}
        if phases:
            row["phases"] = json.loads((Path(tmp) / "phases.json").read_text())
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="r10", help="registered data set (recipes are made)")
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=60.0, help="search budget")
    ap.add_argument("--seconds-per-variable", type=float, default=0.02)
    ap.add_argument("--seeds", type=int, default=None, help="default: one per worker")
    ap.add_argument("--phases", action="store_true",
                    help="also record the wall time of each phase of learn (cluster start, "
                    "cache build, search, write)")
    ap.add_argument("--name", default="learn_large")
    args = ap.parse_args()
    n_vars = train_data(args.data).n_vars
    subprocess.run([sys.executable, "-c", WARM], check=True, capture_output=True)
    budget = args.seconds_per_variable * n_vars / args.workers + args.seconds
    signal.signal(signal.SIGTERM, _stop)  # a stopped run still writes what it measured
    row = run(args.data, args.workers, args.seconds, args.seconds_per_variable, args.seeds,
              args.phases)
    payload = {"settings": vars(args), "n_vars": n_vars,
               "cache_budget_wall_seconds": round(args.seconds_per_variable * n_vars
                                                  / args.workers, 3),
               "budgets_seconds": round(budget, 3), **row}
    if row["finished"]:
        payload["over_budgets"] = round(row["wall_seconds"] - budget, 3)
    print(json.dumps(payload, indent=1))
    print(write_result(args.name, payload))


if __name__ == "__main__":
    main()
