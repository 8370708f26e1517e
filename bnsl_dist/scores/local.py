"""Local scores of families (child, parent set): BIC, BDeu, log-likelihood, entropy.

All scores are log-scores (higher is better), natural logs, exactly as
docs/ALGORITHMS.md §2 defines them. BIC uses the maximum-likelihood log-likelihood and the
real penalty ``(ln N / 2)(r - 1) q`` (no smoothing, no truncation of ``q/2``).
"""

from __future__ import annotations

import math
import operator
import weakref
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.scores import _kernels as K
from bnsl_dist.scores.registry import score_info

__all__ = ["LocalScorer", "MAX_ESS", "n_configurations"]

#: The largest BDeu equivalent sample size: up to it a family's log-gamma differences
#: lgamma(a + n) - lgamma(a) are within 1e-6 of their exact value in float64 (at 1e12
#: the error is 6e-4, at 1e15 about 2; past 2.5e305 lgamma overflows and the score is NaN).
MAX_ESS = 1e9


#: Variables of at most this many states get state bitsets (:meth:`LocalScorer.state_bitsets`):
#: a variable of more can be in no table of :data:`~bnsl_dist.scores._kernels.PAIR_CELLS`.
BITSET_MAX_ARITY = K.PAIR_CELLS + 1
#: State bitsets are made only while they take at most this many bytes, or twice the codes.
BITSET_MAX_BYTES = 1 << 28
_BITSETS: weakref.WeakKeyDictionary[CategoricalData, tuple[NDArray[np.uint64], NDArray[np.int64],
                                                           NDArray[np.int64]]] = \
    weakref.WeakKeyDictionary()


def n_configurations(arities: NDArray[np.int64], parents: Iterable[int]) -> float:
    """q(P): product of the parents' arities, as a float (it may exceed 2^63)."""
    q = 1.0
    for p in parents:
        q *= float(arities[p])
    return q


def _no_bitsets(n_vars: int) -> tuple[NDArray[np.uint64], NDArray[np.int64], NDArray[np.int64]]:
    """State bitsets of no variable (every ``offs`` -1: every table from the rows)."""
    return (np.zeros((0, 1), dtype=np.uint64), np.full(n_vars, -1, dtype=np.int64),
            np.zeros(0, dtype=np.int64))


