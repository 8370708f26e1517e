"""SEM grid cells: the M-step budgets are those of `bnsl-dist impute` (data-scaled work
counts) unless the grid gives seconds, so a cell reproduces whatever the clock says,
serially or on Dask workers; the shipped grids keep the paper's wall-clock protocol."""

from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pytest

import bnsl_dist.cache.independence as independence
import bnsl_dist.search.base as search_base
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.config import GridConfig, load_grid
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import load_data, run_cell
from bnsl_dist.sem import imputation_accuracy
from bnsl_dist.sem.budgets import sem_budgets

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "grids"


def sem_grid(sem=None, cache=None, seeds=(0,), budget=None) -> GridConfig:
    return GridConfig.model_validate({
        "name": "s", "kind": "sem", "seed": 4,
        "datasets": [{"name": "nltcs", "splits": ["test"]}],
        "cache": cache or {"method": "independence", "score": "bic"},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": list(seeds),
        "budget": budget or {"iterations": 300},
        "sem": {"missing_rates": [0.1], "max_em_iterations": 2, **(sem or {})}})


class FastClock:
    """A ``time`` module whose perf_counter jumps 1,000 s per call: any wall-clock
    budget ends at its first check."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 1000.0
        return self.now


def fast_clock(monkeypatch) -> None:
    for mod in (search_base, independence):
        monkeypatch.setattr(mod, "time", types.SimpleNamespace(
            perf_counter=FastClock().perf_counter))


def test_budgets_default_to_data_scaled_and_shipped_grids_keep_seconds():
    (cell,) = expand_grid(sem_grid())
    assert cell.sem.search_seconds_per_variable is None and cell.sem.cache_budget == "data"
    # a cache section with a budget is used as given unless the sem section says "data"
    (given,) = expand_grid(sem_grid(cache={"seconds_per_variable": 0.5}))
    assert given.sem.cache_budget == "grid"
    (forced,) = expand_grid(sem_grid(sem={"cache_budget": "data"},
                                     cache={"seconds_per_variable": 0.5}))
    assert forced.sem.cache_budget == "data"
    for name, seconds in (("sem-imputation-2018", 1.0), ("sem-imputation-2018-reduced", 0.05)):
        grid = load_grid(CONFIGS / f"{name}.yaml")
        assert grid.sem.search_seconds_per_variable == seconds
        assert grid.sem.cache_budget == "grid" and grid.cache.seconds_per_variable == seconds
        # a stored grid (its JSON dump) reads back the same
        assert GridConfig.model_validate(grid.model_dump(), context={"stored": True}) == grid


def test_sem_cell_uses_impute_budgets_and_reproduces_under_any_clock(monkeypatch):
    (cell,) = expand_grid(sem_grid())
    a, b = run_cell(cell), run_cell(cell)
    assert a.status == "ok" and a.dag_json == b.dag_json
    ea = a.outputs["sem"]
    assert a.outputs == b.outputs
    truth = load_data(cell.data)
    scores, iterations = sem_budgets(truth.n_vars, truth.n_samples)
    assert ea["cache_scores_per_variable"] == scores
    assert ea["search_iterations"] == min(iterations, 300)  # the grid's budget caps k-MAX
    # the accuracy recorded is that of the cell's own masking, recomputed here
    assert 0.5 < ea["imputation_accuracy"] <= 1.0
    masked = mask_mcar(truth, 0.1, np.random.default_rng(cell.seed_sequence().spawn(2)[0]))
    assert ea["missing_cells"] == int(masked.missing.sum())
    # a clock running 1,000 s per reading changes nothing: no budget reads it ...
    fast_clock(monkeypatch)
    c = run_cell(cell)
    assert c.dag_json == a.dag_json and c.outputs["sem"] == ea
    # ... while the paper's wall-clock budgets end at their first check
    (paper,) = expand_grid(sem_grid(sem={"search_seconds_per_variable": 5.0},
                                    cache={"seconds_per_variable": 5.0},
                                    budget={"seconds": 600}))
    with pytest.raises(InvalidConfigError, match="k-MAX found no DAG within its budget"):
        run_cell(paper)


def test_sem_cell_is_structural_em_with_the_impute_defaults():
    """One path: the cell's DAG and accuracy are those of ``structural_em`` given the
    cache spec ``bnsl-dist impute`` builds (no budget given) and k-MAX's default."""
    from bnsl_dist.graph.dag import DAG
    from bnsl_dist.search.base import Budget
    from bnsl_dist.sem import structural_em
    from bnsl_dist.sem.budgets import sem_cache_spec, sem_search_budget

    (cell,) = expand_grid(sem_grid())
    rec = run_cell(cell)
    truth = load_data(cell.data)
    mask_ss, sem_ss = cell.seed_sequence().spawn(2)
    masked = mask_mcar(truth, 0.1, np.random.default_rng(mask_ss))
    res = structural_em(masked, k=2, rng=np.random.default_rng(sem_ss), max_iterations=2,
                        cache=sem_cache_spec(None, "bic", truth),
                        search_budget=sem_search_budget(truth, cap=Budget(max_iterations=300)))
    assert DAG.from_json_dict(json.loads(rec.dag_json)) == res.network.dag
    assert rec.outputs["sem"]["imputation_accuracy"] == \
        imputation_accuracy(truth, masked, res.completed)


