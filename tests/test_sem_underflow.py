"""bnsl_dist/sem/underflow.py's bounds against brute force (every completion of a small
masked data set, every clique entry of a junction tree computed naively in logs), and
workflows/sem_underflow.py's committed table against its JSON and a recomputation."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.graph.dag import DAG
from bnsl_dist.inference import build_junction_tree
from bnsl_dist.model.fit import fit_cpts
from bnsl_dist.sem.underflow import (
    TINY,
    clique_log_floor,
    log_prob_floor,
    uncertified_rows,
    underflow_threshold,
)

PARENTS = [[], [], [0, 1], [2], [1, 2], [0], [0], [0]]
ARITIES = [2, 3, 2, 2, 2, 2, 2, 2]
ORDER = [3, 4, 5, 6, 7, 0, 1, 2]  # 0's three children come in messages from own cliques


def _masked(seed: int, rows: int = 7, cells: int = 5):
    rng = np.random.default_rng(seed)
    truth = np.column_stack([rng.integers(0, r, rows) for r in ARITIES])
    for v, p in ((3, 2), (5, 0), (6, 0), (7, 0)):  # dependences
        truth[:, v] = np.where(rng.random(rows) < 0.8, truth[:, p], truth[:, v])
    missing = np.zeros(truth.shape, bool)
    missing.flat[rng.choice(truth.size, cells, replace=False)] = True
    return truth, missing


def _completions(truth, missing):
    where = np.argwhere(missing)
    for states in itertools.product(*(range(ARITIES[v]) for _, v in where)):
        d = truth.copy()
        for (b, v), s in zip(where, states, strict=True):
            d[b, v] = s
        yield d


def _network(codes):
    data = CategoricalData.from_array(codes, arities=ARITIES)
    return fit_cpts(DAG.from_parents(PARENTS), data, alpha=1.0)


def _cpt_row(parents, x):
    """The CPT row of the parents' states ``x[p]``: the first parent varies fastest."""
    j, stride = 0, 1
    for p in parents:
        j += x[p] * stride
        stride *= ARITIES[p]
    return j


def _naive_collect(net, jt, ev, mode):
    """Per clique (children first): ln of its largest separator entry before rescaling,
    and ln of its least entry that agrees with the evidence ``ev`` (-1: unobserved),
    computed entry by entry in logs from the definition of the messages."""
    pos = {v: i for i, v in enumerate(jt.order)}
    cpt_home = [jt.home[min((v, *PARENTS[v]), key=pos.get)] for v in range(len(PARENTS))]
    msgs: dict[int, dict[tuple[int, ...], float]] = {}
    out = []
    for c, vars_c in enumerate(jt.cliques):
        sep = jt.separators[c]
        up: dict[tuple[int, ...], float] = {}
        least = math.inf
        for s in itertools.product(*(range(ARITIES[u]) for u in vars_c)):
            x = dict(zip(vars_c, s, strict=True))
            val = 0.0
            for v in (v for v in range(len(PARENTS)) if cpt_home[v] == c):
                val += math.log(net.cpts[v][_cpt_row(PARENTS[v], x), x[v]])
            agrees = all(ev[u] < 0 or ev[u] == x[u] for u in vars_c)
            if not all(ev[v] < 0 or ev[v] == x[v] for v in vars_c if jt.home[v] == c):
                val = -math.inf
            for f in (f for f in range(c) if jt.parent[f] == c):
                val += msgs[f][tuple(x[u] for u in jt.separators[f])]
            if agrees:
                least = min(least, val)
            t = tuple(x[u] for u in sep)
            if mode == "sum":
                up[t] = np.logaddexp(up.get(t, -math.inf), val)
            else:
                up[t] = max(up.get(t, -math.inf), val)
        m = max(up.values())
        msgs[c] = {t: u - m for t, u in up.items()}
        out.append((m, least))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_prob_floor_bounds_every_completions_network(seed):
    truth, missing = _masked(seed)
    floor = log_prob_floor(PARENTS, ARITIES, truth, missing, truth)
    worst = np.full(truth.shape[0], np.inf)
    for d in _completions(truth, missing):
        net = _network(d)
        worst = np.minimum(worst, net.log_prob_rows(truth))
    assert np.all(floor <= worst + 1e-9)
    # nothing missing: the bound is the fitted log-likelihood itself
    none = np.zeros_like(missing)
    net = _network(truth)
    assert np.allclose(log_prob_floor(PARENTS, ARITIES, truth, none, truth),
                       net.log_prob_rows(truth))


