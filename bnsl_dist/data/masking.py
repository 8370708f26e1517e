"""Missing completely at random (MCAR) masking, for structural EM and imputation tests.

Each cell is hidden independently with probability ``p``. The input data set is left
untouched and keeps the true codes; the returned copy carries the missing mask and has
code 0 in every hidden cell (the :class:`CategoricalData` convention), so no true value
leaks through it.

References
----------
D. B. Rubin, "Inference and missing data", Biometrika 63(3), 1976, section 3
(missing completely at random).
"""

from __future__ import annotations

import numpy as np

from bnsl_dist._rng import as_rng
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError

__all__ = ["mask_mcar"]


def mask_mcar(data: CategoricalData, p: float,
              rng: np.random.Generator | np.random.SeedSequence | int | None = None
              ) -> CategoricalData:
    """Hide each cell of ``data`` independently with probability ``p``.

    Parameters
    ----------
    data : CategoricalData
        Complete or partly missing data; it is not modified.
    p : float
        Probability that a cell is hidden, in [0, 1].
    rng : Generator, SeedSequence, int or None
        Randomness; the same seed gives the same mask. One uniform is drawn per cell, in
        row-major order.

    Returns
    -------
    CategoricalData
        Same variables and rows; ``missing`` is the union of the new mask and any mask
        ``data`` already had (None when nothing is missing); hidden cells hold code 0.

    Raises
    ------
    DataError
        ``p`` outside [0, 1].

    References
    ----------
    D. B. Rubin, "Inference and missing data", Biometrika 63(3), 1976, section 3.

    Examples
    --------
    >>> import numpy as np
    >>> d = CategoricalData.from_array(np.ones((1000, 4), dtype=np.int64), arities=[2] * 4)
    >>> m = mask_mcar(d, 0.25, rng=0)
    >>> bool(0.2 < m.missing.mean() < 0.3), int(m.codes[m.missing].max()), int(d.codes.min())
    (True, 0, 1)
    """
    try:
        prob = float(p)
    except (TypeError, ValueError):
        raise DataError(f"p must be a probability, got {p!r}") from None
    if not 0.0 <= prob <= 1.0:
        raise DataError(f"p must be in [0, 1], got {p!r}")
    gen = as_rng(rng)
    hidden = gen.random((data.n_samples, data.n_vars)) < prob
    if data.missing is not None:
        hidden |= data.missing
    if not hidden.any():
        return data.with_codes(data.codes.copy(), None)
    codes = np.where(hidden, 0, data.codes).astype(data.codes.dtype)
    return data.with_codes(np.asfortranarray(codes), np.asfortranarray(hidden))