@pytest.mark.dask
def test_grid_on_two_workers_equals_serial_cells(tmp_path):
    from bnsl_dist.orchestrate.cluster import connect
    from bnsl_dist.orchestrate.grid import run_grid
    from bnsl_dist.results.store import ResultStore

    grid = sem_grid(seeds=(0, 1))
    with connect(workers=2, announce=False, memory_limit=None) as client:
        summary = run_grid(client, grid, tmp_path, progress=False, report=False)
    assert not summary.failed
    got = {r.key: (r.dag_json, r.outputs) for r in ResultStore(tmp_path).read_results()}
    assert got == {c.key: (r.dag_json, r.outputs)
                   for c in expand_grid(grid) for r in [run_cell(c)]}


def test_budget_scales_run_each_repetition_at_each_scale_on_the_same_hidden_cells():
    """The tuning study (§7.4): ``budget_scales`` multiplies both M-step budgets; the
    cells of one repetition differ only in that budget (same masked cells, same EM
    start), and a grid without scales keeps its cells' keys."""
    from bnsl_dist.pipeline.tasks.sem import sem_cell_inputs

    plain = expand_grid(sem_grid(seeds=(0, 1)))
    grid = sem_grid(sem={"budget_scales": [0.5, 1, 3]}, seeds=(0, 1))
    cells = expand_grid(grid)
    assert len(cells) == 3 * len(plain) == 6
    by_scale = {b: [c for c in cells if c.sem.budget_scale == b] for b in (0.5, 1.0, 3.0)}
    assert [c.key for c in by_scale[1.0]] == [c.key for c in plain]
    assert len({c.key for c in cells}) == 6
    for half, one in zip(by_scale[0.5], by_scale[1.0], strict=True):
        assert half.seed == one.seed
        assert half.seed_sequence().spawn_key == one.seed_sequence().spawn_key
        (_, m_half), (_, m_one) = sem_cell_inputs(half), sem_cell_inputs(one)
        assert np.array_equal(m_half.missing, m_one.missing)
    # the run's budgets: the data-scaled counts times the scale (k-MAX within the cap)
    truth = load_data(cells[0].data)
    scores, iterations = sem_budgets(truth.n_vars, truth.n_samples)
    rec = run_cell(by_scale[0.5][0])
    ex = rec.outputs["sem"]
    assert ex["budget_scale"] == 0.5
    assert ex["cache_scores_per_variable"] == round(scores * 0.5)
    assert ex["search_iterations"] == min(round(iterations * 0.5), 300)
    assert run_cell(by_scale[1.0][0]).outputs["sem"]["budget_scale"] == 1.0


def test_budget_scales_are_validated():
    for bad, msg in (([], "at least one of the budget scales"), ([1, 1], "duplicate budget scales"),
                     ([0], "greater than 0")):
        with pytest.raises(ValueError, match=msg):
            sem_grid(sem={"budget_scales": bad})


def test_sem_chain_is_the_network_of_the_cells_first_e_step(monkeypatch):
    """``sem_chain`` (workflows/sem_underflow.py's first E-step network) is the chain,
    and the elimination order, that the cell's structural EM hands its first E-step."""
    import sys

    from bnsl_dist.pipeline.tasks.sem import run_cell, sem_chain

    sem_mod = sys.modules["bnsl_dist.sem.structural_em"]  # the package's name is the function

    class Seen(Exception):
        pass

    def spy(net, order, codes, missing, method):
        raise Seen([list(p) for p in net.dag.parents], list(order))

    monkeypatch.setattr(sem_mod, "_serial_e_step", spy)
    for cell in expand_grid(sem_grid(seeds=(0, 1))):
        with pytest.raises(Seen) as got:  # the first E-step ends the run
            run_cell(cell, 0.0)
        n = len(got.value.args[0])
        parents, order = sem_chain(cell, n)
        assert got.value.args == ([list(p) for p in parents], order)
        assert sum(map(len, parents)) == n - 1 and sorted(order) == list(range(n))
