"""workflows/benchmarks/minobs.py: its own cache reader and rescoring against brute force,
the result of a tool at each budget read from its trace, the medians, and a MINOBS run
stopped at its cut-off keeping the trace it writes as it goes."""

from __future__ import annotations

import itertools
import stat

import pytest

from workflows.benchmarks.minobs import (
    _at,
    _median,
    markdown,
    measure,
    read_families,
    run_minobs,
    score_dag,
    score_order,
    write_plain,
)

#: Three variables by name; b's sets: {} -3, {a} -1; c's: {} -4, {b} -2, {a, b} -1.5.
JKL = """# a comment
3
a 1
-2.0 0
b 2
-3.0 0
-1.0 1 a
c 3
-4.0 0
-2.0 1 b
-1.5 2 a b
"""


def test_reader_and_rescoring_against_every_order(tmp_path):
    path = tmp_path / "toy.jkl"
    path.write_text(JKL)
    fams = read_families(path)
    assert fams == [{frozenset(): -2.0}, {frozenset(): -3.0, frozenset({0}): -1.0},
                    {frozenset(): -4.0, frozenset({1}): -2.0, frozenset({0, 1}): -1.5}]
    # the plain copy MINOBS reads is the same cache, by index
    plain = tmp_path / "plain.jkl"
    write_plain(fams, plain)
    assert read_families(plain) == fams
    # an order's score: each variable's best set within its predecessors, by hand
    best = {}
    for order in itertools.permutations(range(3)):
        total = 0.0
        for k, v in enumerate(order):
            total += max(s for ps, s in fams[v].items() if ps <= set(order[:k]))
        best[order] = total
        assert score_order(fams, list(order)) == pytest.approx(total)
    assert max(best.values()) == pytest.approx(-2.0 - 1.0 - 1.5)
    assert score_dag(fams, [[], [0], [0, 1]]) == pytest.approx(-4.5)
    with pytest.raises(ValueError, match="not in the cache"):
        score_dag(fams, [[], [2], []])
    with pytest.raises(ValueError, match="cycle"):
        score_dag({0: {frozenset({1}): 0.0}, 1: {frozenset({0}): 0.0}}, [[1], [0]])


def test_result_at_each_budget_and_medians():
    trace = [(0.5, -9.0), (3.0, -7.0), (12.0, -5.0)]
    assert _at(trace, [0.1, 1.0, 10.0, 60.0]) == {"0.1": None, "1": 0, "10": 1, "60": 2}
    assert _median([3.0, 1.0, 2.0]) == 2.0
    assert _median([1.0, 2.0]) == 1.5
    assert _median([None, 1.0, 2.0]) == 1.0  # no result: the worst
    assert _median([None, None, 1.0]) is None
    assert _median([]) is None


#: A stand-in MINOBS that notes the seed it was given (in OUTPUT.seeds) and writes one
#: best (order 2 1 0) to its trace.
_SEED_ECHO = 'echo "$3" >> "$4.seeds"\nprintf "100\\t9000000\\n2 1 0\\n" >> "$MINOBS_TRACE"\n'


def _fake_minobs(tmp_path, script):
    """The toy cache written to ``tmp_path`` (its path and families) and a stand-in
    MINOBS binary running the shell ``script`` (argv as MINOBS's: instance, cut-off,
    seed, output file)."""
    path = tmp_path / "toy.jkl"
    path.write_text(JKL)
    fake = tmp_path / "search"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return path, read_families(path), fake


def test_minobs_stopped_keeps_the_trace_it_wrote(tmp_path):
    """A stand-in binary that appends two bests to $MINOBS_TRACE (its times in ms, its
    scores the cache's times -1e6) and then runs past its cut-off: stopped, its result
    at each budget is the order it had within it, rescored."""
    path, fams, fake = _fake_minobs(
        tmp_path, 'printf "100\\t9000000\\n2 1 0\\n900\\t4500000\\n0 1 2\\n" '
        '>> "$MINOBS_TRACE"\nexec sleep 60\n')
    rec = run_minobs(str(fake), path, [0.05, 0.5, 1.0], 0, None, 5.0, fams, tmp_path)
    assert rec["stopped"] and rec["process_seconds"] < 30
    # order 2 1 0: c {} -4, b {} -3, a {} -2 = -9; order 0 1 2: -4.5
    assert rec["at"] == {"0.05": None, "0.5": pytest.approx(-9.0), "1": pytest.approx(-4.5)}


def _result(run):
    return {"tools": ["memetic"], "cpu": "0", "seeds": [0], "budgets": [10.0], "note": "",
            "cache_note": "", "command": "", "optima": {}, "optima_seconds": 1.0,
            "optima_tools": [], "table": {"x": {"n": 3, "median": {"10": {}}, "runs": {
                "minobs": [], "memetic": [{"at": {"10": -1.0}, "trace": [],
                                           "process_seconds": 12.0, "search_seconds": 10.0,
                                           **run}]}}}}


