"""Benchmark: our searches beside MINOBS on the same caches, one core, same seconds.

MINOBS (Lee & van Beek 2017; the public C++ source, built outside this repository) and
each of our optimizers run alternately, seed by seed, on one core (``taskset -c``), so
that the load of a shared machine falls on both. Seed ``S`` is ours: the stream of
``learn --seed S``'s first seed, which is also island 0 of an ``ALGORITHM@N`` run of seed
``S`` (:func:`learn_stream`); MINOBS gets ``S + 1`` (:func:`minobs_seed`: its seeds 0
and 1 are one run). Both get the same search seconds, cache loading
excluded for both: MINOBS starts its clock after reading the score file, ours is given
the seconds as the optimizer's budget after the cache is read, the numba kernels are
loaded by the warm-up ``learn`` runs (on a toy cache) and the search's per-cache arrays
are derived, in the same process. Start-up (imports, cache
reading, the warm-up's compilation or kernel loading, the derivation) is timed apart and
reported.

Several budgets (``--seconds 10 60``) are measured by one run per seed and tool at the
largest: a tool's result at ``b`` seconds is its best within its first ``b`` seconds.
Neither search depends on its budget other than by stopping (MINOBS reads its clock
between generations only, ours between local searches and window moves), so that is the
result a run of ``b`` seconds gives.

Every result is rescored here from the cache by a minimal reader of its own (no
``bnsl_dist`` code): our DAG by summing its families' cached scores (each family must
be in the cache, the graph acyclic); MINOBS's best order within the seconds by giving each
variable its best cached set within its predecessors (the DAG the order stands for); its
trace keeps its own scores (to 1e-6). MINOBS runs past its cut-off (it checks the clock
only between generations; its initial population alone takes minutes on 800+
variables) and writes its trace only when it ends: a binary that also appends each new
best to ``$MINOBS_TRACE`` as it finds it (a local change of ``ResultRegister::record``,
the search unchanged) can be stopped at ``--minobs-stop`` seconds and keeps its trace;
with an unchanged binary the run waits for MINOBS to end.

Part ``table`` (the caches of BLIP's independence selection, ``jkl/blip-is``, or
``NAME=PATH`` for others): score of each run at each budget. Part ``optima`` (small
caches with known optima): whether each run reaches the optimum, and when.

Run (one measurement at a time, one core)::

    BNSL_BENCH_OUT=workflows/results/benchmarks nice -n 0 flock /work/wt/timing.lock \\
      python -m workflows.benchmarks.minobs --minobs /work/peers/minobs/src/search \\
      --tools memetic --cpu 1 --seeds 0 1 2 3 4 --seconds 10 60

writes ``minobs.json`` and ``minobs.md`` (``--name`` to change), after every cache.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workflows.benchmarks._common import SHARED_DATA, write_report
from workflows.benchmarks._common import cache_path as _named_cache

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


def cache_path(name: str) -> tuple[str, Path]:
    """``name`` of the table (a blip-is cache), of :data:`OPTIMA`, or ``NAME=PATH``."""
    if name in OPTIMA:
        shared = SHARED_DATA / "jkl" / f"{name}.jkl.gz"
        return name, shared if shared.exists() else BUNDLED / f"{name}.jkl.gz"
    return _named_cache(name)


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


def _at(trace: list[Any], budgets: list[float]) -> dict[str, int | None]:
    """Per budget, the index of the last trace entry within it (None if none)."""
    return {f"{b:g}": next((i for i in range(len(trace) - 1, -1, -1)
                            if trace[i][0] <= b), None) for b in budgets}


def minobs_seed(seed: int) -> int:
    """The seed MINOBS is given for the benchmark's ``seed``: ``seed + 1``. MINOBS seeds
    C's ``rand`` with ``srand(seed)``, and glibc's ``srand`` takes 0 for 1, so seeds 0
    and 1 were one run (every table before this change counted that run twice)."""
    return seed + 1


def run_minobs(binary: str, plain: Path, budgets: list[float], seed: int,
               cpu: str | None, stop: float | None, fams: Families,
               tmp: Path) -> dict[str, Any]:
    """One MINOBS run at the largest budget, given the seed ``minobs_seed(seed)``: its
    trace (s, rescored order), its score at each budget; stopped at ``stop`` seconds
    (read from ``$MINOBS_TRACE`` then)."""
    out, live = tmp / f"minobs-{seed}.out", tmp / f"minobs-{seed}.trace"
    for f in (out, live):
        f.unlink(missing_ok=True)
    t0 = time.perf_counter()
    stopped = False
    try:
        subprocess.run([*_taskset(cpu), binary, str(plain), f"{max(budgets):g}",
                        str(minobs_seed(seed)), str(out)], check=True,
                       stdout=subprocess.DEVNULL, timeout=stop,
                       env={**os.environ, "MINOBS_TRACE": str(live)})
    except subprocess.TimeoutExpired:
        stopped = True
    wall = time.perf_counter() - t0
    if out.exists():
        lines = out.read_text().splitlines()
        body = lines[lines.index("BEST") + 2:]
    else:
        body = live.read_text().splitlines() if live.exists() else []
    # (seconds, its own score: the cache's times -1e6, truncated to an integer)
    trace = [(float(body[i].split()[0]) / 1000.0, -float(body[i].split()[1]) / 1e6)
             for i in range(0, len(body) - 1, 2)]
    at: dict[str, float | None] = {}
    for b, i in _at(trace, budgets).items():
        at[b] = None
        if i is not None:
            at[b] = score_order(fams, [int(t) for t in body[2 * i + 1].split()])
            if abs(at[b] - trace[i][1]) > 1e-5 * len(fams):  # type: ignore[operator]
                raise RuntimeError(f"MINOBS: reported {trace[i][1]}, rescored {at[b]}")
    return {"at": at, "trace": trace, "process_seconds": wall, "stopped": stopped,
            "final_own_score": trace[-1][1] if trace else None,
            "minobs_seed": minobs_seed(seed)}


def run_ours(algorithm: str, path: Path, budgets: list[float], seed: int,
             cpu: str | None, fams: Families, tmp: Path) -> dict[str, Any]:
    """One run of ours in a fresh process (:func:`child`); its DAGs rescored here."""
    out = tmp / f"ours-{seed}.json"
    t0 = time.perf_counter()
    subprocess.run([*_taskset(cpu), sys.executable, "-m", "workflows.benchmarks.minobs",
                    "--child", algorithm, str(path), ",".join(f"{b:g}" for b in budgets),
                    str(seed), str(out)], check=True)
    wall = time.perf_counter() - t0
    rec = json.loads(out.read_text())
    at: dict[str, float | None] = {}
    for b, parents in rec.pop("parents").items():
        i = rec["at_index"][b]
        at[b] = None if parents is None else score_dag(fams, parents)
        if at[b] is not None and abs(at[b] - rec["trace"][i][1]) > 1e-6 * max(
                1.0, abs(at[b])):  # type: ignore[arg-type]
            raise RuntimeError(f"{algorithm}: reported {rec['trace'][i][1]}, "
                               f"rescored {at[b]}")
    return {"at": at, **rec, "process_seconds": wall}


def run_parallel(tool: str, path: Path, budgets: list[float], seed: int, cpus: str,
                 fams: Families, tmp: Path) -> dict[str, Any]:
    """``ALGORITHM@N``: ``bnsl-dist learn`` with N seeds (spawned from ``seed``) on a local
    cluster of N workers, pinned to ``cpus``: each seed searches the largest budget (the
    seeds of ``memetic`` as islands exchanging their best orders), the best over the
    seeds at each budget (its checkpoints) rescored here. The seconds are wall seconds
    from when the seeds start on the ready workers: the cluster's start and the kernels'
    loading are outside them, as the one-core runs' start-up is."""
    algorithm, workers = tool.split("@")
    out = tmp / f"learn-{seed}.json"
    t0 = time.perf_counter()
    subprocess.run([*_taskset(cpus), sys.executable, "-c",
                    "from bnsl_dist.cli import main; main()", "learn", str(path),
                    "-a", algorithm, "--seconds", f"{max(budgets):g}", "--seeds", workers,
                    "--workers", workers, "--seed", str(seed), "--checkpoints",
                    ",".join(f"{b:g}" for b in budgets), "-q", "-o", str(out)], check=True)
    wall = time.perf_counter() - t0
    rec = json.loads(out.read_text())
    at: dict[str, float | None] = {}
    for c in rec["checkpoints"]:
        b, dag = f"{c['budget']:g}", c["dag"]
        if dag is None:
            at[b] = None
            continue
        index = {name: int(name) if name.isdigit() else i
                 for i, name in enumerate(dag["nodes"])}
        at[b] = score = score_dag(fams, [[index[q] for q in dag["parents"][name]]
                                         for name in dag["nodes"]])
        if abs(score - c["score"]) > 1e-6 * max(1.0, abs(score)):
            raise RuntimeError(f"{tool}: reported {c['score']}, rescored {score}")
    trace = sorted((i["elapsed"], i["score"]) for r in rec["runs"] for i in r["incumbents"])
    return {"at": at, "trace": trace, "process_seconds": wall,
            "search_seconds": max(r["seconds"] for r in rec["runs"]),
            "iterations": [r["iterations"] for r in rec["runs"]], "workers": int(workers)}


