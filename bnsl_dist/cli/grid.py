"""`bnsl-dist grid run | status | export`: run an experiment grid on Dask, resumably;
export its records as one file."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click

from bnsl_dist.cli._checks import check_output_dir, check_output_file
from bnsl_dist.cli._common import (
    FiniteRange,
    StopTime,
    cluster_kwargs,
    cluster_options,
    echo_json,
)


@click.group("grid")
def grid_group() -> None:
    """Experiment grids (configs/grids/*.yaml): run them, see how far they are."""


@grid_group.command("run")
@click.argument("grid_file", metavar="GRID.yaml", type=click.Path(dir_okay=False))
@click.option("--results", "results", required=True, type=click.Path(file_okay=False),
              help="Results folder (one Parquet file per finished cell).")
@cluster_options
@click.option("--cluster", "cluster_file", default=None, type=click.Path(dir_okay=False),
              help="Cluster YAML (configs/clusters/*.yaml): local, address, SLURM, "
                   "Kubernetes...")
@click.option("--dry-run", is_flag=True, help="Print the plan (cells, caches, estimated "
              "time) and exit.")
@click.option("--no-progress", is_flag=True, help="No progress bar: a line per stored cell "
              "instead (also when stderr is not a terminal).")
@click.option("--no-report", is_flag=True, help="No Dask performance report.")
@click.option("--datasets", "only", default=None, metavar="NAME[,NAME...]",
              help="Run only the cells of these data sets (a piece of the grid: the "
                   "others stay pending; cell keys do not depend on it).")
@click.option("--shared-fs/--no-shared-fs", "shared_fs", default=None,
              help="Whether the workers see this machine's files (the grid's paths and "
                   "--results): then they read the data and write the caches "
                   "themselves; else data and caches travel through Dask and this "
                   "process writes every file. Default: the cluster YAML's shared_fs, "
                   "else only for a local cluster.")
@click.option("--labels", "only_labels", default=None, metavar="LABEL[,LABEL...]",
              help="Run only the cells of these algorithm labels (a piece, as --datasets).")
@click.option("--stop-at", "stop_at", type=StopTime(), default=None,
              help="End by WHEN (a batch job's time limit): a duration (2h30m, 90min), a "
                   "clock time (02:10) or a date and time (2026-11-28T02:10). No cell "
                   "starts that would not end by then at the mean wall time of the "
                   "stored cells like it, or of those like it its worker has run in "
                   "this run when longer (none: while before WHEN); "
                   "running cells finish; a cache built in one task stops at a batch "
                   "boundary, its batches kept for the rerun; the rest stay pending "
                   "(exit status 3).")
@click.option("--replay", "replay", default=None, metavar="RECORDS",
              type=click.Path(dir_okay=False, exists=True),
              help="Replay instead of computing: every cache batch and cell sleeps for "
                   "its wall time in the records file RECORDS (of this grid, or of a "
                   "reduced one: brought to this grid's budgets; a cell without a record: "
                   "its budget), on --workers threads of this process. Records of status "
                   "'replayed', never results; --results must be a folder of replays.")
@click.option("--speed", default=1.0, show_default=True,
              type=FiniteRange(min=0.0, min_open=True,
                               message="{opt} must be a positive number, got {value}"),
              help="With --replay: grid seconds per real second (sleeps are divided by "
                   "it; reports/summary.json reads in grid seconds).")
@click.option("--virtual-clock", is_flag=True,
              help="With --replay: the tasks wait on a simulated clock that advances "
                   "only when nothing else can happen (not --speed's real sleeps): the "
                   "schedule Dask makes when every task takes exactly its recorded "
                   "seconds, whatever this machine's load, without Dask's own cost per "
                   "task. Not with --stop-at.")
@click.option("--quiet", "-q", is_flag=True,
              help="No progress (bar or line per cell); the summary and failures stay.")
def run_cmd(grid_file: str, results: str, cluster_file: str | None, dry_run: bool,
            no_progress: bool, no_report: bool, only: str | None, only_labels: str | None,
            stop_at: float | None, replay: str | None, speed: float, virtual_clock: bool,
            shared_fs: bool | None, quiet: bool, **cluster: Any) -> None:
    """Run every cell of GRID.yaml whose result is not yet in --results.

    A big grid can run in pieces (--datasets, --labels, --stop-at, or stop it and rerun:
    finished cells are skipped). Exit status: 0 when every cell is stored, 1 when a cell
    failed (each failed cell's key and first error line printed as it fails, one line each;
    dask's own log records go to dask.log in --results), 2 on bad input or a lost
    cluster, 3 when --stop-at left cells not started (rerun to resume; before 1).
    Every run writes reports/summary.json: workers, makespan_s, busy_s, utilisation,
    lower_bound_s, efficiency, scheduler_ms_per_task, client_peak_rss_bytes."""
    from bnsl_dist.orchestrate.cluster import default_n_workers, open_client
    from bnsl_dist.orchestrate.grid import connected_workers, run_grid
    from bnsl_dist.pipeline.config import load_cluster, load_grid
    from bnsl_dist.pipeline.forecast import format_plan, plan_grid, stop_note

    conn = cluster_kwargs(**cluster)
    if virtual_clock and (replay is None or stop_at is not None):
        from bnsl_dist.exceptions import InvalidConfigError

        raise InvalidConfigError("--virtual-clock: only with --replay" if replay is None
                                 else "--stop-at reads the real clock: not with "
                                      "--virtual-clock")
    if not dry_run:
        check_output_dir(results, "--results")
    grid = load_grid(grid_file)  # every name checked: algorithms, parameters, data sets
    piece = None if only is None else _piece(grid, only)
    labels = None if only_labels is None else _piece(grid, only_labels, "labels")
    cfg = load_cluster(cluster_file) if cluster_file else grid.cluster
    plan = plan_grid(grid, results, piece, labels)
    live = not (no_progress or quiet) and sys.stderr.isatty()
    walls: dict[str, float] = {}  # the stored cells' wall seconds, read once
    left = None  # the pending cells' expected wall seconds, from them
    if dry_run or stop_at is not None or not live:
        from bnsl_dist.pipeline.forecast import estimate_left, stored_walls
        from bnsl_dist.results.store import StoreStatus

        walls = stored_walls(results, plan.done)
        left = estimate_left(plan.cells, StoreStatus(
            plan.done, plan.failed, tuple(c.key for c in plan.pending)), walls)
    if dry_run:
        n = conn["workers"] or (cfg.workers if cfg and cfg.workers else None) \
            or default_n_workers()
        click.echo(format_plan(plan, n, left,
                               stop_in=None if stop_at is None else stop_at - time.time()))
        return
    from bnsl_dist.orchestrate.replay import refuse_replayed

    refuse_replayed(results, replay=replay is not None)
    if not plan.pending:  # every cell stored: no cluster to start
        from bnsl_dist.results.store import ResultStore

        # the grid run is the folder's grid, as when cells run (after a `grid import`,
        # the records' grid is replaced by this one)
        ResultStore(results).save_grid(grid.name, grid.model_dump_json(indent=1) + "\n")
        click.echo(f"{len(plan.cells)} cells: all already done")
        return
    from bnsl_dist.cli._logging import LOG_NAME, log_to

    log_to(Path(results) / LOG_NAME)  # dask's own records: there, not on the terminal
    if replay is not None:
        if labels is not None:
            from bnsl_dist.exceptions import InvalidConfigError

            raise InvalidConfigError("--labels: a replay runs whole data sets (--datasets)")
        _replay(grid, results, replay, speed, conn, piece, stop_at, live, no_report,
                virtual_clock)
        return
    with open_client(cfg, **conn) as client:
        if stop_at is not None and left is not None:
            click.echo(stop_note(plan.pending, left, connected_workers(client) or 1,
                                 stop_at - time.time()), err=True)
        log = None if live or quiet else _cell_log(plan.cells, plan.done, plan.pending,
                                                   walls, lambda: connected_workers(client))
        summary = run_grid(client, grid, results, progress=live, report=not no_report,
                           datasets=piece, labels=labels, on_result=log, stop_at=stop_at,
                           expected=left, shared_fs=shared_fs if shared_fs is not None
                           else cfg.shared_fs if cfg is not None else None)
    click.echo(str(summary))
    report = Path(results) / "reports" / "summary.json"
    if report.is_file():
        click.echo(f"run summary (makespan, utilisation, efficiency): {report}")
    if summary.report is not None:
        click.echo(f"performance report: {summary.report}")
    if summary.not_started:
        click.echo(f"{len(summary.not_started)} cells not started: too late for --stop-at; "
                   f"rerun the same command to resume", err=True)
        sys.exit(3)
    if summary.failed:
        sys.exit(1)


def _replay(grid: Any, results: str, records: str, speed: float, conn: dict[str, Any],
            piece: set[str] | None, stop_at: float | None, live: bool,
            no_report: bool, virtual_clock: bool = False) -> None:
    """``grid run --replay``: on a local cluster of sleeping threads."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate.cluster import default_n_workers
    from bnsl_dist.orchestrate.replay import replay_client, replay_grid
    from bnsl_dist.results.export import read_records

    if conn.get("scheduler") or conn.get("scheduler_file"):
        raise InvalidConfigError("--replay runs on threads of this process: no --scheduler")
    recs = read_records(records)
    with replay_client(conn.get("workers") or default_n_workers()) as client:
        summary = replay_grid(client, grid, results, recs, speed=speed, records_name=records,
                              datasets=piece, stop_at=stop_at, progress=live,
                              report=not no_report, virtual_clock=virtual_clock)
    pace = "on a simulated clock" if virtual_clock else f"at speed {speed:g}"
    click.echo(f"replayed {len(summary.computed)} cells {pace} "
               f"({summary.seconds:.1f} s); in the grid's seconds:")
    click.echo((Path(results) / "reports" / "summary.json").read_text().rstrip())
    for key in summary.failed:
        click.echo(f"failed {key}: {summary.errors.get(key, '')}", err=True)
    if summary.not_started:
        click.echo(f"{len(summary.not_started)} cells not started: too late for --stop-at",
                   err=True)
        sys.exit(3)


def _cell_log(cells: Sequence[Any], done: Sequence[str], pending: Sequence[Any],
              walls: dict[str, float], workers: Callable[[], int | None]
              ) -> Callable[[Any], None]:
    """Without a live progress bar (--no-progress, or stderr not a terminal: a log file),
    one line on stderr per stored cell: time, count, the cell, its best score, its wall
    seconds and the time left (:func:`~bnsl_dist.pipeline.forecast.estimate_left` over the
    cells stored before, whose wall seconds are ``walls``, and during the run, shared
    among the connected ``workers``)."""
    import time

    from bnsl_dist.pipeline.forecast import estimate_left, format_duration, sum_known
    from bnsl_dist.results.store import StoreStatus

    walls = dict(walls)  # the run's cells are added
    stored = list(done)
    to_run = {c.key for c in pending}

    def left() -> str:
        est = {k: s for k, s in estimate_left(cells, StoreStatus(tuple(stored), (),
                                                                 tuple(to_run)), walls).items()
               if k in to_run}   # not the cells of other pieces (--datasets, --labels)
        seconds, known, unknown = sum_known(est)
        if not to_run or not known:
            return ""
        n = workers() or 1
        on = f"on {n} worker{'s' if n > 1 else ''}"
        if not unknown:
            return f"; about {format_duration(seconds / n)} left {on}"
        # the cells with no stored cell like them are not "0 s": say they are unknown
        return (f"; {known} cells like the stored ones: about "
                f"{format_duration(seconds / n)} {on}; {unknown} with nothing to go by yet")

    def log(rec: Any) -> None:
        stored.append(rec.key)
        to_run.discard(rec.key)
        walls[rec.key] = rec.wall_seconds
        sem = rec.outputs.get("sem") or {}
        what = [f"{rec.dataset}/{rec.split}", rec.label]
        if rec.k is not None:
            what.append(f"k={rec.k}")
        if "missing_rate" in sem:
            what.append(f"missing={sem['missing_rate']:g}")
        if sem.get("budget_scale", 1.0) != 1.0:
            what.append(f"budget x{sem['budget_scale']:g}")
        what.append(f"seed={rec.seed}")
        click.echo(f"{time.strftime('%H:%M:%S')} {len(pending) - len(to_run)}/{len(pending)} "
                   f"{' '.join(what)}: {rec.best_score:.4f} in {rec.wall_seconds:.1f} s"
                   f"{left()}", err=True)

    return log


def _piece(grid: Any, only: str, what: str = "datasets") -> set[str]:
    """The data sets (``what="labels"``: algorithm labels) named in ``only``
    (comma-separated), each checked against ``grid``."""
    from bnsl_dist.exceptions import InvalidConfigError

    names = [n.strip() for n in only.split(",") if n.strip()]
    have = ([d.name for d in grid.datasets] if what == "datasets"
            else list(dict.fromkeys(a.display for a in grid.algorithms)))
    unknown = [n for n in names if n not in have]
    if unknown or not names:
        raise InvalidConfigError(f"--{what}: {', '.join(unknown) or repr(only)} not in "
                                 f"grid {grid.name} (it has {', '.join(have)})")
    return set(names)


@grid_group.command("plan")
@click.argument("grid_file", metavar="GRID.yaml", type=click.Path(dir_okay=False))
@click.option("--workers", "workers", required=True, multiple=True,
              type=click.IntRange(min=1), help="Worker threads (repeat for several).")
@click.option("--records", "records", default=None, type=click.Path(dir_okay=False,
                                                                     exists=True),
              help="A records file of this grid or of a reduced one (its wall times, "
                   "brought to this grid's budgets); default: the budgets alone.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def plan_cmd(grid_file: str, workers: tuple[int, ...], records: str | None,
             as_json: bool) -> None:
    """Expected makespan, CPU-hours, peak memory per worker and cells of GRID.yaml on
    --workers: its tasks as `grid run` submits them, scheduled as Dask hands them out,
    with the durations of the replay model (no cluster is started)."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.pipeline.plan import format_plan_estimate, plan

    grid = load_grid(grid_file)
    recs = None
    if records is not None:
        from bnsl_dist.results.export import read_records

        recs = read_records(records)
    cells = expand_grid(grid)
    plans = [plan(cells, w, recs, grid=grid.name) for w in workers]
    if as_json:
        echo_json([p.to_dict() for p in plans])
        return
    for p in plans:
        click.echo(format_plan_estimate(p))


@grid_group.command("status")
@click.argument("grid_file", metavar="GRID.yaml", type=click.Path(dir_okay=False))
@click.option("--results", "results", required=True, type=click.Path(file_okay=False))
@click.option("--by", "by", multiple=True, metavar="FIELD",
              help="Count per value of FIELD too (repeat for combinations): dataset, split, "
                   "label, algorithm, k, seed, or an axis of a grid kind (missing_rate, "
                   "budget_scale of SEM grids).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (with the keys).")
def status_cmd(grid_file: str, results: str, by: tuple[str, ...], as_json: bool) -> None:
    """Count the done, failed and pending cells of GRID.yaml in --results (per data set,
    algorithm, ... with --by)."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.forecast import estimate_from_store, format_duration, sum_known
    from bnsl_dist.pipeline.grid import check_status_fields, count_by, expand_grid, grid_status

    try:
        check_status_fields(by)
    except InvalidConfigError as exc:
        raise InvalidConfigError(f"--by: {exc}") from None
    grid = load_grid(grid_file)
    cells = expand_grid(grid)
    st = grid_status(grid, results, cells)
    left = estimate_from_store(results, cells, st)
    seconds, known, unknown = sum_known(left)
    groups = count_by(cells, st, by, left) if by else None
    if as_json:
        echo_json({**st.counts(), "seconds_left": seconds, "cells_without_estimate": unknown,
                   "failed_keys": list(st.failed), "pending_keys": list(st.pending),
                   **({} if groups is None else {"by": list(by), "groups": groups})})
        return
    c = st.counts()
    eta = ""
    if left and not known:
        eta = f"; no stored cell like the {unknown} to run to estimate their time by"
    elif left:
        eta = (f"; about {format_duration(seconds)} of worker time left"
               + (f" for {known} of them ({unknown} with nothing to go by)"
                  if unknown else "")
               + ", from the wall times of stored cells like them")
    click.echo(f"{grid.name}: {c['done']} done, {c['failed']} failed, {c['pending']} pending "
               f"(of {c['total']}){eta}")
    if not Path(results).exists():  # a mistyped folder reads as a grid not yet begun
        click.echo(f"note: no results folder {results} (nothing run there yet)", err=True)
    if groups:
        cols = [*by, "done", "failed", "pending", "total", "left"]
        rows = [["-" if g[f] is None else f"{g[f]:g}" if isinstance(g[f], float)
                 else str(g[f]) for f in cols[:-1]]
                + ["?" if g["seconds_left"] is None else format_duration(g["seconds_left"])
                   if g["seconds_left"] else "-"] for g in groups]
        width = [max(len(x) for x in [col, *(r[i] for r in rows)])
                 for i, col in enumerate(cols)]
        for r in [cols, *rows]:
            click.echo("  ".join(x.ljust(w) if i < len(by) else x.rjust(w)
                                 for i, (x, w) in enumerate(zip(r, width, strict=True))))


@grid_group.command("export")
@click.argument("results", metavar="DIR", type=click.Path(file_okay=False, exists=True))
@click.option("--out", "out", required=True, type=click.Path(dir_okay=False),
              help="The records file to write (Parquet), e.g. "
                   "workflows/results/<grid>/records.parquet.")
@click.option("--dags", type=click.Choice(["all", "best"]), default="all", show_default=True,
              help="DAGs kept per cell: of every checkpoint incumbent, or the best only "
                   "(no table reads the others; most of a large grid's file).")
@click.option("--max-mb", default=None,
              type=FiniteRange(min=0.01, scale=1e6,
                               message="{opt} must be a finite number, got {value}"),
              help="Write a file over this many MB (10^6 bytes) in parts of at most this "
                   "size (records.parquet, records.2.parquet, ...; reading any part reads "
                   "all), e.g. to stay under a repository's file-size limit.")
@click.option("--complete-by", "complete_by", multiple=True, metavar="FIELD",
              help="Only the complete pieces: group the cells of the stored grids by "
                   "FIELD (repeat for combinations: dataset, split, label, algorithm, k, "
                   "seed, or an axis of a grid kind: missing_rate, budget_scale of SEM "
                   "grids) and keep the groups none of whose cells is pending.")
@click.option("--left-out", "left_out", default=None, type=click.Path(dir_okay=False),
              help="With --complete-by: write the stored cells of the other pieces to this "
                   "records file, so that `grid import` of both files resumes the grid "
                   "elsewhere (e.g. a machine that is not kept) with nothing lost.")
def export_cmd(results: str, out: str, dags: str, max_mb: float | None,
               complete_by: tuple[str, ...], left_out: str | None) -> None:
    """Write every result of DIR, its stored grids and failures as one records file.

    The file alone regenerates the tables: `bnsl-dist tables FILE --out FOLDER`. Rows
    are sorted by cell key, so the same results give the same bytes. A grid that runs
    in pieces for days exports its finished pieces with --complete-by (e.g. a data set
    once all its cells are stored)."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.pipeline.grid import complete_pieces
    from bnsl_dist.results.export import export_records, read_records, records_files

    check_output_file(out, "--out")
    if left_out is not None:
        if not complete_by:
            raise InvalidConfigError("--left-out needs --complete-by (what a piece is)")
        check_output_file(left_out, "--left-out")
        if Path(left_out).resolve() == Path(out).resolve():
            raise InvalidConfigError("--left-out: the same file as --out")
    keys = others = None
    if complete_by:
        try:
            keys, others, groups = complete_pieces(results, complete_by)
        except InvalidConfigError as exc:
            raise InvalidConfigError(f"--complete-by: {exc}") from None
        left = [g for g in groups if not g["complete"]]
        click.echo(f"{len(groups) - len(left)} of {len(groups)} pieces complete; left "
                   f"out: {', '.join(_piece_name(g, complete_by) for g in left) or 'none'}")
    max_bytes = None if max_mb is None else int(max_mb * 1e6)
    for target, wanted in ((out, keys), *(((left_out, others),) if left_out else ())):
        path = export_records(results, target, keys=wanted, dags=dags, max_bytes=max_bytes)
        recs = read_records(path)
        sizes = ", ".join(f"{p.name} {p.stat().st_size} bytes" for p in records_files(path))
        click.echo(f"{path}: {recs.table.num_rows} results, {len(recs.failures)} failures, "
                   f"grids {sorted(recs.grids)}; {sizes}")


def _piece_name(group: dict[str, Any], fields: Sequence[str]) -> str:
    """``dataset=msweb budget_scale=2 (20 pending)``: a group of `--complete-by`."""
    vals = " ".join(f"{f}={group[f]:g}" if isinstance(group[f], float) else f"{f}={group[f]}"
                    for f in fields)
    return f"{vals} ({group['pending']} pending)"


@grid_group.command("import")
@click.argument("records", metavar="FILE...", nargs=-1, required=True,
                type=click.Path(dir_okay=False, exists=True))
@click.option("--results", required=True, type=click.Path(file_okay=False),
              help="Results folder to write the cells into (created if absent).")
def import_cmd(records: tuple[str, ...], results: str) -> None:
    """Write every cell of the records FILEs into the results folder: the inverse of
    `grid export`. A `grid run` on that folder then skips those cells, e.g. to resume a
    grid on another machine from its committed records (and the cells of its unfinished
    pieces, `grid export --left-out`). Results already in the folder are kept."""
    from bnsl_dist.results.export import import_records, read_records

    read = [(f, read_records(f)) for f in records]  # all readable before any is written in
    for f, recs in read:
        c = import_records(recs, results)
        click.echo(f"{results}: {c['results']} results written, {c['kept']} already there, "
                   f"{c['failures']} failures, {c['grids']} grid(s) from {f}")
