"""Choosing an inference engine, and the log-likelihood of a data set under a network.

:func:`make_engine` builds a junction tree, or, when the tree would exceed the memory
limit and the caller allows it, falls back to likelihood weighting.
:func:`log_likelihood` scores a data set: ``sum_rows ln P(row)`` (docs/ALGORITHMS.md §8),
with ``ln P(observed part)`` for rows that have missing cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.inference.approximate import LikelihoodWeighting
from bnsl_dist.inference.junction_tree import (
    DEFAULT_MEMORY_LIMIT,
    JunctionTree,
    JunctionTreeTooLargeError,
)
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["Engine", "LogLikelihood", "make_engine", "log_likelihood", "align_data"]

Engine = JunctionTree | LikelihoodWeighting
Fallback = Literal["error", "approximate"]


def make_engine(net: BayesianNetwork, order: Sequence[int] | None = None, *,
                memory_limit: int = DEFAULT_MEMORY_LIMIT, fallback: Fallback = "error",
                n_samples: int = 10_000, seconds: float | None = None,
                rng: np.random.Generator | int | None = None) -> Engine:
    """An exact junction tree, or likelihood weighting when the tree is too large.

    Parameters
    ----------
    net : BayesianNetwork
    order : sequence of int, optional
        Elimination order (e.g. a treewidth certificate's); default min-fill.
    memory_limit : int
        Bytes the junction tree may take.
    fallback : {"error", "approximate"}
        What to do when it would take more: raise
        :class:`~bnsl_dist.inference.JunctionTreeTooLargeError` (default) or return a
        :class:`~bnsl_dist.inference.LikelihoodWeighting` sampler.
    n_samples, seconds, rng
        Budget and seed of the sampler (per evidence row).

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.graph import DAG
    >>> from bnsl_dist.model import BayesianNetwork
    >>> net = BayesianNetwork(DAG.from_parents([(), (0,)]), (("0", "1"), ("0", "1")),
    ...     (np.array([[0.5, 0.5]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    >>> make_engine(net).exact
    True
    >>> make_engine(net, memory_limit=1, fallback="approximate").exact
    False
    """
    if fallback not in ("error", "approximate"):
        raise InvalidConfigError(f"unknown fallback {fallback!r}; choose 'error' or "
                                 "'approximate'")
    try:
        return JunctionTree(net, order, memory_limit=memory_limit)
    except JunctionTreeTooLargeError:
        if fallback == "error":
            raise
    return LikelihoodWeighting(net, n_samples=n_samples, seconds=seconds, rng=rng)


def align_data(net: BayesianNetwork, data: CategoricalData
               ) -> tuple[NDArray[np.int64], NDArray[np.bool_] | None]:
    """The data's codes as the network's variables and state codes.

    Columns are matched by name (by position when the data carry the default names
    ``X0, X1, ...`` and as many columns as the network has variables). States are
    matched by label when the data carry labels, else the codes are taken as they are.

    Returns
    -------
    codes : ndarray (n_samples, net.n_vars) int64
    missing : bool ndarray of the same shape, or None

    Raises
    ------
    DataError
        A network variable absent from the data, a label or code the network lacks.
    """
    pos = {s: i for i, s in enumerate(data.names)}
    default = tuple(f"X{i}" for i in range(data.n_vars))
    if all(s in pos for s in net.names):
        cols = [pos[s] for s in net.names]
    elif data.names == default and data.n_vars == net.n_vars:
        cols = list(range(net.n_vars))
    else:
        miss = next(s for s in net.names if s not in pos)
        raise DataError(f"the data have no column for network variable {miss!r}",
                        path=data.source)
    codes = np.empty((data.n_samples, net.n_vars), dtype=np.int64)
    ar = net.arities
    for v, c in enumerate(cols):
        col = data.codes[:, c].astype(np.int64)
        labels = None if data.states is None else data.states[c]
        if labels is not None:
            lut = {s: k for k, s in enumerate(net.states[v])}
            bad = [s for s in labels if s not in lut]
            used = np.unique(col if data.missing is None else col[~data.missing[:, c]])
            bad_used = [labels[k] for k in used if labels[k] in bad]
            if bad_used:
                row = int(np.argmax(col == labels.index(bad_used[0])))
                raise DataError(f"state {bad_used[0]!r} is not a state of network variable "
                                f"{net.names[v]!r} {list(net.states[v])}", path=data.source,
                                line=row + 1, column=data.names[c])
            remap = np.array([lut.get(s, 0) for s in labels], dtype=np.int64)
            col = remap[col]
        else:
            over = col >= ar[v]
            if data.missing is not None:
                over &= ~data.missing[:, c]
            if over.any():
                row = int(np.argmax(over))
                raise DataError(f"code {col[row]} of variable {net.names[v]!r} is not below "
                                f"its {ar[v]} network states", path=data.source,
                                line=row + 1, column=data.names[c])
        codes[:, v] = col
    missing = None if data.missing is None else np.ascontiguousarray(data.missing[:, cols])
    if missing is not None:
        codes[missing] = 0
    return codes, missing


@dataclass(frozen=True)
class LogLikelihood:
    """``total`` = sum of ``per_row`` (natural log); ``mean`` = total / n_rows."""

    total: float
    mean: float
    n_rows: int
    per_row: NDArray[np.float64]

    def to_json_dict(self) -> dict[str, float | int]:
        return {"total": self.total, "mean": self.mean, "n_rows": self.n_rows}


def log_likelihood(net: BayesianNetwork, data: CategoricalData, *,
                   engine: Engine | None = None, order: Sequence[int] | None = None,
                   memory_limit: int = DEFAULT_MEMORY_LIMIT,
                   fallback: Fallback = "error") -> LogLikelihood:
    """Log-likelihood ``sum_rows ln P(row)`` of a data set under ``net``.

    Complete rows are scored from the CPTs directly (O(n) per row, no junction tree);
    rows with missing cells get ``ln P(observed cells)`` from ``engine`` (built with
    :func:`make_engine` when needed and not given).

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.graph import DAG
    >>> from bnsl_dist.data import CategoricalData
    >>> from bnsl_dist.model import BayesianNetwork
    >>> net = BayesianNetwork(DAG.from_parents([(), (0,)]), (("0", "1"), ("0", "1")),
    ...     (np.array([[0.5, 0.5]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    >>> d = CategoricalData.from_array(np.array([[0, 0], [1, 1]]))
    >>> bool(np.isclose(log_likelihood(net, d).total, np.log(.45) + np.log(.4)))
    True

    References
    ----------
    M. Scanagatta et al., "Approximate structure learning for large Bayesian
    networks", Machine Learning 107, 2018, §6 (test-set log-likelihood).
    """
    codes, missing = align_data(net, data)
    if missing is None or not missing.any():
        per = net.log_prob_rows(codes)
    else:
        eng = engine if engine is not None else make_engine(
            net, order, memory_limit=memory_limit, fallback=fallback)
        per = eng.log_prob_rows(codes, missing)
    total = float(per.sum())
    return LogLikelihood(total, total / max(len(per), 1), int(len(per)), per)
