"""The connect timeout (:func:`connect_timeout`), apart from :mod:`.cluster` so that the
command line checks it without importing Dask (a ``--serial`` run never imports it)."""

from __future__ import annotations

import math
import os

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["DEFAULT_TIMEOUT", "connect_timeout"]

#: Seconds to reach a scheduler and to see its first worker.
DEFAULT_TIMEOUT = 10.0


def connect_timeout(timeout: float | None = None) -> float:
    """``timeout``, else ``$BNSL_CONNECT_TIMEOUT``, else :data:`DEFAULT_TIMEOUT`."""
    if timeout is None:
        raw = os.environ.get("BNSL_CONNECT_TIMEOUT")
        try:
            timeout = DEFAULT_TIMEOUT if raw is None else float(raw)
        except ValueError:
            raise InvalidConfigError(f"BNSL_CONNECT_TIMEOUT={raw!r}: seconds expected") \
                from None
    if not 0 < timeout < math.inf:  # dask's "infs" was a KeyError traceback
        raise InvalidConfigError(f"connect timeout must be positive and finite, got {timeout}")
    return float(timeout)
