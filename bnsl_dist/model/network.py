"""BayesianNetwork: a DAG over categorical variables with one CPT per variable.

CPT layout (the project's one convention): ``cpts[v]`` has shape ``(q_v, r_v)``; row
``j`` is the distribution of ``v`` given parent configuration ``j``, where ``j`` is the
mixed-radix index over ``dag.parents[v]`` (sorted ascending, as DAG stores them) with
the *first* parent varying fastest: ``j = sum_m code(P_m) * prod_{l<m} r_{P_l}``
(docs/ALGORITHMS.md §1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.exceptions import DataError
from bnsl_dist.graph.dag import DAG

__all__ = ["BayesianNetwork", "parent_config_index"]


def parent_config_index(codes: NDArray[np.integer], parents: Sequence[int],
                        arities: NDArray[np.int64]) -> NDArray[np.int64]:
    """Row-wise mixed-radix configuration index of ``parents`` (first parent fastest)."""
    j = np.zeros(codes.shape[0], dtype=np.int64)
    radix = 1
    for p in parents:
        j += codes[:, p].astype(np.int64) * radix
        radix *= int(arities[p])
    return j


@dataclass(frozen=True, eq=False)
class BayesianNetwork:
    """A discrete Bayesian network.

    Parameters
    ----------
    dag : DAG
        Structure; its names are the variable names.
    states : tuple of tuple of str
        State labels per variable (code k has label ``states[v][k]``).
    cpts : tuple of ndarray
        ``cpts[v]`` of shape ``(prod of parent arities, arity of v)``, rows sum to 1.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.graph import DAG
    >>> net = BayesianNetwork(DAG.from_parents([[], [0]], ["rain", "wet"]),
    ...                       (("no", "yes"), ("no", "yes")),
    ...                       (np.array([[0.8, 0.2]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    >>> net.n_parameters()
    3
    >>> np.exp(net.log_prob_rows(np.array([[1, 1], [0, 0]]))).round(2).tolist()
    [0.16, 0.72]
    """

    dag: DAG
    states: tuple[tuple[str, ...], ...]
    cpts: tuple[NDArray[np.float64], ...]

    def __post_init__(self) -> None:
        n = self.dag.n_vars
        if len(self.states) != n or len(self.cpts) != n:
            raise DataError(f"network needs {n} state lists and CPTs")
        ar = self.arities
        for v in range(n):
            q = 1
            for p in self.dag.parents[v]:
                q *= int(ar[p])
            t = self.cpts[v]
            if t.shape != (q, ar[v]):
                raise DataError(f"CPT of {self.dag.names[v]!r} has shape {t.shape}, "
                                f"expected {(q, int(ar[v]))}")
            if t.size and not np.isfinite(t).all():
                row = int(np.argwhere(~np.isfinite(t))[0][0])
                raise DataError(f"CPT of {self.dag.names[v]!r}: row {row} has a non-finite "
                                f"entry {t[row].tolist()}")
            if t.size and (float(np.abs(t.sum(axis=1) - 1.0).max()) > 1e-6 or float(t.min()) < 0):
                raise DataError(f"CPT of {self.dag.names[v]!r}: rows must be distributions")

    @property
    def names(self) -> tuple[str, ...]:
        return self.dag.names

    @property
    def n_vars(self) -> int:
        return self.dag.n_vars

    @property
    def arities(self) -> NDArray[np.int64]:
        return np.array([len(s) for s in self.states], dtype=np.int64)

    def n_parameters(self) -> int:
        """Free parameters: sum of (r_v - 1) q_v."""
        return int(sum((t.shape[1] - 1) * t.shape[0] for t in self.cpts))

    def log_prob_rows(self, codes: NDArray[np.integer]) -> NDArray[np.float64]:
        """ln P(row) of complete rows (N, n) of codes."""
        out = np.zeros(codes.shape[0])
        ar = self.arities
        for v in range(self.n_vars):
            j = parent_config_index(codes, self.dag.parents[v], ar)
            with np.errstate(divide="ignore"):
                out += np.log(self.cpts[v][j, codes[:, v].astype(np.int64)])
        return out
