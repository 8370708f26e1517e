"""Which committed SEM cells the junction tree's clique underflow (fixed in c06cf61) could
have touched, as far as their stored networks tell.

Each cell of ``workflows/results/sem-imputation-2018-reduced/records.parquet`` ran
before c06cf61; the cells this study leaves open are rerun after it
(``workflows/sem_rerun.py``), and once their reruns replace them there, their old
records are kept in ``before-c06cf61.parquet`` beside it, which :func:`pre_fix_records`
reads. Two of the networks a cell's E-steps and completions used are known:
the first E-step's random chain (drawn again from the cell's seed stream, CPTs fitted on
the available cases) and the best network (its DAG ``dag_json`` and elimination order
``treewidth_order``; CPTs fitted on a completion that is not stored). The best network
made both reported completions (``imputation_accuracy``, the posterior-marginal argmax;
``imputation_accuracy_mpe``, the joint MPE) and the E-step after its iteration. For each
of the two, :func:`bnsl_dist.sem.underflow.uncertified_rows` gives the rows that no bound
keeps from the kernels' ``TINY`` under any CPTs SEM can fit to a completion of the cell's
masked data (docs/ALGORITHMS.md §9): none, and that network's E-step and completions gave
the same result before c06cf61 as after. The other iterations' networks are not stored:
nothing here speaks for them (the table gives the margins of the known ones instead).

Run (about 1 s per cell on the small data sets, up to 15 s on c20ng and kdd)::

    python -m workflows.sem_underflow --datasets A,B,... [--datasets ...]

Writes ``workflows/results/sem-imputation-2018-reduced/underflow.{json,md}`` (each call
merges its data sets into the JSON; the markdown is drawn from the JSON alone, which
``tests/test_sem_underflow.py`` checks, with a recomputation of some cells).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.results.export import load_records
from workflows._rows import update_rows

OUT = Path(__file__).resolve().parent / "results" / "sem-imputation-2018-reduced"
GRID = Path(__file__).resolve().parents[1] / "configs" / "grids" / "sem-imputation-2018-reduced.yaml"
#: The old records of the cells rerun after c06cf61, once the reruns replace them.
BEFORE = OUT / "before-c06cf61.parquet"


def pre_fix_records() -> Any:
    """Every cell's record as it ran before c06cf61 (a DataFrame sorted by key): the
    committed records, with the cells rerun since taken from :data:`BEFORE`."""
    import pandas as pd

    f = load_records(OUT / "records.parquet").frame()
    if BEFORE.is_file():
        b = load_records(BEFORE).frame()
        f = pd.concat([f[~f["key"].isin(set(b["key"]))], b])
    return f.sort_values("key", ignore_index=True)


def cell_rows(records: Any, cells: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per record: the rows of its masked data that the bounds leave open under
    the chain and under the best DAG, and the best DAG's least floors."""
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.pipeline.run import load_data
    from bnsl_dist.pipeline.tasks.sem import sem_cell_inputs, sem_chain
    from bnsl_dist.sem.underflow import TINY, row_floors, uncertified_rows

    out = []
    truths: dict[str, Any] = {}
    chains: dict[tuple[Any, ...], int] = {}  # the budget scales of a repetition share both
    for rec in records.itertuples():
        cell = cells[rec.key]
        if cell.dataset not in truths:
            truths = {cell.dataset: load_data(cell.data)}
        truth, masked = sem_cell_inputs(cell, truths[cell.dataset])
        assert masked.missing is not None
        rep = tuple(cell.seed_sequence().spawn_key)
        if rep not in chains:
            chain, chain_order = sem_chain(cell, truth.n_vars)
            chains[rep] = int(uncertified_rows(chain, truth.arities, masked.codes,
                                               masked.missing, chain_order,
                                               truth.codes).sum())
        best = [list(p) for p in DAG.from_json_dict(json.loads(rec.dag_json)).parents]
        f = row_floors(best, truth.arities, masked.codes, masked.missing,
                       [int(v) for v in rec.treewidth_order], truth.codes)
        assert f.clique is not None
        open_best = (f.log_prob < f.threshold) & (f.clique < math.log(TINY))
        extra = rec.sem  # the SEM cell's typed column (docs/RECORDS.md)
        out.append({"key": str(rec.key), "dataset": str(rec.dataset),
                    "n_vars": int(truth.n_vars), "n_samples": int(truth.n_samples),
                    "missing_rate": float(extra["missing_rate"]),
                    "budget_scale": float(extra.get("budget_scale", 1.0)),
                    "seed": int(rec.seed), "em_iterations": int(extra["em_iterations"]),
                    "chain_open_rows": chains[rep],
                    "best_open_rows": int(open_best.sum()),
                    "best_min_log_prob_floor": round(float(f.log_prob.min()), 3),
                    "best_threshold": round(float(f.threshold), 3),
                    "best_min_clique_floor": round(float(f.clique.min()), 3),
                    "best_max_in_degree": max(len(p) for p in best),
                    "best_max_out_degree": int(np.bincount(
                        [p for ps in best for p in ps], minlength=len(best)).max())})
    return out