def learn_stream(algorithm: str, seed: int) -> Any:
    """The generator of ``bnsl-dist learn CACHE -a ALGORITHM --seed SEED``'s first seed
    (the one seed of a serial run, island 0 of ``--seeds N``): a one-core run and an
    ``ALGORITHM@N`` run of one seed share their first stream, so that the second compares
    what the other workers add, not two draws (its stream depends on neither the cache's
    path nor the budget)."""
    from bnsl_dist.pipeline.learn import learn_cells
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec

    search = SearchSpec(algorithm=algorithm, budget={"iterations": 1})
    return learn_cells(None, CacheSpec(path="cache.jkl"), search, 1,
                       base_seed=seed)[0].rng()


def child(algorithm: str, path: str, budgets: list[float], seed: int, out: str) -> None:
    """Our side of a run, its start-up timed as ``learn`` pays it: imports; reading the
    cache; the kernels compiled or loaded by the product's warm-up
    (:func:`~bnsl_dist.search.warmup.warm_up`: two iterations on a toy cache); the
    per-cache derivation (:func:`~bnsl_dist.search.ordering.memetic.prepare`, the flat
    arrays for another optimizer); then the largest budget's search, the incumbent at
    each budget kept."""
    t0 = time.perf_counter()
    from bnsl_dist._io import atomic_write_text
    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.search import Budget, make_optimizer
    from bnsl_dist.search.base import AnytimeTrace
    from bnsl_dist.search.ordering.memetic import prepare
    from bnsl_dist.search.warmup import algorithm_spec, warm_up

    rng = learn_stream(algorithm, seed)  # its imports are learn's
    t1 = time.perf_counter()
    cache = read_jkl(path)
    t2 = time.perf_counter()
    problems = warm_up(algorithms=[algorithm_spec(algorithm)])
    if problems:
        raise RuntimeError(f"warm-up: {problems}")
    t3 = time.perf_counter()
    if algorithm == "memetic":
        prepare(cache)
    else:
        cache.flat  # noqa: B018  (the flattened arrays every search reads)
    t4 = time.perf_counter()
    run = AnytimeTrace.collect(make_optimizer(algorithm).run(  # with its iterations
        cache, Budget(seconds=max(budgets)), rng))
    incs, iterations = run.incumbents, run.total_iterations
    t5 = time.perf_counter()
    trace = [(i.elapsed, i.score) for i in incs]
    at = _at(trace, budgets)
    atomic_write_text(Path(out), json.dumps({
        "imports_seconds": t1 - t0, "load_seconds": t2 - t1, "warm_up_seconds": t3 - t2,
        "prepare_seconds": t4 - t3, "warm_up": "toy", "search_seconds": t5 - t4,
        "iterations": iterations, "trace": trace, "at_index": at,
        "parents": {b: None if i is None else [list(map(int, ps))
                                               for ps in incs[i].dag.parents]
                    for b, i in at.items()}}))