def test_start_up_line_reads_old_and_new_records():
    """Runs before the product's warm-up (one iteration on the cache, no prepare) still
    render; new ones show the derivation apart and say which warm-up ran."""
    old = {"imports_seconds": 0.5, "load_seconds": 1.0, "warm_up_seconds": 0.25}
    (line,) = [s for s in markdown(_result(old)) if s.startswith("Our start-up")]
    assert line == ("Our start-up per process, medians: imports 0.50 s, load 1.00 s, "
                    "warm_up 0.25 s (warm-up: one iteration on the cache); process 2.00 s "
                    "beyond the search.")
    new = {**old, "prepare_seconds": 0.125, "warm_up": "toy"}
    (line,) = [s for s in markdown(_result(new)) if s.startswith("Our start-up")]
    assert "warm_up 0.25 s, prepare 0.12 s (warm-up: kernels on a toy cache, as learn)" \
        in line


def _random_jkl(path, n=12, seed=0):
    """A cache of ``n`` variables, each with the empty set and 4 random parent sets of
    up to 3 others, scores decreasing with size (a search has choices to make)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lines = [str(n)]
    for v in range(n):
        others = [u for u in range(n) if u != v]
        sets = {(): -100.0 - 10 * rng.random()}
        while len(sets) < 5:
            ps = tuple(sorted(rng.choice(others, size=rng.integers(1, 4), replace=False)))
            sets[ps] = -100.0 + 20 * rng.random() - 3 * len(ps)
        lines.append(f"{v} {len(sets)}")
        lines += [f"{s!r} {len(ps)} " + " ".join(map(str, ps)) for ps, s in sets.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_one_core_stream_is_learns_first_seed(tmp_path):
    """The one-core child searches with the stream of ``learn --seed S`` (serially), so
    that it shares island 0's stream with an ``ALGORITHM@N`` run of the same seed: the
    same incumbents as the CLI, where numpy's own generator of the seed gives others."""
    import json

    import numpy as np
    from click.testing import CliRunner

    from bnsl_dist.cache.jkl import read_jkl
    from bnsl_dist.cli import main
    from bnsl_dist.search import Budget, make_optimizer
    from bnsl_dist.search.base import AnytimeTrace
    from workflows.benchmarks.minobs import learn_stream

    path = _random_jkl(tmp_path / "r.jkl")
    out = tmp_path / "learn.json"
    res = CliRunner().invoke(main, ["learn", str(path), "-a", "memetic", "--iterations", "6",
                                    "--seed", "5", "--serial", "-q", "-o", str(out)])
    assert res.exit_code == 0, res.output
    cli = [i["score"] for i in json.loads(out.read_text())["runs"][0]["incumbents"]]

    def scores(rng):
        run = AnytimeTrace.collect(make_optimizer("memetic").run(
            read_jkl(path), Budget(max_iterations=6), rng))
        return [i.score for i in run.incumbents]

    assert scores(learn_stream("memetic", 5)) == pytest.approx(cli, abs=1e-9)
    assert scores(np.random.default_rng(5)) != pytest.approx(cli, abs=1e-9)


def test_minobs_seeds_are_distinct_runs(tmp_path):
    """MINOBS seeds C's rand with srand(seed), and glibc's srand takes 0 for 1: the
    benchmark's seeds 0 and 1 must not both reach it as given. A stand-in binary
    records the seed it was given; seeds 0-4 give five distinct rand streams."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C library to check srand against")
    libc = ctypes.CDLL(name)

    def first(s):
        libc.srand(s)
        return libc.rand(), libc.rand()

    path, fams, fake = _fake_minobs(tmp_path, _SEED_ECHO)
    given = []
    for seed in range(5):
        rec = run_minobs(str(fake), path, [1.0], seed, None, 5.0, fams, tmp_path)
        given.append(int((tmp_path / f"minobs-{seed}.out.seeds").read_text()))
        assert rec["minobs_seed"] == given[-1]
    # five distinct rand streams (on glibc, srand(0) is srand(1): the mapping's reason)
    assert len({first(s) for s in given}) == 5
    assert len(set(given)) == 5


def test_resume_reruns_minobs_runs_made_before_the_seed_mapping(tmp_path):
    """``--resume`` keeps the runs of an interrupted run, but MINOBS's runs without
    ``minobs_seed`` (given the seed itself, before the mapping) are made again."""
    path, _, fake = _fake_minobs(tmp_path, _SEED_ECHO)
    old = {"seed": 0, "at": {"1": -1.0}, "trace": []}
    kept = {"seed": 1, "at": {"1": -2.0}, "trace": [], "minobs_seed": 2}
    earlier = {"toy": {"runs": {"minobs": [old, kept]}}}
    rows = measure([f"toy={path}"], [], str(fake), [1.0], [0, 1], None, 5.0,
                   lambda rows: None, earlier=earlier)
    runs = sorted(rows["toy"]["runs"]["minobs"], key=lambda r: r["seed"])
    assert runs[1] is kept
    assert runs[0]["minobs_seed"] == 1 and runs[0]["at"] == {"1": pytest.approx(-9.0)}