@pytest.mark.parametrize("seed", [0, 3])
def test_clique_floors_bound_every_entry_of_every_completions_junction_tree(seed):
    truth, missing = _masked(seed)
    codes = np.where(missing, -1, truth)
    cf = clique_log_floor(PARENTS, ARITIES, codes, missing, ORDER)
    pf = log_prob_floor(PARENTS, ARITIES, codes, missing, truth)
    log_r = underflow_threshold(PARENTS, ARITIES, ORDER) - math.log(TINY)
    for d in _completions(truth, missing):
        net = _network(d)
        jt = build_junction_tree(net, ORDER)
        for b, ev in enumerate(codes):
            for mode, slack in (("sum", log_r), ("max", 0.0)):
                for m, least in _naive_collect(net, jt, ev, mode):
                    assert m >= cf[b] - 1e-9 and least >= cf[b] - 1e-9
                    assert m >= pf[b] - slack - 1e-9


def test_uncertified_rows_are_the_rows_of_many_disagreeing_children():
    # c06cf61's case: a root with 300 children equal to it except in two rows, where
    # they all disagree (cost about 4.6 each), and rows left alone
    root = np.arange(200) % 2
    c = np.column_stack([root] * 301)
    c[[0, 7], 1:] ^= 1
    c[3, 1:5] ^= 1
    miss = np.zeros(c.shape, bool)
    miss[7, 0] = True
    par = [[]] + [[0]] * 300
    order = list(range(1, 301)) + [0]
    got = uncertified_rows(par, [2] * 301, c, miss, order, c)
    assert np.flatnonzero(got).tolist() == [0, 7]
    # the junction tree of such a network does need its log path: ln P(e) of row 0
    net = fit_cpts(DAG.from_parents(par), CategoricalData.from_array(c), alpha=1.0)
    jt = build_junction_tree(net, order)
    assert -math.inf < jt.log_prob_evidence(c[:1])[0] < math.log(TINY)


def test_bad_input_is_named():
    from bnsl_dist.exceptions import DataError, InvalidConfigError

    truth, missing = _masked(0)
    with pytest.raises(InvalidConfigError, match="alpha"):
        log_prob_floor(PARENTS, ARITIES, truth, missing, truth, alpha=0.0)
    other = truth.copy()
    other[~missing] = (other[~missing] + 1) % 2
    with pytest.raises(DataError, match="observed cell"):
        log_prob_floor(PARENTS, ARITIES, truth, missing, other)
    with pytest.raises(InvalidConfigError, match="order"):
        clique_log_floor(PARENTS, ARITIES, truth, missing, [0, 1, 2])


# ------------------------------------------------------------- the committed table
def test_committed_table_is_drawn_from_the_committed_json_and_covers_every_cell():
    from bnsl_dist.results.export import load_records
    from workflows.sem_rerun import after_fix
    from workflows.sem_underflow import OUT, markdown, pre_fix_records

    rows = json.loads((OUT / "underflow.json").read_text(encoding="utf-8"))["rows"]
    assert (OUT / "underflow.md").read_text(encoding="utf-8") == markdown(rows)
    keys = set(load_records(OUT / "records.parquet").frame()["key"])
    before = pre_fix_records()
    assert list(before["key"]) == sorted(keys)
    for commit in sorted(set(before["commit"])):  # the records it describes
        assert after_fix(commit) is not True, f"{commit} is not before c06cf61"
    assert {r["key"] for r in rows} == keys and len(rows) == len(keys)


