"""Numba kernels of batched junction-tree propagation (inputs validated by the driver).

Layout. Every per-row quantity is a 2-D float array whose *columns* are the rows of the
batch (``buf[col, b]``), so the innermost loops run over the batch contiguously and
vectorise. Clique ``c`` has ``S_c`` table entries; entry ``s`` is the mixed-radix index of
the clique's variables (ascending, first fastest). All index maps live in one int32
array ``idx``; an *offset* points at the ``S_c``-long map of one factor:

* ``out_off[c]``: entry -> configuration of ``c``'s separator with its parent (a root
  has the empty separator: one configuration);
* ``msg_off[f]`` for the child factors ``f`` in ``msg_ptr[c]:msg_ptr[c+1]``: entry ->
  column of the child's upward message (``sep_off[child] + t``);
* ``lam_off[l]`` for the variables ``lam_var[l]`` homed at ``c`` (``lam_ptr``): entry ->
  column of the variable's evidence indicator (``var_off[v] + state``).

``up``/``down`` have ``sum(sep_size)`` columns (messages), ``lam``/``marg`` have
``sum(arities)`` columns. Messages are rescaled to a maximum of 1 per batch row and the
logs of the scales summed into ``logz``, so nothing underflows on large networks; where
the entries of one clique still underflow for a row (below :data:`TINY`: the product of
many child messages), that row's entries of the clique are recomputed in logs.
"""

from __future__ import annotations

import numba as nb
import numpy as np

MODE_SUM = 0
MODE_MAX = 1

#: A clique's entries are products of factors of at most 1 (CPT entries, 0/1 evidence,
#: messages rescaled to a maximum of 1). When the largest of a row falls below this,
#: the row's entries of that clique are recomputed in log space and shifted by their
#: maximum: the product of many child messages (a variable with hundreds of children
#: whose evidence disagrees) underflows a double at every entry otherwise.
TINY = 1e-250


@nb.njit(cache=True, nogil=True)
def fill_lambda(evidence, var_off, arities, lam):  # IN evidence (n, B) int32; OUT lam
    n, nb_ = evidence.shape
    for v in range(n):
        o = var_off[v]
        r = arities[v]
        for b in range(nb_):
            e = evidence[v, b]
            if e < 0:
                for k in range(r):
                    lam[o + k, b] = 1.0
            else:
                for k in range(r):
                    lam[o + k, b] = 0.0
                lam[o + e, b] = 1.0


@nb.njit(cache=True, nogil=True)
def _entry(c, s, base_val, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam,
           up, lam, tmp):
    """tmp[b] = base * evidence * child messages at entry s of clique c."""
    nb_ = tmp.shape[0]
    for b in range(nb_):
        tmp[b] = base_val
    for li in range(lam_ptr[c], lam_ptr[c + 1]):
        if use_lam[lam_var[li]]:
            col = idx[lam_off[li] + s]
            for b in range(nb_):
                tmp[b] *= lam[col, b]
    for f in range(msg_ptr[c], msg_ptr[c + 1]):
        col = idx[msg_off[f] + s]
        for b in range(nb_):
            tmp[b] *= up[col, b]


@nb.njit(cache=True, nogil=True)
def _log_entry(c, s, b, base_val, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam,
               up, lam):
    """ln of what :func:`_entry` computes at entry s of clique c for batch row b
    (-inf for 0); ``base_val`` > 0, ``lam`` holds 0/1 indicators."""
    for li in range(lam_ptr[c], lam_ptr[c + 1]):
        if use_lam[lam_var[li]] and lam[idx[lam_off[li] + s], b] == 0.0:
            return -np.inf
    lv = np.log(base_val)
    for f in range(msg_ptr[c], msg_ptr[c + 1]):
        u = up[idx[msg_off[f] + s], b]
        if u == 0.0:
            return -np.inf
        lv += np.log(u)
    return lv


