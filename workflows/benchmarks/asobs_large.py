"""Benchmark: the ASOBS pass on many variables, kernel against kernel (one core).

On synthetic caches of :mod:`workflows.benchmarks.search` (1,556, 3,000, 5,000 and
10,000 variables) and on BLIP's caches of book (n = 500) and cwebkb (n = 839), the
same uniform orders are
passed, in interleaved rounds, to

* ``dfs`` — :func:`~bnsl_dist.search.ordering._kernels.asobs_pass_dfs`, a depth-first
  search of each variable's descendants (the oracle of the tests);
* ``up`` — :func:`~bnsl_dist.search.ordering._kernels.asobs_pass_up`, the search up
  from the members of the scanned sets, pruned by labels (``closure="dfs"``);
* ``blocks`` — :func:`~bnsl_dist.search.ordering._kernels.asobs_pass_blocks`, closed
  bitsets over blocks of 64·W positions (``closure="blocks"``), with W =
  ``BLOCK_WORDS`` and, above 2,048 variables, W = 4 and 16 beside it (``blocks-W``);
* ``bitsets`` — :func:`~bnsl_dist.search.ordering._kernels.asobs_pass`, closed bitsets
  over all variables (``closure="bitsets"``, the default up to ``SEARCH_FROM``
  variables; skipped on the synthetic cache, where it runs at a tenth of ``dfs``),

checking that every kernel chose the same sets for every order. Recorded per cache and
kernel: orders per second (wall) of each round and their median, and the ratio to
``dfs`` per round (timings are load-dependent: compare the ratios, measured side by
side in one run). Then the optimizer (``asobs``, ``closure="auto"``, bare passes and
passes + swaps) runs for ``--seconds`` on the synthetic cache, as in the
``orders`` part of the search benchmark (``--trees``: each source tree's optimizer, one
after the other; ``--opt-caches``: BLIP's caches too). Part ``closure``: the batch
kernel (pass, and pass + swaps) with bitsets against the search on BLIP's plants,
dna, book and cwebkb caches, where ``SEARCH_FROM`` was picked. Above it no kernel wins
everywhere (the blocks on the synthetic caches, the search on cwebkb and on a cache of
2,000 variables learned from data: ``bn2000`` of :mod:`workflows.benchmarks.peers`,
3,000 exact scores per variable, when pyAgrum is installed), so "auto" times both.

Run: ``python -m workflows.benchmarks.asobs_large [--rounds 5] [--orders 4]
[--seconds 10] [--parts kernels closure optimizer] [--trees TREE ...]
[--opt-caches synthetic plants ...] [--opt-repeats 1]``; writes ``out/asobs_large.json``.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache import ParentSetCache
from bnsl_dist.cache.parent_sets import FlatCache
from bnsl_dist.search.ordering import _kernels as K
from bnsl_dist.search.ordering.obs import ObsMasks, obs_masks
from workflows.benchmarks._common import OUT_DIR, write_result
from workflows.benchmarks.search import _blip_cache, synthetic_cache


def _kernels(cache: ParentSetCache) -> dict[str, Callable[[np.ndarray, np.ndarray], float]]:
    fc = cache.flat
    n = fc.n
    max_size = int(fc.sizes.max())
    m = max_size * n + 1
    nw = max(1, (n + 63) // 64)

    def ws(*sizes: int) -> list[np.ndarray]:
        return [np.empty(s, np.int64) for s in sizes]

    masks = obs_masks(fc)
    cand = masks[1:]
    w_dfs = ws(n, m, m, n, n + 1)
    w_up = [*ws(n, n, n, m), np.empty(n, np.bool_), *ws(n + 1, n + 1, n + 1)]
    out: dict[str, Callable[[np.ndarray, np.ndarray], float]] = {
        "dfs": lambda o, ch: K.asobs_pass_dfs(o, fc.offsets, fc.par_offsets, fc.par_flat,
                                              fc.scores, *w_dfs, ch),
        "up": lambda o, ch: K.asobs_pass_up(o, fc.offsets, fc.par_offsets, fc.par_flat,
                                            *cand, fc.scores, *w_up, ch)}
    widths = [K.BLOCK_WORDS] + ([4, 16] if n > 2048 else [])
    for words in widths:
        w_bl = K.blocks_workspace(n, max_size, words)
        name = "blocks" if words == K.BLOCK_WORDS else f"blocks-{words}"
        out[name] = (lambda w: lambda o, ch: K.asobs_pass_blocks(
            o, fc.offsets, fc.par_offsets, fc.par_flat, *cand, fc.scores, *w, ch))(w_bl)
    if n <= 2048:
        w_bits = [np.empty((n, nw), np.uint64), np.empty((n, nw), np.uint64),
                  np.empty(nw, np.uint64), np.empty(nw, np.uint64)]
        out["bitsets"] = lambda o, ch: K.asobs_pass(o, fc.offsets, fc.par_offsets,
                                                    fc.par_flat, *masks, fc.scores, *w_bits,
                                                    ch)
    return out


def _learned_cache() -> ParentSetCache:
    """Independence selection, 3,000 exact scores per variable, on the peers benchmark's
    2,000-variable sample (pyAgrum's BNGenerator, needed to sample it)."""
    from bnsl_dist.cache import build_cache
    from bnsl_dist.data import read_data
    from workflows.benchmarks.peers import make_csv

    csv = make_csv("bn2000", 5000, 0, OUT_DIR / "peers_data")
    return build_cache(read_data(csv), scores_per_variable=3000)


def part_kernels(rounds: int, n_orders: int) -> list[dict[str, Any]]:
    rows = []
    cases: list[tuple[str, Callable[[], ParentSetCache], int]] = [
        (f"synthetic n={n}", lambda n=n: synthetic_cache(n), n_orders * 10_000 // n)
        for n in (1556, 3000, 5000, 10000)]
    if importlib.util.find_spec("pyagrum") is not None:
        cases.append(("learned n=2000 (bn2000)", _learned_cache, 50 * n_orders))
    else:
        print("pyAgrum not installed: no learned 2,000-variable cache", file=sys.stderr)
    cases += [
        ("book (BLIP cache)", lambda: _blip_cache("book"), 50 * n_orders),
        ("cwebkb (BLIP cache)", lambda: _blip_cache("cwebkb"), 25 * n_orders)]
    for label, make, count in cases:
        cache = make()
        n = cache.n_vars
        kernels = _kernels(cache)
        rng = np.random.default_rng(0)
        rates: dict[str, list[float]] = {k: [] for k in kernels}
        for _ in range(rounds):
            orders = [rng.permutation(n).astype(np.int64) for _ in range(count)]
            chosen: dict[str, list[np.ndarray]] = {}
            for name, run in kernels.items():
                run(orders[0], np.empty(n, np.int64))  # compiled, caches warm
                t0 = time.perf_counter()
                chosen[name] = []
                for o in orders:
                    ch = np.empty(n, np.int64)
                    run(o, ch)
                    chosen[name].append(ch)
                rates[name].append(count / (time.perf_counter() - t0))
            for name in kernels:  # the same sets for every order
                if not all(np.array_equal(a, b) for a, b in zip(chosen[name], chosen["dfs"], strict=True)):
                    raise AssertionError(f"{label}: {name} chose other sets than dfs")
        for name, r in rates.items():
            ratios = [x / d for x, d in zip(r, rates["dfs"], strict=True)]
            rows.append({"cache": label, "n": n, "sets": cache.n_sets, "kernel": name,
                         "orders_per_round": count, "orders_per_s": r,
                         "median_orders_per_s": statistics.median(r),
                         "ratio_to_dfs": ratios, "median_ratio_to_dfs":
                         statistics.median(ratios), "load": os.getloadavg()[0]})
            print(rows[-1], flush=True)
    return rows


def _batch(fc: FlatCache, masks: ObsMasks, orders: np.ndarray, search: bool, swaps: bool
           ) -> tuple[float, np.ndarray]:
    """CPU seconds of the batch kernel on ``orders``, and the orders' scores (``masks``:
    :func:`obs_masks`, computed once per cache, outside the timing)."""
    out = np.empty(len(orders))
    max_size = int(fc.sizes.max())
    t0 = time.process_time()
    K.run_orders_masked(orders, True, swaps, 1_000_000, fc.offsets, fc.par_offsets,
                        fc.par_flat, *masks, max_size, fc.scores, out,
                        np.empty(fc.n, np.int64), np.empty(fc.n, np.int64),
                        K.CLOSURE_SEARCH if search else K.CLOSURE_BITSETS)
    return time.process_time() - t0, out


def part_closure(rounds: int, orders_x_vars: int) -> list[dict[str, Any]]:
    """ASOBS passes, bare and followed by swaps (the batch kernel the optimizer
    runs), with closed bitsets and with the search of ``asobs_pass_up``, on the
    same orders (interleaved; same scores checked), on BLIP's caches around
    ``SEARCH_FROM``: CPU seconds per batch, ratio bitsets / search per round (> 1: the
    search is faster).
    A batch holds ``orders_x_vars`` / n orders."""
    rows = []
    for name in ("plants", "dna", "book", "cwebkb"):
        fc = _blip_cache(name).flat
        n = fc.n
        masks = obs_masks(fc)
        rng = np.random.default_rng(0)
        count = max(1, orders_x_vars // n)

        warm = np.stack([rng.permutation(n) for _ in range(2)]).astype(np.int64)
        for search, swaps in itertools.product((False, True), repeat=2):
            _batch(fc, masks, warm, search, swaps)  # compiled
        ratios: dict[bool, list[float]] = {False: [], True: []}
        for _ in range(rounds):
            orders = np.stack([rng.permutation(n) for _ in range(count)]).astype(np.int64)
            for swaps in (False, True):
                t_bits, s_bits = _batch(fc, masks, orders, False, swaps)
                t_se, s_se = _batch(fc, masks, orders, True, swaps)
                if not np.array_equal(s_bits, s_se):
                    raise AssertionError(f"{name}: bitsets and search scored differently")
                ratios[swaps].append(t_bits / t_se)
        for swaps, r in ratios.items():
            rows.append({"cache": name, "n": n, "sets": int(fc.scores.size),
                         "local_search": "swap" if swaps else "none",
                         "orders_per_round": count, "bitsets_over_search": r,
                         "median_bitsets_over_search": statistics.median(r),
                         "load": os.getloadavg()[0]})
            print(rows[-1], flush=True)
    return rows


_OPT = """
import json, sys, time
import numpy as np
from bnsl_dist.search import AnytimeTrace, Budget, make_optimizer
from workflows.benchmarks.search import _blip_cache, synthetic_cache
local, seconds, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
cache = synthetic_cache(10000) if name == "synthetic" else _blip_cache(name)
opt = make_optimizer("asobs", local_search=local)  # closure="auto": what users get
list(opt.run(cache, Budget(max_iterations=1), np.random.default_rng(1)))  # compiled
t0, cpu0 = time.perf_counter(), time.process_time()
tr = AnytimeTrace.collect(opt.run(cache, Budget(seconds=seconds), np.random.default_rng(0)))
wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
print(json.dumps({"orders": tr.total_iterations, "seconds": wall, "cpu_seconds": cpu,
                  "best": tr.best.score if tr.best else None}))
"""


def part_optimizer(seconds: float, trees: list[str], caches: list[str], repeats: int = 1,
                   local_searches: tuple[str, ...] = ("none", "swap")) -> list[dict[str, Any]]:
    """The optimizer (``closure="auto"``, each tree's own choice) on each cache
    ("synthetic": the synthetic cache; else BLIP's cache of that name) with each source
    tree's code (PYTHONPATH and working directory:
    ``python -c`` puts the working directory first), one after the other per setting,
    ``repeats`` times (the trees' order reversed every other time); a row per run."""
    rows = []
    for name, local in itertools.product(caches, local_searches):
        for rep in range(repeats):
            for tree in trees if rep % 2 == 0 else trees[::-1]:
                env = {**os.environ, "PYTHONPATH": tree}
                out = subprocess.run([sys.executable, "-c", _OPT, local, str(seconds), name],
                                     env=env, cwd=tree, check=True, capture_output=True,
                                     text=True).stdout
                r = json.loads(out.strip().splitlines()[-1])
                rows.append({"cache": "synthetic n=10000" if name == "synthetic" else name,
                             "tree": tree, "local_search": local, "repeat": rep,
                             "closure": "auto", **r,
                             "orders_per_s": r["orders"] / r["seconds"],
                             "orders_per_cpu_s": r["orders"] / max(r["cpu_seconds"], 1e-9),
                             "load": os.getloadavg()[0]})
                print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--orders", type=int, default=4,
                    help="orders per round on the synthetic cache (x50 book, x25 cwebkb)")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--trees", nargs="*", default=[str(Path(__file__).resolve().parents[2])],
                    help="source trees whose optimizer runs (e.g. a checkout of main too)")
    ap.add_argument("--parts", nargs="*", default=["kernels", "closure", "optimizer"])
    ap.add_argument("--opt-caches", nargs="*", default=["synthetic"],
                    help="caches of the optimizer part: synthetic, or BLIP cache names "
                         "(rows of other caches already in the JSON are kept)")
    ap.add_argument("--opt-repeats", type=int, default=1)
    ap.add_argument("--opt-local", nargs="*", default=["none", "swap"],
                    help="local searches of the optimizer part: none, swap, window")
    args = ap.parse_args()
    result: dict[str, Any] = {}
    path = OUT_DIR / "asobs_large.json"
    if path.is_file():  # keep parts done earlier
        old = json.loads(path.read_text())
        result.update({k: v for k, v in old.items() if k in ("kernels", "closure", "optimizer")})
    result["settings"] = vars(args)
    if "kernels" in args.parts:
        result["kernels"] = part_kernels(args.rounds, args.orders)
    if "closure" in args.parts:
        result["closure"] = part_closure(args.rounds, 4000)
    if "optimizer" in args.parts:
        rows = part_optimizer(args.seconds, args.trees, args.opt_caches, args.opt_repeats,
                              tuple(args.opt_local))
        done = {(r["cache"], r["local_search"]) for r in rows}  # the others are kept
        result["optimizer"] = [r for r in result.get("optimizer", [])
                               if (r["cache"], r["local_search"]) not in done] + rows
    print(write_result("asobs_large", result))


if __name__ == "__main__":
    main()
