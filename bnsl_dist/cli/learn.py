"""`bnsl-dist learn`: data (or a score cache) -> the best DAG an optimizer finds.

Given data (a path or a bundled name) the command builds the parent-set cache first
(on the Dask cluster unless --serial); given a ``.jkl`` / ``.jkl.gz`` it reads it.
Then one search task per seed runs the optimizer for the whole budget and the best DAG
over seeds is reported at each checkpoint budget. The result JSON is written
atomically; a short summary goes to stderr.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

import click

from bnsl_dist.cli._common import handle_errors

__all__ = ["learn_cmd", "parse_param"]


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value``; the value is read as YAML (numbers, booleans, lists, strings)."""
    import yaml

    from bnsl_dist.exceptions import InvalidConfigError

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise InvalidConfigError(f"--param {text!r}: expected key=value")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def _is_cache(spec: str) -> bool:
    return spec.endswith(".jkl") or spec.endswith(".jkl.gz")


def _versions() -> dict[str, str]:
    import dask
    import distributed
    import numba
    import numpy

    import bnsl_dist

    return {"bnsl_dist": bnsl_dist.__version__, "numpy": numpy.__version__,
            "numba": numba.__version__, "dask": dask.__version__,
            "distributed": distributed.__version__, "python": platform.python_version()}


def _summary(result: dict[str, Any], out: Path, n_sets: int, source: str) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(stderr=True)
    best = result["best"]
    unit = "s" if result["unit"] == "seconds" else " it"
    t = Table(title=f"bnsl-dist learn: {result['algorithm']} on {source}", show_header=False)
    t.add_row("variables / cached sets", f"{len(best['dag']['nodes'])} / {n_sets}")
    t.add_row("seeds", str(len(result["seeds"])))
    t.add_row("iterations (all seeds)", str(sum(r["iterations"] for r in result["runs"])))
    for c in result["checkpoints"]:
        s = "-" if c["score"] is None else f"{c['score']:.4f}"
        t.add_row(f"best after {c['budget']:g}{unit}", s)
    arcs = sum(len(v) for v in best["dag"]["parents"].values())
    t.add_row("best score", f"{best['score']:.6f}  ({arcs} arcs)")
    t.add_row("result", str(out))
    con.print(t)


@click.command("learn")
@click.argument("source", metavar="DATA|CACHE", type=str)
@click.option("--algorithm", "-a", default="asobs-ent", show_default=True,
              help="A registered optimizer (asobs, asobs-ent, winasobs, obs, hc-tabu, dp, "
                   "kg, kmax, ...).")
@click.option("-k", "k", type=int, default=None, help="Treewidth bound (k-G, k-MAX, ...).")
@click.option("--param", "params", multiple=True, metavar="KEY=VALUE",
              help="Optimizer parameter (repeatable), e.g. --param local_search=window.")
@click.option("--seconds", type=float, default=None, help="Time budget per seed [10 s].")
@click.option("--iterations", type=int, default=None,
              help="Iteration budget per seed (reproducible), instead of --seconds.")
@click.option("--seeds", type=int, default=None,
              help="Independent runs (one task each) [one per worker; 1 with --serial].")
@click.option("--seed", "base_seed", type=int, default=0, show_default=True,
              help="Base seed the per-run streams are spawned from.")
@click.option("--checkpoints", default=None, metavar="T1,T2,...",
              help="Budgets at which to report the best DAG [1,10,60,600,3600 s].")