def test_committed_rows_recompute(shared_data):
    """The JSON's rows of a few cells of the smallest data sets, and of the cells where a
    bound leaves rows open, recomputed from the records and the staged data."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from workflows.sem_underflow import GRID, OUT, cell_rows, pre_fix_records

    rows = {r["key"]: r for r in json.loads((OUT / "underflow.json")
                                            .read_text(encoding="utf-8"))["rows"]}
    f = pre_fix_records()
    some = [r["key"] for r in rows.values() if r["dataset"] in ("dna", "plants")][::15]
    opened = [k for k, r in rows.items() if r["best_open_rows"] or r["chain_open_rows"]]
    pick = f[f["key"].isin(some + opened[:2])]
    cells = {c.key: c for c in expand_grid(load_grid(GRID)) if c.key in set(pick["key"])}
    for got in cell_rows(pick, cells):
        assert got == rows[got["key"]]


# ------------------------------------------------------------- the rerun (c06cf61)
def test_the_rerun_pieces_run_exactly_the_open_cells_with_the_full_grids_specs(tmp_path):
    """workflows/sem_rerun.py's grid copies, written as YAML and loaded like any grid,
    expand to the open cells and nothing else, each with the full grid's key and spec
    (data, budgets, seed and the grid's seed)."""
    import yaml

    from bnsl_dist._json import canonical_json
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from workflows.sem_rerun import GRID, OUT, open_keys, pieces

    rows = json.loads((OUT / "underflow.json").read_text(encoding="utf-8"))["rows"]
    want = {r["key"] for r in rows if r["best_open_rows"] > 0 or r["chain_open_rows"] > 0}
    assert open_keys() == want and len(want) == 91
    full = {c.key: canonical_json(c.json_dict()) for c in expand_grid(load_grid(GRID))}
    seen: list[str] = []
    for name, grid, keys in pieces(want):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(grid, sort_keys=False), encoding="utf-8")
        cells = expand_grid(load_grid(path))
        assert {c.key for c in cells} == keys, name
        for c in cells:
            assert canonical_json(c.json_dict()) == full[c.key], (name, c.key)
        seen += keys
    assert sorted(seen) == sorted(want)


def test_the_committed_rerun_holds_open_cells_run_clean_after_the_fix():
    """Every rerun record (rerun-c06cf61.parquet while the rerun goes on; once landed,
    all 91 open cells of records.parquet) is an open cell of underflow.json, stored once,
    run clean (its code committed) from c06cf61 or a later commit, with the full grid's
    spec; the file carries the full grid."""
    from bnsl_dist._json import canonical_json
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from workflows.sem_rerun import GRID, RERUN, after_fix, open_keys, rerun_records

    recs = rerun_records()
    grid = load_grid(GRID)
    assert recs.grids == {grid.name: json.loads(grid.model_dump_json())}
    full = {c.key: c for c in expand_grid(grid)}
    rows = recs.table.select(["key", "status", "commit", "dirty", "spec"]).to_pylist()
    keys = [r["key"] for r in rows]
    assert rows and len(set(keys)) == len(keys) and set(keys) <= open_keys()
    if not RERUN.is_file():  # landed: every open cell rerun
        assert set(keys) == open_keys()
    for r in rows:
        assert r["status"] == "ok" and r["dirty"] is False, r["key"]
        assert json.loads(r["spec"]) == json.loads(canonical_json(full[r["key"]].json_dict()))
    for commit in sorted({r["commit"] for r in rows}):
        ok = after_fix(commit)
        if ok is None:
            pytest.skip("no git history here to place the rerun's commits")
        assert ok, f"{RERUN}: cells ran at {commit}, before c06cf61"


def test_save_adds_clean_reruns_and_refuses_the_cells_run_before_the_fix(tmp_path,
                                                                          monkeypatch):
    """``save`` keeps the committed cells, adds the open cells of a folder run clean after
    the fix (and no other cell), and refuses a folder holding an open cell run before it
    (the committed records' own, or since the land those it replaced), leaving the file
    as it was."""
    import dataclasses

    from bnsl_dist.results.export import load_records, read_records
    from bnsl_dist.results.store import ResultStore
    from workflows import sem_rerun
    from workflows.sem_underflow import BEFORE

    old = {r.key: r for r in load_records(sem_rerun.OUT / "records.parquet").results()}
    if BEFORE.is_file():  # landed: the open cells as they ran before the fix
        old.update({r.key: r for r in load_records(BEFORE).results()})
    opened = sorted(sem_rerun.open_keys())
    commit = _head()
    if sem_rerun.after_fix(commit) is not True:
        pytest.skip("no git history here (or a checkout before c06cf61)")
    target = tmp_path / "rerun.parquet"
    monkeypatch.setattr(sem_rerun, "RERUN", target)
    good = ResultStore(tmp_path / "good")
    for k in opened[:2]:
        good.write_result(dataclasses.replace(old[k], commit=commit, dirty=False))
    other = next(k for k in old if k not in set(opened))
    good.write_result(dataclasses.replace(old[other], commit=commit, dirty=False))
    assert sem_rerun.save([tmp_path / "good"]) == 2
    assert sorted(read_records(target).table.column("key").to_pylist()) == opened[:2]
    bad = ResultStore(tmp_path / "bad")
    bad.write_result(old[opened[2]])
    before = target.read_bytes()
    with pytest.raises(Exception, match="not clean at or after c06cf61"):
        sem_rerun.save([tmp_path / "bad"])
    assert target.read_bytes() == before
    good2 = ResultStore(tmp_path / "good2")
    good2.write_result(dataclasses.replace(old[opened[3]], commit=commit, dirty=False))
    assert sem_rerun.save([tmp_path / "good2"]) == 3


