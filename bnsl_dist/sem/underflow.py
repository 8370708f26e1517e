"""Which E-steps the junction tree's clique underflow could reach, proved per network.

Until c06cf61 a row whose largest entry of a clique fell below the smallest normal
double (the product of many child messages) was taken for impossible evidence: P(e) = 0,
NaN marginals, an arbitrary MPE, and the SEM E-step and the imputation filled such a
row with state 0. Since then a row whose largest entry of a clique is below
:data:`~bnsl_dist.inference._kernels.TINY` (1e-250) has that clique recomputed in logs;
every other row takes the old path, operation for operation. So an E-step of the old
code gave the new code's result exactly unless some row of it reaches ``TINY``.

**The bound** (docs/ALGORITHMS.md §9). Write P*(e) = max_x P(x, e) for a row's evidence
e. Every CPT entry, evidence indicator and rescaled message is at most 1, and the
unrescaled upward message of a subtree, and the outside mass of a separator state, are
sums (maxima) over the eliminated variables of products of the CPTs of variables whose
parents lie among them or in the separator: at most 1. Hence, for a row,

* max-product (MPE) collect, and the traceback: the largest entry of every clique is at
  least P*(e);
* sum-product collect: the largest separator entry of every clique is at least
  P(e) / R >= P*(e) / R, R the separator's number of states; the Hugin downward pass:
  the clique's total mass is at least P(e).

So no row reaches ``TINY`` when ln P*(e) >= ln TINY + ln R, with R bounded by the most
states of a clique of the elimination order (:func:`underflow_threshold`). P*(e) is at
least P(x) for any completion x of the row, and P(x) is the product of x's CPT entries.

**Whatever the completed data.** SEM fits each network to a completion of the masked
data: the observed cells stay, the missing ones are filled. With the BDeu-spread prior
(:func:`~bnsl_dist.model.fit.fit_cpts`, a = alpha / (q r) per cell) the entry of state x
under parent state j is (N_jx + a) / (N_jx + sum_{y != x} N_jy + alpha / q): increasing
in N_jx, decreasing in the others. For any completion, N_jx is at least L_jx, the rows
whose family cells are all observed and equal (j, x), and N_jy is at most U_jy, the rows
whose observed family cells agree with (j, y). So the entry is at least
(L_jx + a) / (L_jx + sum_{y != x} U_jy + alpha / q) (:func:`log_prob_floor`): a lower
bound on ln P*(e) of each row that holds for every network of the DAG that SEM can fit
(and for the available-case fit of its first network, whose counts are the L's).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray
from scipy import sparse

from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.graph.moral import moral_graph
from bnsl_dist.graph.treewidth import eliminate

__all__ = ["RowFloors", "clique_log_floor", "log_prob_floor", "row_floors", "uncertified_rows",
           "underflow_threshold", "TINY"]

#: Arities of the variables: a sequence or an integer array.
Arities = Sequence[int] | NDArray[np.integer]

#: The clique level below which the junction tree recomputes a row in logs (the
#: kernels' constant; restated here so that this module needs no numba).
TINY = 1e-250


def underflow_threshold(parents: Sequence[Sequence[int]], arities: Arities,
                        order: Sequence[int]) -> float:
    """ln TINY + ln R, R the most states of a clique of the elimination ``order`` of the
    DAG's moral graph (every separator of its junction tree lies in such a clique): a
    row whose :func:`log_prob_floor` is at least this reaches ``TINY`` in no pass.

    Examples
    --------
    >>> t = underflow_threshold([[], [0], [1]], [2, 2, 2], [2, 1, 0])   # cliques of 2
    >>> round(t - math.log(1e-250), 6) == round(math.log(4), 6)
    True
    """
    seq = _order(order, len(parents))
    g = moral_graph(parents)
    lr = np.log(np.asarray(arities, dtype=np.float64))
    most = 0.0
    for v in seq:
        most = max(most, float(lr[v] + sum(lr[u] for u in eliminate(g, v))))
    return math.log(TINY) + most


def log_prob_floor(parents: Sequence[Sequence[int]], arities: Arities,
                   codes: NDArray[np.integer], missing: NDArray[np.bool_],
                   completion: NDArray[np.integer], alpha: float = 1.0) -> NDArray[np.float64]:
    """Per row, a lower bound on ln P(completion row) under every network of the DAG
    ``parents`` whose CPTs are fitted with prior ``alpha`` (BDeu-spread) to any
    completion of ``codes`` (missing where ``missing``), hence on ln max_x P(x, e) of
    the row's observed evidence e (see the module's text).

    Parameters
    ----------
    parents : sequence of sequence of int
        The DAG's parent lists.
    arities : sequence of int
        States of each variable.
    codes, missing : (n_samples, n_vars) arrays
        The masked data: codes (any value where missing) and the missing mask.
    completion : (n_samples, n_vars) array
        A completion of the rows (equal to ``codes`` where observed), e.g. the truth.
    alpha : float
        The prior's equivalent sample size (> 0; SEM fits with 1).

    Examples
    --------
    Two binary variables, X0 -> X1, nothing missing: the bound is the fitted
    log-likelihood of each row.

    >>> c = np.array([[0, 0], [0, 0], [1, 1], [0, 1]])
    >>> m = np.zeros_like(c, dtype=bool)
    >>> fl = log_prob_floor([[], [0]], [2, 2], c, m, c)
    >>> exact = [np.log(3.5 / 5) + np.log(2.25 / 3.5)] * 2 \\
    ...         + [np.log(1.5 / 5) + np.log(1.25 / 1.5), np.log(3.5 / 5) + np.log(1.25 / 3.5)]
    >>> bool(np.allclose(fl, exact))
    True
    """
    codes, missing = _checked(parents, arities, codes, missing, alpha)
    return _log_prob(parents, _tables(parents, arities, codes, missing, alpha),
                     _completion(codes, missing, completion))


def clique_log_floor(parents: Sequence[Sequence[int]], arities: Arities,
                     codes: NDArray[np.integer], missing: NDArray[np.bool_],
                     order: Sequence[int], alpha: float = 1.0) -> NDArray[np.float64]:
    """Per row, a lower bound on ln of the largest entry of every clique of the junction
    tree of ``order`` in every pass, for every network of the DAG ``parents`` fitted with
    prior ``alpha`` to any completion of ``codes`` (missing where ``missing``): the row
    reaches ``TINY`` in no pass when it is at least ln TINY.

    A clique's entry consistent with the evidence is the product of the CPTs homed at it
    and of the child messages, each rescaled to its largest value; a child message falls
    from its largest value by at most the product, over the variables homed in the child's
    subtree whose family meets the separator, of their smallest CPT entry among the
    family states that agree with the row's evidence (each such CPT entry is at most 1 in
    the denominator). Those variables, and the clique's own, all have a family member in
    the clique: the bound sums, over every variable whose family meets the clique, the
    log of that smallest entry, bounded below for any completion as in
    :func:`log_prob_floor` (docs/ALGORITHMS.md §9).

    Examples
    --------
    A naive Bayes network, a root and m children, each child equal to the root in every
    row but the first, where all disagree with it (nothing missing): at the root's
    clique the first row costs ln(1.25 / 50.5), about -3.7, per child, and ln(1/2) for the root (a child's entry
    is at least (1 + 1/4) / (1 + 49 + 1/2) where the root's state has 50 rows): above
    ln TINY (-575.6) with 40 children, below with 400, where the junction tree does
    recompute that row in logs.

    >>> def naive(m):
    ...     root = np.arange(100) % 2
    ...     c = np.column_stack([root] * (m + 1))
    ...     c[0, 1:] ^= 1
    ...     par = [[]] + [[0]] * m
    ...     order = list(range(1, m + 1)) + [0]
    ...     return clique_log_floor(par, [2] * (m + 1), c, np.zeros(c.shape, bool), order)
    >>> f40, f400 = naive(40), naive(400)
    >>> round(float(f40[0]), 1), bool(f40[0] > math.log(TINY)), bool(f400[0] < math.log(TINY))
    (-148.6, True, True)
    """
    codes, missing = _checked(parents, arities, codes, missing, alpha)
    return _cliques(parents, arities, codes, missing, _order(order, len(parents)),
                    _tables(parents, arities, codes, missing, alpha))


def uncertified_rows(parents: Sequence[Sequence[int]], arities: Arities,
                     codes: NDArray[np.integer], missing: NDArray[np.bool_],
                     order: Sequence[int], completion: NDArray[np.integer],
                     alpha: float = 1.0) -> NDArray[np.bool_]:
    """The rows that neither bound keeps from ``TINY`` (:func:`log_prob_floor` against
    :func:`underflow_threshold`, :func:`clique_log_floor` against ln TINY) for some
    network of the DAG ``parents`` fitted with prior ``alpha`` to a completion of the
    masked data, on the junction tree of ``order``: the E-step, posterior or MPE of a
    network of this DAG gave the same result before c06cf61 as after it unless one of
    these rows reached ``TINY`` (an empty answer proves it did not).

    Examples
    --------
    >>> c = np.arange(100)[:, None] % 2 * np.ones((1, 401), int)
    >>> c[0, 1:] ^= 1
    >>> m = np.zeros(c.shape, bool)
    >>> par = [[]] + [[0]] * 400
    >>> np.flatnonzero(uncertified_rows(par, [2] * 401, c, m, list(range(1, 401)) + [0], c))
    array([0])
    """
    f = row_floors(parents, arities, codes, missing, order, completion, alpha, clique=False)
    safe = f.log_prob >= f.threshold
    if safe.all():
        return ~safe
    codes, missing = _checked(parents, arities, codes, missing, alpha)
    clique = _cliques(parents, arities, codes, missing, _order(order, len(parents)),
                      f.tables)
    return ~safe & (clique < math.log(TINY))


@dataclass(frozen=True)
class RowFloors:
    """:func:`row_floors`' answer: per row, :func:`log_prob_floor` and
    :func:`clique_log_floor` (None unless asked), and :func:`underflow_threshold`."""

    log_prob: NDArray[np.float64]
    threshold: float
    clique: NDArray[np.float64] | None
    #: The lower bound on each family's CPT entries (shaped by the family's arities).
    tables: list[NDArray[np.float64]] = field(repr=False)


def row_floors(parents: Sequence[Sequence[int]], arities: Arities,
               codes: NDArray[np.integer], missing: NDArray[np.bool_],
               order: Sequence[int], completion: NDArray[np.integer], alpha: float = 1.0,
               *, clique: bool = True) -> RowFloors:
    """Both bounds of a DAG and the threshold of the first, from one count of each
    family (the work of :func:`log_prob_floor` and :func:`clique_log_floor` shared)."""
    codes, missing = _checked(parents, arities, codes, missing, alpha)
    seq = _order(order, len(parents))
    tables = _tables(parents, arities, codes, missing, alpha)
    lp = _log_prob(parents, tables, _completion(codes, missing, completion))
    cf = _cliques(parents, arities, codes, missing, seq, tables) if clique else None
    return RowFloors(lp, underflow_threshold(parents, arities, seq), cf, tables)


def _order(order: Sequence[int], n: int) -> list[int]:
    seq = [int(v) for v in order]
    if sorted(seq) != list(range(n)):
        raise InvalidConfigError(f"the elimination order must list each of the {n} "
                                 f"variables once")
    return seq


def _completion(codes: NDArray[np.integer], missing: NDArray[np.bool_],
                completion: NDArray[np.integer]) -> NDArray[np.integer]:
    completion = np.asarray(completion)
    if completion.shape != codes.shape:
        raise DataError(f"the completion must be {codes.shape}, got {completion.shape}")
    if np.any(completion[~missing] != codes[~missing]):
        raise DataError("the completion differs from the data at an observed cell")
    return completion


def _tables(parents: Sequence[Sequence[int]], arities: Arities, codes: NDArray[np.integer],
            missing: NDArray[np.bool_], alpha: float) -> list[NDArray[np.float64]]:
    ar = np.asarray(arities, dtype=np.int64)
    out = []
    for v in range(len(parents)):
        fam = [int(p) for p in parents[v]] + [v]  # the child last
        out.append(_entry_floor(codes[:, fam], missing[:, fam], ar[fam], alpha))
    return out


def _log_prob(parents: Sequence[Sequence[int]], tables: list[NDArray[np.float64]],
              completion: NDArray[np.integer]) -> NDArray[np.float64]:
    out = np.zeros(completion.shape[0])
    for v, table in enumerate(tables):
        fam = [int(p) for p in parents[v]] + [v]
        out += np.log(table[tuple(completion[:, fam].T)])
    return out


def _cliques(parents: Sequence[Sequence[int]], arities: Arities, codes: NDArray[np.integer],
             missing: NDArray[np.bool_], seq: list[int],
             tables: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    n = len(parents)
    ar = np.asarray(arities, dtype=np.int64)
    least = np.empty(codes.shape, dtype=np.float64)
    for v, t in enumerate(tables):
        fam = [int(p) for p in parents[v]] + [v]
        table = np.log(t)
        for axis in range(len(fam)):  # index d of an axis: the least over its d states
            table = np.concatenate([table, table.min(axis=axis, keepdims=True)], axis=axis)
        sym = np.where(missing[:, fam], ar[fam], codes[:, fam])
        least[:, v] = table[tuple(sym.T)]
    # the variables whose family meets each clique of the elimination order
    children: list[list[int]] = [[] for _ in range(n)]
    for v, ps in enumerate(parents):
        for p in ps:
            children[int(p)].append(v)
    g = moral_graph(parents)
    rows: list[int] = []
    cols: list[int] = []
    for c, v in enumerate(seq):
        clique = eliminate(g, v) | {v}
        meets = set(clique).union(*(children[u] for u in clique))
        rows.extend(meets)
        cols.extend([c] * len(meets))
    inc = sparse.csr_matrix((np.ones(len(rows)), (cols, rows)), shape=(n, n))
    return np.asarray((inc @ least.T).min(axis=0)).ravel()


def _checked(parents: Sequence[Sequence[int]], arities: Arities,
             codes: NDArray[np.integer], missing: NDArray[np.bool_],
             alpha: float) -> tuple[NDArray[np.integer], NDArray[np.bool_]]:
    if not (math.isfinite(alpha) and alpha > 0):
        raise InvalidConfigError(f"alpha must be a finite number > 0, got {alpha}")
    codes = np.asarray(codes)
    missing = np.asarray(missing, dtype=bool)
    n = len(parents)
    if codes.ndim != 2 or codes.shape[1] != n or len(arities) != n \
            or missing.shape != codes.shape:
        raise DataError(f"codes and missing must both be (n_samples, {n}), "
                        f"got {codes.shape} and {missing.shape}")
    return codes, missing


def _entry_floor(codes: NDArray[np.integer], miss: NDArray[np.bool_],
                 ar: NDArray[np.int64], alpha: float) -> NDArray[np.float64]:
    """The lower bound (L_jx + a) / (L_jx + sum_{y != x} U_jy + alpha / q) on each entry
    of the child's CPT, for any completion (columns: the parents, then the child), shaped
    by the family's arities."""
    dims = tuple(int(r) for r in ar)
    r = dims[-1]
    q = int(np.prod(dims[:-1], dtype=np.int64))
    full = ~miss.any(axis=1)
    lo = np.bincount(np.ravel_multi_index(tuple(codes[full].T), dims),
                     minlength=q * r).reshape(q, r).astype(np.float64)
    # rows by (state or "missing") of each member, then summed onto the states that
    # agree: a missing member agrees with each of its states
    wide = tuple(d + 1 for d in dims)
    sym = np.where(miss, ar, codes)
    up = np.bincount(np.ravel_multi_index(tuple(sym.T), wide),
                     minlength=int(np.prod(wide, dtype=np.int64))).reshape(wide)
    for axis, d in enumerate(dims):
        up = np.take(up, range(d), axis=axis) + np.take(up, [d], axis=axis)
    up = up.reshape(q, r).astype(np.float64)
    others = up.sum(axis=1, keepdims=True) - up
    ratio: NDArray[np.float64] = (lo + alpha / (q * r)) / (lo + others + alpha / q)
    return ratio.reshape(dims)
