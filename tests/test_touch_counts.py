"""What a change touches (docs/ARCHITECTURE.md): the table's file lists are the code's,
and the registrations it claims are declarative — a throwaway grid axis, data format or
score reaches every consumer from the places the table names alone."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import (
    check_status_fields,
    count_by,
    expand_grid,
    grid_axes,
    status_fields,
)
from bnsl_dist.pipeline.plan import cell_twin_key, record_twin_key
from bnsl_dist.pipeline.tasks import sem as sem_task
from bnsl_dist.results.store import StoreStatus

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bnsl_dist"


def _table() -> dict[str, tuple[int, list[str]]]:
    """The rows of "What a change touches": change -> (files, the files listed)."""
    text = (ROOT / "docs/ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## What a change touches", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cols = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cols) < 4 or not re.fullmatch(r"\d+", cols[1]):
            continue
        rows[cols[0]] = (int(cols[1]), re.findall(r"`([^`]+)`", cols[2]))
    return rows


def test_each_count_is_the_files_it_lists_and_each_file_exists():
    rows = _table()
    assert {"a new optimizer", "a new optimizer with numba kernels", "a new local score",
            "a new data format", "a new grid axis of a task kind",
            "a new task kind run by `execute`", "a new task kind of a grid (grid `kind`)"
            } <= set(rows)
    for change, (count, files) in rows.items():
        assert count == len(files), f"{change}: {count} files, lists {files}"
        for f in files:
            concrete = PKG / f
            if "<" in f:  # a module to write: its folder exists
                assert concrete.parent.is_dir() or (PKG / f.split("<")[0]).is_dir(), f
            else:
                assert concrete.is_file(), f"{change}: no file bnsl_dist/{f}"
    limits = {"a new optimizer": 3, "a new optimizer with numba kernels": 3,
              "a new local score": 2, "a new data format": 1,
              "a new grid axis of a task kind": 3,
              "a new task kind of a grid (grid `kind`)": 3,
              "a new search setting as a grid axis of every kind": 3}
    for change, limit in limits.items():
        assert rows[change][0] <= limit, change


# ------------------------------------------------------------------ a grid axis
def _sem_grid() -> GridConfig:
    return GridConfig.model_validate({
        "name": "axis", "kind": "sem", "datasets": [{"name": "nltcs"}],
        "cache": {"method": "independence", "score": "bic"},
        "algorithms": [{"name": "kmax", "k": [2]}], "seeds": [0, 1],
        "budget": {"iterations": 50},
        "sem": {"missing_rates": [0.1, 0.2], "max_em_iterations": 2}})


def test_a_new_axis_of_a_kind_is_its_task_module_alone(monkeypatch):
    """A throwaway axis of SEM grids (EM iteration caps 1 and 2 for every rate) made in
    ``pipeline/tasks/sem.py`` alone — its expansion and its ``AXES`` — reaches the
    grid's cells, ``grid status --by`` and the replay's twins, with nothing else
    changed (its YAML field is the same module's section; the report is the table's
    other file)."""
    grid = _sem_grid()
    plain = expand_grid(grid)
    real = sem_task.grid_tasks

    def with_caps(g, label, search, holdout):
        return [{**t, "sem": t["sem"].model_copy(update={"max_em_iterations": cap})}
                for t in real(g, label, search, holdout) for cap in (1, 2)]

    monkeypatch.setattr(sem_task, "grid_tasks", with_caps)
    monkeypatch.setattr(sem_task.SemTask, "AXES",
                        (*sem_task.SemTask.AXES, "max_em_iterations"))
    cells = expand_grid(grid)
    assert len(cells) == 2 * len(plain) == 8 and len({c.key for c in cells}) == 8
    assert [(c.sem.missing_rate, c.sem.max_em_iterations, c.seed) for c in cells] == [
        (r, cap, s) for r in (0.1, 0.2) for cap in (1, 2) for s in (0, 1)]
    assert "max_em_iterations" in grid_axes() and "max_em_iterations" in status_fields()
    check_status_fields(["missing_rate", "max_em_iterations"])
    st = StoreStatus(done=(cells[0].key,), failed=(), pending=tuple(c.key for c in cells[1:]))
    rows = count_by(cells, st, ["max_em_iterations"])
    assert [(r["max_em_iterations"], r["done"], r["total"]) for r in rows] == [(1, 1, 4),
                                                                               (2, 0, 4)]
    twins = {cell_twin_key(c) for c in cells}
    assert len(twins) == 8  # the axis tells the seeds' twins apart
    rec = {"dataset": "nltcs", "split": "train", "label": "kmax", "k": 2, "seed": 1,
           "sem": {"missing_rate": 0.2, "budget_scale": 1.0, "max_em_iterations": 2}}
    assert record_twin_key(rec) == cell_twin_key(cells[-1])


def test_a_new_search_setting_axis_is_the_algorithm_entry_and_the_search_spec(monkeypatch):
    """A throwaway search-setting axis of every kind (each entry run at its budget and at
    twice its iterations) made in ``AlgorithmConfig.search_specs`` (pipeline/config.py)
    and declared in ``SearchSpec.AXES`` (search/spec.py) alone reaches the grid's cells
    of a search and a SEM grid and ``grid status --by``; ``pipeline/grid.py`` is not
    touched (the report is the table's third file)."""
    from bnsl_dist.pipeline.config import AlgorithmConfig
    from bnsl_dist.search.spec import BudgetSpec, SearchSpec

    real = AlgorithmConfig.search_specs

    def doubled(self, grid):
        return [s.model_copy(update={"budget": b}) for s in real(self, grid)
                for b in (s.budget, BudgetSpec(iterations=2 * s.budget.iterations))]

    search = GridConfig.model_validate({
        "name": "s", "datasets": [{"name": "nltcs"}], "seeds": [0, 1],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "kg", "k": [2, 3]}], "budget": {"iterations": 5}})
    grids = (search, _sem_grid())
    plain = [len(expand_grid(g)) for g in grids]
    monkeypatch.setattr(AlgorithmConfig, "search_specs", doubled)
    monkeypatch.setattr(SearchSpec, "AXES", ("budget",))
    for grid, n in zip(grids, plain, strict=True):
        cells = expand_grid(grid)
        assert len(cells) == 2 * n == len({c.key for c in cells})
    cells = expand_grid(search)
    assert [(c.k, c.budget_iterations, c.seed) for c in cells] == [
        (k, it, s) for k in (2, 3) for it in (5, 10) for s in (0, 1)]
    assert "budget" in status_fields()
    st = StoreStatus(done=(cells[0].key,), failed=(), pending=tuple(c.key for c in cells[1:]))
    rows = count_by(cells, st, ["budget"])
    assert [(r["budget"].iterations, r["done"], r["total"]) for r in rows] == [(5, 1, 4),
                                                                               (10, 0, 4)]


