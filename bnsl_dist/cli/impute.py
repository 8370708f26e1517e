"""`bnsl-dist impute`: structural EM with k-MAX on incomplete data, then imputation: one
impute cell (:class:`~bnsl_dist.pipeline.tasks.sem.ImputeTask`) run by the executor."""

from __future__ import annotations

import sys
from typing import Any

import click

from bnsl_dist.cli._checks import check_bif_writable, check_output_file
from bnsl_dist.cli._common import cluster_options, echo_json, pop_cluster_kwargs
from bnsl_dist.cli._specs import cache_options_with, cache_spec, impute_options, impute_task


@click.command("impute")
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Completed data (CSV, '.gz' compresses).")
@click.option("--network", "network_out", type=click.Path(dir_okay=False), default=None,
              help="Also write the learned network (BIF).")
@impute_options
@cache_options_with(  # defaults of SEM-kMAX, not CacheSpec's (sem_cache_spec)
    seconds_per_variable="Cache budget per variable in seconds (the paper's wall-clock "
                         "protocol; default: the exact scores of --scores-per-variable).",
    scores_per_variable="Cache budget per variable in exact scores (reproducible). "
                        "[2.4e7/rows within 2,000-20,000]",
    expand_dominated="Independence selection: expand sets that a subset one member "
                     "smaller dominates (the paper; false spends the budget elsewhere). "
                     "[False]")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@cluster_options
@click.option("--serial", is_flag=True,
              help="Run without Dask (default for small data unless a cluster option is "
                   "given: see below).")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def impute_cmd(data: str, output: str, network_out: str | None, seed: int, serial: bool,
               quiet: bool, **options: Any) -> None:
    """Learn a bounded-treewidth network from DATA with missing values (?, empty, NA)
    by SEM-kMAX and write the completed data to OUTPUT.

    The M-step budgets scale with the data (exact scores per variable 2.4e7/rows within
    2,000-20,000; k-MAX iterations 1.2e6/variables within 200-20,000); the cache build
    does not expand dominated sets unless --expand-dominated true is given. Without --workers,
    --scheduler or --scheduler-file, data whose cache build is small (variables x scores
    per variable x rows <= 4e9, e.g. 3,000 x 60) run serially: a local cluster's start
    costs more than it saves there. The result is the same either way for one seed."""
    import time

    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.data import write_csv
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.cell import Cell
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.sem.budgets import EXPAND_DOMINATED, sem_cache_spec

    started = time.time()
    conn = pop_cluster_kwargs(options, serial)
    task = impute_task(options)  # checked before the data are read
    check_output_file(output, "--output")
    check_output_file(network_out, "--network")
    # no cache budget given: the data-scaled, reproducible one of sem_budgets (not
    # CacheSpec's wall-clock default, which made serial and Dask runs differ)
    budget_given = any(options.get(f"cache_{f}") is not None
                       for f in ("seconds_per_variable", "scores_per_variable"))
    # the SEM's exploration unless --expand-dominated is given (whatever the budget)
    expand = ({} if options.get("cache_expand_dominated") is not None
              else {"expand_dominated": EXPAND_DOMINATED})
    cache = cache_spec(options, **expand)  # checked before the data are read
    d = load_data(data, missing="mask")
    if network_out is not None:
        check_bif_writable(d, "--network")
    cache = sem_cache_spec(cache, cache.score, d, scaled=not budget_given)

    def report(it: Any) -> None:  # a line per EM iteration (a phase), unless -q
        click.echo(f"iteration {it.iteration}: score {it.score:.3f}, {it.n_arcs} arcs "
                   f"(+{it.arcs_added}/-{it.arcs_removed})", err=True)

    if not quiet:
        from bnsl_dist.search.warmup import kernels_phase

        click.echo(kernels_phase(), err=True)  # a fresh machine compiles: say so first

    cell = Cell(grid="impute", label="kmax", data=DataRef.parse(data, "mask"), cache=cache,
                task=task, seed=seed)
    if not serial and all(conn[k] is None for k in ("workers", "scheduler", "scheduler_file")):
        from bnsl_dist.sem.budgets import prefer_serial

        serial = prefer_serial(d.n_vars, d.n_samples)
    on_iteration = None if quiet else report
    if serial:
        res = execute([cell], started=started, on_progress=on_iteration).outcomes[0]
    else:
        from bnsl_dist.orchestrate.cluster import connect

        with connect(**conn, announce=not quiet) as client:
            res = execute([cell], client, started=started,
                          on_progress=on_iteration).outcomes[0]
    write_csv(res.completed, output)
    if network_out is not None:
        from bnsl_dist.model.bif import write_bif

        write_bif(res.network, network_out)
    n_missing = 0 if d.missing is None else int(d.missing.sum())
    echo_json({"output": output, "n_missing_imputed": n_missing, "k": task.k,
               "mode": "serial" if serial else "dask",
               "iterations": len(res.history), "converged": res.converged,
               "stop_reason": res.stop_reason,
               "score": res.history[res.best_iteration - 1].score if res.history else None,
               "n_arcs": res.network.dag.n_arcs})
    sys.stdout.flush()
