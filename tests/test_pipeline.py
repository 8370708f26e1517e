"""Cells and run_cell: keys, seeds independent of scheduling, records checked against a
naive BIC oracle; spec models; screening as a stage; provenance."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

import bnsl_dist.pipeline.cell as C
import bnsl_dist.pipeline.run as E
import bnsl_dist.search.base as B
from bnsl_dist._json import canonical_json
from bnsl_dist.cache.jkl import write_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.results.records import CellResult, records_to_table
from bnsl_dist.scores.local import LocalScorer
from bnsl_dist.search.base import Incumbent
from tests.naive_imputation import naive_mpe
from tests.naive_scores import naive_bic

NLTCS = DataRef(name="nltcs")


def _grid(**over):
    obj = {"name": "t", "seed": 11,
           "datasets": [{"name": "nltcs", "splits": ["train", "test"]}],
           "cache": {"method": "sequential", "max_indegree": 2},
           "algorithms": [{"name": "kg", "k": [2, 3]}, {"name": "asobs"}],
           "seeds": [0, 1], "budget": {"iterations": 30, "iteration_checkpoints": [5, 30]}}
    obj.update(over)
    return GridConfig.model_validate(obj)


@pytest.fixture(scope="module")
def nltcs_cache(tmp_path_factory):
    """An exhaustive in-degree-2 BIC cache of nltcs/train, as a .jkl file."""
    data = E.load_data(NLTCS)
    sc = LocalScorer(data, "bic")
    n = data.n_vars
    lists = [[(ps, sc.score(v, ps)) for r in range(3)
              for ps in itertools.combinations([u for u in range(n) if u != v], r)]
             for v in range(n)]
    cache = ParentSetCache.from_lists(lists, names=data.names).prune_dominated()
    path = tmp_path_factory.mktemp("cache") / "nltcs.jkl.gz"
    write_jkl(cache, path)
    return path


def test_expand_counts_and_unique_keys():
    cells = expand_grid(_grid())
    assert len(cells) == 2 * (2 + 1) * 2  # splits x (kg k=2,3 + asobs) x seeds
    assert len({c.key for c in cells}) == len(cells)
    assert {(c.algorithm, c.k) for c in cells} == {("kg", 2), ("kg", 3), ("asobs", None)}
    assert expand_grid(_grid())[3].key == cells[3].key  # stable


def test_key_depends_on_content_and_version(monkeypatch):
    base = {c.describe(): c.key for c in expand_grid(_grid())}
    longer = {c.describe(): c.key for c in expand_grid(_grid(budget={"iterations": 31}))}
    assert not set(base.values()) & set(longer.values())
    monkeypatch.setattr(C, "code_version", lambda: "999")
    bumped = {c.describe(): c.key for c in expand_grid(_grid())}
    assert not set(base.values()) & set(bumped.values())


def test_seed_is_independent_of_budget_order_and_version(monkeypatch):
    a = expand_grid(_grid())
    b = expand_grid(_grid(budget={"iterations": 99}))
    rev = expand_grid(_grid(algorithms=[{"name": "asobs"}, {"name": "kg", "k": [3, 2]}]))
    draws = {c.describe(): c.rng().integers(0, 2**62) for c in a}
    assert draws == {c.describe(): c.rng().integers(0, 2**62) for c in b}
    assert draws == {c.describe(): c.rng().integers(0, 2**62) for c in rev}
    assert len(set(draws.values())) == len(draws)  # every cell its own stream
    other = expand_grid(_grid(seed=12))
    assert not set(draws.values()) & {c.rng().integers(0, 2**62) for c in other}


def test_sem_cells_carry_rates():
    g = GridConfig.model_validate({
        "name": "s", "kind": "sem", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "scores_per_variable": 5},
        "algorithms": [{"name": "kmax", "k": [2]}], "budget": {"seconds": 5},
        "seeds": [0, 1], "sem": {"missing_rates": [0.1, 0.2]}})
    cells = expand_grid(g)
    assert len(cells) == 4
    assert sorted(c.sem.missing_rate for c in cells) == [0.1, 0.1, 0.2, 0.2]


def _check_record(rec, cell, data):
    dag = json.loads(rec.dag_json)
    idx = {n: i for i, n in enumerate(data.names)}
    codes = np.asarray(data.codes)
    naive = sum(naive_bic(codes, data.arities, idx[v], sorted(idx[p] for p in ps))
                for v, ps in dag["parents"].items())
    assert rec.best_score == pytest.approx(naive, rel=1e-10)
    assert rec.key == cell.key and rec.n_vars == data.n_vars
    assert rec.n_samples == data.n_samples and rec.data_hash == data.content_hash()
    assert list(rec.trace_scores) == sorted(set(rec.trace_scores))  # strictly improving
    assert rec.trace_scores[-1] == rec.best_score
    assert rec.iteration_checkpoints == tuple(cell.search.budget.iteration_checkpoints)
    finite = [s for s in rec.iteration_checkpoint_scores if not math.isnan(s)]
    assert finite == sorted(finite) and finite[-1] == rec.best_score
    if cell.k is not None:
        assert rec.treewidth_bound is not None and rec.treewidth_bound <= cell.k
        assert max(len(ps) for ps in dag["parents"].values()) <= cell.k


def test_run_cell_records_match_naive_bic(nltcs_cache):
    g = _grid(cache={"method": "sequential", "max_indegree": 2, "path": str(nltcs_cache)},
              datasets=[{"name": "nltcs", "splits": ["train"]}], seeds=[0])
    data = E.load_data(NLTCS)
    for cell in expand_grid(g):
        rec = E.run_cell(cell)  # cache from the settings' path
        _check_record(rec, cell, data)
        again = E.run_cell(cell, str(nltcs_cache))
        assert (again.best_score, again.dag_json) == (rec.best_score, rec.dag_json)
        assert json.loads(rec.versions)["bnsl_dist"] == C.code_version()


def test_iteration_grid_cache_is_the_same_on_a_slow_machine(monkeypatch):
    """A grid whose budget is in iterations and whose cache section gives no budget built
    its independence-selection cache for CacheSpec's default 1 s per variable: on a
    machine whose clock runs 1,000 s per reading each variable kept only its singletons,
    and the cell learned another DAG. Such a grid's cache now gets the exact-score
    budget of ``learn --iterations`` (as the command line does)."""
    import time

    g = _grid(cache={"method": "independence", "max_indegree": 2}, seeds=[0],
              datasets=[{"name": "nltcs", "splits": ["train"]}],
              algorithms=[{"name": "asobs"}])
    (cell,) = expand_grid(g)
    here = E.run_cell(cell)
    ticks = itertools.count(0.0, 1000.0)
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    slow = E.run_cell(cell)
    monkeypatch.undo()
    assert (slow.best_score, slow.dag_json) == (here.best_score, here.dag_json)
    # a cache budget in seconds stays the grid's choice, as does a budget in seconds
    timed = _grid(cache={"method": "independence", "seconds_per_variable": 0.5})
    assert timed.cache.seconds_per_variable == 0.5 and timed.cache.scores_per_variable is None
    by_time = _grid(cache={"method": "independence"}, budget={"seconds": 5})
    assert by_time.cache.seconds_per_variable == 1.0


class _Nothing:
    exact = False

    def __init__(self) -> None:
        pass

    def run(self, cache, budget, rng):
        return iter(())


class _One:
    exact = False

    def __init__(self, *, factor: float = 1.0) -> None:
        self.factor = factor

    def run(self, cache, budget, rng):
        dag = cache.dag_from_indices([int(cache.offsets[v + 1] - 1)
                                      for v in range(cache.n_vars)])  # all empty sets
        yield Incumbent(0.0, cache.score_dag(dag), dag, iterations=1)


class _Sometimes(_One):
    """The empty DAG (at iteration 1 of 3) for about half the seeds, nothing for the
    others: a seed that reports no DAG within its budget while other seeds do (a time
    budget near the first incumbent's time)."""

    def run(self, cache, budget, rng):
        if rng.random() < 0.5:
            yield from super().run(cache, budget, rng)
        return 3


_FAKES = (("test-nothing", _Nothing), ("test-one", _One), ("test-sometimes", _Sometimes))


@pytest.fixture
def fake_optimizers(monkeypatch):
    """Test optimizers in the registry for one test only (the contract suite must not
    see them)."""
    for name, cls in _FAKES:
        monkeypatch.setitem(B._REGISTRY, name, cls)
        monkeypatch.delitem(B._INFO, name, raising=False)
    yield
    for name, _ in _FAKES:
        B._INFO.pop(name, None)


def test_run_cell_errors(nltcs_cache, fake_optimizers):
    g = _grid(cache={"method": "sequential", "max_indegree": 2, "path": str(nltcs_cache)},
              datasets=[{"name": "nltcs", "splits": ["train"]}], seeds=[0],
              algorithms=[{"name": "test-nothing"}, {"name": "test-one", "label": "one"}])
    nothing, one = expand_grid(g)
    with pytest.raises(E.NoSolutionError):
        E.run_cell(nothing)
    with pytest.raises(ValueError, match="has no parameter 'bad'; it takes factor"):
        _grid(algorithms=[{"name": "test-one", "params": {"bad": 1}}])
    rec = E.run_cell(one)
    assert json.loads(rec.dag_json)["parents"] == {n: [] for n in E.load_data(NLTCS).names}
    f = E.failure_record(nothing, "no-solution", E.NoSolutionError("x"))
    assert f.status == "no-solution" and f.key == nothing.key


def test_learn_without_a_solution_is_a_one_line_error(nltcs_cache, fake_optimizers, tmp_path):
    """An optimizer that reports no DAG within the budget: `learn` says so on one line,
    exits 2 (a BNSLError, as every impossible request), writes nothing (it printed a
    traceback, exit 1)."""
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    out = tmp_path / "r.json"
    res = CliRunner().invoke(main, ["learn", str(nltcs_cache), "--algorithm", "test-nothing",
                                    "--iterations", "1", "--serial", "-q", "-o", str(out)])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()  # -q: no phase lines, the error alone
    assert len(lines) == 1 and "no DAG within the budget" in lines[0], res.stderr
    assert "Traceback" not in res.output and not out.exists()


@pytest.mark.dask
def test_learn_keeps_the_seeds_that_found_a_dag(nltcs_cache, fake_optimizers):
    """A seed with no DAG within the budget is a seed with no incumbent in the merge:
    the result is the best over the other seeds (serially and on Dask), and `learn`
    fails only when no seed found one. (The first seed without a DAG made the whole
    learn fail with NoSolutionError, dropping the DAGs of the others: seen with
    hc-tabu, --seconds 0.01, 6 seeds on BLIP's book cache, seed 2 empty.)"""
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.execute import execute
    from bnsl_dist.pipeline.learn import learn, learn_cells
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec

    search = SearchSpec(algorithm="test-sometimes",
                        budget={"iterations": 3, "iteration_checkpoints": [1, 3]})
    cells = learn_cells(None, CacheSpec(path=str(nltcs_cache)), search, 6, base_seed=2)
    found = []  # the oracle: each seed run alone
    for c in cells:
        try:
            found.append(E.run_cell(c))
        except E.NoSolutionError:
            found.append(None)
    assert None in found and any(found)  # this base seed mixes both
    first = next(r for r in found if r is not None)  # ties: the earlier seed
    with connect(workers=2, processes=False, announce=False, dashboard=False) as client:
        results = [learn(cells), execute(cells).learn_result(),
                   execute(cells, client).learn_result()]
    for res in results:
        assert res.score == first.best_score and res.best["seed"] == first.seed
        assert json.loads(first.dag_json) == res.dag
        assert [(c.budget, c.score, c.seed) for c in res.checkpoints] == \
            [(b, first.best_score, first.seed) for b in (1.0, 3.0)]
        assert [r.seed for r in res.runs] == [c.seed for c in cells]
        assert [bool(r.incumbents) for r in res.runs] == [r is not None for r in found]
        assert all(r.iterations == 3 for r in res.runs)
    nobody = [c for c, r in zip(cells, found, strict=True) if r is None]
    with pytest.raises(E.NoSolutionError, match="no DAG within the budget"):
        learn(nobody)


@pytest.mark.parametrize("budget", [
    {"iterations": 40, "iteration_checkpoints": [1, 2, 4, 8, 16, 40]},
    {"seconds": 0.3, "checkpoints": [0.002, 0.01, 0.03, 0.1, 0.3]}])
def test_learn_merge_picks_what_the_merged_traces_pick(nltcs_cache, budget):
    """LearnResult.merge reads DAG JSON only for the winners; at every checkpoint it
    picks what ``best_at`` of the seeds' merged traces (each record's DAGs made, as
    before) picks: the same score, seed and DAG, and the same best overall."""
    from bnsl_dist.pipeline.learn import LearnResult, learn_cells, run_seed
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec
    from bnsl_dist.search.base import AnytimeTrace

    search = SearchSpec(algorithm="hc-tabu", budget=budget)
    cells = learn_cells(None, CacheSpec(path=str(nltcs_cache)), search, 5, base_seed=7)
    records = [run_seed(c) for c in cells]
    assert all(isinstance(r, E.CellResult) for r in records)
    res = LearnResult.merge(cells, records)
    merged = AnytimeTrace.merge([r.trace() for r in records])
    by_time = "seconds" in budget
    cps = budget["checkpoints" if by_time else "iteration_checkpoints"]
    oracle = []
    for cp in cps:
        inc = merged.best_at(cp) if by_time else merged.best_at_iteration(cp)
        oracle.append((float(cp), None, None, None) if inc is None else
                      (float(cp), inc.score, cells[inc.info["run"]].seed,
                       inc.dag.to_json_dict()))
    assert [(c.budget, c.score, c.seed, c.dag) for c in res.checkpoints] == oracle
    for c, o in zip(res.checkpoints, oracle, strict=True):  # the JSON's order too
        if c.dag is not None:
            assert list(c.dag["parents"]) == list(o[3]["parents"]) == c.dag["nodes"]
    best = merged.best
    assert (res.score, res.best["seed"], res.best["elapsed"], res.best["iterations"]) == (
        best.score, cells[best.info["run"]].seed, best.elapsed, best.iterations)
    assert json.dumps(res.dag) == json.dumps(best.dag.to_json_dict())
    if not by_time:  # deterministic: the winner changes between checkpoints
        assert len({(c.score, c.seed) for c in res.checkpoints if c.score is not None}) >= 2


def test_load_data_paths(monkeypatch, tmp_path):
    monkeypatch.delenv("NOPE_DIR", raising=False)
    with pytest.raises(DataError, match="not set"):
        E.load_data(DataRef(name="x", path="${NOPE_DIR}/x.csv"))
    (tmp_path / "train.csv").write_text("a,b\n0,1\n1,0\n")
    monkeypatch.setenv("MY_DIR", str(tmp_path))
    d = E.load_data(DataRef(name="x", path="${MY_DIR}/{split}.csv"))
    assert d.n_vars == 2 and d.n_samples == 2
    with pytest.raises(DataError):
        E.load_data(DataRef(name="no-such-dataset-anywhere"))
    with pytest.raises(DataError, match="data list"):
        DataRef(name="no-such-dataset-anywhere").check()


def test_cache_of_wrong_size_rejected(tmp_path):
    lists = [[((), -1.0)], [((), -1.0)]]
    p = tmp_path / "two.jkl"
    write_jkl(ParentSetCache.from_lists(lists), p)
    with pytest.raises(DataError, match="2 variables"):
        E.load_cache(p, E.load_data(NLTCS))


def test_a_built_cache_file_serves_its_cell(tmp_path):
    g = _grid(cache={"method": "independence", "scores_per_variable": 40},
              datasets=[{"name": "nltcs", "splits": ["test"]}], seeds=[0],
              algorithms=[{"name": "kg", "k": [2]}])
    (cell,) = expand_grid(g)
    path = E.ensure_cache(cell.cache_job, tmp_path / "c.jkl.gz")
    mtime = (tmp_path / "c.jkl.gz").stat().st_mtime_ns
    assert E.ensure_cache(cell.cache_job, path) == path  # idempotent: not rebuilt
    assert (tmp_path / "c.jkl.gz").stat().st_mtime_ns == mtime
    a = E.run_cell(cell, path)
    _check_record(a, cell, E.load_data(DataRef(name="nltcs", split="test")))


def test_sem_cell_imputes_reproducibly():
    g = GridConfig.model_validate({
        "name": "s", "kind": "sem", "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": {"method": "independence", "scores_per_variable": 20},
        "algorithms": [{"name": "kmax", "k": [2]}],
        "budget": {"iterations": 10, "seconds": 30}, "seeds": [0],
        # work budgets only (20 scores per variable, 10 k-MAX iterations): a seconds
        # budget for the M-step's search made the two runs differ on a loaded machine
        "sem": {"missing_rates": [0.4], "max_em_iterations": 2}})
    (cell,) = expand_grid(g)
    import bnsl_dist.sem as sem_pkg

    seen = {}
    real = sem_pkg.structural_em

    def spy(data, **kw):
        seen["masked"], seen["result"] = data, real(data, **kw)
        return seen["result"]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sem_pkg, "structural_em", spy)
        a = E.run_cell(cell)
    b = E.run_cell(cell)
    ea = a.outputs["sem"]
    assert a.outputs == b.outputs and a.dag_json == b.dag_json
    n_cells = a.n_samples * a.n_vars
    sd = math.sqrt(n_cells * 0.4 * 0.6)
    assert abs(ea["missing_cells"] - 0.4 * n_cells) < 4 * sd
    assert 0.5 < ea["imputation_accuracy"] <= 1.0 and ea["em_iterations"] <= 2
    # the paper's completion, beside it: each record's joint MPE under the returned
    # network, by enumerating the record's completions
    truth = E.load_data(cell.data).codes
    masked, net = seen["masked"], seen["result"].network
    right = 0
    for r in np.nonzero(masked.missing.any(axis=1))[0]:
        idx = masked.missing[r]
        best = naive_mpe(net, masked.codes[r], idx)
        right += int((best[idx] == truth[r, idx]).sum())
    assert ea["imputation_accuracy_mpe"] == pytest.approx(right / ea["missing_cells"],
                                                          abs=2 / ea["missing_cells"])
    assert ea["imputation"] == "marginal"
    # the baseline: each variable's most frequent observed state, counted here
    hits = 0
    for v in range(masked.n_vars):
        miss = masked.missing[:, v]
        if miss.any():
            mode = np.bincount(masked.codes[~miss, v], minlength=int(net.arities[v])).argmax()
            hits += int((truth[miss, v] == mode).sum())
    assert ea["imputation_accuracy_mode"] == hits / ea["missing_cells"]
    assert ea["imputation_accuracy"] > ea["imputation_accuracy_mode"]