def test_grid_expansion_status_and_twins_name_no_axis_of_a_kind():
    """The modules every grid goes through name no kind's axis: an axis is declared in its
    task module (``GridTask.AXES``, ``grid_tasks``)."""
    axes = ("missing_rate", "budget_scale", "missing_rates", "budget_scales")
    for rel in ("pipeline/grid.py", "pipeline/plan.py", "pipeline/cell.py"):
        tree = ast.parse((PKG / rel).read_text(encoding="utf-8"))
        names = {n.value for n in ast.walk(tree)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        assert not names & set(axes), f"{rel} names {sorted(names & set(axes))}"


def test_running_a_cell_names_no_kind():
    """``run_cell`` dispatches to the kind's task module (its ``run_cell`` or
    ``outputs``): it names no kind, and each kind's hook is the task module's."""
    from bnsl_dist.pipeline import run as run_mod
    from bnsl_dist.pipeline.tasks import inference

    tree = ast.parse((PKG / "pipeline/run.py").read_text(encoding="utf-8"))
    names = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not names & {"search", "inference", "sem", "within", "impute"}
    assert run_mod._task_hook("sem", "run_cell") is sem_task.run_cell
    assert run_mod._task_hook("inference", "outputs") is inference.outputs
    assert run_mod._task_hook("search", "outputs") is None
    assert run_mod._task_hook("impute", "run_cell") is None  # no module of its own


# ------------------------------------------------------------------ a grid kind
_ECHO = '''"""A throwaway grid kind: each algorithm entry's search repeated by an axis."""
from typing import Any, ClassVar, Literal

from pydantic import PositiveInt

from bnsl_dist._spec import ConfigModel
from bnsl_dist.pipeline.tasks import GridTask, register_task
from bnsl_dist.search.spec import SearchSpec


class EchoConfig(ConfigModel):
    repeats: tuple[PositiveInt, ...]


GRID_SECTION = EchoConfig


@register_task
class EchoTask(GridTask):
    kind: Literal["echo"] = "echo"
    search: SearchSpec
    repeat: int
    AXES: ClassVar[tuple[str, ...]] = ("repeat",)

    def axes(self) -> dict[str, Any]:
        return {"repeat": self.repeat}


def grid_tasks(grid, label, search, holdout):
    return [{"kind": "echo", "search": search, "repeat": r}
            for r in grid.section("echo").repeats]


def check_grid(grid):
    if len(grid.section("echo").repeats) > 3:
        raise ValueError("at most 3 repeats")


def outputs(cell, data, best, order):
    return {}
'''

_ECHO_RUN = '''
import json, sys
from bnsl_dist.pipeline.cell import Cell
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import count_by, expand_grid, status_fields
from bnsl_dist.pipeline.run import _task_hook
from bnsl_dist.results.store import StoreStatus

base = {"name": "e", "datasets": [{"name": "nltcs"}], "seeds": [0, 1],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "hc-tabu"}], "budget": {"iterations": 5}}
grid = GridConfig.model_validate({**base, "kind": "echo", "echo": {"repeats": [1, 2]}})
cells = expand_grid(grid)
back = [Cell.model_validate(c.json_dict()) for c in cells]
errors = []
for bad in ({**base, "kind": "echo", "echo": {"repeats": [1, 2, 3, 4]}},
            {**base, "echo": {"repeats": [1]}}, {**base, "kind": "echo"},
            {**base, "kind": "nope"}):
    try:
        GridConfig.model_validate(bad)
    except ValueError as exc:
        errors.append(exc.errors()[0]["msg"].removeprefix("Value error, "))
st = StoreStatus(done=(cells[0].key,), failed=(), pending=tuple(c.key for c in cells[1:]))
print(json.dumps({
    "cells": [[c.kind, c.task.repeat, c.seed] for c in cells],
    "keys": len({c.key for c in cells}), "round_trip": [b.key for b in back] == [c.key for c in cells],
    "dump": grid.model_dump(mode="json")["echo"], "axis": "repeat" in status_fields(),
    "by": [[r["repeat"], r["done"], r["total"]] for r in count_by(cells, st, ["repeat"])],
    "outputs": _task_hook("echo", "outputs") is sys.modules["bnsl_dist.pipeline.tasks.echo"].outputs,
    "errors": errors}))
'''


def test_a_new_grid_kind_is_its_task_module(tmp_path):
    """A throwaway grid kind (``echo``: its YAML section, its task with a grid axis, its
    ``grid_tasks``, ``check_grid`` and ``outputs``) in one module dropped into
    ``pipeline/tasks/`` is a grid kind with nothing else changed: the grid YAML takes its
    kind and section (and refuses them apart), its cells are made, keyed and read back,
    ``grid status --by`` counts by its axis and ``run_cell`` finds its hook. (A copy of
    the package with the module added, in a fresh process: the cell's union and the grid
    model are made when the package is imported.)"""
    import json
    import os
    import shutil
    import subprocess

    shutil.copytree(PKG, tmp_path / "bnsl_dist",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "bnsl_dist/pipeline/tasks/echo.py").write_text(_ECHO, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _ECHO_RUN], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env=env)
    got = json.loads(out.stdout)
    assert got["cells"] == [["echo", r, s] for r in (1, 2) for s in (0, 1)]
    assert got["keys"] == 4 and got["round_trip"] and got["axis"] and got["outputs"]
    assert got["dump"] == {"repeats": [1, 2]}
    assert got["by"] == [[1, 1, 2], [2, 0, 2]]
    assert got["errors"] == [
        "at most 3 repeats", "an 'echo' section needs kind: echo",
        "a grid of kind 'echo' needs an 'echo' section",
        "unknown grid kind 'nope' (one of echo, inference, search, sem)"]


