"""No test skips because a module of this project fails to import: that is a failure
(docs/CONVENTIONS.md "Tests"). Skips are for optional third-party packages and data."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OWN = ("bnsl_dist", "workflows", "tests")


def _own(name: str | None) -> bool:
    return name is not None and name.split(".")[0] in OWN


def self_skips(source: str) -> list[int]:
    """Lines of ``source`` that skip on (or swallow) an import of the project's own
    modules: ``pytest.importorskip("bnsl_dist...")``, or a ``try`` importing one whose
    handler catches ImportError."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "importorskip" \
                and node.args and isinstance(node.args[0], ast.Constant) \
                and _own(str(node.args[0].value)):
            out.append(node.lineno)
        if isinstance(node, ast.Try):
            imports_own = any(
                (isinstance(n, ast.Import) and any(_own(a.name) for a in n.names))
                or (isinstance(n, ast.ImportFrom) and n.level == 0 and _own(n.module))
                for stmt in node.body for n in ast.walk(stmt))
            catches = any(h.type is not None and any(
                isinstance(t, ast.Name) and t.id in ("ImportError", "ModuleNotFoundError")
                for t in (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type]))
                for h in node.handlers)
            if imports_own and catches:
                out.append(node.lineno)
    return out


def test_no_test_skips_on_the_projects_own_imports():
    found = [f"{p.relative_to(ROOT)}:{line}" for p in sorted((ROOT / "tests").rglob("*.py"))
             for line in self_skips(p.read_text(encoding="utf-8"))]
    assert not found, found


@pytest.mark.parametrize("source,bad", [
    ('pytest.importorskip("bnsl_dist.search.exact.dp")', True),
    ('pytest.importorskip("pgmpy")', False),
    ("try:\n    from bnsl_dist.cache import read_jkl\nexcept ImportError:\n    x = 1", True),
    ("try:\n    import sklearn\nexcept ImportError:\n    x = 1", False),
    ("try:\n    from bnsl_dist import cache\nexcept (OSError, ModuleNotFoundError):\n    x = 1",
     True),
])
def test_the_rule(source, bad):
    assert bool(self_skips(source)) == bad
