"""Order samplers: uniform, and entropy-weighted (ASOBS-ENT).

Both consume the generator order by order (the uniform sampler shuffles each row,
the entropy sampler draws one row of keys), so a batch of B orders takes what B single
draws would (results do not depend on batch sizes).

The entropy sampler fills the positions of the order front to back, choosing each next
variable among the unplaced ones with probability H(X_j) / Σ_unplaced H (docs/ALGORITHMS.md
§4; Scanagatta et al. 2018, §4.2, eq. for w_j). Successive sampling without
replacement equals sorting the keys ln(u_j) / H_j in decreasing order (Efraimidis &
Spirakis): O(n log n) per order instead of BLIP's O(n²).

Direction. A variable processed early by ASOBS has the most parent sets to choose
from (few variables are its descendants yet), and ASOBS-ENT is meant to give those to
the high-entropy variables (Scanagatta et al. 2018, §4.2; docs/ALGORITHMS.md §4).
ASOBS walks an order from its last variable to its first (the paper's "j = n, ..., 1",
which makes ASOBS >= OBS for the same order), and the sampler above puts high-entropy
variables towards the front, so the paper's direction (``high_entropy="first"``, the
default of :func:`entropy_orders`) mirrors the sampled orders; ``"last"`` keeps them,
processing high-entropy variables last (ASOBS's ``*-last`` variants). k-G_ENT adds
variables front to back and names the same choice ``"early"`` (its default: orders kept)
and ``"late"`` (reversed).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["uniform_orders", "weighted_orders", "entropy_orders", "entropy_weights",
           "processed_last", "TINY_WEIGHT"]

#: Relative weight given to variables of zero entropy (never exactly zero).
TINY_WEIGHT = 1e-9

#: ``high_entropy`` values -> whether high-entropy variables are processed last
#: (ASOBS-ENT says "last"/"first", k-G_ENT "late"/"early").
_PROCESSED_LAST = {"last": True, "late": True, "first": False, "early": False}


def uniform_orders(rng: np.random.Generator, n_orders: int, n_vars: int) -> NDArray[np.int64]:
    """``n_orders`` uniformly random permutations of ``range(n_vars)``, one per row.

    Examples
    --------
    >>> o = uniform_orders(np.random.default_rng(0), 3, 5)
    >>> o.shape, sorted(o[1].tolist())
    ((3, 5), [0, 1, 2, 3, 4])
    """
    rows = np.tile(np.arange(n_vars, dtype=np.int64), (n_orders, 1))
    return rng.permuted(rows, axis=1, out=rows)  # row by row: 7x faster than sorting keys


def weighted_orders(rng: np.random.Generator, n_orders: int,
                    weights: NDArray[np.float64]) -> NDArray[np.int64]:
    """Orders filled front to back, each next position taking one of the unplaced
    variables with probability proportional to its weight (heavy variables tend to
    come first).

    References
    ----------
    P. S. Efraimidis, P. G. Spirakis, "Weighted random sampling with a reservoir",
    Information Processing Letters 97(5), 2006 (keys u^(1/w)).

    Examples
    --------
    >>> o = weighted_orders(np.random.default_rng(0), 1000, np.array([1.0, 1e-9, 100.0]))
    >>> bool((o[:, 0] == 2).mean() > 0.95), bool((o[:, 2] == 1).all())
    (True, True)
    """
    keys = rng.random((n_orders, weights.shape[0]))
    with np.errstate(divide="ignore"):
        logk = np.log(keys) / weights  # u = 0 gives -inf: last, as its key u^(1/w) = 0
    return np.argsort(-logk, axis=1, kind="stable").astype(np.int64)


def processed_last(high_entropy: str) -> bool:
    """Whether ``high_entropy`` ("last"/"late" or "first"/"early") processes high-entropy
    variables last."""
    if high_entropy not in _PROCESSED_LAST:
        raise InvalidConfigError(f"high_entropy must be one of {sorted(_PROCESSED_LAST)}, "
                                 f"got {high_entropy!r}")
    return _PROCESSED_LAST[high_entropy]


def entropy_orders(rng: np.random.Generator, n_orders: int, weights: NDArray[np.float64],
                   high_entropy: str = "first") -> NDArray[np.int64]:
    """ASOBS-ENT orders, for ASOBS's back-to-front walk: :func:`weighted_orders`
    mirrored, so that high-entropy variables tend to be processed first
    (``high_entropy="first"``, the paper's ASOBS-ENT), or as drawn (``"last"``)."""
    orders = weighted_orders(rng, n_orders, weights)
    if not processed_last(high_entropy):
        orders = np.ascontiguousarray(orders[:, ::-1])
    return orders


def entropy_weights(cache: ParentSetCache,
                    entropies: Sequence[float] | NDArray[np.float64] | None = None,
                    high_entropy: str = "first") -> tuple[NDArray[np.float64], bool]:
    """Sampling weights of the entropy-weighted orders (ASOBS-ENT, k-G_ENT), and whether
    high-entropy variables are to be processed last (:func:`processed_last`).

    Uses, in this order: the ``entropies`` given; ``cache.entropies`` (caches built
    from data); else a proxy computed from the cache alone: −score(X, ∅). For BIC
    (and BDeu) the empty-set score is −N·H(X) minus a small penalty, so it is N times
    the entropy up to that penalty, and the factor N cancels in the sampling
    probabilities. Zero (or negative) weights become ``TINY_WEIGHT`` times the largest
    (all ones when no weight is positive).

    Returns
    -------
    weights : ndarray of float64, shape (n,)
    last : bool

    Raises
    ------
    InvalidConfigError
        Entropies of the wrong length or not finite; an unknown ``high_entropy``.

    Examples
    --------
    >>> from bnsl_dist.cache import ParentSetCache
    >>> cache = ParentSetCache.from_lists([[((), -2.0)], [((), -6.0)], [((), 0.0)]])
    >>> w, last = entropy_weights(cache, high_entropy="early")
    >>> w[:2].tolist(), bool(0 < w[2] < 1e-6), last
    ([2.0, 6.0], True, False)
    """
    n = cache.n_vars
    last = processed_last(high_entropy)
    if entropies is not None:
        h = np.asarray(entropies, dtype=np.float64)
    elif cache.entropies is not None:
        h = cache.entropies
    else:
        h = -cache.empty_scores()
    if h.shape != (n,):
        raise InvalidConfigError(f"entropies: expected {n} values, got shape {h.shape}")
    if not np.all(np.isfinite(h)):
        raise InvalidConfigError("entropies: non-finite value")
    top = float(h.max()) if n else 0.0
    floor = TINY_WEIGHT * top if top > 0 else 1.0
    return np.where(h > floor, h, floor), last
