"""Provenance: the digest of the package's sources, and ``dirty`` counting the package's
tracked sources only."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import shutil
import subprocess
import sys
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


def _repo(tmp_path: Path):
    """A git repository at tmp_path holding the package of :func:`_package` and a file
    beside it; returns the package and a git runner."""
    pkg = _package(tmp_path)
    (tmp_path / "README.md").write_text("results\n")

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c",
                               "user.email=t@t", *args], check=True, capture_output=True,
                              text=True).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "x")
    return pkg, git


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_dirty_counts_the_package_sources_only(tmp_path):
    pkg, git = _repo(tmp_path)
    assert P.git_state(pkg) == (git("rev-parse", "HEAD"), False)
    (tmp_path / "README.md").write_text("other results\n")  # outside the package
    assert P.git_state(pkg)[1] is False
    (pkg / "b.py").write_text("B = 5\n")
    assert P.git_state(pkg)[1] is True
    assert P.git_state(tmp_path / "elsewhere" / "pkg") == (None, None)  # no checkout


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_commit_and_dirty_are_those_of_the_first_call(tmp_path):
    """A process records the commit, dirtiness and digest read at its first call (a run
    takes it when it starts), not at import: a commit or an edit made while it runs (a
    grid process running for hours beside development) does not change what its records
    say ran."""
    pkg, git = _repo(tmp_path)
    (pkg / "pipeline").mkdir()
    shutil.copy(P.__file__, pkg / "pipeline" / "provenance.py")
    git("add", ".")
    git("commit", "-q", "-m", "with provenance")
    first = git("rev-parse", "HEAD")
    spec = importlib.util.spec_from_file_location("provenance_copy",
                                                  pkg / "pipeline" / "provenance.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # the import reads nothing yet
    (pkg / "b.py").write_text("B = 4\n")  # edited after the import, before the run
    digest = mod.source_digest(pkg)
    got = mod.provenance()  # the run starts
    assert (got["commit"], got["dirty"]) == (first, True)
    assert got["versions"]["bnsl_dist_source"] == digest
    (pkg / "b.py").write_text("B = 5\n")  # edited, then committed, while it runs
    git("commit", "-q", "-am", "later")
    assert mod.git_state(pkg)[0] != first
    got = mod.provenance()
    assert (got["commit"], got["dirty"]) == (first, True)
    assert got["versions"]["bnsl_dist_source"] == digest != mod.source_digest(pkg)


def test_importing_the_pipeline_starts_no_subprocess():
    """``import bnsl_dist.pipeline`` (and the CLI) runs no git and hashes nothing: in a
    fresh interpreter whose subprocesses all fail, the import succeeds and the
    provenance is not computed yet."""
    code = ("import subprocess\n"
            "def no(*a, **k):\n"
            "    raise AssertionError(f'subprocess at import: {a}')\n"
            "subprocess.Popen.__init__ = no\n"
            "import bnsl_dist.pipeline, bnsl_dist.cli\n"
            "import importlib\n"
            "P = importlib.import_module('bnsl_dist.pipeline.provenance')\n"
            "assert P._static.cache_info().currsize == 0\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