@pytest.mark.parametrize("edit, needle", [
    (("name: kg", "name: dpp"), "line 9: algorithms[0].name: unknown algorithm 'dpp'"),
    (("name: nltcs", "name: nltcs-nope"), "line 3: datasets[0]: Value error, unknown data"),
    (("k: [2]", "k: [2]\n    params: {max_parent: 1}"), "line 11: algorithms[0].params"),
])
def test_grid_dry_run_validates_every_name_like_a_run(tmp_path, edit, needle):
    from click.testing import CliRunner

    from bnsl_dist.cli import main

    text = ("name: toy\ndatasets:\n  - name: nltcs\n    splits: [train]\ncache:\n"
            "  method: independence\n  scores_per_variable: 10\nalgorithms:\n  - name: kg\n"
            "    k: [2]\nbudget:\n  iterations: 10\n").replace(*edit)
    (tmp_path / "g.yaml").write_text(text)
    for extra in (["--dry-run"], ["--workers", "1"]):
        res = CliRunner().invoke(main, ["grid", "run", str(tmp_path / "g.yaml"),
                                        "--results", str(tmp_path / "r"), *extra])
        assert res.exit_code == 2, res.output
        line = res.output.strip()
        assert line.count("\n") == 0 and str(tmp_path / "g.yaml") in line
        assert needle.replace("Value error, ", "") in line, line
        assert "should have at least 1 item" not in line  # only the item's own error
    res = CliRunner().invoke(main, ["grid", "run", str(tmp_path / "g.yaml"), "--results",
                                    str(tmp_path / "r"), "--workers", "0"])
    assert res.exit_code == 2 and "Invalid value for '--workers'" in res.output


