"""Benchmark: do the SCIP solvers (``ilp``, ``twilp``) end at their time budget?

SCIP's own time limit does not bound a solve: the Python callbacks (separation, LP
repairs) run seconds on large caches and SCIP cannot interrupt them, so the solvers
stop SCIP from their callbacks at the deadline and start a callback step only when its
estimated cost fits (``ScipStop``, ``StepCosts`` in
``bnsl_dist.search.exact._ilp_common``). Per run this records wall seconds / budget
(``wall_over_budget``: at most ~1 when the budget holds), CPU seconds and the final
score, for ``ilp`` and ``twilp`` (k = 2, 3, 4: the treewidths of the 2014 and 2018
grids up to 4) with budgets of 5, 10 and 20 s on:

- ``nltcs`` and ``kdd`` (Twenty Datasets, 16 and 64 variables): independence-selection
  BIC caches of the train split built here with the 2018 grids' settings (0.06 s per
  variable), kept in out/caches/;
- ``r0`` (2,000 variables, synthetic, of ``configs/grids/asobs-ent-2018*.yaml``): the
  grid's own cache, found by its data's hash in ``--r0-caches`` (a grid run's
  ``caches/`` folder; default ``/work/runs/asobs-ent-2018/caches``); skipped with a
  message when absent (as on CI machines). ``ilp`` only: TWILP's model has a binary
  variable per ordered pair of variables (4 million here), and no grid runs it there.

Run: ``python -m workflows.benchmarks.ilp_budget`` (writes out/ilp_budget.json; about
5 minutes with the default budgets); ``--quick`` for budgets of 5 and 10 s only
(writes out/ilp_budget_quick.json, about 2 minutes). Wall time exceeds CPU time on a
shared machine: both are recorded, and the load average at the start and the end.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import time
from pathlib import Path
from typing import Any

from bnsl_dist.cache import ParentSetCache, read_jkl
from workflows.benchmarks._common import write_result
from workflows.benchmarks.ilp import log, solve, twenty_cache

BUDGETS = (5.0, 10.0, 20.0)
QUICK_BUDGETS = (5.0, 10.0)
TREEWIDTHS = (2, 3, 4)
#: Independence selection per variable of the 2018 grids (kmax-, asobs-ent-2018-reduced).
IS_SECONDS = 0.06
R0_CACHES = Path("/work/runs/asobs-ent-2018/caches")
#: ``CategoricalData.content_hash()`` of r0's train split (the catalog's recipe).
R0_DATA_HASH = "9e10a454086480ed5e6710dc871c3a4ee9cf8b058b6c8d330be3acb66c4ca8bd"


def find_cache(folder: Path, data_hash: str) -> Path | None:
    """The ``.jkl.gz`` cache in ``folder`` built from the data of ``data_hash`` (read
    from the bnsl_dist metadata line of each file's header), or None."""
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob("*.jkl.gz")):
        with gzip.open(path, "rt") as fh:
            for line in (fh.readline() for _ in range(5)):
                _, sep, meta = line.partition("# bnsl_dist: ")
                if sep and json.loads(meta).get("meta", {}).get("data_hash") == data_hash:
                    return path
    return None


def caches(r0_folder: Path) -> list[tuple[str, ParentSetCache, bool]]:
    """(name, cache, whether TWILP runs on it)."""
    out = [(f"{name} (is {IS_SECONDS:g} s/var)", twenty_cache(name, IS_SECONDS), True)
           for name in ("nltcs", "kdd")]
    path = find_cache(r0_folder, R0_DATA_HASH)
    if path is None:
        log(f"r0: no cache of its data in {r0_folder}; skipped")
    else:
        out.append((f"r0 ({path.name})", read_jkl(path), False))
    return out


def run(budgets: tuple[float, ...], r0_folder: Path) -> list[dict[str, Any]]:
    rows = []
    for cname, cache, twilp in caches(r0_folder):
        solvers: list[tuple[str, dict[str, Any]]] = [("ilp", {})]
        if twilp:
            solvers += [("twilp", {"k": k}) for k in TREEWIDTHS]
        for algo, params in solvers:
            for seconds in budgets:
                r = solve(cache, algo, seconds, **params)
                rows.append({"cache": cname, "n_vars": cache.n_vars, "n_sets": cache.n_sets,
                             "algorithm": algo, **params, "budget": seconds,
                             "wall_over_budget": r["wall"] / seconds, **r})
                log(f"{cname} {algo} {params or ''} {seconds:g} s: wall/budget "
                    f"{r['wall'] / seconds:.3f}, CPU {r['cpu']:.1f} s, score "
                    f"{r['score']:.2f}, optimal={r['optimal']}")
    return rows


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budgets", default=",".join(f"{b:g}" for b in BUDGETS),
                    help="comma-separated seconds")
    ap.add_argument("--r0-caches", type=Path, default=R0_CACHES,
                    help="folder of a grid run's caches holding r0's")
    ap.add_argument("--quick", action="store_true",
                    help=f"budgets {', '.join(f'{b:g}' for b in QUICK_BUDGETS)} s only")
    args = ap.parse_args(argv)
    budgets = QUICK_BUDGETS if args.quick else tuple(float(b) for b in args.budgets.split(","))
    res: dict[str, Any] = {"load_average_start": list(os.getloadavg()),
                           "budgets": list(budgets), "treewidths": list(TREEWIDTHS)}
    t0, c0 = time.perf_counter(), time.process_time()
    res["runs"] = run(budgets, args.r0_caches)
    res["total_wall"] = time.perf_counter() - t0
    res["total_cpu"] = time.process_time() - c0
    res["load_average_end"] = list(os.getloadavg())
    path = write_result("ilp_budget_quick" if args.quick else "ilp_budget", res)
    log(f"wrote {path} (wall {res['total_wall']:.0f} s, CPU {res['total_cpu']:.0f} s)")
    return path


if __name__ == "__main__":
    main()
