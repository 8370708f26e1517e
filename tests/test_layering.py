"""Imports flow downstream only, along the layers of docs/ARCHITECTURE.md ("Layers"): each
layer imports only the layers its row lists (every one an earlier row) and the leaves;
a leaf imports only the leaves its row lists; relative imports are resolved and held to
the same rules; only the layers marked for Dask import dask or distributed; numba
kernels live only in *_kernels.py files. Read from the AST and from the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "bnsl_dist"
ARCHITECTURE = ROOT / "docs/ARCHITECTURE.md"


def _tables(text: str) -> list[list[list[str]]]:
    """The Markdown tables of ``text`` (rows of cells; header and rule rows dropped)."""
    tables: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            tables.append([r for r in rows[2:]])
            rows = []
    return tables


def _names(cell: str) -> list[str]:
    return re.findall(r"`([\w.]+)`", cell)


def read_layers(text: str) -> tuple[list[str], dict[str, set[str]], set[str],
                                     dict[str, set[str]]]:
    """The section "## Layers" of docs/ARCHITECTURE.md: the layers in order, what each
    may import, those that may import Dask, and the leaves with what each may import."""
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    layers_table, leaves_table = _tables(section)[:2]
    order = [_names(r[0])[0] for r in layers_table]
    may = {_names(r[0])[0]: set(_names(r[2])) for r in layers_table}
    dask = {_names(r[0])[0] for r in layers_table if r[3].lower() == "yes"}
    leaves = {_names(r[0])[0]: set(_names(r[2])) for r in leaves_table}
    return order, may, dask, leaves


ORDER, MAY_IMPORT, DASK_OK, LEAVES = read_layers(ARCHITECTURE.read_text(encoding="utf-8"))
#: What the package root may import lazily (inside a function: ``bnsl_dist.learn_within``
#: loads its layer on first use, never on ``import bnsl_dist``).
ROOT_LAZY = {("pipeline", True)}


def _layer(module: str) -> str:
    """``bnsl_dist.search.exact.ilp`` -> ``search``; ``bnsl_dist`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _modules():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        yield path, ".".join(parts), is_package


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ImportFrom names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: Path, module: str, is_package: bool):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(node, module, is_package)
            if target != "bnsl_dist":
                yield target, node
                continue
            for a in node.names:  # `from bnsl_dist import cli`, `from .. import cli`
                sub = PKG / a.name
                is_module = sub.is_dir() or sub.with_suffix(".py").is_file()
                yield f"bnsl_dist.{a.name}" if is_module else target, node


def _problems(path: Path, module: str, is_package: bool) -> list[str]:
    top = _layer(module)
    out = []
    for mod, node in _imports(path, module, is_package):
        where = f"{path.name}:{node.lineno}"
        root = mod.split(".")[0]
        if root in ("dask", "distributed") and top not in DASK_OK:
            out.append(f"{where}: {top} imports {mod}")
        if root != "bnsl_dist":
            continue
        target = _layer(mod)
        if target == top:
            continue
        if top == "__init__" and (target, node.col_offset > 0) in ROOT_LAZY:
            continue
        if top in LEAVES:
            if target not in LEAVES[top]:
                out.append(f"{where}: the leaf {top} imports {mod}, not in its row of "
                           "docs/ARCHITECTURE.md")
        elif target in LEAVES:
            continue
        elif target not in ORDER:
            out.append(f"{where}: {mod} belongs to no layer")
        elif top not in ORDER:
            out.append(f"{where}: {top} belongs to no layer")
        elif target not in MAY_IMPORT[top]:
            out.append(f"{where}: {top} imports {mod}; docs/ARCHITECTURE.md lets it import "
                       f"{', '.join(sorted(MAY_IMPORT[top])) or 'no layer'}")
    return out


def test_the_table_is_an_order():
    """Every layer imports only earlier layers (no cycle), and leaves only leaves."""
    for i, layer in enumerate(ORDER):
        assert MAY_IMPORT[layer] <= set(ORDER[:i]), (layer, MAY_IMPORT[layer] - set(ORDER[:i]))
    for leaf, allowed in LEAVES.items():
        assert allowed <= set(LEAVES) - {leaf}, (leaf, allowed)
    assert DASK_OK == {"orchestrate", "cli"}
    assert len(ORDER) >= 10 and "pipeline" in ORDER and "graph" in LEAVES


def test_every_package_is_placed():
    placed = set(ORDER) | set(LEAVES)
    found = {p.relative_to(PKG).parts[0].removesuffix(".py") for p in PKG.rglob("*.py")}
    assert found <= placed, found - placed


def test_layering():
    problems = [p for path, module, pkg in _modules() for p in _problems(path, module, pkg)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("source,module,is_package,expected", [
    ("from .jkl import read_jkl", "bnsl_dist.cache.build", False, "bnsl_dist.cache.jkl"),
    ("from ..cli import main", "bnsl_dist.search.base", False, "bnsl_dist.cli"),
    ("from . import ilp", "bnsl_dist.search.exact", True, "bnsl_dist.search.exact"),
    ("from ...orchestrate import grid", "bnsl_dist.search.exact.ilp", False,
     "bnsl_dist.orchestrate"),
])
def test_relative_imports_resolve(source, module, is_package, expected):
    node = ast.parse(source).body[0]
    assert _absolute(node, module, is_package) == expected


@pytest.mark.parametrize("source,module,bad", [
    ("from bnsl_dist.orchestrate import grid", "bnsl_dist.pipeline.config", True),
    ("from bnsl_dist.pipeline.specs import DataRef", "bnsl_dist.pipeline.config", False),
    ("from bnsl_dist.orchestrate import execute", "bnsl_dist.pipeline.tasks.within", True),
    ("from bnsl_dist.cli import main", "bnsl_dist.orchestrate.grid", True),
    ("from bnsl_dist.pipeline.config import load_grid", "bnsl_dist.pipeline.grid", False),
    ("from ..orchestrate import grid", "bnsl_dist.search.base", True),
    ("from .. import cli", "bnsl_dist.search.base", True),
    ("from bnsl_dist import __version__, _io", "bnsl_dist.cache.build", False),
    ("from ..cache.parent_sets import ParentSetCache", "bnsl_dist.search.base", False),
    ("from .dag import DAG", "bnsl_dist.graph.moral", False),
    ("from ..data import CategoricalData", "bnsl_dist.graph.moral", True),
    ("import dask", "bnsl_dist.pipeline.run", True),
    ("import dask", "bnsl_dist.orchestrate.grid", False),
    ("from bnsl_dist.datasets import fetch", "bnsl_dist.model.bif", True),
    ("from bnsl_dist.pipeline.tasks.within import learn_within", "bnsl_dist", True),
    ("def f():\n    from bnsl_dist.pipeline.tasks.within import learn_within", "bnsl_dist",
     False),
    ("def f():\n    from bnsl_dist.search import Budget", "bnsl_dist", True),
    ("from bnsl_dist.model import read_bif", "bnsl_dist.datasets.catalog", False),
])
def test_the_rules_catch_what_they_should(tmp_path, source, module, bad):
    f = tmp_path / "m.py"
    f.write_text(source)
    got = _problems(f, module, False)
    assert bool(got) == bad, (source, module, got)


def test_numba_only_in_kernel_files():
    offenders = []
    for path, _, _ in _modules():
        if path.name.endswith("_kernels.py"):
            continue
        src = path.read_text()
        if "njit" in src or "numba.jit" in src or "@nb.jit" in src:
            offenders.append(str(path))
    assert not offenders, offenders
