"""File helpers: atomic writes (a temp file in the target folder, then a rename) and the
one gzip-aware text reader (``.gz`` names are decompressed, both ways)."""

from __future__ import annotations

import gzip
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import IO

from bnsl_dist.exceptions import DataError

__all__ = ["atomic_write_text", "atomic_write_bytes", "atomic_writer", "open_text", "read_text",
           "is_plain_int", "is_plain_float", "all_plain"]

_INT = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                    r"|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)


def is_plain_int(tok: str, plus: bool = True) -> bool:
    """``tok`` is an integer as files write one: ASCII digits with an optional sign (a
    ``+`` only with ``plus``). Python's ``int`` also takes ``"1_5"`` (15) and non-ASCII
    digits, which no file format means."""
    return _INT.fullmatch(tok) is not None and (plus or tok[0] != "+")


def is_plain_float(tok: str) -> bool:
    """``tok`` is a number as files write one (``float`` without the ``"1_5"`` and
    non-ASCII-digit forms Python's own parser also takes)."""
    return _FLOAT.fullmatch(tok) is not None


def all_plain(toks: list[str]) -> bool:
    """Quick screen for a token list already parsed by ``int``/``float``: none holds the
    underscore or non-ASCII character that only Python's parsers accept."""
    joined = "".join(toks)
    return "_" not in joined and joined.isascii()


def open_text(path: str | os.PathLike[str], newline: str | None = None) -> IO[str]:
    """Open a UTF-8 text file for reading (a byte-order mark is dropped), decompressing it
    when the name ends in ``.gz``; ``newline=""`` keeps line ends as they are."""
    p = Path(path)
    if p.name.endswith(".gz"):
        return gzip.open(p, "rt", encoding="utf-8-sig", newline=newline)
    return p.open(encoding="utf-8-sig", newline=newline)


def read_text(path: str | os.PathLike[str], error: type[DataError] = DataError,
              newline: str | None = None) -> str:
    """The whole text of :func:`open_text`; a missing or unreadable file (bad gzip, not
    UTF-8) raises ``error`` (a :class:`DataError` subclass) naming the file.

    Examples
    --------
    >>> import os, tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "t.txt.gz")
    >>> atomic_write_text(p, "a,b\\n1,2\\n")
    >>> read_text(p).splitlines()
    ['a,b', '1,2']
    >>> read_text(p + ".missing")
    Traceback (most recent call last):
    ...
    bnsl_dist.exceptions.DataError: ...t.txt.gz.missing: no such file
    """
    try:
        with open_text(path, newline) as fh:
            return fh.read()
    except FileNotFoundError:
        raise error("no such file", path=str(path)) from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise error(f"cannot read: {exc}", path=str(path)) from None


def atomic_writer(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write(fh)`` on a temp file beside ``path``, then rename it into place.

    Nothing is left at ``path`` when ``write`` raises. ``.gz`` targets are compressed.
    The file gets the mode a plain ``open`` gives (0666 less the process umask, applied
    by the kernel when the temp file is created: the umask is never read or set here,
    which would race with other threads).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_beside(target)
    try:
        with os.fdopen(fd, "wb") as raw:
            if target.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as gz:
                    write(gz)  # type: ignore[arg-type]
            else:
                write(raw)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _create_beside(target: Path) -> tuple[int, str]:
    """A new, exclusively created file in ``target``'s folder, mode 0666 (less the
    umask): its descriptor and path."""
    for _ in range(100):
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                           0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {target}")  # pragma: no cover


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    atomic_writer(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))