@nb.njit(cache=True, nogil=True)
def _collect_row_in_logs(mode, c, b, base, base_off, idx, out_off, sep_off, sep_size,
                         msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam, lam, up):
    """Recompute column b of clique c's upward message from log entries shifted by their
    maximum; returns that shift (-inf: every entry is 0, the message is left 0)."""
    b0 = base_off[c]
    so = sep_off[c]
    top = -np.inf
    for s in range(base_off[c + 1] - b0):
        bv = base[b0 + s]
        if bv != 0.0:
            lv = _log_entry(c, s, b, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off,
                            use_lam, up, lam)
            if lv > top:
                top = lv
    for t in range(sep_size[c]):
        up[so + t, b] = 0.0
    if top == -np.inf:
        return top
    for s in range(base_off[c + 1] - b0):
        bv = base[b0 + s]
        if bv == 0.0:
            continue
        lv = _log_entry(c, s, b, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off,
                        use_lam, up, lam)
        if lv == -np.inf:
            continue
        val = np.exp(lv - top)
        o = so + idx[out_off[c] + s]
        if mode == MODE_SUM:
            up[o, b] += val
        elif val > up[o, b]:
            up[o, b] = val
    return top


@nb.njit(cache=True, nogil=True)
def _distribute_row_in_logs(c, b, base, base_off, idx, out_off, sep_off, sep_size, msg_ptr,
                            msg_off, msg_child, lam_ptr, lam_var, lam_off, use_lam, lam, up,
                            down, marg, var_off, arities):
    """Recompute clique c's contributions to ``marg`` and to its children's ``down``
    columns for batch row b from log entries shifted by their maximum."""
    b0 = base_off[c]
    so = sep_off[c]
    top = -np.inf
    for s in range(base_off[c + 1] - b0):
        bv = base[b0 + s]
        d = down[so + idx[out_off[c] + s], b]
        if bv != 0.0 and d > 0.0:
            lv = _log_entry(c, s, b, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off,
                            use_lam, up, lam) + np.log(d)
            if lv > top:
                top = lv
    for li in range(lam_ptr[c], lam_ptr[c + 1]):
        v = lam_var[li]
        for k in range(arities[v]):
            marg[var_off[v] + k, b] = 0.0
    for f in range(msg_ptr[c], msg_ptr[c + 1]):
        ch = msg_child[f]
        for t in range(sep_size[ch]):
            down[sep_off[ch] + t, b] = 0.0
    if top == -np.inf:
        return
    for s in range(base_off[c + 1] - b0):
        bv = base[b0 + s]
        d = down[so + idx[out_off[c] + s], b]
        if bv == 0.0 or d <= 0.0:
            continue
        lv = _log_entry(c, s, b, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off,
                        use_lam, up, lam)
        if lv == -np.inf:
            continue
        val = np.exp(lv + np.log(d) - top)
        for li in range(lam_ptr[c], lam_ptr[c + 1]):
            marg[idx[lam_off[li] + s], b] += val
        for f in range(msg_ptr[c], msg_ptr[c + 1]):
            down[idx[msg_off[f] + s], b] += val


@nb.njit(cache=True, nogil=True)
def _rescale(buf, off, size, logz, track):
    """Divide columns off..off+size of every batch row by their max; log of it to logz."""
    nb_ = buf.shape[1]
    for b in range(nb_):
        m = 0.0
        for t in range(size):
            if buf[off + t, b] > m:
                m = buf[off + t, b]
        if m > 0.0:
            inv = 1.0 / m
            for t in range(size):
                buf[off + t, b] *= inv
            if track:
                logz[b] += np.log(m)
        elif track:
            logz[b] = -np.inf


@nb.njit(cache=True, nogil=True)
def collect(mode, post, base, base_off, idx, out_off, sep_off, sep_size, msg_ptr, msg_off,
            lam_ptr, lam_var, lam_off, use_lam, lam, up, logz, tmp):
    """Upward pass (children first). OUT ``up`` messages and ``logz`` (B,).

    In sum mode the sum of ``logz`` over the pass is ln P(e); in max mode it is
    ln max_x P(x, e) (then :func:`traceback` recovers the maximiser).
    """
    nb_ = tmp.shape[0]
    for b in range(nb_):
        logz[b] = 0.0
    for ci in range(post.shape[0]):
        c = post[ci]
        so = sep_off[c]
        ss = sep_size[c]
        for t in range(ss):
            for b in range(nb_):
                up[so + t, b] = 0.0
        b0 = base_off[c]
        for s in range(base_off[c + 1] - b0):
            bv = base[b0 + s]
            if bv == 0.0:
                continue
            _entry(c, s, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam,
                   up, lam, tmp)
            o = so + idx[out_off[c] + s]
            if mode == MODE_SUM:
                for b in range(nb_):
                    up[o, b] += tmp[b]
            else:
                for b in range(nb_):
                    up[o, b] = max(up[o, b], tmp[b])
        for b in range(nb_):
            m = 0.0
            for t in range(ss):
                if up[so + t, b] > m:
                    m = up[so + t, b]
            if m < TINY and logz[b] > -np.inf:  # underflow: this row again in logs
                top = _collect_row_in_logs(mode, c, b, base, base_off, idx, out_off,
                                           sep_off, sep_size, msg_ptr, msg_off, lam_ptr,
                                           lam_var, lam_off, use_lam, lam, up)
                if top == -np.inf:
                    logz[b] = -np.inf
                    continue
                logz[b] += top
                m = 0.0
                for t in range(ss):
                    if up[so + t, b] > m:
                        m = up[so + t, b]
            if m > 0.0:
                inv = 1.0 / m
                for t in range(ss):
                    up[so + t, b] *= inv
                logz[b] += np.log(m)
            else:
                logz[b] = -np.inf


