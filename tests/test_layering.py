"""Imports flow downstream only; only orchestrate/ and cli/ import dask or distributed;
numba kernels live only in *_kernels.py files."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "bnsl_dist"
ORDER = ["data", "scores", "cache", "search", "model", "datasets", "inference", "sem",
         "results", "reporting", "within"]
LEAVES = {"graph", "exceptions", "_io", "_json", "_rng", "__init__", "_bundled", "_spec"}
TOP = {"config", "pipeline", "orchestrate", "cli"}  # may import anything


def _modules():
    for path in PKG.rglob("*.py"):
        rel = path.relative_to(PKG)
        yield path, rel.parts[0].removesuffix(".py")


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, node


def test_layering():
    problems = []
    for path, top in _modules():
        for mod, _ in _imports(path):
            root = mod.split(".")[0]
            if root in ("dask", "distributed") and top not in ("orchestrate", "cli"):
                problems.append(f"{path}: imports {mod}")
            if root == "bnsl_dist" and top in ("config", "pipeline") \
                    and mod.split(".")[1:2] in (["orchestrate"], ["cli"]):
                problems.append(f"{path}: the pipeline imports the Dask/CLI layer {mod}")
            if root != "bnsl_dist" or top in TOP:
                continue
            parts = mod.split(".")
            target = parts[1] if len(parts) > 1 else "__init__"
            if target in LEAVES or target == top:
                continue
            if top in LEAVES and top != "__init__":
                problems.append(f"{path}: leaf module imports {mod}")
                continue
            if target in TOP:
                problems.append(f"{path}: imports the orchestration layer {mod}")
            elif top in ORDER and target in ORDER and ORDER.index(target) > ORDER.index(top):
                problems.append(f"{path}: imports downstream {mod}")
    assert not problems, "\n".join(problems)


def test_numba_only_in_kernel_files():
    offenders = []
    for path, _ in _modules():
        if path.name.endswith("_kernels.py"):
            continue
        src = path.read_text()
        if "njit" in src or "numba.jit" in src or "@nb.jit" in src:
            offenders.append(str(path))
    assert not offenders, offenders
