"""k-MAX: bounded-treewidth DAGs grown by inserting the variable that fits best.

Each iteration (a restart) grows an initial (k+1)-clique from a random variable through
the pool of candidate parents and solves it exactly; then repeatedly inserts the
outside variable X with the largest

    h(X) = (s_feas(X) - s_min(X)) / (s_max(X) - s_min(X)),

s_feas = score of X's best cached set lying in an existing k-clique, s_max / s_min its
best / worst usable cached score (h = 1 when they are equal), attaches it to a random
k-clique containing that set, and updates s_feas only through the k new k-cliques.
The best DAG over all restarts is kept.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.search.base import register
from bnsl_dist.search.treewidth import _kernels as K
from bnsl_dist.search.treewidth._driver import (
    BatchKernel,
    CacheArrays,
    TreewidthLearner,
    kernel_k,
)

__all__ = ["KMax"]


@register("kmax")
class KMax(TreewidthLearner):
    """k-MAX (Scanagatta et al. 2018).

    Parameters
    ----------
    k : int
        Treewidth bound (>= 1); parent sets have at most k members.
    max_parents : int, optional
        A further cap on parent-set size (``max_parents=k-1`` mimics BLIP's ``-w k``).

    Notes
    -----
    One iteration = one restart = one DAG. The candidate-parent pool uses the usable
    sets (size <= min(k, max_parents)); ties of h are broken by a random rank drawn per
    restart. s_feas updates scan only the cached sets that contain the new node (an
    inverted index) and only those better than the current s_feas, since a set can
    become feasible only by fitting a new k-clique, all of which contain the new node.

    References
    ----------
    M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang, "Efficient learning of
    bounded-treewidth Bayesian networks from complete and incomplete data sets",
    International Journal of Approximate Reasoning 95, 2018, §3.3 (k-MAX, Alg. 1).
    docs/ALGORITHMS.md §5.
    """

    exact: ClassVar[bool] = False

    def _kernel(self, cache: ParentSetCache, a: CacheArrays) -> BatchKernel:
        k = kernel_k(self.k, cache.n_vars)
        owner = a.owner
        inv_offsets, inv_sets = a.inverted_index()
        cand_offsets, cand_flat = a.candidates()
        smin, smax = a.score_range()

        def kernel(seed: int, it0: int, threshold: float, out: NDArray[np.float64],
                   chosen: NDArray[np.int64], ins: NDArray[np.int64],
                   attach: NDArray[np.int64]) -> int:
            return int(K.kmax_batch(a.offsets, a.scores, a.par_offsets, a.par_flat, a.sizes, k,
                                    a.max_size, owner, inv_offsets, inv_sets, cand_offsets,
                                    cand_flat, smin, smax, np.uint64(seed), it0, threshold,
                                    out, chosen, ins, attach))

        return kernel
