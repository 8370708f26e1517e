"""`bnsl-dist tables DIR|RECORDS`: the papers' tables and figures from stored results.

Every source gets the ΔBIC comparison tables (the stored grids' ``comparisons`` whose
two labels both ran, else the papers' defaults among the labels present) and a failures
table per grid with failed cells; then each stored grid gets the tables of its kind, from
:data:`KIND_TABLES` (a kind without an entry gets only the above). To add the tables of
a new kind, add one function of the :data:`KindTables` signature to that mapping.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from bnsl_dist.cli._checks import check_output_dir
from bnsl_dist.cli._common import FiniteRange

if TYPE_CHECKING:
    import pandas as pd

    from bnsl_dist.pipeline.config import GridConfig
    from bnsl_dist.results.export import RecordSet
    from bnsl_dist.results.records import CellFailure

#: The tables of one grid: (its results, its stored config, its failures, the output
#: folder, whether to draw plots) -> the files written.
KindTables = Callable[["pd.DataFrame", "GridConfig", "list[CellFailure]", Path, bool],
                      list[Path]]


def _search_tables(frame: pd.DataFrame, grid: GridConfig, failures: list[CellFailure],
                   out_dir: Path, plots: bool) -> list[Path]:
    """Exact solvers (with top-p) and the screening sweep, each when present."""
    from bnsl_dist.reporting.exact import write_exact_tables
    from bnsl_dist.reporting.screening import write_screening_tables

    title = grid.reference or grid.name
    return [*write_exact_tables(frame, out_dir, grid.name, failures=failures, title=title,
                                plots=plots),
            *write_screening_tables(frame, out_dir, grid.name, title=title, plots=plots)]


def _inference_tables(frame: pd.DataFrame, grid: GridConfig, failures: list[CellFailure],
                      out_dir: Path, plots: bool) -> list[Path]:
    """The inference study: Table 5 and Figure 7 (ASOBS-ENT paper, §6.3)."""
    from bnsl_dist.reporting.inference import inference_tables

    return inference_tables(frame, out_dir, plots=plots)


def _sem_tables(frame: pd.DataFrame, grid: GridConfig, failures: list[CellFailure],
                out_dir: Path, plots: bool) -> list[Path]:
    """The SEM-kMAX imputation study (k-MAX paper, §7)."""
    from bnsl_dist.reporting.imputation import write_imputation_tables

    return write_imputation_tables(frame, out_dir, grid.name,
                                   title=grid.reference or grid.name, plots=plots)


#: Per grid kind (the stored grid's ``kind``), the tables beyond the ΔBIC comparisons.
KIND_TABLES: dict[str, KindTables] = {"search": _search_tables,
                                      "inference": _inference_tables,
                                      "sem": _sem_tables}


def _grids(recs: RecordSet) -> dict[str, GridConfig]:
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.pipeline.config import GridConfig

    out = {}
    for name, obj in sorted(recs.grids.items()):
        try:
            out[name] = GridConfig.model_validate(obj, context={"stored": True})
        except ValueError as exc:
            raise InvalidConfigError(f"stored grid {name!r}: not a valid grid: {exc}") from None
    return out


def write_all_tables(recs: RecordSet, out_dir: Path, *, at: float | None = None,
                     plots: bool = True) -> list[Path]:
    """Every table (and, with ``plots``, figure) of ``recs`` under ``out_dir``."""
    from bnsl_dist.reporting.tables import (
        Comparison,
        default_comparisons,
        write_failures_table,
        write_tables,
    )

    frame = recs.frame()
    grids = _grids(recs)
    # a stored comparison gets a table when both its labels ran in its grid (a piece of a
    # grid run for some labels only gets none for the others)
    ran = set(zip(frame["grid"], frame["label"], strict=True)) if not frame.empty else set()
    declared = [(g.name, c) for g in grids.values() for c in g.comparisons]
    comps: list[Comparison] = [Comparison(c.a, c.b, c.title, tuple(c.columns), grid=name)
                               for name, c in declared if {(name, c.a), (name, c.b)} <= ran]
    if not declared and not frame.empty:
        comps = default_comparisons(frame["label"].unique())
    written = write_tables(frame, comps, out_dir, at=at) if comps else []
    names = sorted(set(grids) | set(frame["grid"]) | {f.grid for f in recs.failures})
    for name in names:
        fails = [f for f in recs.failures if f.grid == name]
        written += write_failures_table(fails, out_dir, name)
        grid = grids.get(name)
        kind_tables = KIND_TABLES.get(grid.kind) if grid is not None else None
        if kind_tables is not None and grid is not None:
            written += kind_tables(frame[frame["grid"] == name], grid, fails, out_dir, plots)
    if plots:
        written += _comparison_plots(frame, comps, out_dir, at)
    return written


def _comparison_plots(frame: pd.DataFrame, comps: list[Any], out_dir: Path,
                      at: float | None) -> list[Path]:
    from bnsl_dist.reporting.plots import (
        plot_anytime,
        plot_anytime_summary,
        plot_delta_histogram,
    )
    from bnsl_dist.reporting.tables import paired_deltas

    written = []
    for c in comps:
        d = paired_deltas(frame, c.a, c.b, at=at, grid=c.grid)
        written.append(plot_delta_histogram(d["delta"], out_dir / f"{c.name}.hist.png",
                                            title=c.title, a=c.a, b=c.b))
        sub = frame if c.grid is None else frame[frame["grid"] == c.grid]
        written.append(plot_anytime_summary(sub, out_dir / f"{c.name}.anytime.png",
                                            labels=[c.a, c.b], title=c.title))
        if not d.empty:  # score vs time in the largest paired experiment
            top = d.sort_values(["n_vars", "dataset", "split"]).iloc[-1]
            sel = sub[(sub["dataset"] == top["dataset"]) & (sub["split"] == top["split"])
                      & sub["label"].isin([c.a, c.b])]
            if top["k"] is not None and str(top["k"]) not in ("<NA>", "nan"):
                # an unbounded label's runs (no k) are in every treewidth's experiment
                sel = sel[(sel["k"] == int(top["k"])) | sel["k"].isna()]
            kk = f", k={int(top['k'])}" if len(sel["k"].dropna()) else ""
            written.append(plot_anytime(
                sel, out_dir / f"{c.name}.curve.png",
                title=f"{top['dataset']}/{top['split']} (n={int(top['n_vars'])}{kk})"))
    return written


@click.command("tables")
@click.argument("source", metavar="DIR|RECORDS", type=click.Path(exists=True))
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="Output folder (default: DIR/tables, or the folder of RECORDS).")
@click.option("--at", "at", type=FiniteRange(min=0, min_open=True), default=None,
              help="Compare the best scores within this many seconds (default: end of "
                   "budget).")
@click.option("--no-plots", is_flag=True, help="Tables only.")
def tables_cmd(source: str, out: str | None, at: float | None, no_plots: bool) -> None:
    """Write the tables (markdown + CSV) and plots (PNG) of a results folder (DIR, as
    written by `grid run --results`) or of a records file (`grid export`).

    ΔBIC comparisons come from the stored grids (their 'comparisons' whose two
    algorithms both ran), else the papers' defaults among the algorithms present; each
    grid then gets the tables of its kind (exact solvers, top-p, screening sweep) and a
    list of its failed cells.
    """
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.results.export import load_records

    src = Path(source)
    out_dir = Path(out) if out else (src / "tables" if src.is_dir() else src.parent)
    check_output_dir(out_dir, "--out")
    recs = load_records(src)
    if recs.table.num_rows == 0 and not recs.failures:
        raise InvalidConfigError(f"{source}: no results to tabulate")
    written = write_all_tables(recs, out_dir, at=at, plots=not no_plots)
    if not written:  # was exit 0 with nothing written or said (quickstart.yaml's grid)
        labels = ", ".join(sorted(recs.frame()["label"].unique()))
        raise InvalidConfigError(
            f"{source}: no table applies: no ΔBIC comparison among the labels {labels} "
            f"(give the grid comparisons: [{{a: LABEL, b: LABEL}}]), no failed cell, and "
            f"no exact-solver, screening, inference or SEM results")
    for p in written:
        click.echo(str(p))