def measure(names: list[str], tools: list[str], minobs: str, budgets: list[float],
            seeds: list[int], cpu: str | None, stop: float | None,
            done: Callable[[dict[str, Any]], None],
            parallel_cpus: str = "0,1", earlier: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """Every (seed, cache, tool) run, seed by seed (so that an interrupted run has its
    first seeds on every cache), the tools alternating; ``done(rows)`` after each cache.
    The runs of ``earlier`` (rows of an interrupted run, same budgets) are kept, not run
    again, but for MINOBS's runs given the seed itself (before :func:`minobs_seed`)."""
    rows: dict[str, Any] = {}
    caches = [cache_path(name) for name in names]
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        fams_of: dict[str, Families] = {}
        for label, path in caches:
            fams_of[label] = read_families(path)
            write_plain(fams_of[label], tmp / f"{label}.jkl")
            rows[label] = {"n": len(fams_of[label]), "path": str(path),
                           "runs": {t: [] for t in ["minobs", *tools]}, "median": {}}
            for t, rs in ((earlier or {}).get(label) or {}).get("runs", {}).items():
                if t in rows[label]["runs"]:
                    rows[label]["runs"][t] = [r for r in rs if r["seed"] in seeds and (
                        t != "minobs" or "minobs_seed" in r)]
        for seed in seeds:
            for label, path in caches:
                fams, row = fams_of[label], rows[label]
                for tool, runs in row["runs"].items():
                    if any(r["seed"] == seed for r in runs):
                        continue
                    load = os.getloadavg()[0]
                    rec = (run_minobs(minobs, tmp / f"{label}.jkl", budgets, seed, cpu,
                                      stop, fams, tmp)
                           if tool == "minobs"
                           else run_parallel(tool, path, budgets, seed, parallel_cpus,
                                             fams, tmp) if "@" in tool
                           else run_ours(tool, path, budgets, seed, cpu, fams, tmp))
                    runs.append({"seed": seed, "load_average": load, **rec})
                    print(f"{label} {tool} seed {seed}: {rec['at']} "
                          f"({rec['process_seconds']:.1f} s)", flush=True)
                row["median"] = {f"{b:g}": {t: _median([r["at"][f"{b:g}"] for r in rs])
                                            for t, rs in row["runs"].items()}
                                 for b in budgets}
                done(rows)
    return rows


def _median(xs: list[float | None]) -> float | None:
    """The median, a run without a result counting as the worst (None if half are)."""
    if not xs:
        return None
    ranked = sorted(xs, key=lambda x: -math.inf if x is None else x)
    lo, hi = ranked[(len(ranked) - 1) // 2], ranked[len(ranked) // 2]
    return None if lo is None or hi is None else (lo + hi) / 2


def _reached(trace: list[Any], optimum: float) -> float | None:
    return next((float(t) for t, s in trace if s >= optimum - 1e-6 * abs(optimum)), None)


def markdown(result: dict[str, Any]) -> list[str]:
    tools = ["minobs", *result["tools"]]
    lines = [f"# MINOBS and ours, one core (cpu {result['cpu']})", "",
             f"Seeds {result['seeds']}; medians (a run without a result counts as the "
             "worst); every DAG rescored from the cache. Each tool runs once per seed at "
             f"{max(result['budgets']):g} s; its result at b s is its best within its "
             f"first b s. {result['note']}", ""]
    if any("minobs_seed" in r for part in ("table", "optima")
           for row in result[part].values() for r in row["runs"].get("minobs", [])):
        lines += ["MINOBS is given seed S + 1 for seed S (glibc's `srand` takes 0 for 1: "
                  "given as they are, seeds 0 and 1 are one run).", ""]
    if result["cache_note"]:
        lines += [result["cache_note"], ""]
    if result["command"]:
        lines += ["Command: `" + result["command"] + "`", ""]
    table = result["table"]
    for b in (f"{x:g}" for x in result["budgets"]):
        if not table:
            break
        lines += [f"## {b} s of search", "",
                  "| cache (vars) | seeds | " + " | ".join(tools) + " | " + " | ".join(
                      f"{t} − minobs" for t in tools[1:]) + " |",
                  "|---|---:|" + "---:|" * (2 * len(tools) - 1)]
        for name, row in table.items():
            med = row["median"].get(b, {})
            done = min(len(rs) for rs in row["runs"].values())
            if not done:
                continue
            found = [m for m in med.values() if m is not None]
            top = max(found) if found else None
            cells = ["none" if med.get(t) is None else f"{med[t]:,.2f}" for t in tools]
            cells = [f"**{c}**" if _same(med.get(t), top) else c
                     for c, t in zip(cells, tools, strict=True)]
            diffs = ["n/a" if med.get(t) is None or med.get("minobs") is None
                     else "0" if _same(med[t], med["minobs"])
                     else f"{med[t] - med['minobs']:+,.2f}" for t in tools[1:]]
            lines.append(f"| {name} ({row['n']}) | {done} | " + " | ".join(cells + diffs)
                         + " |")
        lines.append("")
    if table:
        lines += ["MINOBS per cache, medians: seconds to its first order; process seconds "
                  "(runs stopped at the cut-off + margin); its last score past the "
                  "cut-off. " + "; ".join(
                      f"{name} {_med_opt([r['trace'][0][0] if r['trace'] else None for r in rs])}"
                      f" s, {statistics.median(r['process_seconds'] for r in rs):.1f} s "
                      f"({sum(r['stopped'] for r in rs)}/{len(rs)} stopped), "
                      f"{_med_opt([r['final_own_score'] for r in rs], ',.2f')}"
                      for name, row in table.items()
                      for rs in [row["runs"]["minobs"]] if rs) + ".", ""]
    if result["optima"]:
        o_tools = ["minobs", *result["optima_tools"]]
        lim = result["optima_seconds"]
        lines += [f"Known optima, {lim:g} s of search:", "",
                  "| cache (vars) | optimum | " + " | ".join(
            f"{t}: runs at optimum, slowest s" for t in o_tools) + " |",
                  "|---|---:|" + "---:|" * len(o_tools)]
        for name, row in result["optima"].items():
            cells = []
            for t in row["runs"]:
                times = [_reached(r["trace"], OPTIMA[name]) for r in row["runs"][t]]
                hit = [x for x in times if x is not None and x <= lim]
                cells.append(f"{len(hit)}/{len(times)}, "
                             f"{max(hit):.2f}" if hit else f"0/{len(times)}")
            lines.append(f"| {name} ({row['n']}) | {OPTIMA[name]:,.4f} | "
                         + " | ".join(cells) + " |")
        lines.append("")
    ours = [r for part in ("table", "optima") for row in result[part].values()
            for t, rs in row["runs"].items() if t != "minobs" and "@" not in t for r in rs]
    if ours:
        # runs before "warm_up": "toy" warmed up by one iteration on the real cache, its
        # per-cache derivation (no "prepare_seconds") inside that iteration
        keys = ["imports_seconds", "load_seconds", "warm_up_seconds"] + (
            ["prepare_seconds"] if all("prepare_seconds" in r for r in ours) else [])
        how = ("kernels on a toy cache, as learn" if all(r.get("warm_up") == "toy"
                                                         for r in ours)
               else "one iteration on the cache")
        lines.append("Our start-up per process, medians: " + ", ".join(
            f"{k.replace('_seconds', '')} {statistics.median(r[k] for r in ours):.2f} s"
            for k in keys) + f" (warm-up: {how}); process "
            f"{statistics.median(r['process_seconds'] - r['search_seconds'] for r in ours):.2f}"
            " s beyond the search.")
    counted: dict[tuple[str, str], list[int]] = {}
    for label, row in result["table"].items():
        for t, rs in row["runs"].items():
            for r in rs:
                its = r.get("iterations")  # per seed of an @N tool
                if t != "minobs" and its is not None:
                    counted.setdefault((label, t), []).extend(
                        its if isinstance(its, list) else [its])
    if counted:  # a run's speed: local searches (one per iteration) in the largest budget
        lines += ["", f"Iterations (local searches) in {max(result['budgets']):g} s, "
                  "medians per seed: " + "; ".join(
                      f"{label} {t} {statistics.median(its):g}"
                      for (label, t), its in counted.items()) + ".", ""]
    return lines


def _same(x: float | None, y: float | None) -> bool:
    """Equal up to the rounding of two sums in different orders."""
    return x is not None and y is not None and abs(x - y) <= 1e-9 * max(1.0, abs(y))


def _med_opt(xs: list[float | None], fmt: str = ".1f") -> str:
    m = _median(xs)
    return "none" if m is None else format(m, fmt)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[2], [float(b) for b in argv[3].split(",")], int(argv[4]),
              argv[5])
        return
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--minobs", required=True, help="path of a MINOBS binary (search)")
    p.add_argument("--tools", nargs="+", default=["memetic"],
                   help="our optimizers; ALGORITHM@N: N seeds on N local Dask workers "
                   "(bnsl-dist learn), pinned to --parallel-cpus")
    p.add_argument("--parallel-cpus", default="0,1", help="taskset CPU list of @N tools")
    p.add_argument("--caches", nargs="*", default=TABLE,
                   help="blip-is cache names, or NAME=PATH")
    p.add_argument("--cache-note", default="", help="how the NAME=PATH caches were built")
    p.add_argument("--optima", nargs="*", default=list(OPTIMA))
    p.add_argument("--optima-tools", nargs="+", default=["memetic"],
                   help="our optimizers on the known-optimum caches")
    p.add_argument("--seconds", nargs="+", type=float, default=[10.0],
                   help="search budgets (one run per seed at the largest)")
    p.add_argument("--optima-seconds", type=float, default=1.0)
    p.add_argument("--minobs-stop", type=float, default=None,
                   help="stop MINOBS after this many process seconds (its binary must "
                   "write $MINOBS_TRACE as it goes, else its results are lost) [wait]")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--cpu", default="1", help="taskset CPU list ('' for none)")
    p.add_argument("--note", default="Measured on a 2-core machine shared with other "
                   "jobs (load average per run in the JSON).")
    p.add_argument("--name", default="minobs")
    p.add_argument("--resume", action="store_true",
                   help="keep the runs of NAME.json (an interrupted run with the same "
                   "budgets) and run the others")
    a = p.parse_args(argv)
    bad = [c for c in a.optima if c not in OPTIMA]
    if bad:
        p.error(f"--optima: no known optimum for {bad}")
    if not Path(a.minobs).is_file():
        p.error(f"--minobs: {a.minobs} is not a file")
    missing = [str(path) for _, path in map(cache_path, a.caches) if not path.is_file()]
    if missing:
        p.error(f"--caches: no such file {missing}")
    cpu = a.cpu or None
    result: dict[str, Any] = {
        "budgets": sorted(a.seconds), "optima_seconds": a.optima_seconds, "seeds": a.seeds,
        "cpu": cpu, "tools": a.tools, "optima_tools": a.optima_tools, "note": a.note,
        "cache_note": a.cache_note, "minobs": a.minobs, "minobs_stop": a.minobs_stop,
        "command": " ".join(["python -m workflows.benchmarks.minobs", *map(shlex.quote, argv)]),
        "table": {}, "optima": {}}

    earlier: dict[str, Any] = {"table": {}, "optima": {}}
    if a.resume:
        from workflows.benchmarks._common import OUT_DIR

        earlier = json.loads((OUT_DIR / f"{a.name}.json").read_text())
        if earlier["budgets"] != result["budgets"] or earlier["optima_seconds"] != \
                a.optima_seconds:
            p.error(f"--resume: {a.name}.json has other budgets")
        result["command"] = earlier["command"] + " (resumed: " + result["command"] + ")"

    def written(part: str) -> Callable[[dict[str, Any]], None]:
        def done(rows: dict[str, Any]) -> None:
            result[part] = rows
            print(write_report(a.name, result, markdown(result)), flush=True)
        return done

    measure(a.caches, a.tools, a.minobs, result["budgets"], a.seeds, cpu, a.minobs_stop,
            written("table"), a.parallel_cpus, earlier["table"])
    measure(a.optima, a.optima_tools, a.minobs, [a.optima_seconds], a.seeds, cpu,
            a.minobs_stop and max(a.minobs_stop, a.optima_seconds), written("optima"),
            a.parallel_cpus, earlier["optima"])


if __name__ == "__main__":
    main()
