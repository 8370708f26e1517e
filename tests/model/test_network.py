"""BayesianNetwork's validation of its CPTs."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.exceptions import DataError
from bnsl_dist.graph import DAG
from bnsl_dist.model import BayesianNetwork


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_cpt_entries_are_rejected(bad):
    # NaN slipped through the row-sum check (NaN > tol is False): the network was
    # accepted and a junction tree then gave ln P(no evidence) = -inf and NaN marginals
    dag = DAG.from_parents([(), (0,)], ["A", "B"])
    cpt_b = np.array([[0.5, 0.5], [bad, bad]])
    with pytest.raises(DataError, match=r"CPT of 'B': row 1 has a non-finite entry"):
        BayesianNetwork(dag, (("0", "1"), ("0", "1")), (np.array([[0.3, 0.7]]), cpt_b))


def test_rows_that_are_not_distributions_are_rejected():
    dag = DAG.from_parents([(), (0,)], ["A", "B"])
    for cpt_b in (np.array([[0.5, 0.6], [0.5, 0.5]]), np.array([[1.5, -0.5], [0.5, 0.5]])):
        with pytest.raises(DataError, match="CPT of 'B': rows must be distributions"):
            BayesianNetwork(dag, (("0", "1"), ("0", "1")), (np.array([[0.3, 0.7]]), cpt_b))