class LocalScorer:
    """Scores families of one complete data set.

    Holds scratch buffers, so one instance must not be shared between threads; build
    one per task (construction is cheap).

    Parameters
    ----------
    data : CategoricalData
        Complete data (no missing mask).
    score : str
        A registered local score (:func:`~bnsl_dist.scores.registry.score_names`).
    ess : float
        Equivalent sample size of BDeu.
    bitsets : bool
        Count single-parent tables from state bitsets where they pay
        (:meth:`state_bitsets`; the same counts, so the same scores); ``False``: from the
        rows, always.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> d = CategoricalData.from_array(np.array([[0, 0], [1, 1], [1, 1], [0, 1]]))
    >>> s = LocalScorer(d, "ll")
    >>> round(s.score(1, [0]), 6) == round(2 * float(np.log(0.5)), 6)
    True
    """

    def __init__(self, data: CategoricalData, score: str = "bic", ess: float = 1.0,
                 *, bitsets: bool = True):
        if data.missing is not None:
            raise DataError("scores need complete data: this data set has missing values"
                            " (impute them, or use structural EM)", path=data.source)
        info = score_info(score)
        if not 0 < ess <= MAX_ESS:
            raise InvalidConfigError(f"ess must be a positive number up to {MAX_ESS:g}, got "
                                     f"{ess} (beyond, BDeu's log-gamma differences lose "
                                     "their precision in float64)")
        self.data = data
        self.score_name = str(score)
        self.kind = info.kind
        self.ess = float(ess)
        self.n_samples = data.n_samples
        self.n_vars = data.n_vars
        self.arities = np.ascontiguousarray(data.arities, dtype=np.int64)
        self._codes = data.codes
        self._nlogn = K.nlogn_table(self.n_samples)
        self._ids = np.empty(self.n_samples, dtype=np.int64)
        self._tmp = np.empty(self.n_samples, dtype=np.int64)
        self._counts = np.empty(max(8 * self.n_samples, 1 << 14), dtype=np.int64)
        self._log_n = math.log(self.n_samples)
        self._bitsets = bool(bitsets)

    # ------------------------------------------------------------------ families
    def _check_family(self, child: int, parents: Sequence[int]) -> NDArray[np.int64]:
        """The parents as int64 indices, after checking that the child and the parents
        are variables of the data, the parents distinct and without the child (the
        kernels index the columns unchecked)."""
        n = self.n_vars
        try:
            c = operator.index(child)
        except TypeError:
            raise InvalidConfigError(f"child index must be an integer, got {child!r}") from None
        if not 0 <= c < n:
            raise InvalidConfigError(f"child index {c} out of range 0..{n - 1}")
        raw = np.asarray(parents)
        if raw.size == 0:
            return np.zeros(0, dtype=np.int64)
        if raw.ndim != 1 or raw.dtype.kind not in "iu":
            raise InvalidConfigError(f"parents must be a list of variable indices, got {parents!r}")
        par = raw.astype(np.int64)
        members = par.tolist()
        for p in members:
            if not 0 <= p < n:
                raise InvalidConfigError(f"parent index {p} out of range 0..{n - 1}")
        if c in members:
            raise InvalidConfigError(f"variable {c} cannot be its own parent")
        if len(set(members)) != len(members):
            raise InvalidConfigError(f"parents {members}: a variable is repeated")
        return par

    def _family(self, child: int, parents: Sequence[int], kind: int) -> tuple[float, float]:
        par = self._check_family(child, parents)
        qf = n_configurations(self.arities, par)
        s, ll = K.family_score(self._codes, self.arities, int(child), par, kind, self.ess, qf,
                               self._nlogn, self._ids, self._tmp, self._counts)
        return float(s), float(ll)

    def score(self, child: int, parents: Sequence[int] = ()) -> float:
        """The local score of ``child`` with parent set ``parents``."""
        return float(self._family(child, parents, self.kind)[0])

    def score_and_ll(self, child: int, parents: Sequence[int] = ()) -> tuple[float, float]:
        """(local score, maximum-likelihood log-likelihood) in one pass."""
        s, ll = self._family(child, parents, self.kind)
        return float(s), float(ll)

    def log_likelihood(self, child: int, parents: Sequence[int] = ()) -> float:
        """LL(X|P) = sum_jk N_jk ln(N_jk / N_j) = -N H(X|P)."""
        return float(self._family(child, parents, K.KIND_LL)[1])

    def penalty(self, child: int, parents: Sequence[int] = ()) -> float:
        """BIC penalty (ln N / 2)(r_X - 1) q(P)."""
        par = self._check_family(child, parents)
        return float(0.5 * self._log_n * (self.arities[child] - 1)
                     * n_configurations(self.arities, par))

    def conditional_entropy(self, child: int, parents: Sequence[int] = ()) -> float:
        """H_D(X|P) in nats (the empirical conditional entropy)."""
        return -self.log_likelihood(child, parents) / self.n_samples

    def entropy(self, child: int) -> float:
        """H_D(X) in nats."""
        return self.conditional_entropy(child, ())

    def entropies(self, variables: Sequence[int] | None = None) -> NDArray[np.float64]:
        """H_D(X_i) in nats of every variable (of ``variables``, in that order)."""
        vs = range(self.n_vars) if variables is None else [int(v) for v in variables]
        out = np.empty(len(vs))
        cnt = np.empty(int(self.arities.max()), dtype=np.int64)
        for j, i in enumerate(vs):
            K.marginal_counts(self._codes[:, i], int(self.arities[i]), cnt)
            counts = cnt[: self.arities[i]]
            p = counts[counts > 0] / self.n_samples
            out[j] = float(-(p * np.log(p)).sum())
        return out

    def state_bitsets(self) -> tuple[NDArray[np.uint64], NDArray[np.int64], NDArray[np.int64]]:
        """Each state of each variable of at most :data:`BITSET_MAX_ARITY` states as a
        bitset over the rows (:func:`bnsl_dist.scores._kernels.state_bitsets`): made once
        per data set and process, and shared by its scorers; none (every ``offs`` -1:
        every table counted from the rows) for a scorer made with ``bitsets=False`` or
        when they would take more than :data:`BITSET_MAX_BYTES` or twice the codes."""
        if not self._bitsets:
            return _no_bitsets(self.n_vars)
        got = _BITSETS.get(self.data)
        if got is None:
            small = self.arities[self.arities <= BITSET_MAX_ARITY]
            size = int(small.sum()) * ((self.n_samples + 63) // 64) * 8
            got = (K.state_bitsets(self._codes, self.arities, BITSET_MAX_ARITY)
                   if size <= max(BITSET_MAX_BYTES, 2 * self._codes.nbytes)
                   else _no_bitsets(self.n_vars))
            _BITSETS[self.data] = got
        return got

    # ------------------------------------------------------------------ graphs
    def score_parents(self, parents: Sequence[Sequence[int]]) -> NDArray[np.float64]:
        """Per-variable local scores of a structure given as parent lists."""
        if len(parents) != self.n_vars:
            raise DataError(f"{len(parents)} parent lists for {self.n_vars} variables")
        return np.array([self.score(i, sorted(p)) for i, p in enumerate(parents)])
