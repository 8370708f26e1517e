"""Tables of exact-solver grids: per cell the best score, its proven bound and gap,
whether it is optimal, the seconds and iterations (nodes expanded for A*, AWA*, BFBnB),
and the statistics the solver reported with its best network (``extra["solver"]``);
for top-p runs (parameter ``p``) the time and suboptimality bound against p.

gap = (bound − score) / |score|, the proportional gap of Parviainen et al. (2014,
Table 1); a cell is optimal when its bound equals its score (to 1e-9 relative, as the
driver decides ``status = "optimal"``). For a top-p run the bound is the top-p bound of
Fan et al. (2014, §6), so ``epsilon`` = score / bound ≥ 1 bounds the loss against the
unpruned optimum (1: optimal).

References
----------
X. Fan, B. Malone, C. Yuan, "Finding optimal Bayesian network structures with
constraints learned from data", UAI 2014, Table 2 and Figure 4. P. Parviainen,
H. S. Farahani, J. Lagergren, "Learning bounded tree-width Bayesian networks using
integer linear programming", AISTATS 2014, Table 1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.reporting.text import fmt_float, fmt_value, write_text_table
from bnsl_dist.results.records import CellFailure
from bnsl_dist.search.base import get_optimizer

__all__ = ["is_exact", "solver_stats_of", "exact_frame", "exact_table", "top_p_frame",
           "top_p_table", "write_exact_tables"]

#: Solver statistics not repeated as columns (already a column of the record).
_DUPLICATE_STATS = ("algorithm", "k", "seconds", "p", "optimal")
_SORT = ["dataset", "split", "label", "k", "seed"]


def is_exact(algorithm: str) -> bool:
    """Whether the registered optimizer ``algorithm`` is exact (False when unknown)."""
    try:
        return bool(getattr(get_optimizer(algorithm), "exact", False))
    except InvalidConfigError:  # an algorithm this version does not know
        return False


def solver_stats_of(solver: Mapping[str, Any] | None) -> dict[str, Any]:
    """A record's ``solver`` column (the optimizer's statistics with its best network,
    by name; empty when it has none)."""
    return dict(solver or {})


def _param(params: str, name: str) -> Any:
    return json.loads(params or "{}").get(name)


def exact_frame(frame: pd.DataFrame, failures: Iterable[CellFailure] = ()) -> pd.DataFrame:
    """The numbers of :func:`exact_table`: one row per cell of an exact algorithm of
    ``frame`` and one per failed cell (status = the failure's, numbers missing)."""
    f = frame[[is_exact(a) for a in frame["algorithm"]]] if len(frame) else frame
    rows: list[dict[str, Any]] = []
    for r in f.itertuples(index=False):
        score, bound = float(r.best_score), r.bound
        has_bound = bound is not None and np.isfinite(bound)
        gap = (float(bound) - score) / max(abs(score), 1e-12) if has_bound else np.nan
        optimal = has_bound and float(bound) - score <= 1e-9 * max(1.0, abs(score))
        rows.append({"dataset": r.dataset, "split": r.split, "label": r.label,
                     "k": None if pd.isna(r.k) else int(r.k), "seed": int(r.seed),
                     "n": int(r.n_vars), "N": int(r.n_samples),
                     "parent sets": int(r.n_parent_sets), "score": score,
                     "bound": float(bound) if has_bound else np.nan, "gap": gap,
                     "optimal": bool(optimal), "status": r.status,
                     "seconds": float(r.elapsed), "iterations": int(r.iterations),
                     "cache s": float(r.cache_seconds), "solver": solver_stats_of(r.solver)})
    algos = set(f["algorithm"]) if len(f) else set()
    for fail in failures:
        if not is_exact(fail.algorithm) and fail.algorithm not in algos:
            continue
        rows.append({"dataset": fail.dataset, "split": fail.split, "label": fail.label,
                     "k": fail.k, "seed": fail.seed, "optimal": False,
                     "status": f"{fail.status}: {fail.error.splitlines()[0] if fail.error else ''}",
                     "solver": {}})
    out = pd.DataFrame(rows, columns=[*_SORT, "n", "N", "parent sets", "score", "bound",
                                      "gap", "optimal", "status", "seconds", "iterations",
                                      "cache s", "solver"])
    out["k"] = out["k"].astype("Int64")
    return out.sort_values(_SORT, na_position="first", kind="stable").reset_index(drop=True)


def _int_text(v: Any) -> str:
    return "" if v is None or pd.isna(v) else str(int(v))


def _stats_columns(stats: Sequence[dict[str, Any]]) -> list[str]:
    return sorted({k for s in stats for k in s} - set(_DUPLICATE_STATS))


def exact_table(frame: pd.DataFrame, failures: Iterable[CellFailure] = ()) -> pd.DataFrame:
    """The exact-solver table as text: data set, split, label, k, seed, n, N, parent sets,
    score and bound (3 decimals), gap (6), optimal, status, seconds (3), iterations,
    cache seconds (2), then every solver statistic (sorted by name)."""
    e = exact_frame(frame, failures)
    out = pd.DataFrame({
        "dataset": e["dataset"], "split": e["split"], "label": e["label"],
        "k": [_int_text(v) for v in e["k"]], "seed": [_int_text(v) for v in e["seed"]],
        "n": [_int_text(v) for v in e["n"]], "N": [_int_text(v) for v in e["N"]],
        "parent sets": [_int_text(v) for v in e["parent sets"]],
        "score": [fmt_float(v, ".3f") for v in e["score"]],
        "bound": [fmt_float(v, ".3f") for v in e["bound"]],
        "gap": [fmt_float(v, ".6f") for v in e["gap"]],
        "optimal": ["yes" if v else "no" for v in e["optimal"]],
        "status": e["status"], "seconds": [fmt_float(v, ".3f") for v in e["seconds"]],
        "iterations": [_int_text(v) for v in e["iterations"]],
        "cache s": [fmt_float(v, ".2f") for v in e["cache s"]]})
    stats = list(e["solver"])
    for col in _stats_columns(stats):
        out[col] = [fmt_value(s.get(col)) for s in stats]
    return out


def top_p_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per cell with a top-p parameter ``p``: p, score, bound, ``epsilon`` =
    score / bound (the reported one when the solver gave it), Fan et al.'s printed
    eq. 5 (``epsilon_paper``), sets kept, largest subproblem, seconds, iterations,
    proved optimal (for the pruned problem); sorted by data set, p, seed."""
    rows = []
    for r in frame.itertuples(index=False):
        p = _param(r.params, "p")
        if p is None:
            continue
        st = solver_stats_of(r.solver)
        score = float(r.best_score)
        bound = float(r.bound) if r.bound is not None and np.isfinite(r.bound) else np.nan
        eps = st.get("epsilon")
        rows.append({"dataset": r.dataset, "split": r.split, "p": int(p), "seed": int(r.seed),
                     "label": r.label, "score": score, "bound": bound,
                     "epsilon": float(eps) if eps is not None else score / bound,
                     "epsilon_paper": st.get("epsilon_paper", np.nan),
                     "sets kept": st.get("n_sets_kept"),
                     "largest subproblem": st.get("largest_subproblem"),
                     "seconds": float(r.elapsed), "iterations": int(r.iterations),
                     "proved optimal": st.get("proved_optimal")})
    cols = ["dataset", "split", "p", "seed", "label", "score", "bound", "epsilon",
            "epsilon_paper", "sets kept", "largest subproblem", "seconds", "iterations",
            "proved optimal"]
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["dataset", "split", "p", "seed"], kind="stable").reset_index(
        drop=True)


def top_p_table(frame: pd.DataFrame) -> pd.DataFrame:
    """:func:`top_p_frame` as text (scores 3 decimals, epsilons 8, seconds 3)."""
    t = top_p_frame(frame)
    return pd.DataFrame({
        "dataset": t["dataset"], "split": t["split"], "p": t["p"].astype(str),
        "seed": t["seed"].astype(str), "label": t["label"],
        "score": [fmt_float(v, ".3f") for v in t["score"]],
        "bound": [fmt_float(v, ".3f") for v in t["bound"]],
        "epsilon": [fmt_float(v, ".8f") for v in t["epsilon"]],
        "epsilon (eq. 5 as printed)": [fmt_float(v, ".8f") for v in t["epsilon_paper"]],
        "sets kept": [_int_text(v) for v in t["sets kept"]],
        "largest subproblem": [_int_text(v) for v in t["largest subproblem"]],
        "seconds": [fmt_float(v, ".3f") for v in t["seconds"]],
        "iterations": t["iterations"].astype(str),
        "proved optimal": [fmt_value(v) for v in t["proved optimal"]]})


def write_exact_tables(frame: pd.DataFrame, out_dir: str | Path, name: str, *,
                       failures: Iterable[CellFailure] = (), title: str = "",
                       plots: bool = True) -> list[Path]:
    """``<name>__exact.md/.csv`` when ``frame`` has exact-solver cells, and
    ``<name>__top-p.md/.csv`` (+ ``.png``: seconds and epsilon − 1 against p) when it
    has top-p cells. Nothing when it has neither."""
    written: list[Path] = []
    fails = list(failures)
    table = exact_table(frame, fails)
    if not table.empty:
        written += write_text_table(
            table, out_dir, f"{name}__exact", f"{title or name}: exact solvers",
            ["gap = (bound − score) / |score|; optimal: bound = score. seconds: the "
             "solver's run; iterations: nodes expanded (A*, AWA*, BFBnB) or the solver's "
             "count; the solver columns are its statistics when it found its best network."])
    tp = top_p_table(frame)
    if not tp.empty:
        written += write_text_table(
            tp, out_dir, f"{name}__top-p", f"{title or name}: top-p POPS constraint",
            ["epsilon = score / bound ≥ 1 bounds the loss against the unpruned optimum "
             "(1: optimal); eq. 5 as printed in the paper is shown for comparison."])
        if plots:
            from bnsl_dist.reporting.plots import plot_top_p

            written.append(plot_top_p(top_p_frame(frame), Path(out_dir) / f"{name}__top-p.png",
                                      title=title or name))
    return written
