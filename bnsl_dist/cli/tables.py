"""`bnsl-dist tables DIR`: the papers' ΔBIC tables and figures from stored results."""

from __future__ import annotations

from pathlib import Path

import click

from bnsl_dist.cli._checks import check_output_dir


@click.command("tables")
@click.argument("results", metavar="DIR", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "out", default=None, type=click.Path(file_okay=False),
              help="Output folder (default: DIR/tables).")
@click.option("--at", "at", type=float, default=None,
              help="Compare the best scores within this many seconds (default: end of "
                   "budget).")
@click.option("--no-plots", is_flag=True, help="Tables only.")
def tables_cmd(results: str, out: str | None, at: float | None, no_plots: bool) -> None:
    """Write ΔBIC tables (markdown + CSV) and plots (PNG) for the results in DIR.

    Comparisons come from the grids stored in DIR/grids (their 'comparisons'), else the
    papers' defaults among the algorithms present.
    """
    from bnsl_dist.config import GridConfig
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.reporting.tables import Comparison, default_comparisons, write_tables
    from bnsl_dist.results.store import ResultStore

    out_dir = Path(out) if out else Path(results) / "tables"
    check_output_dir(out_dir, "--out")
    store = ResultStore(results)
    frame = store.read_frame()
    if frame.empty:
        raise InvalidConfigError(f"{results}: no results to tabulate")
    comps: list[Comparison] = []
    for p in sorted((Path(results) / "grids").glob("*.json")):
        try:
            g = GridConfig.model_validate_json(p.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InvalidConfigError(f"{p}: not a stored grid: {exc}") from None
        comps += [Comparison(c.a, c.b, c.title, tuple(c.columns), grid=g.name)
                  for c in g.comparisons]
    if not comps:
        comps = default_comparisons(frame["label"].unique())
    written = write_tables(frame, comps, out_dir, at=at)
    if not no_plots:
        from bnsl_dist.reporting.plots import (
            plot_anytime,
            plot_anytime_summary,
            plot_delta_histogram,
        )
        from bnsl_dist.reporting.tables import paired_deltas

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
                    sel = sel[sel["k"] == int(top["k"])]
                kk = f", k={int(top['k'])}" if len(sel["k"].dropna()) else ""
                written.append(plot_anytime(
                    sel, out_dir / f"{c.name}.curve.png",
                    title=f"{top['dataset']}/{top['split']} (n={int(top['n_vars'])}{kk})"))
    for p in written:
        click.echo(str(p))