def test_provenance_and_resolved_spec_in_every_record(tmp_path):
    import os
    import platform
    import socket

    from bnsl_dist import __version__

    g = _grid(cache={"method": "independence", "scores_per_variable": 20},
              datasets=[{"name": "nltcs", "splits": ["test"]}], seeds=[0],
              algorithms=[{"name": "kg", "k": [2]}])
    (cell,) = expand_grid(g)
    rec = E.run_cell(cell)
    versions = json.loads(rec.versions)
    assert versions["bnsl_dist"] == __version__
    # the versions a reader needs to judge a timed result, and the machine's core count
    assert {"python", "numpy", "numba", "dask", "ortools", "pydantic"} <= set(versions)
    assert versions["python"] == platform.python_version()
    assert rec.hostname == socket.gethostname() and rec.cpus == os.cpu_count()
    assert (rec.commit is None) == (rec.dirty is None)
    if rec.commit is not None:  # run from a checkout: the commit git names
        import subprocess
        from pathlib import Path

        head = subprocess.run(["git", "-C", str(Path(E.__file__).resolve().parents[2]),
                               "rev-parse", "HEAD"], capture_output=True, text=True)
        assert rec.commit == head.stdout.strip()
    spec = json.loads(rec.spec)
    assert C.Cell.model_validate(spec) == cell  # the fully resolved cell round-trips
    assert spec["cache"]["seconds_per_variable"] is None  # a score budget: no seconds
    assert spec["cache"]["candidate_limit"] == 256  # defaults resolved into the record