@click.option("--workers", type=int, default=None, help="Local Dask workers [one per core].")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Use a running Dask scheduler (tcp://host:port).")
@click.option("--serial", is_flag=True, help="No Dask: build and search in this process.")
@click.option("--cache-method", type=click.Choice(["independence", "sequential"]),
              default="independence", show_default=True)
@click.option("--score", type=click.Choice(["bic", "bdeu"]), default="bic", show_default=True)
@click.option("--max-indegree", type=int, default=None, help="Largest parent set [none].")
@click.option("--seconds-per-variable", type=float, default=None,
              help="Cache budget per variable [1 s for independence selection].")
@click.option("--scores-per-variable", type=int, default=None,
              help="Cache budget per variable in exact scores (reproducible).")
@click.option("--inner", default="asobs-ent", show_default=True,
              help="qds: the learner run on the forest's roots.")
@click.option("--epsilon", type=float, default=None,
              help="qds: quasi-determinism threshold ε (nats).")
@click.option("--root-fraction", type=float, default=None,
              help="qds: choose ε_x so that this fraction of variables stay roots [0.5].")
@click.option("--save-cache", type=click.Path(dir_okay=False), default=None,
              help="Also write the built cache (.jkl or .jkl.gz).")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="Result JSON.")
@click.option("--export", "export", type=click.Choice(["bif", "graphml"]), default=None,
              help="Also write the network beside the result (BIF needs data: CPTs).")
@click.option("--quiet", "-q", is_flag=True, help="No summary on stderr.")
@handle_errors
def learn_cmd(source: str, algorithm: str, k: int | None, params: tuple[str, ...],
              seconds: float | None, iterations: int | None, seeds: int | None,
              base_seed: int, checkpoints: str | None, workers: int | None,
              scheduler: str | None, serial: bool, cache_method: str, score: str,
              max_indegree: int | None, seconds_per_variable: float | None,
              scores_per_variable: int | None, inner: str, epsilon: float | None,
              root_fraction: float | None, save_cache: str | None, output: str,
              export: str | None, quiet: bool) -> None:
    """Learn a Bayesian-network structure from DATA (path or bundled name, e.g. nltcs)
    or from a score CACHE (.jkl), and write RESULT.json."""
    from bnsl_dist._io import atomic_write_text
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.search import DEFAULT_CHECKPOINTS, Budget, make_optimizer

    if seconds is not None and iterations is not None:
        raise InvalidConfigError("give --seconds or --iterations, not both")
    if serial and (workers is not None or scheduler is not None):
        raise InvalidConfigError("--serial excludes --workers and --scheduler")
    if workers is not None and scheduler is not None:
        raise InvalidConfigError("give --workers or --scheduler, not both")
    budget = Budget(seconds=10.0 if seconds is None and iterations is None else seconds,
                    max_iterations=iterations)
    opt_params = dict(parse_param(p) for p in params)
    if k is not None:
        opt_params["k"] = k
    qds = algorithm == "qds"
    if qds:  # screening happens here; the inner learner searches the roots' cache
        if _is_cache(source):
            raise InvalidConfigError("qds screens raw data: give DATA, not a score cache")
        if epsilon is not None and root_fraction is not None:
            raise InvalidConfigError("give --epsilon or --root-fraction, not both")
        algorithm = inner
    elif epsilon is not None or root_fraction is not None:
        raise InvalidConfigError("--epsilon / --root-fraction apply to --algorithm qds only")
    make_optimizer(algorithm, **opt_params)  # fail early on bad names / parameters
    cps = DEFAULT_CHECKPOINTS
    if checkpoints:
        try:
            cps = tuple(float(x) for x in checkpoints.split(",") if x.strip())
        except ValueError:
            raise InvalidConfigError(f"--checkpoints {checkpoints!r}: numbers expected") \
                from None
    out = Path(output)
    if export == "bif" and _is_cache(source):
        raise InvalidConfigError("--export bif needs data to fit CPTs; a cache has none")
    build = {"method": cache_method, "score": score, "max_indegree": max_indegree,
             "seconds_per_variable": seconds_per_variable,
             "scores_per_variable": scores_per_variable}

    scr_opts = {"epsilon": epsilon, "root_fraction": root_fraction, "score": score} \
        if qds else None
    screening = None
    if serial:
        data, cache, screening = _load(source, None, build, scr_opts)
        from bnsl_dist.orchestrate.anytime import search_serial

        result = search_serial(cache, algorithm, opt_params, budget,
                               1 if seeds is None else seeds, base_seed=base_seed,
                               checkpoints=cps)
    else:
        from bnsl_dist.orchestrate.anytime import search_distributed
        from bnsl_dist.orchestrate.cluster import connect

        with connect(workers=workers, scheduler=scheduler, announce=not quiet) as client:
            data, cache, screening = _load(source, client, build, scr_opts)
            n_workers = max(1, len(client.scheduler_info().get("workers", {})))
            target: Any = source if _is_cache(source) and save_cache is None else cache
            result = search_distributed(client, target, algorithm, opt_params, budget,
                                        n_workers if seeds is None else seeds,
                                        base_seed=base_seed, checkpoints=cps)
    if screening is not None:
        result = _lift(result, screening)
    if save_cache is not None:
        from bnsl_dist.cache import write_jkl

        write_jkl(cache, save_cache)
    if screening is not None:
        result["algorithm"] = "qds"
    result = {"dag": result["best"]["dag"], "score": result["best"]["score"],
              **{k_: v for k_, v in result.items() if k_ != "best"},
              "best": {k_: v for k_, v in result["best"].items() if k_ != "dag"},
              "parameters": opt_params,
              **({} if screening is None else {"qds": {
                  "inner": algorithm, "epsilon": screening.epsilon,
                  "n_roots": len(screening.roots), "forest_score": screening.forest_score,
                  "screening_seconds": screening.seconds}}),
              "iterations": [r["iterations"] for r in result["runs"]],
              "input": {"source": source, "kind": "cache" if _is_cache(source) else "data",
                        "n_vars": cache.n_vars, "n_sets": cache.n_sets,
                        "cache_build": None if _is_cache(source) else build},
              "versions": _versions()}
    result.pop("params", None)
    atomic_write_text(out, json.dumps(result, indent=1) + "\n")
    if export is not None:
        _export(export, result, data, out)
    if not quiet:
        _summary({**result, "best": {**result["best"], "dag": result["dag"]}}, out,
                 cache.n_sets, source)


