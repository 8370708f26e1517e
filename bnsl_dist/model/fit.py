"""Parameter learning: CPTs by maximum likelihood with a Dirichlet prior.

The posterior-mean estimate of ``P(X = k | parents in configuration j)`` under a
Dirichlet prior with pseudo-count ``a_jk`` per cell is
``(N_jk + a_jk) / (N_j + sum_k a_jk)``. The default prior spreads an equivalent sample
size ``alpha`` as BDeu does, ``a_jk = alpha / (q r)`` (docs/ALGORITHMS.md §2 and §8); the
alternative ``prior="cell"`` adds ``alpha`` to every cell (``alpha = 1``: Laplace).
Counting is one vectorised ``numpy.bincount`` per family over the mixed-radix
configuration index of docs/ALGORITHMS.md §1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.network import BayesianNetwork, parent_config_index

__all__ = ["fit_cpts", "family_counts", "MAX_CPT_ENTRIES"]

#: Largest CPT (q * r entries) that :func:`fit_cpts` will allocate.
MAX_CPT_ENTRIES = 1 << 26

Prior = Literal["bdeu", "cell"]


def family_counts(codes: NDArray[np.integer], arities: NDArray[np.int64], child: int,
                  parents: Sequence[int]) -> NDArray[np.int64]:
    """Contingency table ``N[j, k]`` of ``child`` against its parents' configurations.

    Rows follow the project's CPT layout: ``j`` is the mixed-radix index over
    ``parents`` (in the order given) with the first parent varying fastest.
    """
    r = int(arities[child])
    q = 1
    for p in parents:
        q *= int(arities[p])
    j = parent_config_index(codes, parents, arities)
    flat = np.bincount(j * r + codes[:, child].astype(np.int64), minlength=q * r)
    return flat.reshape(q, r)


def _align(dag: DAG, data: CategoricalData) -> NDArray[np.int64]:
    """Column of ``data`` holding each DAG variable (matched by name)."""
    if dag.names == data.names:
        return np.arange(dag.n_vars, dtype=np.int64)
    pos = {s: i for i, s in enumerate(data.names)}
    missing = [s for s in dag.names if s not in pos]
    if missing:
        raise DataError(f"the data have no variable {missing[0]!r} of the DAG", path=data.source)
    return np.array([pos[s] for s in dag.names], dtype=np.int64)


def fit_cpts(dag: DAG, data: CategoricalData, alpha: float = 1.0, *, prior: Prior = "bdeu",
             states: Sequence[Sequence[str]] | None = None) -> BayesianNetwork:
    """Fit the CPTs of ``dag`` to complete data.

    Parameters
    ----------
    dag : DAG
        The structure; its variables are matched to the data's columns by name.
    data : CategoricalData
        Complete data (no missing mask).
    alpha : float, default 1
        With ``prior="bdeu"``, the equivalent sample size, spread as ``alpha / (q r)``
        per cell; with ``prior="cell"``, the pseudo-count of every cell. ``alpha = 0``
        is plain maximum likelihood (a parent configuration never seen then gets the
        uniform distribution).
    prior : {"bdeu", "cell"}
        How ``alpha`` becomes per-cell pseudo-counts.
    states : sequence of sequence of str, optional
        State labels per DAG variable; by default the data's labels (or the codes).

    Returns
    -------
    BayesianNetwork

    Raises
    ------
    DataError
        Missing values, a DAG variable absent from the data, a CPT too large.
    InvalidConfigError
        A negative or non-finite ``alpha``, an unknown prior.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.data import CategoricalData
    >>> from bnsl_dist.graph import DAG
    >>> d = CategoricalData.from_array(np.array([[0, 0], [0, 1], [1, 1], [1, 1]]))
    >>> net = fit_cpts(DAG.from_parents([(), (0,)]), d, alpha=0.0)
    >>> net.cpts[1].tolist()
    [[0.5, 0.5], [0.0, 1.0]]

    References
    ----------
    D. Heckerman, D. Geiger, D. M. Chickering, "Learning Bayesian networks: the
    combination of knowledge and statistical data", Machine Learning 20, 1995, §4-5
    (Dirichlet priors, BDeu). D. Koller, N. Friedman, *Probabilistic Graphical Models*,
    MIT Press 2009, §17.3 (Bayesian parameter estimation).
    """
    if prior not in ("bdeu", "cell"):
        raise InvalidConfigError(f"unknown prior {prior!r}; choose 'bdeu' or 'cell'")
    if not (np.isfinite(alpha) and alpha >= 0):
        raise InvalidConfigError(f"alpha must be a finite number >= 0, got {alpha}")
    if data.missing is not None:
        raise DataError("fitting CPTs needs complete data: this data set has missing values",
                        path=data.source)
    cols = _align(dag, data)
    codes = data.codes[:, cols]
    arities = data.arities[cols].astype(np.int64)
    cpts = []
    for v in range(dag.n_vars):
        ps = dag.parents[v]
        r = int(arities[v])
        q = 1
        for p in ps:
            q *= int(arities[p])
        if q * r > MAX_CPT_ENTRIES:
            raise DataError(f"the CPT of {dag.names[v]!r} would have {q * r} entries "
                            f"(more than {MAX_CPT_ENTRIES})", path=data.source)
        counts = family_counts(codes, arities, v, ps).astype(np.float64)
        a = float(alpha) / (q * r) if prior == "bdeu" else float(alpha)
        table = counts + a
        tot = table.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            cpt = np.where(tot > 0, table / np.where(tot > 0, tot, 1.0), 1.0 / r)
        cpts.append(cpt)
    if states is None:
        labels = tuple(tuple(data.state_label(int(c), k) for k in range(int(arities[i])))
                       for i, c in enumerate(cols))
    else:
        labels = tuple(tuple(str(x) for x in s) for s in states)
        if len(labels) != dag.n_vars or any(len(s) != arities[i] for i, s in enumerate(labels)):
            raise DataError("states must give one label per state of every variable")
    return BayesianNetwork(dag=dag, states=labels, cpts=tuple(cpts))
