"""CellResult.trace(): the best incumbent's DAG is kept once, in ``dag_json``; records
of the former layout (the best's DAG in ``incumbent_dags`` too), committed ones
included, give the same trace, from a results folder or a records file of either
``--dags`` export."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from bnsl_dist.graph.dag import DAG
from bnsl_dist.results.export import export_records, load_records, read_records
from bnsl_dist.search.base import AnytimeTrace, Incumbent
from tests.results import synthetic as S

RESULTS = Path(__file__).resolve().parents[2] / "workflows" / "results"


def _without_best(rec):
    dags = json.loads(rec.incumbent_dags)
    dags.pop(str(rec.best_index()))
    return dataclasses.replace(rec, incumbent_dags=json.dumps(dags))


def test_committed_records_give_the_same_trace_without_the_best_dag():
    """Every committed row of up to 200 variables in the former layout holds the
    best's DAG in ``incumbent_dags``, equal to ``dag_json``; dropped, the trace is the
    same. A row of the current layout (the best's DAG in ``dag_json`` only) reads back a
    trace whose best is that DAG and score."""
    rows = ties = current = 0
    for path in sorted(RESULTS.glob("*/records.parquet")):
        for rec in read_records(path).results():
            if rec.n_vars > 200 or rec.incumbent_dags == "{}":
                continue  # the 4,000-variable grids: slow, and exported --dags best
            old = rec.trace()
            kept = json.loads(rec.incumbent_dags)
            if str(rec.best_index()) not in kept:  # the current layout
                assert old.best is not None and old.best.score == rec.best_score
                # it keeps exactly the DAGs of the checkpoints' bests but the overall
                # best's: worked out here from the stored times and scores alone
                at = {_best_at(rec.trace_elapsed, rec.trace_scores, c)
                      for c in rec.checkpoints}
                assert set(map(int, kept)) == at - {None, rec.best_index()}, (path, rec.key)
                current += 1
                continue
            best = kept[str(rec.best_index())]
            assert DAG.from_json_dict(json.loads(rec.dag_json)).parents == \
                tuple(tuple(p) for p in best), (path, rec.key)
            assert old.best is not None and old.best.score == rec.best_score
            assert _without_best(rec).trace() == old, (path, rec.key)
            rows += 1
            ties += rec.best_index() != len(rec.trace_scores) - 1
    assert rows >= 300  # inference, pops, qds, twilp
    assert current > 0  # qds-2018-tenth
    assert ties > 0  # qds-eps0.5: a later incumbent ties the best (lifted scores)


def _best_at(elapsed, scores, c):
    """The index of the best incumbent found by ``c`` seconds (the first of the
    highest score), None before the first."""
    seen = [i for i, t in enumerate(elapsed) if t <= c]
    return max(seen, key=lambda i: (scores[i], -i)) if seen else None


def _two_layouts():
    """One cell of two incumbents (the empty DAG, then a -> b at -50) in the former
    layout and in the new one."""
    base = dataclasses.replace(
        S.record("astar", "astar", -50.0, bound=-49.0), trace_elapsed=(0.5, 1.0),
        trace_scores=(-60.0, -50.0), trace_iterations=(1, 5))
    old = dataclasses.replace(base, key="old", incumbent_dags='{"0":[[],[],[]],'
                                                               '"1":[[],[0],[]]}')
    new = dataclasses.replace(base, key="new", incumbent_dags='{"0":[[],[],[]]}')
    empty = DAG.empty(3, S.NODES)
    ab = DAG.from_parents([[], [0], []], S.NODES)
    full = AnytimeTrace([Incumbent(0.5, -60.0, empty, 1), Incumbent(1.0, -50.0, ab, 5,
                                                                     bound=-49.0)], 10, 1.0)
    return old, new, full


def test_both_layouts_through_folder_and_export(tmp_path):
    old, new, full = _two_layouts()
    S.write_store(tmp_path / "res", [old, new])
    assert [r.trace() for r in load_records(tmp_path / "res").results()] == [full, full]
    every = read_records(export_records(tmp_path / "res", tmp_path / "all.parquet"))
    assert [r.trace() for r in every.results()] == [full, full]
    assert [r.incumbent_dags for r in every.results()] == \
        [new.incumbent_dags, old.incumbent_dags]  # written as they were
    best = read_records(export_records(tmp_path / "res", tmp_path / "best.parquet",
                                       dags="best"))
    only_best = AnytimeTrace(full.incumbents[1:], 10, 1.0)
    assert [r.trace() for r in best.results()] == [only_best, only_best]


def test_a_tie_keeps_the_first_best():
    """A later incumbent of the same score is not the best (AnytimeTrace.best takes the
    first): ``dag_json`` is the first's DAG, and the later one has none kept."""
    old, _, full = _two_layouts()
    tie = dataclasses.replace(old, trace_elapsed=(0.5, 1.0, 2.0),
                              trace_scores=(-60.0, -50.0, -50.0), trace_iterations=(1, 5, 9),
                              incumbent_dags='{"0":[[],[],[]]}')
    assert tie.best_index() == 1
    want = AnytimeTrace([full.incumbents[0], dataclasses.replace(full.incumbents[1],
                                                                 bound=None)], 10, 1.0)
    assert tie.trace() == want
    # a record without a trace (a SEM cell's) has none, though it has a DAG
    assert dataclasses.replace(tie, trace_elapsed=(), trace_scores=(), trace_iterations=(),
                               incumbent_dags="{}").trace() == AnytimeTrace([], 10, 1.0)
