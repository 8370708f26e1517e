"""Imports flow downstream only, along one order that runs from the data layer to the
command line (within, pipeline with config, orchestrate and cli included); relative imports are
resolved and held to the same rules; only orchestrate/ and cli/ import dask or
distributed; numba kernels live only in *_kernels.py files. Read from the AST."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "bnsl_dist"
#: Each layer may import the layers before it, never one after it.
ORDER = ["data", "scores", "cache", "search", "model", "datasets", "inference", "sem",
         "results", "reporting", "within", "pipeline", "orchestrate", "cli"]
#: Modules that belong to a layer of another name: the grid YAML models (config.py) and
#: the pipeline's spec models import each other, one layer.
ALIASES = {"config": "pipeline"}
#: Imported by anyone; import nothing of the project but other leaves (``__init__`` is
#: the package root: its version and base exception).
LEAVES = {"__init__", "graph", "exceptions", "_io", "_json", "_rng", "_bundled", "_spec"}
DASK_OK = {"orchestrate", "cli"}
#: What the package root may import lazily (inside a function: ``bnsl_dist.learn_within``
#: loads its layer on first use, never on ``import bnsl_dist``).
ROOT_LAZY = {("within", True)}


def _layer(module: str) -> str:
    """``bnsl_dist.search.exact.ilp`` -> ``search``; ``bnsl_dist`` -> ``__init__``."""
    parts = module.split(".")
    layer = parts[1] if len(parts) > 1 else "__init__"
    return ALIASES.get(layer, layer)


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
        if target == top or target in LEAVES:
            continue
        if top == "__init__" and (target, node.col_offset > 0) in ROOT_LAZY:
            continue
        if top in LEAVES:
            out.append(f"{where}: the leaf {top} imports {mod}")
        elif target not in ORDER:
            out.append(f"{where}: {mod} belongs to no layer")
        elif ORDER.index(target) > ORDER.index(top):
            out.append(f"{where}: {top} imports the later layer {mod}")
    return out


def test_every_package_is_placed():
    placed = set(ORDER) | LEAVES | set(ALIASES)
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
    ("from bnsl_dist.orchestrate import grid", "bnsl_dist.config", True),
    ("from bnsl_dist.pipeline.specs import DataRef", "bnsl_dist.config", False),
    ("from bnsl_dist.pipeline import run_cell", "bnsl_dist.within", True),
    ("from bnsl_dist.cli import main", "bnsl_dist.orchestrate.grid", True),
    ("from bnsl_dist.config import load_grid", "bnsl_dist.pipeline.grid", False),
    ("from ..orchestrate import grid", "bnsl_dist.search.base", True),
    ("from .. import cli", "bnsl_dist.search.base", True),
    ("from bnsl_dist import __version__, _io", "bnsl_dist.cache.build", False),
    ("from ..cache.parent_sets import ParentSetCache", "bnsl_dist.search.base", False),
    ("from .dag import DAG", "bnsl_dist.graph.moral", False),
    ("from ..data import CategoricalData", "bnsl_dist.graph.moral", True),
    ("import dask", "bnsl_dist.pipeline.run", True),
    ("import dask", "bnsl_dist.orchestrate.grid", False),
    ("from bnsl_dist.datasets import fetch", "bnsl_dist.model.bif", True),
    ("from bnsl_dist.within import learn_within", "bnsl_dist", True),
    ("def f():\n    from bnsl_dist.within import learn_within", "bnsl_dist", False),
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
