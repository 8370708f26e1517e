"""`bnsl-dist learn`: data (or a score cache) -> the best DAG an optimizer finds.

A one-data-set grid: the command line becomes the spec models (data, cache, optional
screening, search) and one cell per seed — all validated before any data are read or
a cluster starts. A small job (exact budgets, well under a second of serial work:
:func:`bnsl_dist.pipeline.cost.fits_threads`) gets a local cluster of threads,
without a dashboard; others worker processes, with a dashboard unless ``-q``. The cache is built once (one Dask task per variable unless
--serial, or read from a ``.jkl``), then every seed's cell runs for the whole budget
(``run_cell``: serially, or ``client.map`` on Dask) and the best DAG over the seeds is
reported at each checkpoint. The result JSON (README "Result JSON") is written
atomically; a short summary goes to stderr.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from bnsl_dist.cli._checks import check_bif_writable, check_output_file
from bnsl_dist.cli._common import (
    STDOUT,
    FiniteRange,
    cluster_options,
    pop_cluster_kwargs,
    write_result,
)
from bnsl_dist.cli._progress import Phases
from bnsl_dist.cli._specs import (
    budget_options,
    cache_options_with,
    cache_spec,
    cache_spec_with,
    screening_options,
    screening_spec,
    search_options,
    search_spec,
)

__all__ = ["learn_cmd", "algorithms_cmd"]


def _is_cache(spec: str) -> bool:
    return spec.endswith(".jkl") or spec.endswith(".jkl.gz")


def _summary(result: Any, out: Path, source: str) -> None:
    from rich.table import Table

    from bnsl_dist.orchestrate._console import stderr_console

    con = stderr_console()
    unit = "s" if result.unit == "seconds" else " it"
    search = result.spec["search"]
    t = Table(title=f"bnsl-dist learn: {search['algorithm']} on {source}", show_header=False)
    t.add_row("variables / cached sets", f"{len(result.dag['nodes'])} / {result.cache['n_sets']}")
    if result.screening is not None:
        t.add_row("qds roots / epsilon", f"{result.screening['n_roots']} / "
                                         f"{result.screening['epsilon']:.4g}")
    t.add_row("seeds", str(len(result.runs)))
    t.add_row("iterations (all seeds)", str(sum(r.iterations for r in result.runs)))
    for c in result.checkpoints:
        s = "-" if c.score is None else f"{c.score:.4f}"
        t.add_row(f"best after {c.budget:g}{unit}", s)
    arcs = sum(len(v) for v in result.dag["parents"].values())
    t.add_row("best score", f"{result.score:.6f}  ({arcs} arcs)")
    if result.treewidth is not None:
        t.add_row("treewidth (certified)", str(result.treewidth["width"]))
    t.add_row("result", str(out))
    con.print(t)


@click.command("learn")
@click.argument("source", metavar="DATA|CACHE", type=str)
@search_options
@budget_options
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Independent runs (one task each) [one per worker; 1 with --serial or "
                   "an iteration budget alone].")
@click.option("--seed", "base_seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Base seed the per-run streams are spawned from.")
@click.option("--time-limit", "time_limit", type=FiniteRange(min=0, min_open=True),
              default=None, metavar="SECONDS",
              help="Wall-clock limit of the whole run, cache and cluster start included: "
                   "the pipeline splits it between the cache, the search (--algorithm) and "
                   "a local search scored from the data; on a cluster every worker builds a "
                   "slice of one cache, then each seed searches it. Excludes the per-stage "
                   "budgets. "
                   "Below 10 s with no cluster option it runs in this process (a local "
                   "cluster's start would take much of it).")
@cluster_options
@click.option("--serial", is_flag=True, help="No Dask: build and search in this process.")
@cache_options_with(  # where learn's defaults are not CacheSpec's
    seconds_per_variable="Cache budget per variable in seconds (independence with no "
                         "budget: 1; with --iterations: --scores-per-variable's 2,000).",
    scores_per_variable="Cache budget per variable in exact scores (reproducible) "
                        "[2,000 with --iterations and no cache budget].",
    expand_dominated="Independence selection: expand sets that a subset one member "
                     "smaller dominates (the paper; false spends the budget elsewhere). "
                     "[True; with --time-limit: False]")
@screening_options
@click.option("--save-cache", type=click.Path(dir_okay=False), default=None,
              help="Also write the built cache (.jkl or .jkl.gz).")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="Result JSON (- writes it on stdout).")
@click.option("--export", "export", type=click.Choice(["bif", "graphml"]), default=None,
              help="Also write the network beside the result (BIF needs data: CPTs).")
@click.option("--quiet", "-q", is_flag=True, help="No summary or progress on stderr.")
@click.pass_context
def learn_cmd(ctx: click.Context, /, source: str, params: tuple[str, ...], seeds: int | None,
              base_seed: int, serial: bool, time_limit: float | None,
              save_cache: str | None, output: str, export: str | None, quiet: bool,
              **options: Any) -> None:
    """Learn a Bayesian-network structure from DATA (a file, or a bundled or registered
    name such as nltcs, nltcs/test or asia-s5000) or from a score CACHE (.jkl), and
    write RESULT.json. --epsilon / --root-fraction screen the data first (qds)."""
    import time

    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.pipeline.learn import learn_cells, prepare_cache
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.search.warmup import algorithm_spec

    started = time.time()
    conn = pop_cluster_kwargs(options, serial)
    if output != STDOUT:
        check_output_file(output, "--output")
    check_output_file(save_cache, "--save-cache")
    if export is not None:
        if output == STDOUT:
            raise InvalidConfigError("--export writes beside the result file: give -o a "
                                     "file, not -")
        check_output_file(Path(output).with_suffix("." + export), "--export")
    _check_distinct_outputs(output, save_cache, export)
    progress = Phases(enabled=not quiet)
    if time_limit is not None:
        _learn_in_time(ctx, source, time_limit, started, conn, serial, seeds, base_seed,
                       save_cache, output, export, progress, options)
        return
    is_cache = _is_cache(source)
    if export == "bif" and is_cache:
        raise InvalidConfigError("--export bif needs data to fit CPTs; a cache has none")
    screening = screening_spec(options)
    if screening is not None and is_cache:
        raise InvalidConfigError("qds screening needs data, not a score cache")
    if is_cache and not Path(source).is_file():
        raise InvalidConfigError(f"{source}: no such cache file")
    search = search_spec(params, **options)
    cache = cache_spec_with(options, budget=search.budget,
                            fixed={"path": str(Path(source).resolve())} if is_cache else {})
    data = None if is_cache else DataRef.parse(source)
    if data is not None:
        from bnsl_dist.cli._inputs import load_data as read_checked

        # read once (cached per process), here so that missing values get the hint the
        # other commands give, before a cache is built or a cluster starts
        d = read_checked(source, observed=False)
        if export == "bif":
            check_bif_writable(d, "--export bif")
    # an iteration budget is a reproducible run: one seed by default wherever it runs, not
    # one per worker (its result would depend on the cluster); a time budget: per worker
    n_seeds = seeds if seeds is not None else 1 if serial or search.budget.seconds is None \
        else None
    _warm_here(conn, progress, ("independence",) if data is not None and cache.path is None
               else (), [algorithm_spec(search.algorithm, search.params, search.k)])
    from bnsl_dist.orchestrate.execute import execute

    def phase(name: str) -> Any:
        if name == "run":
            return progress.phase(_search_phase(cells))
        return progress.phase("reading the cache" if data is None else "building the cache"
                              + ("" if serial else " on the cluster"))

    if serial:
        cells = learn_cells(data, cache, search, n_seeds or 1, base_seed=base_seed,
                            screening=screening)
        done = execute(cells, phase=phase)
    else:
        from bnsl_dist.orchestrate.cluster import connect

        threads = _local_threads(conn, data, cache, search, n_seeds, base_seed, screening)
        # a dashboard only where its link is shown and the job lasts (it imports Bokeh)
        with connect(**conn, announce=not quiet, dashboard=not (quiet or threads),
                     processes=not threads) as client:
            n = n_seeds or max(1, len(client.scheduler_info().get("workers", {})))
            cells = learn_cells(data, cache, search, n, base_seed=base_seed,
                                screening=screening)
            done = execute(cells, client, phase=phase)
    result = done.learn_result()
    shared = done.caches.get(cells[0].cache_job.key)
    if save_cache is not None and shared is None:  # a .jkl the workers read
        shared = prepare_cache(cells[0])
    if save_cache is not None and shared is not None:
        from bnsl_dist.cache import write_jkl

        write_jkl(shared, save_cache)
    out = Path(write_result(output, result.to_dict()))
    if export is not None:
        from bnsl_dist.pipeline.run import load_data

        _export(export, result.dag, None if data is None else load_data(data), out)
    if not quiet:
        _summary(result, out, source)


def _check_distinct_outputs(output: str, save_cache: str | None, export: str | None) -> None:
    """The result, the saved cache and the export are three files: one written over
    another (``-o net.bif --export bif``, ``--save-cache`` the result's name) would
    leave the last written alone."""
    from bnsl_dist.exceptions import InvalidConfigError

    if output == STDOUT:
        return
    seen = {Path(output).resolve(): "--output"}
    for flag, path in (("--save-cache", save_cache),
                       ("--export", None if export is None
                        else Path(output).with_suffix("." + export))):
        if path is None:
            continue
        p = Path(path).resolve()
        if p in seen:
            raise InvalidConfigError(f"{flag} {path}: the same file as {seen[p]}")
        seen[p] = flag


#: Options that set a stage's own budget: --time-limit decides those itself.
_STAGE_BUDGETS = {"seconds": "--seconds", "iterations": "--iterations",
                  "checkpoints": "--checkpoints",
                  "cache_seconds_per_variable": "--seconds-per-variable",
                  "cache_scores_per_variable": "--scores-per-variable",
                  "cache_method": "--cache-method", "cache_max_open": "--max-open"}


def _local_threads(conn: dict[str, Any], data: Any, cache: Any, search: Any,
                   n_seeds: int | None, base_seed: int, screening: Any) -> bool:
    """Whether the local cluster is made of threads: a small job
    (:func:`bnsl_dist.pipeline.cost.fits_threads`, from the data's size: the
    client reads them anyway) with no running cluster named."""
    if data is None or conn["scheduler"] is not None or conn["scheduler_file"] is not None:
        return False
    from bnsl_dist.orchestrate.cluster import default_n_workers
    from bnsl_dist.pipeline.cost import fits_threads
    from bnsl_dist.pipeline.learn import learn_cells
    from bnsl_dist.pipeline.run import load_data

    d = load_data(data)  # cached: the cache build reads the same object
    cells = learn_cells(data, cache, search, n_seeds or conn["workers"] or default_n_workers(),
                        base_seed=base_seed, screening=screening)
    return fits_threads(cells, d.n_vars, d.n_samples)


def _search_phase(cells: Any) -> str:
    b = cells[0].search.budget
    per = f"{b.seconds:g} s" if b.seconds is not None else f"{b.iterations} iterations"
    return f"searching: {cells[0].algorithm}, {len(cells)} seed(s) x {per}"


def _learn_in_time(ctx: click.Context, source: str, time_limit: float, started: float,
                   conn: dict[str, Any], serial: bool, seeds: int | None, base_seed: int,
                   save_cache: str | None, output: str, export: str | None,
                   progress: Phases, options: dict[str, Any]) -> None:
    """``learn --time-limit``: one time-limited cell per seed
    (:mod:`bnsl_dist.pipeline.tasks.within`) run by the executor on one shared cache
    (built in slices by every worker on a cluster), within the limit counted from
    the start of the command."""

    from bnsl_dist.cli._inputs import load_data
    from bnsl_dist.exceptions import InvalidConfigError

    given = [flag for k, flag in _STAGE_BUDGETS.items() if options.get(k) is not None]
    if _is_cache(source):
        given.append("a .jkl cache as DATA")
    if screening_spec(options) is not None:
        given.append("qds screening")
    if params_given := ctx.params.get("params"):
        given.append("--param " + " ".join(params_given))
    if given:
        raise InvalidConfigError(f"--time-limit sets every stage's budget itself: drop "
                                 f"{', '.join(given)}")
    if options.get("k") is not None:
        raise InvalidConfigError("-k: --time-limit searches with a cache optimizer, which "
                                 "takes no treewidth bound")
    from bnsl_dist._spec import make
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.specs import DataRef
    from bnsl_dist.pipeline.tasks.within import WithinTask, stage_algorithms, within_cells
    from bnsl_dist.pipeline.tasks.within import cache_spec as within_cache

    # the cache options, checked by CacheSpec as without --time-limit; those not given
    # keep the time-limited defaults (expand_dominated: False there, True in CacheSpec)
    named = [k for k in ("candidate_limit", "expand_dominated")
             if options.get("cache_" + k) is not None]
    spec = cache_spec(options)  # takes the cache options out of ``options``
    chosen = {k: getattr(spec, k) for k in named}
    cache = within_cache(spec.score, spec.ess, spec.max_indegree, **chosen)
    task = make(WithinTask, time_limit=time_limit, algorithm=options["algorithm"],
                names={"algorithm": "--algorithm", "time_limit": "--time-limit"})
    data = load_data(source)
    if export == "bif":
        check_bif_writable(data, "--export bif")
    if not serial and all(conn.get(k) is None for k in ("workers", "scheduler",
                                                        "scheduler_file")) \
            and time_limit < LOCAL_CLUSTER_MIN_LIMIT:
        serial = True  # a local cluster's start would eat a short limit
        if progress.reporting:
            progress.console.print(f"--time-limit {time_limit:g} s < "
                                   f"{LOCAL_CLUSTER_MIN_LIMIT:g} s: one seed in this "
                                   f"process (a local cluster takes seconds to start; "
                                   f"--workers N forces one)")
    ref = DataRef.parse(source)
    if serial:
        cells = within_cells(ref, cache, task, seeds or 1, base_seed)
        with progress.phase("learning within the time limit"):
            done = execute(cells, started=started, margin=_SERIAL_MARGIN,
                           on_progress=progress.within)
        compiled = 0.0
    else:
        from bnsl_dist.orchestrate.cluster import connect

        # not counted in the limit, as serially (counted, a fresh machine's compiling ate a
        # 10 s limit: the empty DAG)
        compiled = _warm_here(conn, progress, ("independence",), stage_algorithms(task))
        started += compiled
        with connect(**conn, announce=progress.reporting) as client:
            n = seeds or max(1, len(client.scheduler_info().get("workers", {})))
            cells = within_cells(ref, cache, task, n, base_seed)
            with progress.phase(f"learning within the time limit: {n} seed(s) on the "
                                f"cluster"):
                done = execute(cells, client, started=started, margin=_GATHER_MARGIN,
                               on_progress=progress.within if progress.reporting else None)
        started -= compiled  # the wall time reported is the whole run's
    done.started, done.compile_seconds = started, done.compile_seconds + compiled
    result = done.learn_result()
    (built,) = done.caches.values()
    out = Path(write_result(output, result))
    if save_cache is not None:
        from bnsl_dist.cache import write_jkl

        write_jkl(built, save_cache)
    if export is not None:
        _export(export, result["dag"], data, out)
    if progress.summary:
        arcs = sum(len(v) for v in result["dag"]["parents"].values())
        compiled = result.get("compile_seconds", 0.0)
        note = (f" (+ {compiled:.1f} s compiling numba kernels: a first run; not counted)"
                if compiled >= 0.05 else "")
        progress.console.print(f"best score {result['score']:.4f} ({arcs} arcs) in "
                               f"{result['wall_seconds']:.1f} s of {time_limit:g} s{note} "
                               f"-> {out}", soft_wrap=True)


def _warm_here(conn: dict[str, Any], progress: Phases, cache_methods: Sequence[str],
               algorithms: Sequence[Any]) -> float:
    """This process, or a local cluster still to start: compile (or load) the kernels
    once, here, so that the cluster's forkserver and workers load them (a running
    cluster is warmed by ``register_warmup``). Returns the seconds spent compiling (0 on
    a warm machine)."""
    from bnsl_dist.search.warmup import compile_clock, kernels_phase, warm_up

    if conn.get("scheduler") is not None or conn.get("scheduler_file") is not None:
        return 0.0
    with progress.phase(kernels_phase()), compile_clock() as clock:
        warm_up(cache_methods, algorithms)
    return clock.seconds


#: ``learn --time-limit`` without a cluster option runs in its own process below this
#: limit instead of on a local cluster: a 2-worker local cluster took 2.9 s to start on
#: the 2-core development machine (``connect()``, load 3), and then its workers load the
#: kernels; at ``--time-limit 2`` the cluster run wrote a DAG of BIC -102,954 after 3.6 s
#: where the serial run wrote -54,069 in 2.0 s (alarm, N = 5,000). At 10 s the local
#: cluster (one seed per core) is no worse: nltcs, 2 workers, warm, 11.4 s wall and BIC
#: -98,402.5 like the serial run's (14.3 s wall); cold (an empty numba cache, compiled in
#: the client before the cluster starts), 48.6 s wall, the same score.
LOCAL_CLUSTER_MIN_LIMIT = 10.0

#: Seconds of a time limit kept for writing the result (serial), and for gathering the
#: seeds' results from the cluster too.
_SERIAL_MARGIN = 0.1
_GATHER_MARGIN = 0.5


@click.command("algorithms")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def algorithms_cmd(as_json: bool) -> None:
    """List the registered optimizers, their parameters (types, defaults) and whether
    they take a treewidth bound -k (read from the registry)."""
    from bnsl_dist.cli._common import echo_json
    from bnsl_dist.search.base import optimizer_info, optimizer_names

    infos = [optimizer_info(n) for n in optimizer_names()]
    if as_json:
        echo_json([{"name": i.name, "takes_k": i.takes_k, "exact": i.exact,
                    "parameters": [h.describe() for h in i.hyperparameters
                                   if h.name != "k"]} for i in infos])
        return
    for i in infos:
        flags = " (-k)" if i.takes_k else ""
        params = ", ".join(h.describe() for h in i.hyperparameters if h.name != "k")
        click.echo(f"{i.name}{flags}: {params or '-'}")


def _export(kind: str, dag_json: dict[str, Any], data: Any, out: Path) -> None:
    from bnsl_dist.graph import DAG

    dag = DAG.from_json_dict(dag_json)
    if kind == "graphml":
        import io

        import networkx as nx

        from bnsl_dist._io import atomic_write_bytes

        g = nx.DiGraph()
        g.add_nodes_from(dag.names)
        g.add_edges_from((dag.names[p], dag.names[v]) for p, v in dag.arcs())
        buf = io.BytesIO()
        nx.write_graphml(g, buf)
        atomic_write_bytes(out.with_suffix(".graphml"), buf.getvalue())
        return
    from bnsl_dist.model import fit_cpts
    from bnsl_dist.model.bif import write_bif

    write_bif(fit_cpts(dag, data), out.with_suffix(".bif"))
