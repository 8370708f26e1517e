"""missForest-style random-forest imputation for categorical data (benchmark competitor).

Stekhoven & Bühlmann (2012): start from mode imputation; visit the variables in
increasing order of missingness and regress each on all the others with a random forest,
replacing its missing cells by the predictions; repeat until the fraction of changed
cells grows for the first time (then return the previous imputation) or ``max_iter``.
Benchmark-only: needs scikit-learn (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import numpy as np

from bnsl_dist.data import CategoricalData
from bnsl_dist.sem import mode_impute


def missforest_impute(data: CategoricalData, *, n_estimators: int = 100, max_iter: int = 10,
                      max_features: str | float = "sqrt", seed: int = 0,
                      n_jobs: int = 1) -> CategoricalData:
    """A completed copy of ``data`` (categorical missForest)."""
    from sklearn.ensemble import RandomForestClassifier

    if data.missing is None:
        return data
    miss = data.missing
    x = mode_impute(data).codes.astype(np.int64)
    order = [int(v) for v in np.argsort(miss.sum(axis=0), kind="stable") if miss[:, v].any()]
    prev = x.copy()
    prev_diff = np.inf
    rng = np.random.default_rng(seed)
    for _ in range(max_iter):
        for v in order:
            obs = ~miss[:, v]
            feats = np.delete(x, v, axis=1)
            rf = RandomForestClassifier(n_estimators=n_estimators, max_features=max_features,
                                        n_jobs=n_jobs,
                                        random_state=int(rng.integers(0, 2**31 - 1)))
            rf.fit(feats[obs], x[obs, v])
            x[~obs, v] = rf.predict(feats[~obs])
        diff = float((x[miss] != prev[miss]).mean())
        if diff >= prev_diff:
            x = prev
            break
        prev_diff = diff
        prev = x.copy()
    return data.with_codes(x, None)
