"""`bnsl-dist cache`: build a parent-set score cache (.jkl) from data; describe one."""

from __future__ import annotations

import time
from typing import Any

import click

from bnsl_dist.cli._checks import check_output_dir, check_output_file
from bnsl_dist.cli._common import cluster_options, echo_json, pop_cluster_kwargs
from bnsl_dist.cli._specs import cache_options_with, cache_spec_with

__all__ = ["cache_group"]


@click.group("cache")
def cache_group() -> None:
    """Parent-set score caches (.jkl files read by BLIP and GOBNILP)."""


#: ``cache build`` spells the method ``--method`` (``learn``: ``--cache-method``).
_BUILD_FLAGS = {"method": "--method"}


@cache_group.command("build")
@click.argument("data")
@cache_options_with(renamed=_BUILD_FLAGS)
@cluster_options(workers_help="Run on a local Dask cluster of N single-threaded workers.")
@click.option("--cache-dir", "cache_dir", type=click.Path(file_okay=False), default=None,
              help="A results folder whose caches/ keeps built caches (as `grid run "
                   "--results` does: a grid's results folder shares them); a cache of the "
                   "same data reference and settings there is read, not built again.")
@click.option("--no-comments", "no_comments", is_flag=True,
              help="Write no '#' lines (plain GOBNILP input).")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="The .jkl file to write (.gz compresses); written atomically.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def build_cmd(data: str, cache_dir: str | None, no_comments: bool, output: str, quiet: bool,
              **options: Any) -> None:
    """Explore the parent sets of every variable of DATA (a file, or a name from
    `bnsl-dist data list`) and write the cache; print a JSON summary."""
    from bnsl_dist.cache import write_jkl
    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.cli._progress import Phases
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.cell import CacheJob
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.results.store import ResultStore
    from bnsl_dist.search.warmup import kernels_phase, warm_up

    phases = Phases(enabled=not quiet)
    if options.get("cache_seconds_per_variable") is not None \
            and options.get("cache_scores_per_variable") is not None:
        raise InvalidConfigError("give either --seconds-per-variable or --scores-per-variable, "
                                 "not both")
    conn = pop_cluster_kwargs(options)
    spec = cache_spec_with(options, renamed=_BUILD_FLAGS)  # checked before any data are read
    on_dask = any(conn[k] is not None for k in ("workers", "scheduler", "scheduler_file"))
    check_output_file(output, "--output")
    check_output_dir(cache_dir, "--cache-dir")
    progress = phases.enabled  # the bar: on a terminal, without -q
    d = load_data(data)  # a bad DATA fails here, before any cluster starts
    job = CacheJob(data=DataRef.parse(data), cache=spec)
    store = None if cache_dir is None else ResultStore(cache_dir)
    t0 = time.perf_counter()
    if conn["scheduler"] is None and conn["scheduler_file"] is None:
        # this process, or a local cluster still to start: compiled once, here, and its
        # workers load them (a running cluster is checked first)
        with phases.phase(kernels_phase()):
            warm_up((spec.method,))
    building = f"building the cache: {spec.method} selection over {d.n_vars} variables"
    if not on_dask:
        phases.note(building)  # on a terminal the bar shows the variables explored
        cache = execute([job], store=store, progress=progress).caches[job.key]
    else:
        from bnsl_dist.orchestrate.cluster import connect

        with connect(**conn, announce=not quiet) as client:
            phases.note(building)
            cache = execute([job], client, store, progress=progress).caches[job.key]
    wall = time.perf_counter() - t0
    write_jkl(cache, output, comments=not no_comments)
    stats = cache.meta.get("stats", {})
    echo_json({"output": output, "method": spec.method, "score": spec.score, "n_vars": cache.n_vars,
               "n_samples": d.n_samples, "n_sets": cache.n_sets,
               "exact_scores": int(sum(stats.get("exact_scores", []))),
               "wall_seconds": round(wall, 3)})


@cache_group.command("info")
@click.argument("cache_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def info_cmd(cache_file: str, as_json: bool) -> None:
    """Describe CACHE_FILE: variables, parent sets per variable, in-degree histogram."""
    from bnsl_dist.cache import read_jkl

    c = read_jkl(cache_file)
    per_var = [{"variable": c.names[v], "sets": c.n_sets_of(v),
                "best": c.best_score(v), "empty": c.score_of(v, ())}
               for v in range(c.n_vars)]
    hist = c.indegree_histogram()
    info = {"file": cache_file, "n_vars": c.n_vars, "n_sets": c.n_sets,
            "max_indegree": max(hist) if hist else 0,
            "indegree_histogram": {str(k): v for k, v in sorted(hist.items())},
            "per_variable": per_var}
    for key in ("method", "score", "n_samples"):
        if key in c.meta:
            info[key] = c.meta[key]
    if as_json:
        echo_json(info)
        return
    click.echo(f"{cache_file}: {c.n_vars} variables, {c.n_sets} parent sets")
    for key in ("method", "score", "n_samples"):
        if key in info:
            click.echo(f"{key}: {info[key]}")
    click.echo("in-degree histogram (size: sets): "
               + ", ".join(f"{k}: {v}" for k, v in sorted(hist.items())))
    click.echo(f"{'variable':<20} {'sets':>8} {'best':>16} {'empty':>16}")
    for r in per_var:
        click.echo(f"{r['variable']:<20} {r['sets']:>8} {r['best']:>16.4f} {r['empty']:>16.4f}")
