"""The one normalisation of random-state arguments."""

from __future__ import annotations

import numpy as np

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["RandomState", "as_rng"]

#: What every ``rng`` argument of the project accepts.
RandomState = np.random.Generator | np.random.SeedSequence | int | None


def as_rng(rng: RandomState) -> np.random.Generator:
    """A Generator from a Generator (returned as is), a SeedSequence, an int or None.

    Raises
    ------
    InvalidConfigError
        Anything else (a bool, a float, a string).

    Examples
    --------
    >>> g = np.random.default_rng(3)
    >>> as_rng(g) is g
    True
    >>> int(as_rng(3).integers(100)) == int(g.integers(100))
    True
    """
    if isinstance(rng, bool | np.bool_) or not (
            rng is None or isinstance(rng, np.random.Generator | np.random.SeedSequence
                                      | int | np.integer)):
        raise InvalidConfigError(f"rng must be a Generator, a SeedSequence, an int or None, "
                                 f"not {rng!r}")
    return np.random.default_rng(rng)