def compute(datasets: list[str]) -> list[dict[str, Any]]:
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid

    f = pre_fix_records()
    cells = {c.key: c for c in expand_grid(load_grid(GRID)) if c.dataset in datasets}
    rows = []
    for ds in datasets:
        rows += cell_rows(f[f["dataset"] == ds], cells)
        print(f"{ds}: {sum(r['dataset'] == ds for r in rows)} cells", flush=True)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["### The clique underflow (c06cf61): what the stored networks of each cell prove",
             "", "Per data set, over its cells (every missing rate, seed and budget scale): "
             "the cells whose first E-step's chain, or whose best network, leaves rows "
             "that no bound keeps from the junction tree's `TINY` (1e-250) under any CPTs "
             "SEM can fit (docs/ALGORITHMS.md §9); the best networks' least bound over "
             "all rows and cells (ln; the kernels recompute a row in logs below "
             "ln 1e-250 = -575.6), and their largest in- and out-degree. "
             "`python -m workflows.sem_underflow`.", "",
             "| data set | variables | rows | cells | EM iterations (mean) | chain: cells "
             "with open rows | best network: cells with open rows (most rows) | least "
             "clique bound | least ln P bound | most parents | most children |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by.setdefault(r["dataset"], []).append(r)
    for ds, g in sorted(by.items(), key=lambda kv: (kv[1][0]["n_vars"], kv[0])):
        chain = sum(r["chain_open_rows"] > 0 for r in g)
        best = sum(r["best_open_rows"] > 0 for r in g)
        most = max(r["best_open_rows"] for r in g)
        lines.append(
            f"| {ds} | {g[0]['n_vars']} | {g[0]['n_samples']} | {len(g)} | "
            f"{np.mean([r['em_iterations'] for r in g]):.1f} | {chain} | "
            f"{best}{f' ({most})' if best else ''} | "
            f"{min(r['best_min_clique_floor'] for r in g):.1f} | "
            f"{min(r['best_min_log_prob_floor'] for r in g):.1f} | "
            f"{max(r['best_max_in_degree'] for r in g)} | "
            f"{max(r['best_max_out_degree'] for r in g)} |")
    n = len(rows)
    opened = sorted({r["dataset"] for r in rows if r["best_open_rows"] or r["chain_open_rows"]})
    lines += ["", f"{n} cells; {sum(bool(r['best_open_rows']) for r in rows)} with open rows "
              f"under the best network, {sum(bool(r['chain_open_rows']) for r in rows)} "
              f"under the chain; data sets with any: {', '.join(opened) or 'none'}."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="", help="comma-separated; none: redraw only")
    a = ap.parse_args(argv)
    rows = update_rows(OUT / "underflow.json", a.datasets, compute,
                       lambda r: (r["dataset"], r["missing_rate"], r["seed"],
                                  r["budget_scale"]))
    atomic_write_text(OUT / "underflow.md", markdown(rows))
    print(markdown(rows))


if __name__ == "__main__":
    main()