def test_cell_spec_round_trips_and_rejects_unknown_keys():
    (cell,) = expand_grid(_grid(datasets=[{"name": "nltcs", "splits": ["test"]}], seeds=[0],
                                algorithms=[{"name": "asobs", "params": {"max_window": 3}}]))
    assert C.Cell.model_validate_json(cell.model_dump_json()) == cell
    assert C.Cell.model_validate(cell.model_dump(mode="json")).key == cell.key
    dumped = cell.json_dict()  # the stored (flat) layout reads back too
    assert C.Cell.model_validate(dumped) == cell
    bad = {**dumped, "search": {**dumped["search"], "budgt": {}}}
    with pytest.raises(ValueError, match="search.budgt"):
        C.Cell.model_validate(bad)
    from bnsl_dist._spec import make

    with pytest.raises(InvalidConfigError, match="search.params: algorithm 'asobs' has no "
                                                 "parameter 'windw'"):
        make(C.Cell, {**dumped, "search": {**dumped["search"], "params": {"windw": 3}}})


def test_unbounded_cache_budget_keys_and_round_trips():
    g = _grid(cache={"method": "sequential", "max_indegree": 2,
                     "seconds_per_variable": math.inf},
              datasets=[{"name": "nltcs", "splits": ["test"]}], seeds=[0],
              algorithms=[{"name": "asobs"}])
    (cell,) = expand_grid(g)
    assert cell.json_dict()["cache"]["seconds_per_variable"] == "Infinity"
    back = C.Cell.model_validate_json(cell.model_dump_json())
    assert back == cell and back.key == cell.key and back.cache_job.key == cell.cache_job.key