@nb.njit(cache=True, nogil=True)
def distribute(pre, base, base_off, idx, out_off, sep_off, sep_size, msg_ptr, msg_off,
               msg_child, lam_ptr, lam_var, lam_off, use_lam, lam, up, down, marg, tmp,
               logz, var_off, arities):
    """Downward pass (Hugin, parents first) after a sum-mode :func:`collect` (``logz``
    its output: rows at -inf are impossible and skipped by the underflow check).

    ``down`` must hold 1 in the (single) separator column of every root and 0
    elsewhere, ``marg`` 0. OUT ``marg[var_off[v] + k, b]``: unnormalised P(v = k, e) up
    to a scale of the row and of v's clique (normalise per variable).
    """
    nb_ = tmp.shape[0]
    for ci in range(pre.shape[0]):
        c = pre[ci]
        so = sep_off[c]
        b0 = base_off[c]
        for f in range(msg_ptr[c], msg_ptr[c + 1]):
            ch = msg_child[f]
            for t in range(sep_size[ch]):
                for b in range(nb_):
                    down[sep_off[ch] + t, b] = 0.0
        for s in range(base_off[c + 1] - b0):
            bv = base[b0 + s]
            if bv == 0.0:
                continue
            _entry(c, s, bv, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam,
                   up, lam, tmp)
            o = so + idx[out_off[c] + s]
            for b in range(nb_):
                tmp[b] *= down[o, b]
            for li in range(lam_ptr[c], lam_ptr[c + 1]):
                col = idx[lam_off[li] + s]
                for b in range(nb_):
                    marg[col, b] += tmp[b]
            for f in range(msg_ptr[c], msg_ptr[c + 1]):
                col = idx[msg_off[f] + s]
                for b in range(nb_):
                    down[col, b] += tmp[b]
        # every clique homes a variable: its marg columns hold the clique's total mass
        v0 = lam_var[lam_ptr[c]]
        for b in range(nb_):
            if logz[b] == -np.inf:
                continue
            tot = 0.0
            for k in range(arities[v0]):
                tot += marg[var_off[v0] + k, b]
            if tot < TINY:  # underflow: this row again in logs
                _distribute_row_in_logs(c, b, base, base_off, idx, out_off, sep_off,
                                        sep_size, msg_ptr, msg_off, msg_child, lam_ptr,
                                        lam_var, lam_off, use_lam, lam, up, down, marg,
                                        var_off, arities)
        for f in range(msg_ptr[c], msg_ptr[c + 1]):
            ch = msg_child[f]
            co = sep_off[ch]
            for t in range(sep_size[ch]):
                for b in range(nb_):
                    u = up[co + t, b]
                    if u > 0.0:
                        down[co + t, b] /= u
                    else:
                        down[co + t, b] = 0.0
            _rescale(down, co, sep_size[ch], tmp, False)


