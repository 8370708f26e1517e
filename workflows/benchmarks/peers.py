"""Benchmark: bnsl_dist beside other Python structure learners, at equal wall time.

On the same CSVs — alarm sampled (N = 5,000) and random networks made by pyAgrum's
BNGenerator (``bn100``, ``bn500``, ``bn2000``: that many variables, 1.5 arcs per
variable, at most 4 states, fixed seed, N = 5,000) — each tool learns a DAG with the
same wall-time budget:

* pyAgrum greedy hill climbing and tabu search (BIC, one thread, ``setMaxTime``);
* pgmpy hill climbing (BIC) and causal-learn GES (BDeu; its CPDAG is extended to a DAG
  by causal-learn's ``pdag2dag``): neither takes a time limit; their process is
  stopped GRACE seconds after the budget (no DAG then), and a DAG that took longer
  than 1.1 x the budget is flagged "over budget";
* bnsl_dist: :func:`bnsl_dist_learn`: :func:`bnsl_dist.pipeline.tasks.within.learn_within` with the
  whole budget (cache, ``--bnsl-optimizer``, then a local search scored from the data).

Every tool runs in its own process, one at a time; its wall time is that of its learning
call (bnsl_dist's kernels compiled beforehand on a small slice). Every DAG is scored by ONE BIC written here (:func:`bic`,
nats, textbook: maximum-likelihood log-likelihood minus ½·ln N per free parameter, the
states being those seen in the data), checked against bnsl_dist's scorer on one DAG.
Higher is better.

Needs the ``[peers]`` extra (pyagrum, causal-learn) and pgmpy. Writes
``out/peers.json`` and ``out/peers.md``; the generated CSVs are kept in
``out/peers_data/`` (regenerated only if absent), each with the DAG of the network it
was sampled from (``.dag.json``), whose BIC is a row of the table: the issue's bar for
2,000 variables is a DAG scoring above it.

Until the seed was passed on (c03effc), ``--seed 0`` drew each network and
sample from the clock: ``peers.md``, ``peers-bn100|bn500.md`` and ``peers-learn-within.md``
in ``workflows/results/benchmarks/`` are on such samples and cannot be redrawn.

Run: ``python -m workflows.benchmarks.peers [--networks alarm bn100] [--seconds 10]
[--tools ...] [--n-samples 5000] [--match TOOL] [--bnsl-seeds 0 1 2]``
(``--bnsl-seeds``: bnsl_dist once per seed of its own search, on the same sample: a
time-limited result varies with the seed and with the timing); ``--match pyagrum-tabu`` with a budget
pyAgrum ends within gives bnsl_dist the wall time pyAgrum's converged run took (the
issue's protocol: a higher BIC within the peer's own time), ``--match-fraction 0.25``
a quarter of it (the issue's 16-worker bar). ``--bnsl-workers W`` runs bnsl_dist as the
command ``bnsl-dist learn CSV --time-limit S --workers W`` (a local cluster started by
the command, one seed per worker on one shared cache; its wall time is the command's own,
the cluster's start included), ``--bnsl-running-cluster`` on a cluster of W workers
started and warmed once beforehand (``--scheduler-file``: what a user with a running
cluster pays).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bnsl_dist._io import atomic_write_text
from workflows.benchmarks._common import OUT_DIR, SHARED_DATA, write_result

TOOLS = ["pyagrum-greedy", "pyagrum-tabu", "pgmpy-hc", "causallearn-ges", "bnsl_dist"]
NETWORKS = ["alarm", "bn100", "bn500", "bn2000"]
ARCS_PER_VAR = 1.5
MAX_STATES = 4
#: Seconds a tool's process may take beyond its budget (start-up, imports, reading the
#: CSV, bnsl_dist's warm-up); a learning call longer than 1.1 x the budget is flagged.
GRACE = 60.0
PRELOAD = {"pyagrum-greedy": ["pyagrum"], "pyagrum-tabu": ["pyagrum"],
           "pgmpy-hc": ["pgmpy.estimators"],
           "causallearn-ges": ["causallearn.search.ScoreBased.GES",
                               "causallearn.utils.PDAG2DAG"],
           "bnsl_dist": ["bnsl_dist.cache.build", "bnsl_dist.search"]}


# ---------------------------------------------------------------------------- data
def _network(network: str, seed: int) -> Any:
    """The pyAgrum network ``network`` names, after seeding pyAgrum's generator with
    ``seed + 1`` (pyAgrum reads 0 as "seed from the clock"): a BNGenerator network and
    the sample are drawn from it, so the same seed gives the same ones."""
    import pyagrum as gum

    gum.initRandom(seed + 1)
    if network == "alarm":
        with tempfile.TemporaryDirectory() as tmp:
            bif = Path(tmp) / "alarm.bif"
            bif.write_bytes(gzip.decompress((SHARED_DATA / "bif" / "alarm.bif.gz").read_bytes()))
            return gum.loadBN(str(bif))
    if network.startswith("bn") and network[2:].isdigit():
        n = int(network[2:])
        return gum.BNGenerator().generate(n, int(ARCS_PER_VAR * n), MAX_STATES)
    raise ValueError(f"unknown network {network!r} (alarm or bnN)")


def _dag(bn: Any) -> dict[str, list[str]]:
    """A pyAgrum network's DAG: each variable's parents, by name."""
    return {bn.variable(i).name(): [bn.variable(p).name() for p in bn.parents(i)]
            for i in bn.nodes()}


def _sample(network: str, n_samples: int, seed: int, path: Path) -> dict[str, list[str]]:
    """Write the CSV of ``network`` to ``path``; return its generating DAG."""
    import pyagrum as gum

    bn = _network(network, seed)
    gen = gum.BNDatabaseGenerator(bn)
    gen.drawSamples(n_samples)
    gen.toCSV(str(path))
    return _dag(bn)


def make_csv(network: str, n_samples: int, seed: int, folder: Path) -> Path:
    """The CSV of one network (generated with pyAgrum once, then reused), with its
    generating DAG beside it (``<stem>.dag.json``)."""
    path = folder / f"{network}_n{n_samples}_s{seed}.csv"
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    tmp_path = path.with_suffix(".tmp.csv")
    dag = _sample(network, n_samples, seed, tmp_path)
    atomic_write_text(path.with_suffix(".dag.json"), json.dumps(dag))
    os.replace(tmp_path, path)
    return path


def generating_dag(network: str, n_samples: int, seed: int, folder: Path
                   ) -> dict[str, list[str]]:
    """The DAG ``make_csv``'s CSV was sampled from: read from beside it, or (a CSV made
    before it was kept) regenerated from the same seed, checked to sample the same CSV
    byte for byte, and kept."""
    csv = make_csv(network, n_samples, seed, folder)
    saved = csv.with_suffix(".dag.json")
    if not saved.is_file() and network == "alarm":  # a fixed network, whatever the sample
        return _dag(_network(network, seed))
    if not saved.is_file():
        with tempfile.TemporaryDirectory() as tmp:
            again = Path(tmp) / "again.csv"
            dag = _sample(network, n_samples, seed, again)
            if again.read_bytes() != csv.read_bytes():
                raise RuntimeError(f"{csv}: the seed does not regenerate this sample (drawn "
                                   f"by another pyAgrum, or before the seed was passed on: "
                                   f"seed 0 drew from the clock); delete it to draw anew")
        atomic_write_text(saved, json.dumps(dag))
    return dict(json.loads(saved.read_text()))


# ---------------------------------------------------------------------------- BIC
def bic(df: pd.DataFrame, parents: dict[str, Sequence[str]]) -> float:
    """BIC of a DAG (child -> parent names) on ``df``, in nats: Σ_i Σ_jk N_ijk ln(N_ijk /
    N_ij) − ½ ln N · (r_i − 1) · Π_p r_p, with r = the number of states seen."""
    n = len(df)
    codes = {c: pd.factorize(df[c])[0] for c in df.columns}
    r = {c: int(codes[c].max()) + 1 for c in df.columns}
    total = 0.0
    for child in df.columns:
        ps = list(parents.get(child, ()))
        cols = np.stack([codes[p] for p in ps] + [codes[child]], axis=1)
        fam, n_ijk = np.unique(cols, axis=0, return_counts=True)
        if ps:
            _, inv = np.unique(fam[:, :-1], axis=0, return_inverse=True)
            n_ij = np.bincount(inv.ravel(), weights=n_ijk)[inv.ravel()]
        else:
            n_ij = np.full(n_ijk.shape, float(n))
        q = 1.0
        for p in ps:
            q *= r[p]
        total += float(np.sum(n_ijk * np.log(n_ijk / n_ij))) - 0.5 * np.log(n) * (r[child] - 1) * q
    return total


def _is_acyclic(parents: dict[str, Sequence[str]]) -> bool:
    import networkx as nx

    g = nx.DiGraph([(p, c) for c, ps in parents.items() for p in ps])
    return nx.is_directed_acyclic_graph(g)


# ---------------------------------------------------------------------------- tools
def bnsl_dist_learn(csv: Path, seconds: float, seed: int, optimizer: str
                    ) -> dict[str, list[str]]:
    """bnsl_dist's best DAG within ``seconds`` of wall clock, reading the CSV included:
    :func:`bnsl_dist.pipeline.tasks.within.learn_within` (cache, ``optimizer``, data-scored polishing)."""
    from bnsl_dist.data import read_data
    from bnsl_dist.pipeline.tasks.within import learn_within

    t0 = time.perf_counter()
    data = read_data(csv)
    left = max(0.1, seconds - (time.perf_counter() - t0))
    res = learn_within(data, left, seed, search=optimizer)
    names = list(data.names)
    return {names[v]: [names[p] for p in ps] for v, ps in enumerate(res.dag.parents)}


#: ``bnsl-dist`` as its console script runs it, from this interpreter and ``PYTHONPATH``.
CLI = "import sys; from bnsl_dist.cli import main; sys.argv[0] = 'bnsl-dist'; main()"
#: Compiles (or loads) every stage's kernels, so that no timed run pays for it.
WARM = ("import numpy as np; from bnsl_dist.data import CategoricalData; "
        "from bnsl_dist.pipeline.tasks.within import learn_within; learn_within(CategoricalData.from_array("
        "np.random.default_rng(0).integers(0, 2, (300, 5))), 3.0, 0)")


def bnsl_dist_cli(csv: Path, seconds: float, workers: int, seed: int,
                  env: dict[str, str] | None = None, cwd: str | None = None,
                  scheduler_file: str | None = None) -> dict[str, Any]:
    """``bnsl-dist learn CSV --time-limit SECONDS --workers W --seed B`` (a local cluster
    of ``workers``, one seed per worker, one shared cache), or on the running cluster of
    ``scheduler_file``: the learn result (its ``wall_seconds`` count from the command's
    start, its imports done) and the process's wall time (the interpreter's start
    included)."""
    where = (["--workers", str(workers)] if scheduler_file is None
             else ["--scheduler-file", scheduler_file, "--seeds", str(workers)])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", CLI, "learn", str(csv), "--time-limit",
                        f"{seconds:.3f}", *where, "--seed", str(seed),
                        "-q", "-o", str(out)], env=env, cwd=cwd, check=True,
                       capture_output=True, text=True)
        wall = time.perf_counter() - t0
        return {"result": json.loads(out.read_text()), "wall": wall}


def _pyagrum(csv: Path, seconds: float, tabu: bool) -> dict[str, list[str]]:
    import pyagrum as gum

    learner = gum.BNLearner(str(csv))
    learner.useScoreBIC()
    if tabu:
        learner.useLocalSearchWithTabuList()
    else:
        learner.useGreedyHillClimbing()
    learner.setNumberOfThreads(1)
    learner.setMaxTime(seconds)
    dag = learner.learnDAG()
    return {learner.nameFromId(i): [learner.nameFromId(p) for p in dag.parents(i)]
            for i in dag.nodes()}


def _pgmpy(df: pd.DataFrame) -> dict[str, list[str]]:
    from pgmpy.estimators import HillClimbSearch

    model = HillClimbSearch(df).estimate(scoring_method="bic-d", show_progress=False)
    out: dict[str, list[str]] = {c: [] for c in df.columns}
    for p, c in model.edges():
        out[c].append(p)
    return out


def _ges(df: pd.DataFrame) -> dict[str, list[str]]:
    from causallearn.search.ScoreBased.GES import ges
    from causallearn.utils.PDAG2DAG import pdag2dag

    x = np.stack([pd.factorize(df[c])[0] for c in df.columns], axis=1)
    g = pdag2dag(ges(x, score_func="local_score_BDeu")["G"]).graph
    cols = list(df.columns)
    # causal-learn: g[j, i] == 1 and g[i, j] == -1 means i -> j
    return {cols[j]: [cols[i] for i in range(len(cols)) if g[j, i] == 1 and g[i, j] == -1]
            for j in range(len(cols))}


def run_tool(tool: str, csv: Path, seconds: float, seed: int, optimizer: str,
             workers: int = 0, scheduler_file: str | None = None) -> dict[str, Any]:
    """Learn with one tool (in this process); the DAG and the learning call's wall time.
    bnsl_dist with ``workers`` > 0 runs as the command ``learn --time-limit`` on a local
    cluster of that many workers, started by the command (or, with ``scheduler_file``, on
    that running cluster, one seed per worker): its wall time is the command's own, from
    the start of ``learn`` (its imports done, as every tool's imports are done before its
    clock starts; reading the CSV and the cluster's start included); ``optimizer`` is then
    the command's default."""
    import importlib

    if tool == "bnsl_dist" and workers > 0:
        subprocess.run([sys.executable, "-c", WARM], check=True, capture_output=True)
        run = bnsl_dist_cli(csv, seconds, workers, seed, scheduler_file=scheduler_file)
        res = run["result"]
        return {"parents": {c: list(ps) for c, ps in res["dag"]["parents"].items()},
                "wall": float(res["wall_seconds"]), "command_process_wall": run["wall"],
                "workers": workers, "cluster": "running" if scheduler_file else "started",
                "seeds": len(res.get("runs", [])),
                "cache_sets": (res.get("cache") or {}).get("n_sets")}
    df = pd.read_csv(csv, dtype=str)
    for mod in PRELOAD.get(tool, ()):  # imports are not learning time
        importlib.import_module(mod)
    if tool == "bnsl_dist":  # compile and load the kernels first (numba caches them on
        # disk; loading them in a fresh process takes ~0.5 s): a slice wide enough, and a
        # budget long enough, for every stage (cache, search, polish) to run
        with tempfile.TemporaryDirectory() as tmp:
            small = Path(tmp) / "warm.csv"
            df.iloc[:500, :12].to_csv(small, index=False)
            bnsl_dist_learn(small, 1.5, seed, optimizer)
    t0 = time.perf_counter()
    if tool == "bnsl_dist":
        dag = bnsl_dist_learn(csv, seconds, seed, optimizer)
    elif tool.startswith("pyagrum-"):
        dag = _pyagrum(csv, seconds, tabu=tool == "pyagrum-tabu")
    elif tool == "pgmpy-hc":
        dag = _pgmpy(df)
    elif tool == "causallearn-ges":
        dag = _ges(df)
    else:
        raise ValueError(f"unknown tool {tool!r}")
    return {"parents": dag, "wall": time.perf_counter() - t0}


def _run_isolated(tool: str, csv: Path, seconds: float, seed: int, optimizer: str,
                  workers: int = 0, scheduler_file: str | None = None) -> dict[str, Any]:
    """run_tool in a child process, stopped after seconds + GRACE."""
    cmd = [sys.executable, "-m", "workflows.benchmarks.peers", "--one", tool, str(csv),
           str(seconds), str(seed), optimizer, str(workers), scheduler_file or ""]
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + GRACE)
    except subprocess.TimeoutExpired:
        return {"error": f"no DAG after {seconds + GRACE:.0f} s", "wall": None,
                "process_wall": time.perf_counter() - t0}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip()
                else f"exit {out.returncode}", "wall": None}
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_wall"] = time.perf_counter() - t0
    return res