def test_run_cell_runs_a_data_scored_optimizer(nltcs_cache):
    """tabu-data (needs the data) runs through a cell: its start optimizer works on the
    in-degree-2 cache, then the climb scores families from the data; every record score
    is the naive BIC of its DAG and the climb improves on the start (the start runs
    iterations 1-3, the climb the next ones; a cell of its own would draw other orders:
    streams are keyed by the cell)."""
    g = _grid(cache={"method": "sequential", "max_indegree": 2, "path": str(nltcs_cache)},
              datasets=[{"name": "nltcs", "splits": ["train"]}], seeds=[0],
              budget={"iterations": 6, "iteration_checkpoints": [3, 6]},
              algorithms=[{"name": "tabu-data", "params": {"start": "asobs",
                                                           "start_iterations": 3}}])
    (tabu,) = expand_grid(g)
    data = E.load_data(NLTCS)
    rec = E.run_cell(tabu)
    _check_record(rec, tabu, data)
    at_start, at_end = rec.iteration_checkpoint_scores
    assert at_end > at_start and rec.best_score == at_end
    assert min(rec.trace_iterations) <= 3 < max(rec.trace_iterations)
    assert max(map(len, json.loads(rec.dag_json)["parents"].values())) >= 1
    with pytest.raises(InvalidConfigError, match="scores with bdeu but the cache with bic"):
        E.run_cell(expand_grid(_grid(
            cache={"method": "sequential", "max_indegree": 2, "path": str(nltcs_cache)},
            datasets=[{"name": "nltcs", "splits": ["train"]}], seeds=[0],
            budget={"iterations": 1},
            algorithms=[{"name": "tabu-data", "params": {"score": "bdeu"}}]))[0])