def _head() -> str:
    import subprocess

    from workflows.sem_rerun import REPO

    return subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_land_replaces_the_open_cells_and_keeps_the_old_ones_beside(tmp_path, monkeypatch):
    """``land`` on a copy of the committed SEM records of book and kosarek, with every
    open cell "rerun" (its old record under another commit and score): records.parquet
    holds the reruns and every other cell as it was, before-c06cf61.parquet the replaced
    cells as they were, and the cores the backfill gave stay noted; it refuses while a
    cell is missing."""
    import dataclasses

    import pandas.testing as pd_testing
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bnsl_dist.results.export import load_records, read_records
    from bnsl_dist.results.records import records_to_table
    from workflows import sem_rerun, sem_underflow
    from workflows.backfill_cpus import _META_BACKFILLED, _write

    # the cells of two data sets with open cells (book, kosarek), the committed file's
    # backfill note kept
    rows = json.loads((sem_rerun.OUT / "underflow.json").read_text(encoding="utf-8"))["rows"]
    keys = {r["key"] for r in rows if r["dataset"] in ("book", "kosarek")}
    (tmp_path / "underflow.json").write_text(json.dumps(
        {"rows": [r for r in rows if r["key"] in keys]}), encoding="utf-8")
    table = read_records(sem_rerun.OUT / "records.parquet").table
    sem_rerun._export(table.filter(pa.array([k in keys for k in table.column("key")
                                             .to_pylist()])), tmp_path / "records.parquet")
    committed = pq.read_metadata(sem_rerun.OUT / "records.parquet").metadata
    table = pq.read_table(tmp_path / "records.parquet")
    _write(tmp_path / "records.parquet", table, dict(table.schema.metadata),
           json.loads(committed[_META_BACKFILLED]))
    for mod in (sem_rerun, sem_underflow):
        monkeypatch.setattr(mod, "OUT", tmp_path)
        monkeypatch.setattr(mod, "BEFORE", tmp_path / "before-c06cf61.parquet")
    monkeypatch.setattr(sem_rerun, "RERUN", tmp_path / "rerun-c06cf61.parquet")
    old = load_records(tmp_path / "records.parquet").frame().set_index("key")
    opened = sem_rerun.open_keys()
    new = [dataclasses.replace(r, commit="f" * 40, dirty=False, best_score=r.best_score - 1)
           for r in load_records(tmp_path / "records.parquet").results() if r.key in opened]
    sem_rerun._export(records_to_table(new[:-1]), sem_rerun.RERUN)
    assert len(opened) == 9
    with pytest.raises(Exception, match="1 of the 9 open cells are not rerun yet"):
        sem_rerun.land()
    sem_rerun._export(records_to_table(new), sem_rerun.RERUN)
    sem_rerun.land()

    assert not sem_rerun.RERUN.exists()
    got = load_records(tmp_path / "records.parquet").frame().set_index("key")
    before = load_records(tmp_path / "before-c06cf61.parquet").frame().set_index("key")
    assert sorted(got.index) == sorted(old.index) and set(before.index) == opened
    rest = sorted(set(old.index) - opened)
    pd_testing.assert_frame_equal(got.loc[rest], old.loc[rest])
    pd_testing.assert_frame_equal(before.sort_index(), old.loc[sorted(opened)])
    assert (got.loc[sorted(opened), "commit"] == "f" * 40).all()
    assert (got.loc[sorted(opened), "best_score"]
            == old.loc[sorted(opened), "best_score"] - 1).all()
    assert (got["cpus"] == 2).all()
    meta = pq.read_metadata(tmp_path / "records.parquet").metadata
    assert b"c06cf61" in meta[b"bnsl_dist.backfilled"]
    assert list(sem_underflow.pre_fix_records()["key"]) == sorted(old.index)
    assert (sem_underflow.pre_fix_records().set_index("key").loc[sorted(opened), "commit"]
            == old.loc[sorted(opened), "commit"]).all()
    assert set(read_records(tmp_path / "records.parquet").grids) == {
        "sem-imputation-2018-reduced"}
    monkeypatch.setattr(sem_rerun, "RERUN", tmp_path / "absent.parquet")
    assert set(sem_rerun.rerun_records().table.column("key").to_pylist()) == opened


