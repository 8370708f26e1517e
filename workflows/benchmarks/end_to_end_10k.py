"""Benchmark: the whole path at 10,000 variables, each stage with a small fixed budget —
its wall time and its peak memory.

A random network (``random_network``: max in-degree 3, arities 2-4) is sampled to
``--rows`` rows, then: CSV write/read -> cache builds (independence with an exact-score
budget; sequential with max in-degree 1) -> the entropy weights ASOBS-ENT samples from ->
asobs-ent, winasobs-ent -> k-G, k-MAX (k = 2..4) -> hc-tabu, tabu-data -> fit_cpts ->
BIF write/read -> the junction tree of the k-MAX network (its certificate's elimination
order) and a batch of P(e) / marginal queries -> ``learn --iterations`` and ``learn
--time-limit --serial`` through the CLI (child processes) -> one SEM-kMAX iteration on
1% missing cells (its cache with the same exact-score budget). Every search budget is
in iterations (reproducible), except the ``--time-limit`` run; ``--search-seconds``
also caps the searches and tabu-data in seconds.

At 10,000 variables (``--skip cache_sequential --search-seconds 120 --tabu-candidates
cache``): sequential exploration scores every pair, O(n² N) (0.7 s, 6 s, 70 s at 300,
1,000, 3,000 variables: ~15 min at 10,000); Win-ASOBS's window search walks each block
across the whole order and restarts at window 1 after every gain (0.3 s, 6.6 s, 302 s
for 3 iterations at 300, 1,000, 3,000); tabu-data with every variable a candidate
first scores n² families (n² N row visits) and keeps n x n tables (1 GB at 10,000).

Peak memory per stage is the process's resident high-water mark (``VmHWM``), reset
before each stage by writing 5 to ``/proc/self/clear_refs``; a CLI stage's is its child's
``VmHWM``, polled every ``POLL`` seconds (``ru_maxrss`` would count the parent's pages
the child had before ``exec``). ``rss_before_mb`` is the resident set the stage starts
from (what earlier stages hold). The kernels are compiled (or loaded from their disk
cache) on a small network first, so no stage pays for it.

Run: ``python -m workflows.benchmarks.end_to_end_10k [--n-vars 10000] [--rows 500]
[--search-seconds S] [--tabu-candidates all|cache] [--skip STAGE,...]``; writes ``out/<--name>.json``. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from workflows.benchmarks._common import write_result
from workflows.benchmarks.learn_large import POLL, _peak_rss_mb
from workflows.benchmarks.peers import CLI, WARM


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Stages:
    """Records wall seconds and peak RSS of each stage (printed as they end)."""

    def __init__(self, skip: set[str]) -> None:
        self.rows: list[dict[str, Any]] = []
        self.skip = skip

    @contextmanager
    def stage(self, name: str, **info: Any) -> Iterator[dict[str, Any]]:
        row: dict[str, Any] = {"stage": name, **info}
        before = _status_mb("VmRSS")
        reset = _reset_peak()
        t0 = time.perf_counter()
        try:
            yield row
        except Exception as exc:  # a crash is a finding: record it, go on
            row["error"] = f"{type(exc).__name__}: {str(exc)[:500]}"
        row["seconds"] = round(time.perf_counter() - t0, 3)
        row.setdefault("peak_rss_mb", round(_status_mb("VmHWM"), 1) if reset else None)
        row["rss_before_mb"] = round(before, 1)
        self.rows.append(row)
        print(json.dumps(row), flush=True)

    def wanted(self, name: str) -> bool:
        return name not in self.skip


def _run_cli(args: list[str], row: dict[str, Any]) -> dict[str, Any] | None:
    """Run ``bnsl-dist ARGS`` as a child: its wall, peak RSS and result JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.json"
        err = Path(tmp) / "err.txt"
        with err.open("w") as log:
            proc = subprocess.Popen([sys.executable, "-c", CLI, *args, "-q", "-o", str(out)],
                                    stdout=subprocess.DEVNULL, stderr=log)
            peak = 0.0
            while proc.poll() is None:
                peak = max(peak, _peak_rss_mb(proc.pid) or 0.0)
                time.sleep(POLL)
        row["peak_rss_mb"] = round(peak, 1)
        if proc.returncode != 0:
            row["error"] = f"exit {proc.returncode}: {err.read_text().strip()[-1000:]}"
            return None
        res: dict[str, Any] = json.loads(out.read_text())
        return res


