"""Approximate inference for networks too wide for a junction tree: likelihood weighting.

Each evidence row gets its own particles: variables are sampled in topological order,
observed ones are clamped and multiply the particle's weight by their CPT entry. Then

* P(e) ~ mean weight (an unbiased estimate), reported as ln;
* P(X = k | e) ~ weighted frequency of k;
* MPE ~ the particle of highest ln P(x, e) (a heuristic: no guarantee of optimality).

Only the evidence's (and queried variables') ancestors are sampled: a variable with no
observed or queried descendant sums out of P(e) and of the queried marginals (a *barren*
variable; Shachter 1986), so leaving it unsampled changes neither estimate's
distribution, only its cost: five random evidence variables of the random networks r0,
r5 and r10 (2,000, 4,000 and 10,000 variables) have 2-64 % of the network as ancestors,
45-48 % on average (``workflows/benchmarks/lw_barren.py``). MPE samples every variable.

Budgets: at most ``n_samples`` particles and at most ``seconds`` per evidence row,
whichever ends first; with ``seconds=None`` results depend only on the seed. Row ``i``
draws from the ``i``-th child of the seed's ``SeedSequence``, so results do not depend
on how rows are batched.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.inference import _kernels as K
from bnsl_dist.inference.evidence import Evidence, as_evidence, variable_index
from bnsl_dist.inference.junction_tree import MPEResult, Posterior
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["LikelihoodWeighting"]


class LikelihoodWeighting:
    """Likelihood-weighting importance sampler with the query methods of
    :class:`~bnsl_dist.inference.JunctionTree`.

    Parameters
    ----------
    net : BayesianNetwork
    n_samples : int, default 10_000
        Particles per evidence row (an upper bound when ``seconds`` is set).
    seconds : float, optional
        Wall-clock limit per evidence row.
    rng : numpy Generator, SeedSequence, int or None
        Seed; fixed seed and no time limit give identical results.
    chunk : int
        Particles drawn per kernel call.
    barren : bool, default True
        Leave the variables that are neither queried nor observed, nor ancestors of such,
        unsampled (False: sample every variable, as plain likelihood weighting does).

    References
    ----------
    R. Fung, K.-C. Chang, "Weighing and integrating evidence for stochastic simulation
    in Bayesian networks", UAI 1989; R. D. Shachter, M. A. Peot, "Simulation approaches
    to general probabilistic inference on belief networks", UAI 1989. R. D. Shachter,
    "Evaluating influence diagrams", Operations Research 34(6), 1986 (barren nodes).
    M. Scanagatta et al., "Approximate structure learning for large Bayesian networks",
    Machine Learning 107, 2018, §6.3 (approximate inference on unbounded networks, with a
    time limit).
    """

    exact = False

    def __init__(self, net: BayesianNetwork, *, n_samples: int = 10_000,
                 seconds: float | None = None,
                 rng: np.random.Generator | np.random.SeedSequence | int | None = None,
                 chunk: int = 1024, barren: bool = True) -> None:
        if int(n_samples) < 1:
            raise InvalidConfigError(f"n_samples must be at least 1, got {n_samples}")
        if seconds is not None and not seconds > 0:
            raise InvalidConfigError(f"seconds must be positive, got {seconds}")
        self.net = net
        self.n_samples = int(n_samples)
        self.seconds = seconds
        self.chunk = max(1, int(chunk))
        self.barren = bool(barren)
        if isinstance(rng, np.random.SeedSequence):
            self._seed = rng
        elif isinstance(rng, np.random.Generator):
            self._seed = np.random.SeedSequence(int(rng.integers(2**63)))
        else:
            self._seed = np.random.SeedSequence(rng)
        ar = net.arities
        self._arities = ar.astype(np.int64)
        self._topo = np.array(net.dag.topological_order(), dtype=np.int64)
        par = [p for ps in net.dag.parents for p in ps]
        self._par = np.array(par, dtype=np.int64)
        self._par_ptr = np.zeros(net.n_vars + 1, dtype=np.int64)
        self._par_ptr[1:] = np.cumsum([len(ps) for ps in net.dag.parents])
        self._cpt_off = np.zeros(net.n_vars + 1, dtype=np.int64)
        self._cpt_off[1:] = np.cumsum([t.size for t in net.cpts])
        cums = []
        for t in net.cpts:
            c = np.cumsum(t, axis=1)
            c /= c[:, -1:]
            r = t.shape[1]
            last = r - 1 - np.argmax((t > 0)[:, ::-1], axis=1)  # last state of positive prob
            c[np.arange(r)[None, :] >= last[:, None]] = 1.0
            cums.append(c.ravel())
        self._cum = np.concatenate(cums)
        with np.errstate(divide="ignore"):
            self._logcpt = np.log(np.concatenate([t.ravel() for t in net.cpts]))
        self._var_off = np.zeros(net.n_vars + 1, dtype=np.int64)
        self._var_off[1:] = np.cumsum(ar)
        top = int(ar.max()) if net.n_vars else 1
        self._state_dtype = np.int8 if top <= 127 else np.int16 if top <= 32767 else np.int32

    def _sampled(self, ev: NDArray[np.int64], query: NDArray[np.int64] | None
                 ) -> NDArray[np.int64]:
        """The variables a row samples, in topological order: every one when ``query``
        is None or barren variables are kept; else the ancestors of the observed and
        queried variables."""
        if query is None or not self.barren:
            return self._topo
        seed = ev >= 0
        seed[query] = True
        out: NDArray[np.int64] = K.ancestral_topo(self._topo, self._par_ptr, self._par, seed)
        return out

    def _run_row(self, ev: NDArray[np.int32], seed: np.random.SeedSequence,
                 counts: bool = True, query: NDArray[np.int64] | None = None
                 ) -> tuple[float, NDArray[np.float64], NDArray[np.int64], float]:
        """(ln P(e) estimate, weighted state counts (normalised), best particle, its ln P).

        ``query``: the variables whose counts are wanted (None: every variable, and the
        best particle is a complete one); with ``barren``, only they, the observed ones
        and their ancestors are sampled, and the other counts stay 0."""
        gen = np.random.default_rng(seed)
        n = self.net.n_vars
        ev64 = ev.astype(np.int64)
        topo = self._sampled(ev64, query)
        ref = -np.inf  # log reference scale of ``acc`` and ``wsum``
        acc = np.zeros(int(self._var_off[-1]))
        wsum = 0.0
        drawn = 0
        best_lp, best_x = -np.inf, ev64.copy()
        start = time.perf_counter()
        col_off = self._var_off[:-1][topo][:, None]
        pos = np.empty(n, dtype=np.int64)
        pos[topo] = np.arange(topo.size)
        # buffers reused by every chunk (fresh ones cost a page fault per page each time)
        width = min(self.chunk, self.n_samples)
        u_buf = np.empty(topo.size * width)
        x_buf = np.empty(topo.size * width, dtype=self._state_dtype)
        while drawn < self.n_samples:
            m = min(self.chunk, self.n_samples - drawn)
            u = gen.random(out=u_buf[:topo.size * m].reshape(topo.size, m))
            x = x_buf[:topo.size * m].reshape(topo.size, m)
            logw = np.empty(m)
            logp = np.empty(m)
            K.lw_sample(topo, pos, self._par_ptr, self._par, self._cpt_off, self._arities,
                        self._cum, self._logcpt, ev64, u, x, logw, logp)
            drawn += m
            if query is None:
                i = int(np.argmax(logp))
                if logp[i] > best_lp:
                    best_x = ev64.copy()
                    best_x[topo] = x[:, i]
                    best_lp = float(logp[i])
            top = float(logw.max())
            if top > -np.inf:
                if top > ref:
                    scale = np.exp(ref - top) if ref > -np.inf else 0.0
                    acc *= scale
                    wsum *= scale
                    ref = top
                w = np.exp(logw - ref)
                wsum += float(w.sum())
                if counts:
                    cols = (x.astype(np.int64) + col_off).ravel()
                    acc += np.bincount(cols, weights=np.tile(w, topo.size),
                                       minlength=acc.size)
            if self.seconds is not None and time.perf_counter() - start >= self.seconds:
                break
        logpe = ref + np.log(wsum) - np.log(drawn) if wsum > 0 else -np.inf
        marg = acc / wsum if wsum > 0 else np.full_like(acc, np.nan)
        return float(logpe), marg, best_x, best_lp

    def _run(self, evidence: Evidence | None, counts: bool = True,
             query: NDArray[np.int64] | None = None
             ) -> list[tuple[float, NDArray[Any], NDArray[Any], float]]:
        ev = as_evidence(self.net, evidence)
        # the i-th child of the seed, without advancing it: same row, same particles
        seeds = [np.random.SeedSequence(self._seed.entropy, spawn_key=self._seed.spawn_key + (i,))
                 for i in range(ev.shape[0])]
        return [self._run_row(ev[i], seeds[i], counts, query) for i in range(ev.shape[0])]

    def log_prob_evidence(self, evidence: Evidence | None) -> NDArray[np.float64]:
        """Estimated ln P(e) per evidence row."""
        none = np.zeros(0, dtype=np.int64)
        return np.array([r[0] for r in self._run(evidence, counts=False, query=none)])

    def posterior(self, evidence: Evidence | None,
                  query: Sequence[str | int] | None = None) -> Posterior:
        """Estimated ln P(e) and posterior marginals (NaN where no particle had weight)."""
        q = list(range(self.net.n_vars)) if query is None else \
            [variable_index(self.net, x) for x in query]
        res = self._run(evidence, query=None if query is None else np.array(q, dtype=np.int64))
        margs = {v: np.array([r[1][self._var_off[v]:self._var_off[v + 1]] for r in res])
                 .reshape(len(res), -1) for v in q}
        return Posterior(np.array([r[0] for r in res]), margs)

    def marginals(self, evidence: Evidence | None,
                  query: Sequence[str | int] | None = None) -> dict[int, NDArray[np.float64]]:
        return self.posterior(evidence, query).marginals

    def mpe(self, evidence: Evidence | None) -> MPEResult:
        """The most probable particle per row (approximate MPE)."""
        res = self._run(evidence, counts=False)
        return MPEResult(np.array([r[2] for r in res]).reshape(len(res), -1),
                         np.array([r[3] for r in res]))

    def log_prob_rows(self, codes: NDArray[np.integer],
                      missing: NDArray[np.bool_] | None = None) -> NDArray[np.float64]:
        """ln P(row): exact for complete rows, estimated where cells are missing."""
        codes = np.asarray(codes)
        if missing is None or not np.asarray(missing).any():
            return self.net.log_prob_rows(codes)
        missing = np.asarray(missing, dtype=bool)
        out = self.net.log_prob_rows(np.where(missing, 0, codes))
        part = missing.any(axis=1)
        out[part] = self.log_prob_evidence(np.where(missing[part], -1,
                                                    codes[part].astype(np.int64)))
        return out
