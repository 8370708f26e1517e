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
              "a new grid axis of a task kind": 3}
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
    changed (the YAML field and the report are the table's other two files)."""
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