def test_search_cells_carry_no_settings_of_other_kinds():
    """Keys name stored records: a search cell's canonical JSON holds only what a search
    cell has, so adding a grid kind does not orphan the records of earlier runs."""
    for cell in expand_grid(_grid()):
        spec = cell.json_dict()
        assert "inference" not in spec and spec["sem"] is None
        again = C.Cell.model_validate(spec)
        assert again == cell and again.key == cell.key


def _same_incumbent(a, b):
    """Equal as a record keeps them (the bound is kept for the last incumbent only)."""
    if a is None or b is None:
        return a is b
    return (a.elapsed, a.score, a.iterations, a.dag) == (b.elapsed, b.score, b.iterations,
                                                         b.dag)


def test_record_trace_equals_the_optimizers_trace(nltcs_cache, monkeypatch):
    """A record keeps the best DAG once (``dag_json``, not in ``incumbent_dags``);
    ``trace()`` still equals the optimizer's own trace of the run at every checkpoint,
    and a row of the former layout (the best's DAG in ``incumbent_dags`` too) gives the
    same trace, also through Parquet."""
    runs: list[B.AnytimeTrace] = []
    collect = B.AnytimeTrace.collect

    def spy(stream, on_incumbent=None):
        runs.append(collect(stream, on_incumbent))
        return runs[-1]

    monkeypatch.setattr(B.AnytimeTrace, "collect", spy)
    g = _grid(cache={"method": "sequential", "max_indegree": 2, "path": str(nltcs_cache)},
              datasets=[{"name": "nltcs", "splits": ["train"]}], seeds=[0, 1],
              budget={"seconds": 600, "iterations": 40,
                      "checkpoints": [1e-4, 1e-3, 1e-2, 0.1, 1.0],
                      "iteration_checkpoints": [1, 2, 3, 5, 8, 13, 21, 40]})
    kept_before_best = 0
    for cell in expand_grid(g):
        rec = E.run_cell(cell)
        oracle = runs[-1].within(cell.budget)
        got = rec.trace()
        b = cell.search.budget
        for c in b.checkpoints:
            assert _same_incumbent(got.best_at(c), oracle.best_at(c)), (cell.describe(), c)
        for c in b.iteration_checkpoints:
            assert _same_incumbent(got.best_at_iteration(c), oracle.best_at_iteration(c)), \
                (cell.describe(), c)
        assert _same_incumbent(got.best, oracle.best) and got.best is not None
        assert got.best.dag.to_json_dict() == json.loads(rec.dag_json)
        last = len(oracle.incumbents) - 1
        assert len(rec.trace_scores) == last + 1
        dags = json.loads(rec.incumbent_dags)
        assert str(last) not in dags
        kept_before_best += len(dags)
        # the former layout: the best's (here the last) DAG in incumbent_dags too
        old = dataclasses.replace(rec, incumbent_dags=canonical_json(
            {i: [list(p) for p in oracle.incumbents[int(i)].dag.parents]
             for i in [*dags, str(last)]}))
        assert old.trace() == got
        back = [CellResult.from_row(r) for r in records_to_table([rec, old]).to_pylist()]
        assert [r.trace() for r in back] == [got, got]
    assert kept_before_best > 0  # checkpoint DAGs other than the best are kept and checked


