"""Benchmark: memetic's anytime curve with a parameter of the large caches' search set
otherwise than by default.

On caches of more than ``SHORT_WALKS_FROM`` variables the memetic search's window search
first walks each block at most ``reach`` steps each way (``Memetic(reach=...)``), and
only then to the ends of the order; and while its population fills, a share ``grow`` of
the children are samples, the others bred. This runs ``memetic`` with each of
``--param``'s ``--values`` (default ``reach`` 0: walks to the ends from the start, the
search before that change; ``--param grow --values 1``: samples until the population is
full, the search before that one) and with its default, alternately, seed by seed, in
one process on whatever core it is pinned to, after a 1-iteration warm-up of each
(kernels loaded, cache read: outside the seconds), and writes each run's best score
within each budget (``--seconds``: one run at the largest per seed and variant), and
each variant's gain over the first. Seed ``S`` searches the stream of ``learn --seed
S``'s first seed (records before ``grow``: numpy's generator of ``S``).

Run (one core, not niced: a timing run)::

    taskset -c 0 python -m workflows.benchmarks.memetic_reach \\
      --caches c20ng=/work/runs/minobs-caches/c20ng.train.bic.jkl.gz \\
      --seeds 0 1 2 --seconds 10 60 [--reach 0 8 16 | --param grow --values 1]

writes ``memetic_reach.json`` and ``memetic_reach.md`` (``--name``). On a shared
machine compare the two variants of one run (they alternate), not figures of different
runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from collections.abc import Callable
from typing import Any

from workflows.benchmarks._common import write_report


def variants(values: list[str], param: str = "reach") -> dict[str, dict[str, float]]:
    """The variants run: ``PARAM=V`` for each V (an int where it reads as one), then
    the default (``Memetic()``'s)."""
    def num(v: str) -> float:
        return int(v) if v.lstrip("-").isdigit() else float(v)

    return {**{f"{param}={v}": {param: num(v)} for v in values}, "default": {}}


def _best(incs: list[Any], b: float) -> float | None:
    return max((i.score for i in incs if i.elapsed <= b), default=None)


def measure(caches: list[tuple[str, str]], seeds: list[int], budgets: list[float],
            done: Callable[[dict[str, Any]], None],
            variants: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Per cache: each variant's runs (seed, best score at each budget); ``done(rows)``
    after each cache."""
    import numpy as np

    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.search import Budget, make_optimizer
    from workflows.benchmarks.minobs import learn_stream

    out: dict[str, Any] = {}
    for label, path in caches:
        cache = read_jkl(path)
        cache.flat  # noqa: B018  (read by every search)
        for params in variants.values():
            for _ in make_optimizer("memetic", **params).run(
                    cache, Budget(max_iterations=1), np.random.default_rng(0)):
                pass
        runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
        for seed in seeds:
            for v, params in variants.items():
                load = os.getloadavg()[0]
                incs = list(make_optimizer("memetic", **params).run(
                    cache, Budget(seconds=max(budgets)), learn_stream("memetic", seed)))
                at = {f"{b:g}": _best(incs, b) for b in budgets}
                runs[v].append({"seed": seed, "load_average": load, "at": at,
                                "trace": [(i.elapsed, i.score) for i in incs]})
                print(f"{label} {v} seed {seed}: {at}", flush=True)
        out[label] = {"n": cache.n_vars, "path": path, "runs": runs}
        done(out)
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    budgets = [f"{b:g}" for b in result["budgets"]]
    names = list(next(iter(result["table"].values()))["runs"]) if result["table"] else []
    base, others = (names[0], names[1:]) if names else ("", [])
    lines = [f"# memetic: {result.get('param', 'reach')} against its default", "",
             f"`{result['command']}`", "", result["note"], "",
             "| cache (vars) | s | " + " | ".join(f"{v} (median; seeds)" for v in names)
             + "".join(f" | {v} − {base} (median of per-seed differences)" for v in others)
             + " |", "|---|---|" + "---:|" * (2 * len(names) - 1)]
    for label, row in result["table"].items():
        for b in budgets:
            cells = []
            for v in names:
                xs = [r["at"][b] for r in row["runs"][v]]
                med = statistics.median(x for x in xs if x is not None) if any(
                    x is not None for x in xs) else None
                cells.append(("—" if med is None else f"{med:,.1f}") + " ("
                             + ", ".join("—" if x is None else f"{x:,.0f}" for x in xs)
                             + ")")
            for v in others:
                diffs = [d["at"][b] - r["at"][b] for r, d in zip(
                    row["runs"][base], row["runs"][v], strict=True)
                    if d["at"][b] is not None and r["at"][b] is not None]
                cells.append(f"{statistics.median(diffs):+,.1f}" if diffs else "—")
            lines.append(f"| {label} ({row['n']}) | {b} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--caches", nargs="+", required=True, help="NAME=PATH of .jkl caches")
    p.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    p.add_argument("--seconds", nargs="+", type=float, default=[10.0, 60.0])
    p.add_argument("--note", default="One process, one core shared with other jobs; "
                   "the variants alternate seed by seed (load average per run in the "
                   "JSON).")
    p.add_argument("--param", default="reach", choices=["reach", "grow"],
                   help="the Memetic parameter varied")
    p.add_argument("--values", "--reach", dest="values", nargs="+", default=["0"],
                   help="its values run beside the default (the first is the baseline)")
    p.add_argument("--name", default="memetic_reach")
    a = p.parse_args(argv)
    caches = []
    for c in a.caches:
        label, sep, path = c.partition("=")
        if not sep or not os.path.isfile(path):
            p.error(f"--caches: {c!r} is not NAME=PATH of a file")
        caches.append((label, path))
    result: dict[str, Any] = {
        "budgets": sorted(a.seconds), "seeds": a.seeds, "note": a.note, "param": a.param,
        "command": "python -m workflows.benchmarks.memetic_reach " + " ".join(argv),
        "table": {}}

    def done(rows: dict[str, Any]) -> None:
        result["table"] = rows
        print(write_report(a.name, result, markdown(result)), flush=True)

    measure(caches, a.seeds, sorted(a.seconds), done, variants(a.values, a.param))


if __name__ == "__main__":
    main()