@nb.njit(cache=True, nogil=True, inline="always")
def _trace_best(in_logs, c, b, s, base, b0, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off,
                use_lam, lam, up, j0, j1, cv_var, cv_stride, cv_insep, arities, cnt):
    """The first maximiser over the entries of clique c that extend entry s (its
    separator's states) for batch row b, and its value (its log with ``in_logs``)."""
    for j in range(j0, j1):
        cnt[j - j0] = 0
    best = -np.inf if in_logs else -1.0
    best_s = s
    while True:
        val = base[b0 + s]
        if in_logs:
            if val != 0.0:
                val = _log_entry(c, s, b, val, idx, msg_ptr, msg_off, lam_ptr, lam_var,
                                 lam_off, use_lam, up, lam)
            else:
                val = -np.inf
        elif val != 0.0:
            for li in range(lam_ptr[c], lam_ptr[c + 1]):
                if use_lam[lam_var[li]]:
                    val *= lam[idx[lam_off[li] + s], b]
            for f in range(msg_ptr[c], msg_ptr[c + 1]):
                val *= up[idx[msg_off[f] + s], b]
        if val > best:
            best = val
            best_s = s
        j = j0
        while j < j1:
            if not cv_insep[j]:
                cnt[j - j0] += 1
                s += cv_stride[j]
                if cnt[j - j0] < arities[cv_var[j]]:
                    break
                s -= cnt[j - j0] * cv_stride[j]
                cnt[j - j0] = 0
            j += 1
        if j == j1:
            break
    return best, best_s


