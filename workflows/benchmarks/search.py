"""Benchmark: structure search without a treewidth bound (one core, in-process).

Four parts, each written to ``out/search.json`` (and a markdown table,
``out/search.md``) as soon as it is done:

* ``orders`` — ASOBS orders per second (bare passes, and passes followed by OBS and
  adjacent swaps, BLIP's default) with both descendant trackings (closed bitsets, and
  depth-first search; best of 2 runs), on BLIP's cache of book (n = 500, real) and on
  synthetic caches of n = 1,556 and 10,000 variables. The synthetic caches have a
  realistic shape —
  about 40 candidate parents per variable drawn near it, up to 6 parents, ~200 sets
  per variable scored like BIC (−N·H for ∅, gains decaying with set size, a 2^k
  penalty), best first, ∅ last — but are NOT learned from data; they measure speed,
  not score.
* ``blip`` — BIC of the best DAG after 10 s and 60 s for ASOBS, ASOBS-ENT and
  WINASOBS-ENT (one 60 s run each; the 10 s figure is the same run's incumbent at 10 s),
  and after 10 s for OBS and hill climbing with tabu (hc-tabu), on the caches BLIP
  built (``shared/data/jkl/blip-is/``), seed 1, beside BLIP's own figures (seed 1,
  from $BNSL_SHARED_DATA/README.md §5b). ASOBS-ENT gets the entropies of the train split
  when ``shared/data/twenty`` is there (as BLIP does), else the empty-set proxy.
  ``asobs-ent`` processes high-entropy variables first (the paper's and BLIP's
  direction); ``asobs-ent/last`` processes them last. The committed ``search.json``
  predates that naming: its ``asobs-ent`` and ``winasobs-ent`` rows ran with
  high-entropy variables last, its ``asobs-ent/first`` row first.
* ``direction`` — why BLIP's ASOBS-ENT trails its uniform ASOBS: uniform orders vs
  entropy orders whose high-entropy variables are processed first (the paper's
  ASOBS-ENT, BLIP) or last, at equal numbers of orders (3 seeds; load-independent).
  ``asobs_ent_direction.py`` compares the directions at equal seconds.
* ``mirror`` — the local search (OBS + swaps) started from a topological order of the
  ASOBS DAG (ours) or from that order mirrored (docs/ALGORITHMS.md §4 says BLIP does this),
  for uniform and entropy orders.
* ``masks`` — the kernels' set masks folded into 1 or 2 words (``pmask``, see
  ``bnsl_dist/search/ordering/_kernels.py``): orders per second (pass + swaps) with
  each, interleaved repeats, on BLIP's caches of plants (69 variables: 1 word is a
  filter, 2 exact), dna, book and cwebkb (both filters); the rule ``mask_words`` (the
  ``rule`` column) was picked from it. Same DAGs either way (checked).
* ``rate`` — orders per second (wall and CPU) side by side with BLIP's ASOBS (an
  iteration: pass, OBS, swaps; ours: pass, swaps, as OBS on a topological order of the
  ASOBS DAG returns that DAG) on each cache BLIP built, one thread each,
  one after the other (BLIP's rate differential, see :func:`part_rate`). Needs
  ``--blip-jar`` (a class path holding BLIP built from its public source, and
  args4j); skipped without it.

Run: ``python -m workflows.benchmarks.search [--parts orders direction mirror blip rate
masks]
[--long 60] [--short 10] [--blip-jar PATH]``. Timings depend on the machine's load;
the JSON records the load average before and after each part.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist.cache import ParentSetCache, read_jkl
from bnsl_dist.search import AnytimeTrace, Budget, make_optimizer
from workflows.benchmarks._common import OUT_DIR, SHARED_DATA, write_result

BLIP_CACHES = ["nltcs", "plants", "dna", "book", "cwebkb"]
#: BLIP's own results ($BNSL_SHARED_DATA/README.md §5b): (10 s, 60 s) per algorithm.
BLIP = {
    "nltcs": {"asobs": (-98501.775, -98485.439), "asobs-ent": (-98500.885, -98486.516),
              "winasobs-ent": (-98485.439, -98485.439)},
    "plants": {"asobs": (-237149.289, -236815.335), "asobs-ent": (-237265.003, -237264.530),
               "winasobs-ent": (-234049.282, -234047.902)},
    "dna": {"asobs": (-130459.983, -130385.503), "asobs-ent": (-130466.164, -130452.447),
            "winasobs-ent": (-129951.035, -129927.058)},
    "book": {"asobs": (-314297.689, -314237.708), "asobs-ent": (-314482.616, -314427.685),
             "winasobs-ent": (-313159.749, -313139.113)},
    "cwebkb": {"asobs": (-427905.120, -427759.690), "asobs-ent": (-428486.085, -428305.022),
               "winasobs-ent": (-425741.017, -425713.418)},
}
LONG_ALGOS = ["asobs", "asobs-ent", "winasobs-ent"]
SHORT_ALGOS = ["obs", "hc-tabu", "asobs-ent/last"]  # "/last": high_entropy="last"
#: Equal numbers of orders for the direction study (3 seeds each).
DIRECTION_ORDERS = {"dna": 300, "book": 150, "cwebkb": 80}


def _load() -> float:
    return os.getloadavg()[0]


def synthetic_cache(n: int, seed: int = 0, sets_per_var: int = 200, n_candidates: int = 40,
                    max_size: int = 6, n_samples: int = 5000, spread: int = 200
                    ) -> ParentSetCache:
    """A cache of realistic shape (see the module docstring), not learned from data."""
    rng = np.random.default_rng(seed)
    pen = 0.5 * np.log(n_samples)
    offs = [0]
    scores: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    flat: list[np.ndarray] = []
    for v in range(n):
        h = rng.uniform(0.05, 0.7)
        base = -n_samples * h - pen
        near = (v + rng.integers(-spread, spread + 1, size=n_candidates)) % n
        cand = np.unique(near[near != v])
        c = cand.size
        aff = rng.gamma(0.6, 0.04 * n_samples * h, size=c)
        m2 = 2 * sets_per_var
        k = np.minimum(np.minimum(max_size, c), 1 + rng.geometric(0.45, size=m2))
        pick = np.argsort(rng.random((m2, c)), axis=1)[:, :max_size]
        pick = np.where(np.arange(max_size)[None, :] < k[:, None], pick, c)
        pick.sort(axis=1)
        pick, first = np.unique(pick, axis=0, return_index=True)
        k = k[first]
        gain = (np.concatenate([aff, [0.0]])[pick].sum(axis=1) * (1 - 0.08 * (k - 1))
                - pen * (2.0 ** k - 1))
        keep = gain > 0
        pick, k, gain = pick[keep], k[keep], gain[keep]
        best = np.lexsort((-k, -gain))[: sets_per_var - 1]
        pick, k, gain = pick[best], k[best], gain[best]
        flat.append(cand[pick[pick < c]])
        sizes += [k, np.zeros(1, np.int64)]
        scores += [base + gain, np.array([base])]
        offs.append(offs[-1] + len(k) + 1)
    size = np.concatenate(sizes).astype(np.int64)
    par_offsets = np.zeros(size.size + 1, np.int64)
    np.cumsum(size, out=par_offsets[1:])
    return ParentSetCache(tuple(f"V{i}" for i in range(n)), np.array(offs, np.int64),
                          np.concatenate(scores), par_offsets,
                          np.concatenate(flat).astype(np.int64), None,
                          {"synthetic": True, "seed": seed})


def _blip_cache(name: str) -> ParentSetCache:
    return read_jkl(SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz")


def _entropies(name: str, n: int) -> tuple[list[float] | None, str]:
    path = SHARED_DATA / "twenty" / name / "train.csv.gz"
    if not path.is_file():
        return None, "empty-set proxy"
    from bnsl_dist.data import read_data
    from bnsl_dist.scores import LocalScorer

    data = read_data(path)
    if data.n_vars != n:
        return None, "empty-set proxy"
    return [float(h) for h in LocalScorer(data, "ll").entropies()], f"data ({path.name})"


def _warm_up() -> None:
    from bnsl_dist.data import bundled_path

    c = read_jkl(bundled_path("jkl/wine.BIC.3.jkl.gz"))
    for name in LONG_ALGOS + SHORT_ALGOS:
        list(make_optimizer(name.split("/")[0]).run(c, Budget(max_iterations=2),
                                                    np.random.default_rng(0)))
    for closure in ("bitsets", "dfs"):
        for local in ("none", "swap", "window"):
            list(make_optimizer("asobs", closure=closure, local_search=local)
                 .run(c, Budget(max_iterations=2), np.random.default_rng(0)))


# ---------------------------------------------------------------------------- parts
def part_orders(seconds: float, repeats: int = 2) -> list[dict[str, Any]]:
    rows = []
    cases: list[tuple[str, Any]] = [("book (BLIP cache)", lambda: _blip_cache("book"))]
    cases += [(f"synthetic n={n}", lambda n=n: synthetic_cache(n)) for n in (1556, 10000)]
    for label, make in cases:
        t0 = time.perf_counter()
        cache = make()
        built = time.perf_counter() - t0
        for local in ("none", "swap"):
            for closure in ("bitsets", "dfs"):
                runs = []
                for _ in range(repeats):  # the best of a few runs: the machine is shared
                    opt = make_optimizer("asobs", closure=closure, local_search=local)
                    t0, cpu0 = time.perf_counter(), time.process_time()
                    tr = AnytimeTrace.collect(opt.run(cache, Budget(seconds=seconds),
                                       np.random.default_rng(0)))
                    wall = time.perf_counter() - t0
                    cpu = time.process_time() - cpu0
                    runs.append({"cache": label, "n": cache.n_vars, "sets": cache.n_sets,
                                 "local_search": local, "closure": closure,
                                 "orders": tr.total_iterations, "seconds": wall,
                                 "orders_per_s": tr.total_iterations / wall,
                                 "cpu_seconds": cpu,
                                 "orders_per_cpu_s": tr.total_iterations / max(cpu, 1e-9),
                                 "best": tr.best.score if tr.best else None,
                                 "cache_seconds": built, "load": _load()})
                rows.append(max(runs, key=lambda r: r["orders_per_s"]))
                print(rows[-1], flush=True)
    return rows


def _run(cache: ParentSetCache, name: str, seconds: float, params: dict[str, Any]
         ) -> AnytimeTrace:
    opt = make_optimizer(name, **params)
    return AnytimeTrace.collect(opt.run(cache, Budget(seconds=seconds), np.random.default_rng(1)))


def part_blip(short: float, long: float, algos: list[str] | None = None
              ) -> list[dict[str, Any]]:
    rows = []
    for cname in BLIP_CACHES:
        cache = _blip_cache(cname)
        ent, src = _entropies(cname, cache.n_vars)
        for label in LONG_ALGOS + SHORT_ALGOS:
            if algos and label not in algos:
                continue
            name, _, variant = label.partition("/")
            budget = long if label in LONG_ALGOS else short
            params: dict[str, Any] = {"entropies": ent} if (name.endswith("-ent") and ent) else {}
            if variant:
                params["high_entropy"] = variant
            load0, cpu0 = _load(), time.process_time()
            tr = _run(cache, name, budget, params)
            cpu = time.process_time() - cpu0
            at = {str(int(t)): (tr.best_at(t).score if tr.best_at(t) else None)
                  for t in (short, long) if t <= budget}
            rows.append({"cache": cname, "n": cache.n_vars, "sets": cache.n_sets,
                         "algorithm": label, "budget": budget, "best_at": at,
                         "iterations": tr.total_iterations, "seconds": tr.total_seconds,
                         "cpu_seconds": cpu,
                         "entropies": src if name.endswith("-ent") else None,
                         "blip": BLIP[cname].get(name), "load": [load0, _load()]})
            print(rows[-1], flush=True)
    return rows


def part_direction() -> list[dict[str, Any]]:
    """Uniform orders vs entropy orders processing high-entropy variables first (the
    paper's, BLIP) or last, at equal numbers of orders, 3 seeds, bare passes and with
    swaps."""
    rows = []
    for cname, iters in DIRECTION_ORDERS.items():
        cache = _blip_cache(cname)
        ent, src = _entropies(cname, cache.n_vars)
        for local in ("none", "swap"):
            for label, kw in (("uniform", {}),
                              ("entropy, high first", {"sampler": "entropy",
                                                       "high_entropy": "first"}),
                              ("entropy, high last", {"sampler": "entropy",
                                                      "high_entropy": "last"})):
                if ent and "sampler" in kw:
                    kw = {**kw, "entropies": ent}
                best = [AnytimeTrace.collect(
                    make_optimizer("asobs", local_search=local, **kw)
                    .run(cache, Budget(max_iterations=iters), np.random.default_rng(seed))
                ).best.score for seed in range(3)]  # type: ignore[union-attr]
                rows.append({"cache": cname, "n": cache.n_vars, "orders": iters,
                             "local_search": local, "sampler": label, "best": best,
                             "mean": float(np.mean(best)), "entropies": src})
                print(rows[-1], flush=True)
    return rows


def part_mirror(seconds: float) -> list[dict[str, Any]]:
    """Our ASOBS+swaps vs BLIP's (OBS + swaps from the MIRRORED topological order)."""
    from bnsl_dist.search.ordering import _kernels as K
    from bnsl_dist.search.ordering.obs import obs_masks
    from bnsl_dist.search.ordering.samplers import (
        entropy_weights,
        uniform_orders,
        weighted_orders,
    )

    rows = []
    for cname in ("book", "cwebkb"):
        cache = _blip_cache(cname)
        fc = cache.flat
        n = fc.n
        ent, _ = _entropies(cname, n)
        w, _ = entropy_weights(cache, ent)
        for sampler in ("uniform", "entropy"):
            for start in ("topological", "mirrored"):
                rng = np.random.default_rng(1)
                chosen = np.empty(n, np.int64)
                best_order = np.empty(n, np.int64)
                masks = obs_masks(fc)
                topo = np.empty(n, np.int64)
                pos = np.empty(n, np.int64)
                out = np.empty(1)
                best, iters, t0 = -np.inf, 0, time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    order = (uniform_orders(rng, 1, n) if sampler == "uniform"
                             else weighted_orders(rng, 1, w))
                    K.run_orders(order, True, False, 1, fc.offsets, fc.par_offsets,
                                 fc.par_flat, fc.scores, out, chosen, best_order,
                                 K.CLOSURE_BITSETS)
                    K.topological_order_near(order[0], chosen, fc.par_offsets, fc.par_flat,
                                             topo)
                    o = topo if start == "topological" else topo[::-1].copy()
                    K.obs_assign(o, fc.offsets, fc.par_offsets, fc.par_flat, *masks,
                                 fc.scores, pos, chosen)
                    K.swap_search(o, pos, chosen, fc.offsets, fc.par_offsets, fc.par_flat,
                                  masks[0], fc.scores, 10**6)
                    best = max(best, float(fc.scores[chosen].sum()))
                    iters += 1
                rows.append({"cache": cname, "sampler": sampler, "start": start,
                             "seconds": seconds, "orders": iters, "best": best,
                             "load": _load()})
                print(rows[-1], flush=True)
    return rows


def part_masks(seconds: float, repeats: int = 3,
               caches: list[str] | None = None) -> list[dict[str, Any]]:
    """ASOBS + swaps (``run_orders_masked``) with 1- and 2-word set masks, the same
    sampled orders for both, ``seconds`` each, ``repeats`` times interleaved; the row
    keeps the median rate of each and the median per-repeat ratio (2 words / 1)."""
    from bnsl_dist.search.ordering import _kernels as K
    from bnsl_dist.search.ordering.obs import batch_size, cache_masks, candidate_masks
    from bnsl_dist.search.ordering.samplers import uniform_orders

    rows = []
    for cname in caches or ["plants", "dna", "book", "cwebkb"]:
        fc = _blip_cache(cname).flat
        n = fc.n
        b = batch_size(n)
        masks = {w: cache_masks(fc, w) for w in (1, 2)}
        cand = candidate_masks(fc)
        max_size = int(fc.sizes.max())
        reps: list[dict[str, Any]] = []
        for _ in range(repeats):
            rate: dict[int, float] = {}
            tops: dict[int, list[float]] = {}
            for w, pm in masks.items():
                rng = np.random.default_rng(1)
                out = np.empty(b)
                chosen = np.empty(n, np.int64)
                order = np.empty(n, np.int64)
                tops[w] = []
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < seconds:
                    K.run_orders_masked(uniform_orders(rng, b, n), True, True, 10**6,
                                        fc.offsets, fc.par_offsets, fc.par_flat, pm,
                                        *cand, max_size, fc.scores, out, chosen, order,
                                        K.CLOSURE_BITSETS)
                    tops[w].append(float(out.max()))
                rate[w] = len(tops[w]) * b / (time.perf_counter() - t0)
            k = min(len(t) for t in tops.values())  # same orders: same scores
            if tops[1][:k] != tops[2][:k]:
                raise RuntimeError(f"{cname}: 1- and 2-word masks gave different DAGs")
            reps.append({"orders_per_s": rate, "ratio_2_over_1": rate[2] / rate[1],
                         "load": _load()})
        med = {f"orders_per_s_{w}_word": float(np.median([r["orders_per_s"][w] for r in reps]))
               for w in (1, 2)}
        rows.append({"cache": cname, "n": n, "sets": int(fc.offsets[-1]), "seconds": seconds,
                     "mask_words_rule": int(K.mask_words(n)), "repeats": reps, **med,
                     "ratio_2_over_1": float(np.median([r["ratio_2_over_1"] for r in reps]))})
        print(rows[-1], flush=True)
    return rows


def _blip_run(classpath: str, jkl: Path, seconds: int) -> tuple[int, float]:
    """Orders BLIP's ASOBS walks in a run of ``seconds`` (one thread), and the run's CPU
    seconds (all its threads)."""
    import re
    import resource
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(["java", "-cp", classpath,
                              "ch.idsia.blip.api.learn.solver.AsobsSolverApi", "solver.asobs",
                              "-j", str(jkl), "-r", str(Path(tmp) / "out.res"),
                              "-t", str(seconds), "-b", "1", "-seed", "1", "-v", "1"],
                             capture_output=True, text=True, check=True).stdout
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = re.search(r"Num Iterations total: (\d+)", out)
    if m is None:
        raise RuntimeError(f"BLIP printed no iteration count: {out[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return int(m.group(1)), cpu


def part_rate(classpath: str, seconds: int, repeats: int = 3,
              caches: list[str] | None = None) -> list[dict[str, Any]]:
    """Our ASOBS (pass + swaps) vs BLIP's (pass + OBS + swaps), orders per second and per CPU second.

    BLIP's clock starts before it reads the cache and its code is compiled while it
    runs, so its rate is differential: two runs, of ``seconds`` / 3 and ``seconds``;
    (orders of the long one − orders of the short one) / (difference of their wall or
    CPU times). Ours: one run of ``seconds`` (cache read and kernels compiled before).
    The machine is shared, so each cache is measured ``repeats`` times, interleaved
    (ours, BLIP short, BLIP long, again), and the row reports the median of the
    per-repeat ratios; ``uptime`` is recorded before and after. ``synthetic`` is the
    10,000-variable synthetic cache (written as a .jkl for BLIP).
    """
    import gzip
    import shutil
    import subprocess
    import tempfile

    from bnsl_dist.cache import write_jkl

    rows = []
    short = max(1, seconds // 3)
    with tempfile.TemporaryDirectory() as tmp:
        for cname in caches or BLIP_CACHES + ["synthetic"]:
            jkl = Path(tmp) / f"{cname}.jkl"  # BLIP reads plain text
            if cname == "synthetic":
                cache = synthetic_cache(10000)
                write_jkl(cache, jkl)
            else:
                src = SHARED_DATA / "jkl" / "blip-is" / f"{cname}.train.bic.jkl.gz"
                with gzip.open(src, "rb") as fin, open(jkl, "wb") as fout:
                    shutil.copyfileobj(fin, fout)
                cache = read_jkl(src)
            up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            reps = []
            for _ in range(repeats):
                t0, cpu0 = time.perf_counter(), time.process_time()
                it = _drain(make_optimizer("asobs").run(cache, Budget(seconds=seconds),
                                                        np.random.default_rng(1)))
                wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
                n1, c1 = _blip_run(classpath, jkl, short)
                n2, c2 = _blip_run(classpath, jkl, seconds)
                ours, ours_cpu = it / wall, it / max(cpu, 1e-9)
                blip = (n2 - n1) / (seconds - short)
                blip_cpu = (n2 - n1) / max(c2 - c1, 1e-9)
                reps.append({"ours_orders": it, "ours_orders_per_s": ours,
                             "ours_orders_per_cpu_s": ours_cpu, "blip_orders": [n1, n2],
                             "blip_cpu_seconds": [c1, c2], "blip_orders_per_s": blip,
                             "blip_orders_per_cpu_s": blip_cpu,
                             "ratio_wall": ours / max(blip, 1e-9),
                             "ratio_cpu": ours_cpu / max(blip_cpu, 1e-9)})
            up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
            med = {k: float(np.median([r[k] for r in reps]))
                   for k in ("ours_orders_per_s", "ours_orders_per_cpu_s", "blip_orders_per_s",
                             "blip_orders_per_cpu_s", "ratio_wall", "ratio_cpu")}
            rows.append({"cache": cname, "n": cache.n_vars, "sets": cache.n_sets,
                         "seconds": seconds, "blip_seconds": [short, seconds],
                         "repeats": reps, **med, "uptime": [up0, up1]})
            print(rows[-1], flush=True)
    return rows


def _drain(stream: Any) -> int:
    """Run an optimizer's generator to its end; its return value (iterations)."""
    try:
        while True:
            next(stream)
    except StopIteration as stop:
        return int(stop.value)


# ---------------------------------------------------------------------------- report
def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def markdown(result: dict[str, Any]) -> str:
    lines = []
    if result.get("orders"):
        lines += ["### ASOBS orders per second (one core)", "",
                  "| cache | n | sets | per order | closure | orders/s (wall) | "
                  "orders/s (CPU) |",
                  "|---|---:|---:|---|---|---:|---:|"]
        for r in result["orders"]:
            what = "pass" if r["local_search"] == "none" else "pass + swaps"
            lines.append(f"| {r['cache']} | {r['n']} | {r['sets']} | {what} | "
                         f"{r['closure']} | {r['orders_per_s']:.2f} | "
                         f"{r['orders_per_cpu_s']:.2f} |")
        lines.append("")
    if result.get("rate"):
        lines += ["### ASOBS orders per second beside BLIP's (pass + swaps; BLIP: pass "
                  "+ OBS + swaps; one thread each, one after the other; BLIP's rate differential; medians "
                  "of interleaved repeats)", "",
                  "| cache | n | sets | ours /s | BLIP /s | ratio | ours /CPU s | "
                  "BLIP /CPU s | ratio |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in result["rate"]:
            lines.append(f"| {r['cache']} | {r['n']} | {r['sets']} | "
                         f"{r['ours_orders_per_s']:.1f} | {r['blip_orders_per_s']:.1f} | "
                         f"{r['ratio_wall']:.2f} | {r['ours_orders_per_cpu_s']:.1f} | "
                         f"{r['blip_orders_per_cpu_s']:.1f} | {r['ratio_cpu']:.2f} |")
        lines.append("")
    if result.get("masks"):
        lines += ["### Set masks of 1 or 2 words (ASOBS + swaps, same orders, medians "
                  "of interleaved repeats)", "",
                  "| cache | n | sets | 1 word /s | 2 words /s | ratio 2/1 | rule |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for r in result["masks"]:
            lines.append(f"| {r['cache']} | {r['n']} | {r['sets']} | "
                         f"{r['orders_per_s_1_word']:.1f} | {r['orders_per_s_2_word']:.1f} | "
                         f"{r['ratio_2_over_1']:.2f} | {r['mask_words_rule']} |")
        lines.append("")
    if result.get("blip"):
        lines += ["### Best BIC on BLIP's caches (ours / BLIP's; seed 1; one core)", "",
                  "| cache | n | algorithm | ours 10 s | BLIP 10 s | ours 60 s | BLIP 60 s | "
                  "CPU share |",
                  "|---|---:|---|---:|---:|---:|---:|---:|"]
        for r in result["blip"]:
            b = r["blip"] or (None, None)
            at = r["best_at"]
            share = r["cpu_seconds"] / max(r["seconds"], 1e-9)
            lines.append(f"| {r['cache']} | {r['n']} | {r['algorithm']} | "
                         f"{_fmt(at.get('10'))} | {_fmt(b[0])} | {_fmt(at.get('60'))} | "
                         f"{_fmt(b[1])} | {share:.0%} |")
        lines.append("")
    if result.get("direction"):
        lines += ["### ASOBS-ENT direction (equal orders, mean best of 3 seeds)", "",
                  "| cache | n | orders | per order | uniform | high-entropy first (paper, BLIP) | "
                  "high-entropy last |", "|---|---:|---:|---|---:|---:|---:|"]
        rows = result["direction"]
        for r in rows:
            if r["sampler"] != "uniform":
                continue
            same = {x["sampler"]: x["mean"] for x in rows
                    if x["cache"] == r["cache"] and x["local_search"] == r["local_search"]}
            what = "pass" if r["local_search"] == "none" else "pass + swaps"
            lines.append(f"| {r['cache']} | {r['n']} | {r['orders']} | {what} | "
                         f"{same['uniform']:.1f} | {same['entropy, high first']:.1f} | "
                         f"{same['entropy, high last']:.1f} |")
        lines.append("")
    if result.get("mirror"):
        lines += ["### Local search start: topological order of the ASOBS DAG vs its mirror",
                  "", "| cache | sampler | start | orders | best |", "|---|---|---|---:|---:|"]
        for r in result["mirror"]:
            lines.append(f"| {r['cache']} | {r['sampler']} | {r['start']} | {r['orders']} | "
                         f"{r['best']:.3f} |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--parts", nargs="*",
                    default=["orders", "direction", "mirror", "blip"])
    ap.add_argument("--short", type=float, default=10.0)
    ap.add_argument("--long", type=float, default=60.0)
    ap.add_argument("--orders-seconds", type=float, default=5.0)
    ap.add_argument("--blip-jar", default=None,
                    help="rate part: class path of BLIP (built from its public source)")
    ap.add_argument("--rate-seconds", type=int, default=10)
    ap.add_argument("--rate-repeats", type=int, default=3)
    ap.add_argument("--rate-caches", nargs="*", default=None,
                    help="rate part: only these caches (BLIP's names, or 'synthetic')")
    ap.add_argument("--masks-seconds", type=float, default=3.0,
                    help="masks part: seconds per cache and mask width, per repeat")
    ap.add_argument("--algos", nargs="*", default=None,
                    help="blip part: only these algorithms (their rows replace earlier ones)")
    args = ap.parse_args()
    _warm_up()
    result: dict[str, Any] = {"settings": vars(args)}
    path = Path(OUT_DIR / "search.json")
    if path.is_file():  # keep parts done earlier
        import json

        old = json.loads(path.read_text())
        result.update({k: v for k, v in old.items()
                       if k in ("orders", "blip", "direction", "mirror", "rate", "masks")})
    for part in args.parts:
        if part == "orders":
            result["orders"] = part_orders(args.orders_seconds)
        elif part == "blip":
            rows = part_blip(args.short, args.long, args.algos)
            if args.algos and result.get("blip"):
                done = {(r["cache"], r["algorithm"]) for r in rows}
                keep = [r for r in result["blip"] if (r["cache"], r["algorithm"]) not in done]
                order = {(c, a): i for i, (c, a) in enumerate(
                    (c, a) for c in BLIP_CACHES for a in LONG_ALGOS + SHORT_ALGOS)}
                rows = sorted(keep + rows, key=lambda r: order.get((r["cache"],
                                                                    r["algorithm"]), 1 << 30))
            result["blip"] = rows
        elif part == "direction":
            result["direction"] = part_direction()
        elif part == "mirror":
            result["mirror"] = part_mirror(args.short)
        elif part == "masks":
            result["masks"] = part_masks(args.masks_seconds, args.rate_repeats,
                                         args.rate_caches)
        elif part == "rate":
            if not args.blip_jar:
                print("rate: skipped (no --blip-jar)")
                continue
            rows = part_rate(args.blip_jar, args.rate_seconds, args.rate_repeats,
                             args.rate_caches)
            if args.rate_caches and result.get("rate"):
                done = {r["cache"] for r in rows}
                rows = [r for r in result["rate"] if r["cache"] not in done] + rows
            result["rate"] = rows
        write_result("search", result)
    from bnsl_dist._io import atomic_write_text

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    atomic_write_text(OUT_DIR / "search.md", markdown(result) + "\n")
    print(markdown(result))


if __name__ == "__main__":
    main()