def test_a_seed_given_its_built_cache_reads_no_data(tmp_path):
    """learn's seeds get the cache object built from their data (with its entropies, the
    data's hash and rows): run_cell then gives the same record with the data file gone
    (no second read on a worker); an optimizer that scores new families, or a cache
    without those fields, still reads the data (the file gone: the data's error)."""
    from bnsl_dist.pipeline.learn import learn_cells, prepare_cache
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec

    csv = tmp_path / "d.csv"
    rows = np.random.default_rng(3).integers(0, 3, size=(400, 6))
    csv.write_text("a,b,c,d,e,f\n" + "\n".join(",".join(map(str, r)) for r in rows) + "\n")
    ref = DataRef.parse(str(csv))
    cache_spec = CacheSpec(method="independence", scores_per_variable=30)
    search = SearchSpec.model_validate({"algorithm": "asobs-ent",
                                        "budget": {"iterations": 20}})
    (cell,) = learn_cells(ref, cache_spec, search, 1, base_seed=4)
    cache = prepare_cache(cell)
    read = E.run_cell(cell, cache)
    data = E.load_data(ref)
    assert (read.data_hash, read.n_samples) == (data.content_hash(), 400)
    tabu = SearchSpec.model_validate({"algorithm": "tabu-data",
                                      "budget": {"iterations": 3}})
    (tabu_cell,) = learn_cells(ref, cache_spec, tabu, 1, base_seed=4)
    bare = ParentSetCache.from_lists([cache.sets_of(v) for v in range(6)])
    csv.unlink()
    E._load_data.cache_clear()
    free = E.run_cell(cell, cache)
    for f in ("best_score", "dag_json", "data_hash", "n_samples", "iterations",
              "n_parent_sets", "trace_scores"):
        assert getattr(free, f) == getattr(read, f), f
    with pytest.raises(DataError):
        E.run_cell(tabu_cell, cache)
    with pytest.raises(DataError):
        E.run_cell(cell, bare)


