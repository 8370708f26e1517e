"""Benchmark: our searches beside MINOBS on the same caches, one core, same seconds.

MINOBS (Lee & van Beek 2017; the public C++ source, built outside this repository) and
each of our optimizers run alternately, seed by seed, on one core (``taskset -c``), so
that the load of a shared machine falls on both. Both get the same seeds and the same
search seconds, cache loading excluded for both: MINOBS starts its clock after reading
the score file (its cut-off counts from there), ours is given the seconds as the
optimizer's budget after the cache is read and the numba kernels are loaded by a
1-iteration warm-up run in the same process. Start-up (imports, cache reading, the
warm-up's compilation or kernel loading) is timed apart and reported.

Every result is rescored here from the cache by a minimal reader of its own (no
``bnsl_dist`` code): our DAG by summing its families' cached scores (each family must
be in the cache, the graph acyclic); MINOBS's best order within the seconds by giving each
variable its best cached set within its predecessors (the DAG the order stands for); its
trace keeps its own scores (to 1e-6). MINOBS reads its clock between local searches
only and runs past its cut-off (minutes past 10 s on 500+ variables): its process
seconds and its final score are recorded too.

Part ``table`` (the caches of BLIP's independence selection, ``jkl/blip-is``): final
score of each run. Part ``optima`` (small caches with known optima): whether each run
reaches the optimum, and when.

Run (one measurement at a time, one core)::

    BNSL_BENCH_OUT=workflows/results/benchmarks nice -n 0 flock /work/wt/timing.lock \\
      python -m workflows.benchmarks.minobs --minobs /work/peers/minobs/src/search \\
      --tools memetic winasobs-ent --cpu 1 --seeds 0 1 2 --seconds 10

writes ``minobs.json`` and ``minobs.md`` (``--name`` to change).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import SHARED_DATA, write_report

BUNDLED = Path(__file__).resolve().parents[2] / "bnsl_dist" / "_bundled" / "jkl"
TABLE = ["plants", "dna", "book", "cwebkb"]
#: Small caches and their optima ($BNSL_SHARED_DATA/README.md §5: exact DP over each file;
#: the MINOBS-anc ones published with their data).
OPTIMA = {
    "wine.BIC.3": -1258.4459086, "asia_10000.dat.3": -22466.3965465,
    "child-5000.blip": -71542.801,
    "minobs_asia_1000_1.BDeu": -2333.8214091, "minobs_asia_250_1.BDeu": -594.2942017,
    "minobs_cancer_1000_1.BDeu": -2148.4965592, "minobs_cancer_250_1.BDeu": -546.6367816,
    "minobs_earthquake_1000_1.BDeu": -428.7147307,
    "minobs_earthquake_250_1.BDeu": -114.7500201,
    "minobs_sachs_1000_1.BDeu": -7664.0481910, "minobs_sachs_250_1.BDeu": -1970.5675718,
    "minobs_survey_1000_1.BDeu": -4003.6501759, "minobs_survey_250_1.BDeu": -1011.1887092,
}

Families = list[dict[frozenset[int], float]]


def cache_path(name: str) -> Path:
    """``name`` of the table (a blip-is cache) or of :data:`OPTIMA`."""
    if name in OPTIMA:
        shared = SHARED_DATA / "jkl" / f"{name}.jkl.gz"
        return shared if shared.exists() else BUNDLED / f"{name}.jkl.gz"
    return SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz"


def _lines(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [s for s in (line.strip() for line in f) if s and not s.startswith("#")]


def read_families(path: Path) -> Families:
    """A minimal .jkl reader: per variable, {parent set: score}. Variables by index, or
    by name (then numbered in the order of their sections)."""
    lines = _lines(path)
    n = int(lines[0])
    heads: list[tuple[str, int, int]] = []
    i = 1
    for _ in range(n):
        var, count = lines[i].split()
        heads.append((var, i + 1, int(count)))
        i += 1 + int(count)
    names = {var: v for v, (var, _, _) in enumerate(heads)}
    index = int if all(h[0].isdigit() for h in heads) else names.__getitem__
    fams: Families = [{} for _ in range(n)]
    for var, first, k in heads:
        for line in lines[first:first + k]:
            tok = line.split()
            key = frozenset(index(t) for t in tok[2:2 + int(tok[1])])
            fams[index(var)][key] = float(tok[0])
    return fams


def write_plain(fams: Families, path: Path) -> None:
    """The cache as MINOBS reads it: variables by index, no comments."""
    out = [str(len(fams))]
    for v, sets in enumerate(fams):
        out.append(f"{v} {len(sets)}")
        out += [f"{s!r} {len(ps)} " + " ".join(map(str, sorted(ps))) for ps, s in sets.items()]
    path.write_text("\n".join(out) + "\n")


def score_dag(fams: Families, parents: list[list[int]]) -> float:
    """The DAG's score from the cache; ValueError if a family is not cached or a cycle."""
    total = 0.0
    for v, ps in enumerate(parents):
        key = frozenset(ps)
        if key not in fams[v]:
            raise ValueError(f"family of {v} with parents {sorted(ps)} not in the cache")
        total += fams[v][key]
    indeg = [len(ps) for ps in parents]
    kids: list[list[int]] = [[] for _ in parents]
    for v, ps in enumerate(parents):
        for p in ps:
            kids[p].append(v)
    ready = [v for v, d in enumerate(indeg) if d == 0]
    seen = 0
    while ready:
        v = ready.pop()
        seen += 1
        for c in kids[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                ready.append(c)
    if seen != len(parents):
        raise ValueError("the DAG has a cycle")
    return total


def score_order(fams: Families, order: list[int]) -> float:
    """The score of the best DAG consistent with ``order`` (first = no predecessors)."""
    if sorted(order) != list(range(len(fams))):
        raise ValueError("not an order of the cache's variables")
    before: set[int] = set()
    total = 0.0
    for v in order:
        total += max(s for ps, s in fams[v].items() if ps <= before)
        before.add(v)
    return total


def _taskset(cpu: str | None) -> list[str]:
    return ["taskset", "-c", cpu] if cpu else []


def run_minobs(binary: str, plain: Path, seconds: float, seed: int, cpu: str | None,
               fams: Families, tmp: Path) -> dict[str, Any]:
    """One MINOBS run: its trace (ms, rescored order) and the final score."""
    out = tmp / f"minobs-{seed}.out"
    t0 = time.perf_counter()
    subprocess.run([*_taskset(cpu), binary, str(plain), str(seconds), str(seed), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    lines = out.read_text().splitlines()
    body = lines[lines.index("BEST") + 2:]
    # (seconds, its own score: the cache's times -1e6, truncated to an integer)
    trace = [(float(body[i].split()[0]) / 1000.0, -float(body[i].split()[1]) / 1e6)
             for i in range(0, len(body) - 1, 2)]
    # MINOBS checks its clock between local searches only: on large caches it runs far
    # past its cut-off. Its result is its best order found within the seconds.
    within = [i for i, (t, _) in enumerate(trace) if t <= seconds]
    score = None
    if within:
        score = score_order(fams, [int(t) for t in body[2 * within[-1] + 1].split()])
        if abs(score - trace[within[-1]][1]) > 1e-5 * len(fams):
            raise RuntimeError(f"MINOBS: reported {trace[within[-1]][1]}, rescored {score}")
    return {"score": score, "trace": trace, "process_seconds": wall,
            "final_own_score": trace[-1][1]}


def run_ours(algorithm: str, path: Path, seconds: float, seed: int, cpu: str | None,
             fams: Families, tmp: Path) -> dict[str, Any]:
    """One run of ours in a fresh process (:func:`child`); its DAG rescored here."""
    out = tmp / f"ours-{seed}.json"
    t0 = time.perf_counter()
    subprocess.run([*_taskset(cpu), sys.executable, "-m", "workflows.benchmarks.minobs",
                    "--child", algorithm, str(path), str(seconds), str(seed), str(out)],
                   check=True)
    wall = time.perf_counter() - t0
    rec = json.loads(out.read_text())
    score = score_dag(fams, rec.pop("parents"))
    if abs(score - rec["trace"][-1][1]) > 1e-6 * max(1.0, abs(score)):
        raise RuntimeError(f"{algorithm}: reported {rec['trace'][-1][1]}, rescored {score}")
    return {"score": score, **rec, "process_seconds": wall}


def child(algorithm: str, path: str, seconds: float, seed: int, out: str) -> None:
    """Our side of a run: start-up timed apart, then ``seconds`` of search."""
    t0 = time.perf_counter()
    import numpy as np

    from bnsl_dist._io import atomic_write_text
    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.search import Budget, make_optimizer

    t1 = time.perf_counter()
    cache = read_jkl(path)
    cache.flat  # noqa: B018  (the flattened arrays every search reads)
    t2 = time.perf_counter()
    for _ in make_optimizer(algorithm).run(cache, Budget(max_iterations=1),
                                           np.random.default_rng(seed)):
        pass
    t3 = time.perf_counter()
    incs = list(make_optimizer(algorithm).run(cache, Budget(seconds=seconds),
                                              np.random.default_rng(seed)))
    t4 = time.perf_counter()
    atomic_write_text(Path(out), json.dumps({
        "imports_seconds": t1 - t0, "load_seconds": t2 - t1, "warm_up_seconds": t3 - t2,
        "search_seconds": t4 - t3, "trace": [(i.elapsed, i.score) for i in incs],
        "parents": [list(map(int, ps)) for ps in incs[-1].dag.parents]}))


def measure(names: list[str], tools: list[str], minobs: str, seconds: float,
            seeds: list[int], cpu: str | None) -> dict[str, Any]:
    """Every (cache, seed, tool) run, the tools alternating within each seed."""
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for name in names:
            path = cache_path(name)
            fams = read_families(path)
            plain = tmp / f"{name}.jkl"
            write_plain(fams, plain)
            runs: dict[str, list[dict[str, Any]]] = {t: [] for t in ["minobs", *tools]}
            for seed in seeds:
                for tool in runs:
                    load = os.getloadavg()[0]
                    rec = (run_minobs(minobs, plain, seconds, seed, cpu, fams, tmp)
                           if tool == "minobs"
                           else run_ours(tool, path, seconds, seed, cpu, fams, tmp))
                    runs[tool].append({"seed": seed, "load_average": load, **rec})
                    print(f"{name} {tool} seed {seed}: {rec['score']} "
                          f"({rec['process_seconds']:.1f} s)", flush=True)
            rows[name] = {"n": len(fams), "runs": runs, "median": {
                t: (statistics.median(r["score"] for r in rs)
                    if all(r["score"] is not None for r in rs) else None)
                for t, rs in runs.items()}}
    return rows


def _reached(trace: list[Any], optimum: float) -> float | None:
    return next((float(t) for t, s in trace if s >= optimum - 1e-6 * abs(optimum)), None)


def markdown(result: dict[str, Any]) -> list[str]:
    tools = ["minobs", *result["tools"]]
    s = result["seconds"]
    lines = [f"# MINOBS and ours, {s:g} s of search, one core (cpu {result['cpu']})", "",
             f"Seeds {result['seeds']}; medians; every DAG rescored from the cache. "
             f"{result['note']}", ""]
    if result["table"]:
        lines += ["| cache (vars) | " + " | ".join(tools) + " |",
                  "|---|" + "---:|" * len(tools)]
        for name, row in result["table"].items():
            top = max(m for m in row["median"].values() if m is not None)
            cells = ["none" if row["median"][t] is None else f"{row['median'][t]:,.2f}"
                     for t in tools]
            cells = [f"**{c}**" if row["median"][t] == top else c
                     for c, t in zip(cells, tools, strict=True)]
            lines.append(f"| {name} ({row['n']}) | " + " | ".join(cells) + " |")
        lines += ["", "MINOBS's process seconds (it reads the clock between local "
                  "searches only) and its final score past the cut-off, medians: " + "; ".join(
                      f"{name} {statistics.median(r['process_seconds'] for r in rs):.1f} s, "
                      f"{statistics.median(r['final_own_score'] for r in rs):,.2f}"
                      for name, row in result["table"].items()
                      for rs in [row["runs"]["minobs"]]) + ".", ""]
    if result["optima"]:
        o_tools = ["minobs", *result["optima_tools"]]
        lines += [f"Known optima, {result['optima_seconds']:g} s of search:", "",
                  "| cache (vars) | optimum | " + " | ".join(
            f"{t}: runs at optimum, slowest s" for t in o_tools) + " |",
                  "|---|---:|" + "---:|" * len(o_tools)]
        for name, row in result["optima"].items():
            cells = []
            for t in row["runs"]:
                times = [_reached(r["trace"], OPTIMA[name]) for r in row["runs"][t]]
                hit = [x for x in times if x is not None]
                cells.append(f"{len(hit)}/{len(times)}, "
                             f"{max(hit):.2f}" if hit else f"0/{len(times)}")
            lines.append(f"| {name} ({row['n']}) | {OPTIMA[name]:,.4f} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    ours = [r for part in ("table", "optima") for row in result[part].values()
            for t, rs in row["runs"].items() if t != "minobs" for r in rs]
    if ours:
        lines.append("Our start-up per process, medians: " + ", ".join(
            f"{k.replace('_seconds', '')} {statistics.median(r[k] for r in ours):.2f} s"
            for k in ("imports_seconds", "load_seconds", "warm_up_seconds")) + "; process "
            f"{statistics.median(r['process_seconds'] - r['search_seconds'] for r in ours):.2f}"
            " s beyond the search.")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], float(argv[3]), int(argv[4]), argv[5])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minobs", required=True, help="path of a MINOBS binary (search)")
    p.add_argument("--tools", nargs="+", default=["memetic"], help="our optimizers")
    p.add_argument("--caches", nargs="*", default=TABLE)
    p.add_argument("--optima", nargs="*", default=list(OPTIMA))
    p.add_argument("--optima-tools", nargs="+", default=["memetic"],
                   help="our optimizers on the known-optimum caches")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--optima-seconds", type=float, default=1.0)
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--cpu", default="1", help="taskset CPU list ('' for none)")
    p.add_argument("--note", default="Measured on a 2-core machine shared with other "
                   "jobs (load average per run in the JSON).")
    p.add_argument("--name", default="minobs")
    a = p.parse_args(argv)
    bad = [c for c in a.optima if c not in OPTIMA]
    if bad:
        p.error(f"--optima: no known optimum for {bad}")
    if not Path(a.minobs).is_file():
        p.error(f"--minobs: {a.minobs} is not a file")
    cpu = a.cpu or None
    result = {"seconds": a.seconds, "optima_seconds": a.optima_seconds, "seeds": a.seeds,
              "cpu": cpu, "tools": a.tools, "optima_tools": a.optima_tools, "note": a.note,
              "minobs": a.minobs,
              "table": {}, "optima": {}}
    for part, names, tools, seconds in (("table", a.caches, a.tools, a.seconds),
                                        ("optima", a.optima, a.optima_tools,
                                         a.optima_seconds)):
        result[part] = measure(names, tools, a.minobs, seconds, a.seeds, cpu)
        print(write_report(a.name, result, markdown(result)))  # each part when done


if __name__ == "__main__":
    main()
