"""Canonical JSON and its hash: the one content key of the project outside
``orchestrate/`` (which keys Dask tasks with ``dask.base.tokenize``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "json_digest"]


def canonical_json(obj: Any) -> str:
    """Sorted keys, no spaces, floats as ``repr``: equal values give equal text.

    Examples
    --------
    >>> canonical_json({"b": [1, 2.5], "a": None})
    '{"a":null,"b":[1,2.5]}'
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def json_digest(obj: Any, length: int = 20) -> str:
    """The first ``length`` hex digits of the SHA-256 of :func:`canonical_json` (a key
    that is safe in file names).

    Examples
    --------
    >>> json_digest({"a": 1, "b": 2}) == json_digest({"b": 2, "a": 1})
    True
    >>> len(json_digest([1], 32))
    32
    """
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]