def _load(source: str, client: Any, build: dict[str, Any],
          screening_opts: dict[str, Any] | None = None) -> tuple[Any, Any, Any]:
    """(data or None, cache, qds screening or None) for a data set or a .jkl file.

    With ``screening_opts`` (qds) the cache is built on the forest's roots only."""
    if _is_cache(source):
        from bnsl_dist.cache import read_jkl

        return None, read_jkl(source), None
    from bnsl_dist.data import resolve_data
    from bnsl_dist.scores import LocalScorer

    data = resolve_data(source)
    screening = None
    target = data
    if screening_opts is not None:
        from bnsl_dist.search.qds import screen

        screening = screen(data, **screening_opts)
        target = data.select(screening.roots)
    if client is None:
        from bnsl_dist.cache import build_cache

        cache = build_cache(target, **build)
    else:
        from bnsl_dist.orchestrate.explore import build_cache_distributed

        cache = build_cache_distributed(client, target, **build)
    if cache.entropies is None:  # for the entropy order sampler
        cache.entropies = LocalScorer(target, "ll").entropies()
    return data, cache, screening


def _lift(result: dict[str, Any], screening: Any) -> dict[str, Any]:
    """Map a search over the roots back to all variables: F_ε ∪ G_R, scores + forest."""
    from bnsl_dist.graph import DAG

    def up(dag_json: dict[str, Any] | None) -> dict[str, Any] | None:
        if dag_json is None:
            return None
        return screening.lift(DAG.from_json_dict(dag_json)).to_json_dict()

    off = screening.forest_score
    for row in result["checkpoints"]:
        row["dag"] = up(row["dag"])
        row["score"] = None if row["score"] is None else row["score"] + off
    if result["best"] is not None:
        result["best"]["dag"] = up(result["best"]["dag"])
        result["best"]["score"] += off
        if result["best"].get("bound") is not None:
            result["best"]["bound"] += off
    for run in result["runs"]:
        for inc in run["incumbents"]:
            inc["score"] += off
            if inc.get("bound") is not None:
                inc["bound"] += off
    return result


def _export(kind: str, result: dict[str, Any], data: Any, out: Path) -> None:
    from bnsl_dist.graph import DAG

    dag = DAG.from_json_dict(result["dag"])
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
