"""Atomic writes (bnsl_dist/_io.py): all or nothing, the usual mode, the umask untouched."""

from __future__ import annotations

import gzip
import os
import stat
import threading

import pytest

from bnsl_dist import _io


def _umask() -> int:  # the test's own reading (single-threaded here)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_the_file_gets_the_mode_open_gives_and_the_umask_is_never_set(tmp_path, monkeypatch):
    want = 0o666 & ~_umask()
    plain = tmp_path / "plain.txt"
    plain.write_text("x")

    def no_umask(mask: int) -> int:
        raise AssertionError("atomic_writer set the process umask")

    monkeypatch.setattr(os, "umask", no_umask)
    _io.atomic_write_text(tmp_path / "a" / "b.txt", "hello")
    assert (tmp_path / "a" / "b.txt").read_text() == "hello"
    assert stat.S_IMODE((tmp_path / "a" / "b.txt").stat().st_mode) == want \
        == stat.S_IMODE(plain.stat().st_mode)


def test_gzip_targets_are_compressed_and_reproducible(tmp_path):
    _io.atomic_write_text(tmp_path / "x.txt.gz", "same")
    first = (tmp_path / "x.txt.gz").read_bytes()
    _io.atomic_write_text(tmp_path / "x.txt.gz", "same")
    assert gzip.decompress(first) == b"same" and (tmp_path / "x.txt.gz").read_bytes() == first


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path):
    target = tmp_path / "r.txt"
    _io.atomic_write_text(target, "old")

    def fail(fh):
        fh.write(b"half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        _io.atomic_writer(target, fail)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.txt"]


def test_threads_writing_beside_each_other(tmp_path):
    """Many threads writing files in one folder: every file whole, no temp file left."""
    def work(i: int) -> None:
        for j in range(20):
            _io.atomic_write_text(tmp_path / f"f{i}-{j}.txt", f"{i}:{j}" * 100)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 160 and not any(n.endswith(".tmp") for n in names)
    assert (tmp_path / "f3-7.txt").read_text() == "3:7" * 100
