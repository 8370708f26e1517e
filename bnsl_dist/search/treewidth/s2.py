"""S2: bounded-treewidth DAGs inside uniformly sampled k-trees chosen by their
informative score (Nie, de Campos & Ji 2015), the baseline k-G and k-G_ENT are
compared against.

Each iteration samples a labelled k-tree uniformly (as decoding a uniform Dandelion
code would; the sampler is described in :mod:`bnsl_dist.search.treewidth._s2_kernels`)
and scores it without learning a DAG: the information on its edges over the absolute
score of the best parent sets it allows. The DAG is learned only in a k-tree whose
informative score beats every earlier one's, so an iteration is cheap and most of the
budget explores k-trees. The DAG of a k-tree follows its insertion order: the initial
(k+1)-clique gets its best DAG exactly, each later variable its best cached set inside
the k-clique it joined. The moral graph lies in the k-tree: treewidth at most k,
certified by the reverse insertion order.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.search.base import register
from bnsl_dist.search.treewidth import _s2_kernels as S
from bnsl_dist.search.treewidth._driver import (
    BatchKernel,
    CacheArrays,
    TreewidthLearner,
    kernel_k,
)

__all__ = ["S2", "pair_gains"]


def pair_gains(cache: ParentSetCache
               ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Per variable v, each u whose one-member set {u} is cached for v with a score above
    that of {}: CSR offsets, the u's and the gains.

    With BIC the gain is N·I(U;V) minus the penalty of the extra parameters: the
    empirical mutual information the informative score sums, penalised. A pair whose
    singleton the cache pruned (no gain) counts 0.
    """
    f = cache.flat
    single = np.flatnonzero(f.sizes == 1)
    owner = f.owner[single]
    gain = f.scores[single] - cache.empty_scores()[owner]
    keep = gain > 0.0
    single, owner, gain = single[keep], owner[keep], gain[keep]
    offsets = np.zeros(cache.n_vars + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=cache.n_vars), out=offsets[1:])
    # sets are grouped by owner in ascending order, so these rows are too
    other = f.par_flat[f.par_offsets[single]].astype(np.int64)
    return offsets, np.ascontiguousarray(other), np.ascontiguousarray(gain, dtype=np.float64)


@register("s2")
class S2(TreewidthLearner):
    """S2 (Nie, de Campos & Ji 2015): uniform k-trees ranked by the informative score.

    Parameters
    ----------
    k : int
        Treewidth bound (>= 1); parent sets have at most k members.
    max_parents : int, optional
        A further cap on parent-set size.

    Notes
    -----
    One iteration = one sampled k-tree. Its informative score is

        I(T) = Σ_{(u,v) ∈ T} (g_v(u) + g_u(v)) / |Σ_v max { s_v(Π) : Π ∪ {v} a clique of T }|,

    with g_v(u) = max(0, s_v({u}) − s_v({})) from the cache (0 when {u} was pruned)
    and the denominator the score of the best parent sets T allows, acyclicity ignored
    (an upper bound on any DAG inside T). The paper's numerator is the empirical mutual
    information on T's edges; a cache holds no data, so the BIC gain of the one-member
    set (N·I minus its penalty) stands for it. A k-tree with a new best I(T) gets its
    DAG; an incumbent is reported when that DAG scores above every earlier one, so the
    result is the best of the DAGs of the successive best k-trees, the last of which is
    the paper's. Iterations without a DAG score -inf in :meth:`iteration_scores`.

    Nie et al. (2014) search the best DAG inside a k-tree exactly (exponential in k);
    here the k-tree's insertion order fixes the DAG's order (exact only inside the
    initial clique), as in k-G. That can only lower S2's score, so a comparison with
    k-G_ENT reads S2's deficit as an upper bound of the paper's (docs/ALGORITHMS.md §5).

    References
    ----------
    S. Nie, C. P. de Campos, Q. Ji, "Learning bounded tree-width Bayesian networks via
    sampling", ECSQARU 2015 (S2). S. Nie, D. D. Mauá, C. P. de Campos, Q. Ji, "Advances in
    learning Bayesian networks of bounded treewidth", NIPS 2014 (uniform k-trees by
    Dandelion codes, S1). S. Caminiti, E. G. Fusco, R. Petreschi, "Bijective linear time
    coding and decoding for k-trees", Theory Comput. Syst. 46, 2010. M. Scanagatta et al.,
    "Approximate structure learning for large Bayesian networks", Machine Learning 107,
    2018, §5 (k-G_ENT against S2).
    """

    exact: ClassVar[bool] = False

    def _kernel(self, cache: ParentSetCache, a: CacheArrays) -> BatchKernel:
        k = kernel_k(self.k, cache.n_vars)
        p_off, p_other, p_gain = pair_gains(cache)
        best_info = np.full(1, -np.inf)  # carried from batch to batch within one run

        def kernel(seed: int, it0: int, threshold: float, out: NDArray[np.float64],
                   chosen: NDArray[np.int64], ins: NDArray[np.int64],
                   attach: NDArray[np.int64]) -> int:
            return int(S.s2_batch(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, k,
                                  a.max_size, p_off, p_other, p_gain, best_info,
                                  np.uint64(seed), it0, threshold, out, chosen, ins, attach))

        return kernel