@nb.njit(cache=True, nogil=True)
def traceback(pre, base, base_off, idx, msg_ptr, msg_off, lam_ptr, lam_var, lam_off, use_lam,
              lam, up, cv_ptr, cv_var, cv_stride, cv_insep, arities, cnt, logz, x):
    """Argmax traceback after a max-mode :func:`collect` (``logz`` its output), parents
    first.

    For each clique, given its separator's states (already fixed by the ancestors), the
    entries consistent with them are re-evaluated exactly as :func:`collect` evaluated
    them and the first maximiser fixes the clique's other variables (compared in logs
    where the products underflow, as :func:`collect` then did). OUT ``x[v, b]``.
    ``cnt``: int64 scratch of at least the largest clique size.
    """
    nb_ = x.shape[1]
    for ci in range(pre.shape[0]):
        c = pre[ci]
        j0 = cv_ptr[c]
        j1 = cv_ptr[c + 1]
        b0 = base_off[c]
        for b in range(nb_):
            s = 0
            for j in range(j0, j1):
                if cv_insep[j]:
                    s += x[cv_var[j], b] * cv_stride[j]
            best, best_s = _trace_best(False, c, b, s, base, b0, idx, msg_ptr, msg_off,
                                       lam_ptr, lam_var, lam_off, use_lam, lam, up, j0, j1,
                                       cv_var, cv_stride, cv_insep, arities, cnt)
            if best < TINY and logz[b] > -np.inf:
                best, best_s = _trace_best(True, c, b, s, base, b0, idx, msg_ptr, msg_off,
                                           lam_ptr, lam_var, lam_off, use_lam, lam, up, j0,
                                           j1, cv_var, cv_stride, cv_insep, arities, cnt)
            for j in range(j0, j1):
                if not cv_insep[j]:
                    x[cv_var[j], b] = (best_s // cv_stride[j]) % arities[cv_var[j]]


@nb.njit(cache=True, nogil=True)
def ancestral_topo(topo, par_ptr, par, seed):  # IN seed (n,) bool
    """The variables of ``seed`` and all their ancestors, in the order of ``topo``: one
    pass over ``topo`` reversed marks the parents of every marked variable."""
    mark = seed.copy()
    count = 0
    for i in range(topo.shape[0] - 1, -1, -1):
        v = topo[i]
        if mark[v]:
            count += 1
            for q in range(par_ptr[v], par_ptr[v + 1]):
                mark[par[q]] = True
    out = np.empty(count, dtype=np.int64)
    j = 0
    for i in range(topo.shape[0]):
        if mark[topo[i]]:
            out[j] = topo[i]
            j += 1
    return out


@nb.njit(cache=True, nogil=True)
def lw_sample(topo, pos, par_ptr, par, cpt_off, arities, cum, logcpt, ev, u, x, logw,
              logp):
    """Likelihood weighting: forward-sample ``u.shape[1]`` particles of the variables
    ``topo`` (a topological order of an ancestral set: every parent comes first).

    Variable-major: one variable at a time for every particle, so the variable's CPT
    stays in cache while the particles pass through it (particle-major walks of
    networks of thousands of variables miss the cache at every variable); the states
    are kept only for ``topo``, in a narrow integer type, so the parents' rows stay in
    cache too.

    IN ``pos`` (n,): row of ``x`` of each variable of ``topo`` (others unread); ``u``
    (len(topo), S) uniforms, row ``i`` for ``topo[i]``; ``ev`` (n,) evidence codes (-1
    unobserved); ``cum`` / ``logcpt``: cumulative / log CPT rows flattened at
    ``cpt_off[v] + j * r_v``.
    OUT ``x`` (len(topo), S) states, row ``i`` for ``topo[i]``; ``logw`` (S,) ln of the
    evidence weight, ``logp`` (S,) ln P of the sampled variables' states.
    """
    n_s = u.shape[1]
    j = np.empty(n_s, dtype=np.int64)
    for s in range(n_s):
        logw[s] = 0.0
        logp[s] = 0.0
    for i in range(topo.shape[0]):
        v = topo[i]
        for s in range(n_s):
            j[s] = 0
        radix = 1
        for q in range(par_ptr[v], par_ptr[v + 1]):
            p = par[q]
            row_p = pos[p]
            for s in range(n_s):
                j[s] += x[row_p, s] * radix
            radix *= arities[p]
        r = arities[v]
        off = cpt_off[v]
        e = ev[v]
        if e >= 0:
            for s in range(n_s):
                lc = logcpt[off + j[s] * r + e]
                logw[s] += lc
                logp[s] += lc
                x[i, s] = e
        else:
            for s in range(n_s):
                row = off + j[s] * r
                uu = u[i, s]
                k = 0
                while k < r - 1 and uu >= cum[row + k]:
                    k += 1
                x[i, s] = k
                logp[s] += logcpt[row + k]


@nb.njit(cache=True, nogil=True)
def sparse_cost(ev, cv_ptr, cv_var, arities, out):  # IN ev (R, n); OUT out (R,) float64
    """Entries a row-by-row pass would visit: sum over cliques of the product of the
    arities of the row's unobserved clique members."""
    for b in range(ev.shape[0]):
        tot = 0.0
        for c in range(cv_ptr.shape[0] - 1):
            prod = 1.0
            for j in range(cv_ptr[c], cv_ptr[c + 1]):
                if ev[b, cv_var[j]] < 0:
                    prod *= arities[cv_var[j]]
            tot += prod
        out[b] = tot


@nb.njit(cache=True, nogil=True)
def _advance(s, nu, uj, cnt, cv_var, cv_stride, arities):
    """Next entry over the free positions ``uj[:nu]`` (mixed radix); -1 when done."""
    i = 0
    while i < nu:
        j = uj[i]
        cnt[i] += 1
        s += cv_stride[j]
        if cnt[i] < arities[cv_var[j]]:
            return s
        s -= cnt[i] * cv_stride[j]
        cnt[i] = 0
        i += 1
    return -1


@nb.njit(cache=True, nogil=True)
def _log_entry_row(c, s, base_val, idx, msg_ptr, msg_off, up):
    """:func:`sparse_rows`' entry s of clique c in logs (-inf for 0; ``base_val`` > 0)."""
    lv = np.log(base_val)
    for f in range(msg_ptr[c], msg_ptr[c + 1]):
        u = up[idx[msg_off[f] + s]]
        if u == 0.0:
            return -np.inf
        lv += np.log(u)
    return lv


@nb.njit(cache=True, nogil=True)
def sparse_rows(mode, want_x, post, pre, base, base_off, idx, out_off, sep_off, msg_ptr,
                msg_off, cv_ptr, cv_var, cv_stride, cv_insep, arities, ev, up, uj, cnt,
                logz, x):
    """Row-by-row propagation visiting only the clique entries consistent with each row's
    evidence (cost: sum over cliques of r^(unobserved members)); for rows with much
    evidence (SEM E-step, log-likelihood of rows with a few missing cells).

    IN ``ev`` (R, n) codes (-1 unobserved). Scratch: ``up`` (sum of separator sizes,),
    ``uj``, ``cnt`` (largest clique size,). OUT ``logz`` (R,): ln P(e) (sum mode) or
    ln max_x P(x, e) (max mode); with ``want_x`` (max mode), ``x`` (R, n) the maximiser.
    Separator entries are read and written only where consistent with the row's
    evidence, on both sides of every separator, so nothing else needs clearing.
    """
    for b in range(ev.shape[0]):
        lz = 0.0
        for ci in range(post.shape[0]):
            c = post[ci]
            so = sep_off[c]
            b0 = base_off[c]
            oo = out_off[c]
            s0 = 0
            nsep = 0
            for j in range(cv_ptr[c], cv_ptr[c + 1]):  # free separator members first
                e = ev[b, cv_var[j]]
                if e >= 0:
                    s0 += e * cv_stride[j]
                elif cv_insep[j]:
                    uj[nsep] = j
                    cnt[nsep] = 0
                    nsep += 1
            nu = nsep
            for j in range(cv_ptr[c], cv_ptr[c + 1]):
                if ev[b, cv_var[j]] < 0 and not cv_insep[j]:
                    uj[nu] = j
                    cnt[nu] = 0
                    nu += 1
            s = s0  # each consistent separator entry once
            while s >= 0:
                up[so + idx[oo + s]] = 0.0
                s = _advance(s, nsep, uj, cnt, cv_var, cv_stride, arities)
            s = s0
            while s >= 0:
                val = base[b0 + s]
                if val != 0.0:
                    for f in range(msg_ptr[c], msg_ptr[c + 1]):
                        val *= up[idx[msg_off[f] + s]]
                    o = so + idx[oo + s]
                    if mode == MODE_SUM:
                        up[o] += val
                    elif val > up[o]:
                        up[o] = val
                s = _advance(s, nu, uj, cnt, cv_var, cv_stride, arities)
            m = 0.0
            s = s0
            while s >= 0:
                m = max(m, up[so + idx[oo + s]])
                s = _advance(s, nsep, uj, cnt, cv_var, cv_stride, arities)
            # underflow (see TINY): the clique again in logs, the loops above repeated
            # inline (as helpers called per row and clique they slowed the common path)
            if m < TINY and lz > -np.inf:
                top = -np.inf
                s = s0
                while s >= 0:
                    val = base[b0 + s]
                    if val != 0.0:
                        top = max(top, _log_entry_row(c, s, val, idx, msg_ptr, msg_off, up))
                    s = _advance(s, nu, uj, cnt, cv_var, cv_stride, arities)
                s = s0
                while s >= 0:
                    up[so + idx[oo + s]] = 0.0
                    s = _advance(s, nsep, uj, cnt, cv_var, cv_stride, arities)
                if top > -np.inf:
                    lz += top
                    s = s0
                    while s >= 0:
                        val = base[b0 + s]
                        if val != 0.0:
                            val = np.exp(_log_entry_row(c, s, val, idx, msg_ptr, msg_off, up)
                                         - top)
                            o = so + idx[oo + s]
                            if mode == MODE_SUM:
                                up[o] += val
                            elif val > up[o]:
                                up[o] = val
                        s = _advance(s, nu, uj, cnt, cv_var, cv_stride, arities)
                    m = 0.0
                    s = s0
                    while s >= 0:
                        m = max(m, up[so + idx[oo + s]])
                        s = _advance(s, nsep, uj, cnt, cv_var, cv_stride, arities)
                else:
                    m = 0.0
            if m > 0.0:
                inv = 1.0 / m
                s = s0
                while s >= 0:
                    up[so + idx[oo + s]] *= inv
                    s = _advance(s, nsep, uj, cnt, cv_var, cv_stride, arities)
                lz += np.log(m)
            else:
                lz = -np.inf
        logz[b] = lz
        if not want_x:
            continue
        for v in range(ev.shape[1]):
            x[b, v] = ev[b, v]
        for ci in range(pre.shape[0]):
            c = pre[ci]
            b0 = base_off[c]
            s = 0
            nu = 0
            for j in range(cv_ptr[c], cv_ptr[c + 1]):
                v = cv_var[j]
                if ev[b, v] >= 0 or cv_insep[j]:
                    s += x[b, v] * cv_stride[j]
                else:
                    uj[nu] = j
                    cnt[nu] = 0
                    nu += 1
            s_start = s
            best = -1.0
            best_s = s
            while s >= 0:
                val = base[b0 + s]
                if val != 0.0:
                    for f in range(msg_ptr[c], msg_ptr[c + 1]):
                        val *= up[idx[msg_off[f] + s]]
                if val > best:
                    best = val
                    best_s = s
                s = _advance(s, nu, uj, cnt, cv_var, cv_stride, arities)
            if best < TINY and lz > -np.inf:  # underflow: compare in logs, as collected
                best = -np.inf
                s = s_start
                best_s = s
                while s >= 0:
                    val = base[b0 + s]
                    if val != 0.0:
                        val = _log_entry_row(c, s, val, idx, msg_ptr, msg_off, up)
                        if val > best:
                            best = val
                            best_s = s
                    s = _advance(s, nu, uj, cnt, cv_var, cv_stride, arities)
            for i in range(nu):
                j = uj[i]
                x[b, cv_var[j]] = (best_s // cv_stride[j]) % arities[cv_var[j]]
