"""Exact inference on a junction tree, batched over many evidence rows.

The tree comes from an elimination order of the moral graph (a perfect elimination
order, such as a bounded-treewidth learner's certificate, adds no fill; any other
order is triangulated along the way; by default a min-fill order). Clique ``C_v`` is
``v`` with its neighbours left when ``v`` is eliminated; its parent is the clique of
the first-eliminated vertex of ``C_v \\ {v}``; a clique contained in a child's clique is
merged into it (contracting that edge keeps the running intersection property, and a
non-maximal clique always has such a child), so every clique is maximal. Each CPT goes
to the clique of the first-eliminated member of its family.

Queries calibrate the tree for a whole batch of evidence rows at once (numba kernels
looping over the batch innermost, :mod:`bnsl_dist.inference._kernels`):

* ``log_prob_evidence``: ln P(e) (sum-product, one upward pass);
* ``posterior`` / ``marginals``: P(X | e) for every variable (Hugin downward pass);
* ``mpe``: argmax_x P(x, e) and its log-probability (max-product, argmax traceback);
* ``log_prob_rows``: ln P(row) of rows with missing cells (= ln P(observed)).

Messages are rescaled per row (max = 1) and their log scales accumulated, so thousands
of variables do not underflow; a row whose entries of one clique still underflow (the
product of many children's messages) has that clique recomputed in logs. Time and memory are O(sum of clique tables) =
O(n r^(k+1)) for treewidth k.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.exceptions import DataError, InfeasibleError
from bnsl_dist.graph.moral import moral_graph
from bnsl_dist.graph.treewidth import min_fill_order
from bnsl_dist.inference import _kernels as K
from bnsl_dist.inference._graph import elimination_cliques
from bnsl_dist.inference.evidence import Evidence, as_evidence, variable_index
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["JunctionTree", "JunctionTreeTooLargeError", "MPEResult", "Posterior",
           "DEFAULT_MEMORY_LIMIT", "build_junction_tree"]

#: Default cap on the tables of a junction tree (bytes).
DEFAULT_MEMORY_LIMIT = 2 << 30
#: Default working memory of one batch of rows (bytes).
DEFAULT_BATCH_MEMORY = 64 << 20
_MAX_BATCH = 256
#: A row is propagated alone over its evidence-consistent entries when that visits
#: fewer than 1/_SPARSE_PENALTY of the tree's entries (the batched pass vectorises).
_SPARSE_PENALTY = 4.0


class JunctionTreeTooLargeError(InfeasibleError):
    """Exact inference would need more memory than allowed (use approximate inference)."""


@dataclass(frozen=True)
class Posterior:
    """``log_prob_evidence[b]`` = ln P(e_b); ``marginals[v][b, k]`` = P(X_v = k | e_b)
    (NaN where P(e_b) = 0)."""

    log_prob_evidence: NDArray[np.float64]
    marginals: dict[int, NDArray[np.float64]]


@dataclass(frozen=True)
class MPEResult:
    """``assignment[b]``: a most probable completion of row b (observed values kept);
    ``log_prob[b]`` = ln P(assignment, e) (-inf where P(e_b) = 0: assignment arbitrary)."""

    assignment: NDArray[np.int64]
    log_prob: NDArray[np.float64]


def _fmt_bytes(x: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if x < 1024 or unit == "GiB":
            return f"{x:.3g} {unit}"
        x /= 1024
    return f"{x:.3g} GiB"


def _mixed_strides(card: Sequence[int]) -> list[int]:
    out, acc = [], 1
    for c in card:
        out.append(acc)
        acc *= int(c)
    return out


class JunctionTree:
    """A calibrated-on-demand junction tree of a Bayesian network.

    Build it with :func:`build_junction_tree` (or :meth:`from_network`). Attributes:
    ``cliques`` (tuples of variable indices), ``parent`` (parent clique, -1 for roots),
    ``separators``, ``home`` (the clique holding each variable's evidence),
    ``width`` (largest clique size - 1), ``n_entries`` (sum of table sizes).

    References
    ----------
    S. L. Lauritzen, D. J. Spiegelhalter, "Local computations with probabilities on
    graphical structures and their application to expert systems", JRSS-B 50(2), 1988.
    F. V. Jensen, S. L. Lauritzen, K. G. Olesen, "Bayesian updating in causal
    probabilistic networks by local computations", Computational Statistics Quarterly
    4, 1990 (Hugin propagation). A. P. Dawid, "Applications of a general propagation
    algorithm for probabilistic expert systems", Statistics and Computing 2, 1992
    (max-propagation, MPE). M. Scanagatta et al., "Approximate structure learning for
    large Bayesian networks", Machine Learning 107, 2018, §5 and §6.3 (why bounded
    treewidth: exact inference in O(n r^(k+1))).
    """

    exact = True

    def __init__(self, net: BayesianNetwork, order: Sequence[int] | None = None, *,
                 memory_limit: int = DEFAULT_MEMORY_LIMIT,
                 batch_memory: int = DEFAULT_BATCH_MEMORY,
                 sparse: bool | None = None) -> None:
        self.net = net
        self.batch_memory = int(batch_memory)
        self.sparse = sparse
        n = net.n_vars
        ar = net.arities
        adj = moral_graph(net.dag)
        if order is None:
            order = min_fill_order(adj)[0]
        order = [int(v) for v in order]
        if sorted(order) != list(range(n)):
            raise DataError(f"the elimination order must list each of the {n} variables once")
        self.order = tuple(order)
        cl = elimination_cliques(adj, order)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        kids: list[list[int]] = [[] for _ in range(n)]
        for v in order:
            rest = [u for u in cl[v] if u != v]
            if rest:
                kids[min(rest, key=lambda u: pos[u])].append(v)
        nodes: list[tuple[int, ...]] = []
        node_kids: list[list[int]] = []
        rep = [-1] * n
        for v in order:
            ks = [rep[w] for w in kids[v]]
            cv = set(cl[v])
            into = next((k for k in ks if cv <= set(nodes[k])), -1)
            if into >= 0:
                rep[v] = into
                node_kids[into].extend(k for k in ks if k != into)
            else:
                rep[v] = len(nodes)
                nodes.append(cl[v])
                node_kids.append(ks)
        nc = len(nodes)
        parent = np.full(nc, -1, dtype=np.int64)
        for c, ks in enumerate(node_kids):
            for k in ks:
                parent[k] = c
        self.cliques = tuple(nodes)
        self.parent = parent
        self.separators = tuple(() if parent[c] < 0 else
                                tuple(sorted(set(nodes[c]) & set(nodes[parent[c]])))
                                for c in range(nc))
        self.home = np.array(rep, dtype=np.int64)
        sizes = [int(np.prod([int(ar[u]) for u in c], dtype=object)) for c in nodes]
        self.width = max((len(c) for c in nodes), default=1) - 1
        self.n_entries = int(sum(sizes))
        n_factors = [1 + len(node_kids[c]) + int((self.home == c).sum()) for c in range(nc)]
        need = sum(s * (8 + 4 * f) for s, f in zip(sizes, n_factors, strict=True))
        big = int(np.argmax(sizes)) if nc else 0
        # the index maps are int32: every separator entry (a message column) must fit
        sep_sizes = [int(np.prod([int(ar[u]) for u in sp], dtype=object))
                     for sp in self.separators]
        if nc and (need > memory_limit or sizes[big] >= 2**31 or sum(sep_sizes) >= 2**31
                   or self.n_entries >= 2**62):
            names = ", ".join(net.names[u] for u in nodes[big][:12])
            more = "" if len(nodes[big]) <= 12 else ", ..."
            raise JunctionTreeTooLargeError(
                f"junction tree too large for exact inference: its tables need about "
                f"{_fmt_bytes(need)} (memory_limit {_fmt_bytes(memory_limit)}); the "
                f"largest clique has {len(nodes[big])} variables and a table of "
                f"{sizes[big]:,} entries ({names}{more}), width {self.width}; use approximate "
                f"inference (fallback='approximate') or a network of lower treewidth")
        self._compile(sizes, sep_sizes, node_kids)

    @classmethod
    def from_network(cls, net: BayesianNetwork, order: Sequence[int] | None = None,
                     **kwargs: Any) -> JunctionTree:
        """Same as :func:`build_junction_tree`."""
        return cls(net, order, **kwargs)

    # ------------------------------------------------------------------ building
    def _compile(self, sizes: list[int], sep_sizes: list[int],
                 node_kids: list[list[int]]) -> None:
        net = self.net
        ar = net.arities
        n = net.n_vars
        nc = len(self.cliques)
        var_off = np.zeros(n + 1, dtype=np.int64)
        var_off[1:] = np.cumsum(ar)
        sep_size = np.array(sep_sizes, dtype=np.int64)
        sep_off = np.zeros(nc, dtype=np.int64)
        if nc:
            sep_off[1:] = np.cumsum(sep_size)[:-1]
        pos_in_order = np.empty(n, dtype=np.int64)
        pos_in_order[list(self.order)] = np.arange(n)
        assigned: list[list[int]] = [[] for _ in range(nc)]
        for v in range(n):
            fam = (v,) + net.dag.parents[v]
            first = min(fam, key=lambda u: pos_in_order[u])
            assigned[self.home[first]].append(v)
        homed: list[list[int]] = [[] for _ in range(nc)]
        for v in range(n):
            homed[self.home[v]].append(v)

        base_parts, idx_parts = [], []
        base_off = np.zeros(nc + 1, dtype=np.int64)
        out_off = np.zeros(nc, dtype=np.int64)
        msg_ptr = np.zeros(nc + 1, dtype=np.int64)
        lam_ptr = np.zeros(nc + 1, dtype=np.int64)
        msg_off, msg_child, lam_off, lam_var = [], [], [], []
        cv_ptr = np.zeros(nc + 1, dtype=np.int64)
        cv_var, cv_stride, cv_insep = [], [], []
        cursor = 0
        for c, vars_c in enumerate(self.cliques):
            card = [int(ar[u]) for u in vars_c]
            strides = _mixed_strides(card)
            size = sizes[c]
            s = np.arange(size, dtype=np.int64)
            digit = {u: (s // st) % r for u, st, r in zip(vars_c, strides, card, strict=True)}
            base = np.ones(size)
            for v in assigned[c]:
                ps = net.dag.parents[v]
                j = np.zeros(size, dtype=np.int64)
                for p, st in zip(ps, _mixed_strides([int(ar[p]) for p in ps]), strict=True):
                    j += digit[p] * st
                base *= net.cpts[v].ravel()[j * int(ar[v]) + digit[v]]
            base_parts.append(base)
            base_off[c + 1] = base_off[c] + size

            def emit(arr: NDArray[np.int64]) -> int:
                nonlocal cursor
                idx_parts.append(arr.astype(np.int32))
                cursor += int(arr.shape[0])
                return cursor - int(arr.shape[0])

            sep = self.separators[c]
            sst = _mixed_strides([int(ar[u]) for u in sep])
            t = np.zeros(size, dtype=np.int64)
            for u, st in zip(sep, sst, strict=True):
                t += digit[u] * st
            out_off[c] = emit(t)
            for ch in node_kids[c]:
                csep = self.separators[ch]
                t = np.full(size, sep_off[ch], dtype=np.int64)
                for u, st in zip(csep, _mixed_strides([int(ar[x]) for x in csep]), strict=True):
                    t += digit[u] * st
                msg_off.append(emit(t))
                msg_child.append(ch)
            msg_ptr[c + 1] = len(msg_off)
            for v in homed[c]:
                lam_off.append(emit(digit[v] + var_off[v]))
                lam_var.append(v)
            lam_ptr[c + 1] = len(lam_off)
            for u, st in zip(vars_c, strides, strict=True):
                cv_var.append(u)
                cv_stride.append(st)
                cv_insep.append(u in sep)
            cv_ptr[c + 1] = len(cv_var)

        # children before parents (iterative DFS from the roots)
        post: list[int] = []
        for root in (c for c in range(nc) if self.parent[c] < 0):
            stack = [(root, False)]
            while stack:
                c, expanded = stack.pop()
                if expanded:
                    post.append(c)
                else:
                    stack.append((c, True))
                    stack.extend((k, False) for k in reversed(node_kids[c]))
        i64 = np.int64
        self._var_off = var_off
        self._arities = ar.astype(i64)
        self._roots = np.array([sep_off[c] for c in range(nc) if self.parent[c] < 0], dtype=i64)
        self._n_sep = int(sep_size.sum())
        self._post = np.array(post, dtype=i64)
        self._pre = self._post[::-1].copy()
        self._base = np.concatenate(base_parts) if base_parts else np.zeros(0)
        self._base_off = base_off
        self._idx = np.concatenate(idx_parts) if idx_parts else np.zeros(0, dtype=np.int32)
        self._out_off, self._sep_off, self._sep_size = out_off, sep_off, sep_size
        self._msg_ptr, self._msg_off = msg_ptr, np.array(msg_off, dtype=i64)
        self._msg_child = np.array(msg_child, dtype=i64)
        self._lam_ptr, self._lam_off = lam_ptr, np.array(lam_off, dtype=i64)
        self._lam_var = np.array(lam_var, dtype=i64)
        self._cv = (cv_ptr, np.array(cv_var, dtype=i64), np.array(cv_stride, dtype=i64),
                    np.array(cv_insep, dtype=np.bool_))

    # ------------------------------------------------------------------ queries
    def _sparse_rows(self, ev: NDArray[np.int32]) -> NDArray[np.bool_]:
        """Rows to propagate one by one over their evidence-consistent entries only."""
        if self.sparse is not None:
            return np.full(ev.shape[0], bool(self.sparse))
        cost = np.empty(ev.shape[0])
        K.sparse_cost(ev, self._cv[0], self._cv[1], self._arities, cost)
        return cost * _SPARSE_PENALTY < self.n_entries

    def _run_sparse(self, ev: NDArray[np.int32], mode: int, want_x: bool
                    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        rows = ev.shape[0]
        logz = np.empty(rows)
        x = np.empty((rows if want_x else 0, self.net.n_vars), dtype=np.int64)
        m = self.width + 1
        K.sparse_rows(mode, want_x, self._post, self._pre, self._base, self._base_off,
                      self._idx, self._out_off, self._sep_off, self._msg_ptr, self._msg_off,
                      *self._cv, self._arities, np.ascontiguousarray(ev),
                      np.empty(max(self._n_sep, 1)), np.empty(m, dtype=np.int64),
                      np.empty(m, dtype=np.int64), logz, x)
        return logz, x

    def _batches(self, n_rows: int, per_row: int) -> list[tuple[int, int]]:
        b = int(max(1, min(_MAX_BATCH, self.batch_memory // max(per_row, 1))))
        return [(i, min(i + b, n_rows)) for i in range(0, n_rows, b)]

    def _collect(self, ev: NDArray[np.int32], mode: int
                 ) -> tuple[NDArray[Any], NDArray[Any], NDArray[Any], NDArray[Any]]:
        """ev (n, B). Returns lam, use, up, logz."""
        nb_ = ev.shape[1]
        lam = np.empty((int(self._var_off[-1]), nb_))
        K.fill_lambda(ev, self._var_off, self._arities, lam)
        use = np.asarray((ev >= 0).any(axis=1))
        up = np.empty((self._n_sep, nb_))
        logz = np.empty(nb_)
        K.collect(mode, self._post, self._base, self._base_off, self._idx, self._out_off,
                  self._sep_off, self._sep_size, self._msg_ptr, self._msg_off, self._lam_ptr,
                  self._lam_var, self._lam_off, use, lam, up, logz, np.empty(nb_))
        return lam, use, up, logz

    def log_prob_evidence(self, evidence: Evidence | None) -> NDArray[np.float64]:
        """ln P(e) for each evidence row (0 for a row with no evidence)."""
        ev = as_evidence(self.net, evidence)
        out = np.empty(ev.shape[0])
        sp = self._sparse_rows(ev)
        if sp.any():
            out[sp] = self._run_sparse(ev[sp], K.MODE_SUM, False)[0]
        dense = np.flatnonzero(~sp)
        per_row = 8 * (self._n_sep + int(self._var_off[-1])) + 4 * self.net.n_vars
        for a, b in self._batches(dense.size, per_row):
            rows = dense[a:b]
            out[rows] = self._collect(np.ascontiguousarray(ev[rows].T), K.MODE_SUM)[3]
        return out

    def posterior(self, evidence: Evidence | None,
                  query: Sequence[str | int] | None = None) -> Posterior:
        """ln P(e) and the posterior marginals of ``query`` (default: every variable)."""
        ev = as_evidence(self.net, evidence)
        q = list(range(self.net.n_vars)) if query is None else \
            [variable_index(self.net, x) for x in query]
        rows = ev.shape[0]
        logp = np.empty(rows)
        margs = {v: np.empty((rows, int(self._arities[v]))) for v in q}
        per_row = 16 * (self._n_sep + int(self._var_off[-1])) + 4 * self.net.n_vars
        for a, b in self._batches(rows, per_row):
            e = np.ascontiguousarray(ev[a:b].T)
            lam, use, up, logz = self._collect(e, K.MODE_SUM)
            down = np.zeros_like(up)
            down[self._roots, :] = 1.0
            marg = np.zeros_like(lam)
            K.distribute(self._pre, self._base, self._base_off, self._idx, self._out_off,
                         self._sep_off, self._sep_size, self._msg_ptr, self._msg_off,
                         self._msg_child, self._lam_ptr, self._lam_var, self._lam_off, use,
                         lam, up, down, marg, np.empty(b - a), logz, self._var_off,
                         self._arities)
            logp[a:b] = logz
            dead = ~(logz > -np.inf)  # impossible evidence (maybe in another component)
            for v in q:
                m = marg[self._var_off[v]:self._var_off[v + 1]].T
                tot = m.sum(axis=1, keepdims=True)
                tot[dead] = 0.0
                with np.errstate(invalid="ignore", divide="ignore"):
                    margs[v][a:b] = np.where(tot > 0, m / np.where(tot > 0, tot, 1), np.nan)
        return Posterior(logp, margs)

    def marginals(self, evidence: Evidence | None,
                  query: Sequence[str | int] | None = None) -> dict[int, NDArray[np.float64]]:
        """``{v: P(X_v | e)}`` of shape ``(n_rows, r_v)`` for each queried variable."""
        return self.posterior(evidence, query).marginals

    def mpe(self, evidence: Evidence | None) -> MPEResult:
        """Most probable explanation of each evidence row (max-product + traceback)."""
        ev = as_evidence(self.net, evidence)
        rows, n = ev.shape
        x_out = np.empty((rows, n), dtype=np.int64)
        logp = np.empty(rows)
        sp = self._sparse_rows(ev)
        if sp.any():
            logp[sp], x_out[sp] = self._run_sparse(ev[sp], K.MODE_MAX, True)
        dense = np.flatnonzero(~sp)
        per_row = 8 * (self._n_sep + int(self._var_off[-1])) + 12 * n
        cnt = np.zeros(self.width + 1, dtype=np.int64)
        for a0, b0 in self._batches(dense.size, per_row):
            sel = dense[a0:b0]
            e = np.ascontiguousarray(ev[sel].T)
            lam, use, up, logz = self._collect(e, K.MODE_MAX)
            x = e.astype(np.int64)
            K.traceback(self._pre, self._base, self._base_off, self._idx, self._msg_ptr,
                        self._msg_off, self._lam_ptr, self._lam_var, self._lam_off, use, lam,
                        up, *self._cv, self._arities, cnt, logz, x)
            obs = e >= 0
            x[obs] = e[obs]
            x_out[sel] = x.T
            logp[sel] = logz
        return MPEResult(x_out, logp)

    def log_prob_rows(self, codes: NDArray[np.integer],
                      missing: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
        """ln P(row) of rows of codes (n_rows, n_vars); cells marked in ``missing`` are
        summed out (ln P(observed part)). Complete rows use the CPTs directly."""
        codes = np.asarray(codes)
        out = np.empty(codes.shape[0])
        if missing is None or not np.asarray(missing).any():
            return self.net.log_prob_rows(codes)
        missing = np.asarray(missing, dtype=bool)
        partial = missing.any(axis=1)
        full = ~partial
        if full.any():
            out[full] = self.net.log_prob_rows(codes[full])
        ev = np.where(missing[partial], -1, codes[partial].astype(np.int64))
        out[partial] = self.log_prob_evidence(ev)
        return out


def build_junction_tree(net: BayesianNetwork, order: Sequence[int] | None = None, *,
                        memory_limit: int = DEFAULT_MEMORY_LIMIT,
                        batch_memory: int = DEFAULT_BATCH_MEMORY,
                        sparse: bool | None = None) -> JunctionTree:
    """Junction tree of ``net`` from an elimination ``order`` (default: min-fill).

    Parameters
    ----------
    net : BayesianNetwork
    order : sequence of int, optional
        Elimination order of the moral graph (first eliminated first), e.g. the
        ``order`` of a bounded-treewidth learner's certificate.
    memory_limit : int
        Bytes the tree's tables may take; beyond it
        :class:`JunctionTreeTooLargeError` names the largest clique and its table size.
    batch_memory : int
        Working memory of one batch of evidence rows; sets the batch size.
    sparse : bool, optional
        P(e) and MPE: propagate each row alone over the clique entries consistent with
        its evidence (fast when most variables are observed: SEM E-step, rows with a
        few missing cells) instead of the batched dense pass. Default: chosen per row
        from the number of entries each way would visit.

    Raises
    ------
    JunctionTreeTooLargeError
        The tables would exceed ``memory_limit``.
    DataError
        ``order`` is not a permutation of the variables.

    Examples
    --------
    >>> import numpy as np
    >>> from bnsl_dist.graph import DAG
    >>> from bnsl_dist.model import BayesianNetwork
    >>> net = BayesianNetwork(DAG.from_parents([(), (0,)], ["A", "B"]), (("0", "1"),
    ...     ("0", "1")), (np.array([[0.3, 0.7]]), np.array([[0.9, 0.1], [0.2, 0.8]])))
    >>> jt = build_junction_tree(net)
    >>> round(float(np.exp(jt.log_prob_evidence({"B": "1"}))[0]), 6)  # 0.3*0.1 + 0.7*0.8
    0.59
    >>> jt.marginals({"B": 1}, ["A"])[0].round(4).tolist()
    [[0.0508, 0.9492]]
    >>> jt.mpe({"B": 1}).assignment.tolist()
    [[1, 1]]
    """
    return JunctionTree(net, order, memory_limit=memory_limit, batch_memory=batch_memory,
                        sparse=sparse)
