"""Synthetic results folders with hand-checkable numbers (no search is run): exact
solvers with and without a proof, top-p runs, a screening sweep over three seeds, a
non-exact baseline and a failed cell, under a stored grid that validates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.results import CellFailure, CellResult, ResultStore

GRID = "syn"
NODES = ["a", "b", "c"]


def grid_config() -> GridConfig:
    return GridConfig.model_validate({
        "name": GRID, "reference": "synthetic", "seed": 1,
        "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "scores_per_variable": 10},
        "algorithms": [
            {"name": "astar", "label": "astar", "params": {"constraints": "off"}},
            {"name": "awastar", "label": "awastar-p1",
             "params": {"constraints": "recursive", "p": 1}},
            {"name": "awastar", "label": "awastar-p2",
             "params": {"constraints": "recursive", "p": 2}},
            {"name": "twilp", "k": [2]},
            {"name": "ilp", "label": "unbounded"},
            {"name": "hc-tabu", "label": "sota"},
            {"name": "hc-tabu", "label": "qds-eps0.1", "screening": {"epsilon": 0.1}}],
        "seeds": [0, 1, 2], "budget": {"seconds": 10},
        "comparisons": [{"a": "unbounded", "b": "twilp", "columns": ["k"]}]})


def dag_json(parents: dict[str, list[str]]) -> str:
    return json.dumps({"nodes": NODES, "parents": {v: parents.get(v, []) for v in NODES}})


def record(label: str, algorithm: str, score: float, *, seed: int = 0, dataset: str = "d1",
           bound: float | None = None, k: int | None = None, params: dict[str, Any] | None
           = None, outputs: dict[str, Any] | None = None, elapsed: float = 1.0,
           cache_seconds: float = 0.5, iterations: int = 10, dense: bool = False,
           hostname: str = "h") -> CellResult:
    # dense: a -> b, a -> c, b -> c (3 arcs); else a -> b (1 arc)
    kept = {"b": ["a"], "c": ["a", "b"]} if dense else {"b": ["a"]}
    return CellResult(
        key=f"{dataset}-{label}-{k}-{seed}", grid=GRID, dataset=dataset, split="test",
        algorithm=algorithm, label=label, params=json.dumps(params or {}), k=k, seed=seed,
        budget_seconds=10.0, budget_iterations=None, best_score=score,
        dag_json=dag_json(kept), n_vars=3, n_samples=100,
        status="optimal" if bound == score else "ok", bound=bound, iterations=iterations,
        elapsed=elapsed, cache_seconds=cache_seconds, n_parent_sets=7,
        trace_elapsed=(elapsed / 2,), trace_scores=(score,), trace_iterations=(1,),
        outputs=outputs or {}, versions='{"bnsl_dist": "0"}', hostname=hostname,
        spec=json.dumps({"label": label, "seed": seed}))


def records() -> list[CellResult]:
    solver = {"nodes_expanded": 40, "proved_optimal": True, "algorithm": "astar"}
    out = [
        record("astar", "astar", -50.0, bound=-50.0, outputs={"solver": solver}),
        record("astar", "astar", -100.0, bound=-99.0, dataset="d0", iterations=7,
               outputs={"solver": {**solver, "proved_optimal": False, "stopped": "budget"}}),
        # top-p: epsilon given by the solver (p=1), else score / bound (p=2)
        record("awastar-p1", "awastar", -110.0, bound=-100.0, params={"p": 1},
               outputs={"solver": {"epsilon": 1.1, "epsilon_paper": 1.2, "n_sets_kept": 4}}),
        record("awastar-p2", "awastar", -100.0, bound=-95.0, params={"p": 2}, elapsed=3.0),
        record("twilp", "twilp", -60.0, bound=-57.0, k=2),
        record("unbounded", "ilp", -55.0, bound=-55.0, outputs={"solver": {"optimal": True}}),
    ]
    for seed, (score, eps_score) in enumerate([(-10.0, -11.0), (-12.0, -11.0), (-14.0, -14.0)]):
        out.append(record("sota", "hc-tabu", score, seed=seed, elapsed=2.0 + seed))
        out.append(record("qds-eps0.1", "hc-tabu", eps_score, seed=seed, elapsed=1.0,
                          cache_seconds=0.25, dense=seed == 0,
                          outputs={"screening": {"epsilon": 0.1, "n_roots": 2,
                                               "seconds": 0.5, "roots": [0, 1]}}))
    return out


def failure() -> CellFailure:
    return CellFailure(key="d2-astar-None-0", grid=GRID, dataset="d2", split="test",
                       algorithm="astar", label="astar", k=None, seed=0, status="killed",
                       error="worker died 3 times\nmore", traceback="Traceback ...")


def write_store(root: Path, recs: list[CellResult] | None = None) -> ResultStore:
    """A results folder like ``grid run`` leaves: results, a failure, the stored grid."""
    st = ResultStore(root)
    for r in recs if recs is not None else records():
        st.write_result(r)
    st.write_failure(failure())
    st.save_text(f"grids/{GRID}.json", grid_config().model_dump_json(indent=1) + "\n")
    return st