def test_a_cache_read_once_per_process_never_changes_under_its_callers(tmp_path):
    """Two data sets with the same variables share one cache file (a grid's ready cache
    for every split): each gets the entropies of its own data, and the cached object
    read from the file is left as read (it got the first caller's entropies before)."""
    from bnsl_dist.data import CategoricalData

    rng = np.random.default_rng(5)
    a = CategoricalData.from_array(rng.integers(0, 2, size=(50, 3)), names=["x", "y", "z"])
    b = CategoricalData.from_array(np.column_stack([np.zeros(50, int), rng.integers(0, 3, 50),
                                                    rng.integers(0, 2, 50)]),
                                   names=["x", "y", "z"], arities=[2, 3, 2])
    p = tmp_path / "c.jkl"
    write_jkl(ParentSetCache.from_lists([[((), -1.0)], [((0,), -2.0), ((), -3.0)],
                                         [((), -1.5)]], names=["x", "y", "z"]), p)
    ca, cb = E.load_cache(p, a), E.load_cache(p, b)
    want_a, want_b = LocalScorer(a, "ll").entropies(), LocalScorer(b, "ll").entropies()
    assert np.allclose(ca.entropies, want_a) and np.allclose(cb.entropies, want_b)
    assert not np.allclose(want_a, want_b)
    assert E.load_cache(p, None).entropies is None
    assert ca.scores is cb.scores  # the arrays are shared, not read again


def test_learns_provenance_is_the_best_seed_runs(monkeypatch):
    """learn's result names the code that found its DAG (the seed's record), not the
    process that merged the seeds (a client, on Dask: another host, other code)."""
    from bnsl_dist.pipeline.learn import learn, learn_cells
    from bnsl_dist.pipeline.specs import CacheSpec, SearchSpec

    ran = {"version": "9.9", "commit": "c0ffee", "dirty": True, "hostname": "worker-7", "cpus": 96,
           "versions": {"bnsl_dist": "9.9", "numpy": "0"}}
    monkeypatch.setattr(E, "provenance", lambda: ran)
    cells = learn_cells(NLTCS, CacheSpec(method="sequential", max_indegree=1),
                        SearchSpec(algorithm="asobs", budget={"iterations": 5}), 2)
    assert learn(cells).provenance == ran
