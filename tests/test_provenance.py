"""Provenance: the digest of the package's sources, and ``dirty`` counting the package's
tracked sources only."""

from __future__ import annotations

import hashlib
import importlib
import shutil
import subprocess
from pathlib import Path

import pytest

P = importlib.import_module("bnsl_dist.pipeline.provenance")  # the package exports the
# function provenance under the module's name


def _package(root: Path) -> Path:
    pkg = root / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "b.py").write_text("B = 2\n")
    (pkg / "sub" / "a.py").write_text("A = 1\n")
    (pkg / "data.txt").write_text("not a source\n")
    return pkg


def _by_hand(parts: list[bytes]) -> str:
    """The documented recipe: each part (path, then bytes, files in sorted path order)
    preceded by its length."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little") + part)
    return h.hexdigest()[:16]


def test_source_digest_follows_its_recipe_and_the_sources_only(tmp_path):
    pkg = _package(tmp_path)
    want = _by_hand([b"b.py", b"B = 2\n", b"sub/a.py", b"A = 1\n"])
    assert P.source_digest(pkg) == want
    (pkg / "data.txt").write_text("changed\n")  # not a source: same digest
    assert P.source_digest(pkg) == want
    (pkg / "sub" / "a.py").write_text("A = 3\n")
    assert P.source_digest(pkg) != want


def test_the_running_package_digest_is_in_the_provenance():
    # the package's sources as imported (the test run does not edit them), by hand
    pkg = Path(P.__file__).resolve().parents[1]
    files = sorted((f.relative_to(pkg).as_posix(), f) for f in pkg.rglob("*.py"))
    want = _by_hand([x for name, f in files for x in (name.encode(), f.read_bytes())])
    assert P.provenance()["versions"]["bnsl_dist_source"] == want


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_dirty_counts_the_package_sources_only(tmp_path, monkeypatch):
    pkg = _package(tmp_path)
    (tmp_path / "README.md").write_text("results\n")

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    monkeypatch.setattr(P, "_PACKAGE", pkg)
    static = P._static.__wrapped__  # not the cached provenance of this process
    assert static()["dirty"] is False
    (tmp_path / "README.md").write_text("other results\n")  # outside the package
    assert static()["dirty"] is False
    (pkg / "b.py").write_text("B = 5\n")
    assert static()["dirty"] is True
