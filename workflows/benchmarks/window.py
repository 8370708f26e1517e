"""Benchmark: the window search's kernel against the same kernel at an earlier commit.

The window local search (``bnsl_dist/search/ordering/_window_kernels.py``) scores a
block's walk only at the steps where a family can change (read off bitsets of the
chosen and better sets; since f683bb1), scanning for a gained predecessor only the sets
holding it (since the commit after); until d2b2f05 it moved a copy of the block step by
step and scored every step. The moves, gains and final orders are the same (tested), so the
question is only time: this runs both kernels from the same start states to their
local optima and reports the seconds and their ratio.

Per cache: ``--starts`` start states, each a child of memetic's local search (a
uniformly sampled order through the ASOBS pass and adjacent swaps, the kernel
memetic uses); from each, the window search to its optimum (``max_window`` 5; above
``SHORT_WALKS_FROM`` variables walks of ``reach`` 8 first, then to the ends, as
memetic does), with the kernel of ``--baseline`` (a git revision: its
``_window_kernels.py``, compiled here) and with this checkout's, alternating which goes
first; the final orders and sets are checked equal. Best of ``--repeats``.

Run (one core, a timing run)::

    taskset -c 1 python -m workflows.benchmarks.window --baseline d2b2f05 \\
      --caches plants dna book cwebkb msweb=PATH

writes ``window.json`` and ``window.md`` (``--name``).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from workflows.benchmarks._common import cache_path, machine, write_report

_KERNELS = "bnsl_dist/search/ordering/_window_kernels.py"


def baseline_kernels(rev: str, where: Path) -> ModuleType:
    """The window kernels module as of git revision ``rev``, compiled from a copy in
    ``where`` (its imports resolve to this checkout's package)."""
    root = Path(__file__).resolve().parents[2]
    src = subprocess.run(["git", "-C", str(root), "show", f"{rev}:{_KERNELS}"],
                         check=True, capture_output=True, text=True).stdout
    path = where / "_window_kernels_baseline.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("_window_kernels_baseline", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def starts(cache: Any, count: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``count`` (order, chosen) pairs as memetic's children reach its window search."""
    from bnsl_dist.search.ordering import _kernels as K
    from bnsl_dist.search.ordering.asobs import SEARCH_FROM
    from bnsl_dist.search.ordering.memetic import _setup

    fc = cache.flat
    n = fc.n
    _, masks, _, max_size = _setup(cache)
    rng = np.random.default_rng(seed)
    kernel = K.CLOSURE_BITSETS if n <= SEARCH_FROM else K.CLOSURE_BLOCKS
    out = []
    for _ in range(count):
        child = rng.permutation(n).astype(np.int64)[None, :]
        chosen = np.empty(n, dtype=np.int64)
        order = np.empty(n, dtype=np.int64)
        K.run_orders_masked(child, True, True, 1_000_000, fc.offsets, fc.par_offsets,
                            fc.par_flat, *masks, max_size, fc.scores,
                            np.empty(1, dtype=np.float64), chosen, order, kernel)
        out.append((order, chosen))
    return out


def refine(wk: ModuleType, fc: Any, index: Any, order: np.ndarray,
           chosen: np.ndarray, todo: np.ndarray, reaches: list[int]) -> tuple[float, int]:
    """The window search of kernels ``wk`` to its optimum: (seconds, calls). The
    kernel's arguments by its revision: 13 (d2b2f05 and before: every step walked), 17
    (f683bb1: and the chosen/better relations), 21 (and the rows holding each
    candidate, :func:`~bnsl_dist.search.ordering.asobs.window_index`)."""
    from bnsl_dist.search.ordering.asobs import window_relations

    nargs = wk.window_search.py_func.__code__.co_argcount
    pos = np.empty(fc.n, dtype=np.int64)
    pos[order] = np.arange(fc.n)
    calls = 0
    t0 = time.perf_counter()
    rel = window_relations(fc.n, index.cand.shape[1]) if nargs > 13 else ()
    arrays = tuple(index) if nargs > 17 else (index.cand,)
    for r in reaches:
        state = np.array([0, 1, 0], dtype=np.int64)
        converged = False
        while not converged:
            _, converged = wk.window_search(order, pos, chosen, *arrays, fc.offsets,
                                            fc.par_offsets, fc.par_flat, fc.scores, todo,
                                            5, state, 50_000, r, *rel)
            calls += 1
    return time.perf_counter() - t0, calls


def measure(label: str, path: str, old: ModuleType, count: int, repeats: int,
            seed: int) -> dict[str, Any]:
    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.search.ordering import _window_kernels as WK
    from bnsl_dist.search.ordering.asobs import window_index
    from bnsl_dist.search.ordering.memetic import SHORT_WALKS_FROM

    cache = read_jkl(path)
    fc = cache.flat
    n = fc.n
    index = window_index(fc)
    reaches = [8, n] if n > SHORT_WALKS_FROM else [n]
    rng = np.random.default_rng(seed + 1)
    pairs = starts(cache, count, seed)
    # compile or load both outside the clock
    for wk in (old, WK):
        o, c = pairs[0][0].copy(), pairs[0][1].copy()
        refine(wk, fc, index, o, c, rng.permutation(n).astype(np.int64), [1])
    secs = {"baseline": 0.0, "related": 0.0}
    per_start = []
    for i, (order, chosen) in enumerate(pairs):
        todo = rng.permutation(n).astype(np.int64)
        best = {"baseline": np.inf, "related": np.inf}
        finals = {}
        for rep in range(repeats):
            kinds = ["baseline", "related"] if (i + rep) % 2 == 0 else ["related", "baseline"]
            for kind in kinds:
                o, c = order.copy(), chosen.copy()
                s, _ = refine(old if kind == "baseline" else WK, fc, index, o, c, todo,
                              reaches)
                best[kind] = min(best[kind], s)
                finals[kind] = (o, c)
        if not (np.array_equal(finals["baseline"][0], finals["related"][0])
                and np.array_equal(finals["baseline"][1], finals["related"][1])):
            raise RuntimeError(f"{label}: start {i}: the kernels reached different optima")
        for k in secs:
            secs[k] += best[k]
        per_start.append({k: round(v, 6) for k, v in best.items()})
        print(f"{label} start {i}: baseline {best['baseline']:.4f} s, related "
              f"{best['related']:.4f} s", flush=True)
    return {"n": n, "path": path, "starts": count, "reaches": reaches,
            "seconds": {k: round(v, 6) for k, v in secs.items()},
            "ratio": round(secs["baseline"] / secs["related"], 3),
            "per_start": per_start, "load_average": os.getloadavg()[0]}


def markdown(result: dict[str, Any]) -> list[str]:
    lines = ["# Window search: every step walked (baseline) against related steps scored",
             "", f"`{result['command']}`", "", result["note"], "",
             "| cache (vars) | local searches | baseline s | related steps s | ratio |",
             "|---|---:|---:|---:|---:|"]
    for label, row in result["table"].items():
        lines.append(f"| {label} ({row['n']}) | {row['starts']} | "
                     f"{row['seconds']['baseline']:.3f} | {row['seconds']['related']:.3f}"
                     f" | {row['ratio']:.2f}× |")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--caches", nargs="+", default=["plants", "dna", "book", "cwebkb"],
                   help="names of BLIP's caches (jkl/blip-is) or NAME=PATH")
    p.add_argument("--baseline", default="d2b2f05",
                   help="git revision of the kernels compared against (d2b2f05: the "
                   "last that walked every step)")
    p.add_argument("--starts", type=int, default=20, help="local searches per cache")
    p.add_argument("--repeats", type=int, default=2, help="best of this many, each")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--note", default="One process on one core; the two kernels "
                   "alternate which goes first; best of the repeats per start.")
    p.add_argument("--name", default="window")
    a = p.parse_args(argv)
    result: dict[str, Any] = {
        "command": "python -m workflows.benchmarks.window " + " ".join(argv),
        "baseline": a.baseline, "note": a.note, "machine": machine(), "table": {}}
    with tempfile.TemporaryDirectory() as tmp:
        old = baseline_kernels(a.baseline, Path(tmp))
        for spec in a.caches:
            label, path = cache_path(spec)
            result["table"][label] = measure(label, str(path), old, a.starts, a.repeats,
                                             a.seed)
            print(write_report(a.name, result, markdown(result)), flush=True)


if __name__ == "__main__":
    main()
