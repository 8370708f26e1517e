"""Naive completions of a record with missing cells, by enumerating every completion
(the oracles of the SEM and imputation tests; exponential in the missing cells)."""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.model.network import BayesianNetwork

__all__ = ["naive_completions", "naive_mpe", "naive_marginal_argmax"]


def naive_completions(net: BayesianNetwork, row: NDArray[np.integer], miss: NDArray[np.bool_]
                      ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(the missing variables, every completion of ``row`` (one per row, in
    ``itertools.product`` order of their states), the log-probability of each)."""
    idx = np.nonzero(miss)[0]
    rows = np.repeat(row.astype(np.int64)[None, :], int(np.prod(net.arities[idx])), axis=0)
    rows[:, idx] = list(itertools.product(*[range(int(net.arities[v])) for v in idx]))
    return idx, rows, net.log_prob_rows(rows)


def naive_mpe(net: BayesianNetwork, row: NDArray[np.integer], miss: NDArray[np.bool_]
              ) -> NDArray[np.int64]:
    """The most probable completion of ``row`` (the first in enumeration order on ties)."""
    _, rows, logp = naive_completions(net, row, miss)
    return rows[int(np.argmax(logp))]


def naive_marginal_argmax(net: BayesianNetwork, row: NDArray[np.integer],
                          miss: NDArray[np.bool_]) -> NDArray[np.int64]:
    """``row`` with each missing cell at the argmax of its posterior marginal given the
    observed cells (the lowest state on ties)."""
    idx, rows, logp = naive_completions(net, row, miss)
    p = np.exp(logp)
    out = row.astype(np.int64).copy()
    for v in idx:
        post = np.bincount(rows[:, v], weights=p, minlength=int(net.arities[v]))
        out[v] = int(np.argmax(post))
    return out