def test_run_goes_down_each_cores_list_until_a_piece_stops_then_saves(tmp_path,
                                                                      monkeypatch):
    """``run`` runs the pieces of each ``cpuN.txt`` in order into ``RESULTS/cpuN`` with
    --stop-at, one worker pinned to core N, stops a list after a piece ends too late for
    its next cell (exit status 3), and saves what both folders stored."""
    import subprocess
    import types

    from workflows import sem_rerun

    monkeypatch.setattr(sem_rerun, "RERUN", tmp_path / "absent.parquet")
    calls: list[list[str]] = []

    def fake_run(cmd, **kw):
        assert kw["env"]["NUMBA_NUM_THREADS"] == "1" and callable(kw["preexec_fn"])
        calls.append(cmd)
        first = sum(c[c.index("--results") + 1] == cmd[cmd.index("--results") + 1]
                    for c in calls) == 1
        return types.SimpleNamespace(returncode=0 if first else 3)

    saved: list[list] = []
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(sem_rerun, "save", lambda folders: saved.append(folders) or 0)
    (tmp_path / "r" / "cpu0").mkdir(parents=True)
    sem_rerun.run(tmp_path / "r", "23:59", cpus=2)
    for j in (0, 1):
        mine = [c for c in calls if c[c.index("--results") + 1] == str(tmp_path / "r"
                                                                          / f"cpu{j}")]
        listed = (tmp_path / "r" / "pieces" / f"cpu{j}.txt").read_text().split()
        assert [c[c.index("run") + 1] for c in mine] == listed[:2]
        assert all(c[c.index("--stop-at") + 1] == "23:59"
                   and c[c.index("--workers") + 1] == "1" for c in mine)
    assert saved == [[tmp_path / "r" / "cpu0"]]  # the folder a cell was stored in


def test_run_starts_no_piece_whose_cells_the_stored_reruns_say_end_too_late(tmp_path,
                                                                          monkeypatch):
    """With the c20ng reruns at budget ×2 but one stored (each over 9 min; at most a
    quarter of that at another budget scale) and one minute left on a clock stopped
    (planning takes no time), ``run`` starts no piece of c20ng (each list goes on past
    it) and every piece of a data set with no rerun stored (nothing to go by: started, as
    ``grid run`` would). Only the ×2 cells are kept so that the test reads the same
    before and after the rerun lands."""
    import subprocess
    import time
    import types
    from pathlib import Path

    import pyarrow as pa

    from workflows import sem_rerun

    recs = sem_rerun.rerun_records()
    frame = recs.frame()
    t = recs.table.filter(pa.array([d == "c20ng" and sem["budget_scale"] == 2
                                    for d, sem in zip(frame["dataset"], frame["sem"],
                                                      strict=True)]))
    t = t.slice(1)  # one c20ng cell at ×2 left to run
    assert min(t.column("wall_seconds").to_pylist()) * 0.5 / 2 > 60
    monkeypatch.setattr(sem_rerun, "RERUN", tmp_path / "rerun.parquet")
    sem_rerun._export(t, sem_rerun.RERUN)
    calls: list[str] = []

    def fake_run(cmd, **kw):
        calls.append(Path(cmd[cmd.index("run") + 1]).name)
        return types.SimpleNamespace(returncode=0)

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(sem_rerun, "save", lambda folders: 0)
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    sem_rerun.run(tmp_path / "r", "1min", cpus=2)
    listed = [Path(p).name for j in (0, 1)
              for p in (tmp_path / "r" / "pieces" / f"cpu{j}.txt").read_text().split()]
    skipped = [p for p in listed if p.startswith("c20ng-")]
    assert skipped and sorted(calls) == sorted(p for p in listed if p not in skipped)
    logs = "".join((tmp_path / "r" / f"cpu{j}.log").read_text() for j in (0, 1))
    assert logs.count(": not started, its cells expected to take") == len(skipped)
