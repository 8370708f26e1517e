"""One exception hierarchy for the whole project.

Every error a user can cause derives from :class:`BNSLError`; the CLI turns it into a
one-line message and exit code 2.
"""

from __future__ import annotations

__all__ = [
    "BNSLError",
    "DataError",
    "MissingValueError",
    "InvalidConfigError",
    "NotADAGError",
    "InfeasibleError",
    "CacheFormatError",
    "BIFFormatError",
]


class BNSLError(Exception):
    """Root of every error raised by bnsl_dist on bad input or impossible requests."""


class DataError(BNSLError, ValueError):
    """Malformed data: ragged rows, bad codes, unexpected missing values, empty files.

    The message names the file, and the line and column (1-based) where known.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 column: int | str | None = None) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.line = line
        self.column = column


class MissingValueError(DataError):
    """A missing value (``?``, empty, ``NA``) in data that must be complete."""


class CacheFormatError(DataError):
    """A malformed ``.jkl`` score cache."""


class BIFFormatError(DataError):
    """A malformed BIF network file."""


class InvalidConfigError(BNSLError, ValueError):
    """A configuration file or argument that does not validate; names file and field."""


class NotADAGError(BNSLError, ValueError):
    """A graph with a cycle, or naming unknown variables, where a DAG is required."""


class InfeasibleError(BNSLError):
    """A problem with no solution under the given constraints."""