# ---------------------------------------------------------------------------- driver
def check_scorer(csv: Path, parents: dict[str, list[str]]) -> dict[str, float]:
    """Our BIC against bnsl_dist's on one DAG (raises if they differ)."""
    from bnsl_dist.data import read_data
    from bnsl_dist.scores import LocalScorer

    data = read_data(csv)
    idx = {name: i for i, name in enumerate(data.names)}
    sc = LocalScorer(data, "bic")
    theirs = sum(sc.score(idx[c], sorted(idx[p] for p in ps)) for c, ps in parents.items())
    ours = bic(pd.read_csv(csv, dtype=str), parents)
    if abs(ours - theirs) > 1e-6 * max(1.0, abs(ours)):
        raise RuntimeError(f"independent BIC {ours} != bnsl_dist's {theirs} on {csv.name}")
    return {"independent": ours, "bnsl_dist": theirs}


def markdown(result: dict[str, Any]) -> str:
    lines = ["### DAGs learnt at equal wall time, scored by one BIC (nats, higher is better)",
             "", "| data | n | budget (s) | tool | wall (s) | arcs | BIC |",
             "|---|---:|---:|---|---:|---:|---:|"]
    for r in result["rows"]:
        wall = "—" if r.get("wall") is None else f"{r['wall']:.1f}"
        if r.get("wall") is not None and r["wall"] > 1.1 * r["budget"]:
            wall += " (over budget)"
        score = f"{r['bic']:,.1f}" if r.get("bic") is not None else r.get("error", "—")
        arcs = "—" if r.get("arcs") is None else str(r["arcs"])
        budget = "" if r.get("budget") is None else f"{r['budget']:g}"
        tool = r["tool"] + (f" ({r['workers']} workers, cluster {r['cluster']})"
                            if r.get("workers") else "") \
            + (f" (seed {r['bnsl_seed']})" if "bnsl_seed" in r else "")
        lines.append(f"| {r['network']} | {r['n']} | {budget} | {tool} | "
                     f"{wall} | {arcs} | {score} |")
    for c in result.get("scorer_checks", []):
        lines.append("")
        lines.append(f"Scorer check on {c['network']} (bnsl_dist's DAG): independent "
                     f"{c['independent']:,.4f}, bnsl_dist {c['bnsl_dist']:,.4f}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":  # child process: one tool
        tool, csv, seconds, seed, optimizer, workers, sched = sys.argv[2:9]
        res = run_tool(tool, Path(csv), float(seconds), int(seed), optimizer, int(workers),
                       sched or None)
        print(json.dumps(res))
        return
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--networks", nargs="*", default=NETWORKS)
    ap.add_argument("--tools", nargs="*", default=TOOLS)
    ap.add_argument("--seconds", type=float, nargs="*", default=[60.0],
                    help="budget per tool; one value, or one per network")
    ap.add_argument("--n-samples", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--bnsl-optimizer", default="winasobs-ent")
    ap.add_argument("--bnsl-seeds", type=int, nargs="*", default=None,
                    help="run bnsl_dist once per seed of its own search (default: --seed); "
                         "the sample stays --seed's")
    ap.add_argument("--name", default="peers", help="output file stem")
    ap.add_argument("--match", default=None, metavar="TOOL",
                    help="give bnsl_dist the wall time TOOL took (listed before it in "
                         "--tools; give TOOL a budget it ends within, to let it converge)")
    ap.add_argument("--match-fraction", type=float, default=1.0, metavar="F",
                    help="with --match: give bnsl_dist F times TOOL's wall time (the issue's "
                         "16-worker bar: 0.25)")
    ap.add_argument("--bnsl-workers", type=int, default=0, metavar="W",
                    help="run bnsl_dist as `bnsl-dist learn --time-limit` on a local cluster "
                         "of W workers (default: learn_within in one process, one core)")
    ap.add_argument("--bnsl-running-cluster", action="store_true",
                    help="with --bnsl-workers W: start a cluster of W workers once (bnsl-dist "
                         "cluster start), warm it, and run every bnsl_dist learn on it "
                         "(--scheduler-file): the cluster's start is not in its time")
    args = ap.parse_args()
    if args.match is not None and (args.match not in args.tools or "bnsl_dist" not in args.tools
                                   or args.tools.index(args.match)
                                   > args.tools.index("bnsl_dist")):
        ap.error("--match: name a tool listed before bnsl_dist in --tools")
    budgets = args.seconds * len(args.networks) if len(args.seconds) == 1 else args.seconds
    if len(budgets) != len(args.networks):
        ap.error("--seconds: one value, or one per network")
    if args.bnsl_running_cluster and args.bnsl_workers < 1:
        ap.error("--bnsl-running-cluster needs --bnsl-workers W")
    with _running_cluster(args.bnsl_workers if args.bnsl_running_cluster else 0) as sched:
        compare(args, budgets, sched)


@contextlib.contextmanager
def _running_cluster(workers: int) -> Iterator[str | None]:
    """A cluster of ``workers`` started once (its scheduler file), after one small learn
    on it has loaded every stage's kernels in its workers; None for ``workers`` = 0."""
    if workers < 1:
        yield None
        return
    from bnsl_dist.orchestrate.cluster import start_cluster, stop_cluster

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "cluster"
        start_cluster(folder, workers=workers)
        try:
            small = Path(tmp) / "warm.csv"
            pd.DataFrame(np.random.default_rng(0).integers(0, 2, (300, 8))).to_csv(
                small, index=False)
            bnsl_dist_cli(small, 5.0, workers, 0, scheduler_file=str(folder / "scheduler.json"))
            yield str(folder / "scheduler.json")
        finally:
            stop_cluster(folder)


def compare(args: argparse.Namespace, budgets: list[float], scheduler_file: str | None
            ) -> None:
    """Every tool on every network, one at a time (:func:`main`'s arguments); writes the
    JSON after each run and the markdown at the end."""
    result: dict[str, Any] = {"settings": vars(args), "rows": [], "scorer_checks": []}
    for network, budget in zip(args.networks, budgets, strict=True):
        csv = make_csv(network, args.n_samples, args.seed, OUT_DIR / "peers_data")
        df = pd.read_csv(csv, dtype=str)
        truth = generating_dag(network, args.n_samples, args.seed, OUT_DIR / "peers_data")
        result["rows"].append({"network": network, "n": df.shape[1], "rows": len(df),
                               "budget": None, "tool": "generating network", "wall": None,
                               "bic": bic(df, truth), "parents": truth,
                               "arcs": sum(len(p) for p in truth.values())})
        walls: dict[str, float] = {}
        bnsl_seeds = [args.seed] if args.bnsl_seeds is None else args.bnsl_seeds
        runs = [(t, sd) for t in args.tools
                for sd in (bnsl_seeds if t == "bnsl_dist" else [args.seed])]
        for tool, seed in runs:
            load0 = os.getloadavg()[0]
            given = budget
            if tool == "bnsl_dist" and args.match is not None:
                if args.match not in walls:
                    raise RuntimeError(f"{args.match} gave no DAG on {network}: "
                                       f"no wall time to match")
                given = walls[args.match] * args.match_fraction
            res = _run_isolated(tool, csv, given, seed, args.bnsl_optimizer,
                                args.bnsl_workers if tool == "bnsl_dist" else 0,
                                scheduler_file if tool == "bnsl_dist" else None)
            if "parents" in res:
                walls[tool] = float(res["wall"])
            row = {"network": network, "n": df.shape[1], "rows": len(df), "budget": given,
                   "tool": tool, "load": [load0, os.getloadavg()[0]], **res}
            if tool == "bnsl_dist" and args.bnsl_seeds is not None:
                row["bnsl_seed"] = seed
            if "parents" in res:
                if not _is_acyclic(res["parents"]):
                    raise RuntimeError(f"{tool} returned a cyclic graph on {network}")
                row["bic"] = bic(df, res["parents"])
                row["arcs"] = sum(len(p) for p in res["parents"].values())
                if tool == "bnsl_dist" and not any(c["network"] == network
                                                   for c in result["scorer_checks"]):
                    result["scorer_checks"].append(
                        {"network": network, **check_scorer(csv, res["parents"])})
            print({k: v for k, v in row.items() if k != "parents"}, flush=True)
            result["rows"].append(row)
            write_result(args.name, result)
    atomic_write_text(OUT_DIR / f"{args.name}.md", markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