def test_no_module_lists_the_task_kinds():
    """The cell's union of tasks and the grid's kinds and sections come from the task
    modules' registry: ``pipeline/cell.py`` tags no union member by name, and
    ``pipeline/config.py`` names no kind nor any kind's section model."""
    cell = ast.parse((PKG / "pipeline/cell.py").read_text(encoding="utf-8"))
    tags = [n for n in ast.walk(cell) if isinstance(n, ast.Call)
            and getattr(n.func, "id", None) == "Tag" and n.args
            and isinstance(n.args[0], ast.Constant)]
    assert not tags
    config = ast.parse((PKG / "pipeline/config.py").read_text(encoding="utf-8"))
    consts = {n.value for n in ast.walk(config) if isinstance(n, ast.Constant)}
    names = {n.id for n in ast.walk(config) if isinstance(n, ast.Name)}
    names |= {n.name for n in ast.walk(config) if isinstance(n, ast.ClassDef)}
    assert not consts & {"sem", "inference"} and not names & {"SemConfig", "InferenceConfig"}


# ------------------------------------------------------------------ a data format
def test_a_new_data_format_is_one_module_in_data_formats(tmp_path, monkeypatch):
    """A module dropped into ``data/formats/`` is found by the readers' discovery: the
    data commands read its files with nothing else changed."""
    import bnsl_dist.data.formats as formats
    from bnsl_dist.data import readers as R
    from bnsl_dist.data.io import read_data

    pkg = tmp_path / "fmt"
    pkg.mkdir()
    (pkg / "semicolon_pairs.py").write_text(
        "from bnsl_dist.data import readers as R\n"
        "def parse(path, header, labels, missing):\n"
        "    rows = [ln.split(';') for ln in path.read_text().split()]\n"
        "    cols = [[r[j] for r in rows] for j in range(2)]\n"
        "    return R.RawTable(str(path), ['u', 'v'], None, cols, [None, None], None,\n"
        "                      lambda r: r + 1)\n"
        "R.register_reader(R.Reader('semicolon-pairs', ('.scp',), parse,\n"
        "                           lambda p: (2, len(p.read_text().split()))))\n",
        encoding="utf-8")
    R._load_all()  # the built-in readers registered for good, before the registry's copy
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(pkg)])
    monkeypatch.setattr(R, "_READERS", dict(R._READERS))
    f = tmp_path / "t.scp"
    f.write_text("0;1\n1;2\n1;0\n", encoding="utf-8")
    try:
        d = read_data(f)
    finally:
        sys.modules.pop(f"{formats.__name__}.semicolon_pairs", None)
    assert d.names == ("u", "v") and d.codes.tolist() == [[0, 1], [1, 2], [1, 0]]