def _best(stream: Iterator[Any]) -> Any:
    best = None
    for inc in stream:
        best = inc
    return best


def main() -> None:  # noqa: C901 (one stage after another)
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n-vars", type=int, default=10_000)
    ap.add_argument("--rows", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scores-per-variable", type=int, default=30)
    ap.add_argument("--iterations", type=int, default=3, help="of each cache search")
    ap.add_argument("--search-seconds", type=float, default=None,
                    help="also cap each search stage at these seconds (default: none)")
    ap.add_argument("--tabu-candidates", default="all", choices=["all", "cache"],
                    help="tabu-data's candidate parents (all: n² N row visits to start)")
    ap.add_argument("--ks", default="2,3,4")
    ap.add_argument("--queries", type=int, default=100, help="P(e) / marginal queries")
    ap.add_argument("--evidence", type=int, default=20, help="observed variables a query")
    ap.add_argument("--time-limit", type=float, default=120.0, help="learn --time-limit")
    ap.add_argument("--skip", default="", help="comma-separated stage names to skip")
    ap.add_argument("--name", default="end_to_end_10k")
    args = ap.parse_args()
    from bnsl_dist.cache import CacheSpec, build_cache
    from bnsl_dist.data import read_data
    from bnsl_dist.data.io import write_csv
    from bnsl_dist.data.masking import mask_mcar
    from bnsl_dist.inference.junction_tree import build_junction_tree
    from bnsl_dist.inference.study import random_evidence
    from bnsl_dist.model import fit_cpts
    from bnsl_dist.model.bif import read_bif, write_bif
    from bnsl_dist.model.generate import random_network
    from bnsl_dist.model.sampling import sample
    from bnsl_dist.search import Budget, make_optimizer
    from bnsl_dist.search.ordering.samplers import entropy_weights
    from bnsl_dist.sem.structural_em import structural_em

    st = Stages({s for s in args.skip.split(",") if s})
    it = Budget(seconds=args.search_seconds, max_iterations=args.iterations)
    ks = [int(k) for k in args.ks.split(",") if k]
    with st.stage("warm_up"):  # compile / load every kernel on a small job
        subprocess.run([sys.executable, "-c", WARM], check=True, capture_output=True)
        small = sample(random_network(60, 3, rng=1), 200, rng=1)
        c = build_cache(small, method="independence", scores_per_variable=20)
        for name, k in [("asobs-ent", None), ("winasobs-ent", None), ("hc-tabu", None)] + \
                [(a, k) for a in ("kg", "kmax") for k in ks]:
            inc = _best(make_optimizer(name, k=k).run(c, Budget(max_iterations=1),
                                                      np.random.default_rng(0)))
        jt = build_junction_tree(fit_cpts(inc.dag, small))
        jt.marginals(random_evidence(small.arities, 4, 5, np.random.default_rng(0)))
    with tempfile.TemporaryDirectory() as tmp:
        csv, bif = Path(tmp) / "d.csv", Path(tmp) / "n.bif"
        with st.stage("generate", n_vars=args.n_vars):
            net = random_network(args.n_vars, 3, (2, 4), rng=args.seed)
        with st.stage("sample", rows=args.rows):
            data = sample(net, args.rows, rng=args.seed)
        with st.stage("csv_write") as row:
            write_csv(data, csv)
            row["bytes"] = csv.stat().st_size
        with st.stage("csv_read"):
            data = read_data(csv)
        cache = None
        with st.stage("cache_independence", scores_per_variable=args.scores_per_variable) \
                as row:
            cache = build_cache(data, method="independence",
                                scores_per_variable=args.scores_per_variable)
            row["n_sets"] = int(cache.n_sets)
        if st.wanted("cache_sequential"):
            with st.stage("cache_sequential", max_indegree=1) as row:
                seq = build_cache(data, method="sequential", max_indegree=1)
                row["n_sets"] = int(seq.n_sets)
                del seq
        with st.stage("entropy_weights"):
            entropy_weights(cache)
        results: dict[str, Any] = {}
        runs: list[tuple[str, int | None]] = [("asobs-ent", None), ("winasobs-ent", None)] \
            + [(a, k) for a in ("kg", "kmax") for k in ks] + [("hc-tabu", None)]
        for name, k in runs:
            label = name if k is None else f"{name}-{k}"
            if not st.wanted(label):
                continue
            with st.stage(label, iterations=args.iterations) as row:
                inc = _best(make_optimizer(name, k=k).run(cache, it,
                                                          np.random.default_rng(args.seed)))
                row.update(score=inc.score, best_at_iteration=inc.iterations)
                results[label] = inc
        if st.wanted("tabu-data"):
            with st.stage("tabu-data", iterations=args.iterations + 1,
                          candidates=args.tabu_candidates) as row:
                opt = make_optimizer("tabu-data", start_iterations=1,
                                     candidates=args.tabu_candidates)
                inc = _best(opt.learn(data, Budget(seconds=args.search_seconds,
                                                   max_iterations=args.iterations + 1),
                                      np.random.default_rng(args.seed),
                                      cache_builder=lambda _d: cache))
                row.update(score=inc.score, best_at_iteration=inc.iterations,
                           steps=inc.info.get("steps"))
        kmax = results.get(f"kmax-{max(ks)}")
        if kmax is not None:
            with st.stage("fit_cpts"):
                fitted = fit_cpts(kmax.dag, data)
            with st.stage("bif_write") as row:
                write_bif(fitted, bif)
                row["bytes"] = bif.stat().st_size
            with st.stage("bif_read"):
                fitted = read_bif(bif)
            with st.stage("junction_tree") as row:
                jt = build_junction_tree(fitted, kmax.info["certificate"].order)
                row.update(width=int(jt.width), n_entries=int(jt.n_entries))
            ev = random_evidence(fitted.arities, args.queries, args.evidence,
                                 np.random.default_rng(1))
            with st.stage("p_evidence", queries=args.queries):
                jt.log_prob_evidence(ev)
            with st.stage("marginals", queries=args.queries):
                jt.marginals(ev)
            del jt, fitted
        if st.wanted("learn_iterations"):
            with st.stage("learn_iterations", iterations=args.iterations) as row:
                res = _run_cli(["learn", str(csv), "--serial", "--iterations",
                                str(args.iterations), "--scores-per-variable",
                                str(args.scores_per_variable)], row)
                if res is not None:
                    row["score"] = res.get("score")
        if st.wanted("learn_time_limit"):
            with st.stage("learn_time_limit", time_limit=args.time_limit) as row:
                res = _run_cli(["learn", str(csv), "--serial", "--time-limit",
                                f"{args.time_limit:g}"], row)
                if res is not None:
                    row.update(score=res.get("score"), wall_seconds=res.get("wall_seconds"))
        if st.wanted("sem"):
            masked = mask_mcar(data, 0.01, rng=args.seed)
            with st.stage("sem", k=max(ks), iterations=1) as row:
                sem = structural_em(masked, k=max(ks), rng=args.seed, max_iterations=1,
                                    cache=CacheSpec(scores_per_variable=args.scores_per_variable),
                                    search_budget=Budget(max_iterations=args.iterations))
                row["score"] = sem.history[-1].score if sem.history else None
    payload = {"settings": vars(args), "stages": st.rows}
    print(write_result(args.name, payload))


if __name__ == "__main__":
    main()