# ------------------------------------------------------------------ a local score
#: Two score names as the first items of a Literal, list or tuple (the CPT prior
#: ``Literal["bdeu", "cell"]`` of model/fit.py is not a score choice).
_SCORE_LISTS = re.compile(r"""(?:Literal\[|[\[(])\s*["'](?:bic|bdeu|ll)["']\s*,\s*"""
                          r"""["'](?:bic|bdeu|ll)["']""")


@pytest.mark.parametrize("path", sorted(p for p in PKG.rglob("*.py")
                                        if p.name not in ("registry.py", "_kernels.py")
                                        or p.parent.name != "scores"),
                         ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_lists_the_scores_but_the_registry(path):
    """A new score is its registry entry and its kernel branch: no other module spells
    out the score names as a choice (``Literal["bic", ...]``, ``("bic", "bdeu")``)."""
    text = path.read_text(encoding="utf-8")
    hits = [m.group(0) for m in _SCORE_LISTS.finditer(text)]
    assert not hits, f"{path.relative_to(PKG)} lists scores: {hits}"


@pytest.mark.parametrize("kind", ["sem", "inference"])
def test_held_out_scoring_stays_a_search_grids(kind):
    """As before the kinds made their own tasks (their task models refused a holdout): a
    screening grid of another kind with a test split is an error, in one line."""
    from bnsl_dist.exceptions import InvalidConfigError

    screened = {"label": "qds", "screening": {"epsilon": 0.1}}
    section = {"sem": {"sem": {"missing_rates": [0.1]},
                       "algorithms": [{"name": "kmax", "k": [2], **screened}]},
               "inference": {"inference": {"reference": "qds"},
                             "algorithms": [{"name": "hc-tabu", **screened}]}}[kind]
    grid = GridConfig.model_validate({
        "name": "h", "kind": kind, "datasets": [{"name": "nltcs", "splits": ["train", "test"]}],
        "cache": {"method": "independence", "score": "bic"},
        "seeds": [0], "budget": {"iterations": 5}, **section})
    with pytest.raises(InvalidConfigError, match=f"is for search grids, not kind: {kind}"):
        expand_grid(grid)
