"""fit_cpts against counts made by hand (plain Python loops over the rows)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bnsl_dist.data import CategoricalData
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.graph import DAG
from bnsl_dist.model import fit_cpts


def _hand_cpt(rows, child, parents, arities, pseudo):
    """P(child | parents) from a dict of counts; rows of the table in our layout."""
    r = arities[child]
    configs = list(itertools.product(*[range(arities[p]) for p in reversed(parents)]))
    table = []
    for cfg in configs:  # reversed product: the first parent varies fastest
        pa = dict(zip(reversed(parents), cfg, strict=True))
        counts = [sum(1 for row in rows if row[child] == k and
                      all(row[p] == pa[p] for p in parents)) for k in range(r)]
        tot = sum(counts) + pseudo * r
        table.append([(c + pseudo) / tot if tot > 0 else 1 / r for c in counts])
    return np.array(table)


@pytest.mark.parametrize("prior", ["bdeu", "cell"])
@pytest.mark.parametrize("alpha", [0.0, 1.0, 3.5])
def test_fit_equals_hand_counts(prior, alpha):
    rng = np.random.default_rng(0)
    arities = [2, 3, 2, 4]
    rows = [[int(rng.integers(a)) for a in arities] for _ in range(60)]
    dag = DAG.from_parents([(), (0,), (0, 1), (1, 2)])
    d = CategoricalData.from_array(np.array(rows), arities=arities)
    net = fit_cpts(dag, d, alpha, prior=prior)
    for v in range(4):
        ps = list(dag.parents[v])
        q = int(np.prod([arities[p] for p in ps]))
        pseudo = alpha / (q * arities[v]) if prior == "bdeu" else alpha
        np.testing.assert_allclose(net.cpts[v], _hand_cpt(rows, v, ps, arities, pseudo),
                                   atol=1e-12)


def test_unseen_configuration_is_uniform_without_prior():
    d = CategoricalData.from_array(np.array([[0, 0], [0, 1]]), arities=[2, 3])
    net = fit_cpts(DAG.from_parents([(), (0,)]), d, alpha=0.0)
    np.testing.assert_allclose(net.cpts[1][1], [1 / 3] * 3)
    np.testing.assert_allclose(net.cpts[1][0], [0.5, 0.5, 0.0])


def test_columns_matched_by_name_and_labels_kept():
    d = CategoricalData.from_array(np.array([[1, 0], [1, 1], [0, 1]]), names=["B", "A"],
                                   states=[("lo", "hi"), ("x", "y")])
    dag = DAG.from_parents([(), (0,)], ["A", "B"])
    net = fit_cpts(dag, d, alpha=0.0)
    assert net.states == (("x", "y"), ("lo", "hi"))
    np.testing.assert_allclose(net.cpts[0], [[1 / 3, 2 / 3]])
    np.testing.assert_allclose(net.cpts[1], [[0.0, 1.0], [0.5, 0.5]])


def test_errors():
    d = CategoricalData.from_array(np.array([[0, 1], [1, 0]]))
    dag = DAG.from_parents([(), (0,)])
    with pytest.raises(InvalidConfigError):
        fit_cpts(dag, d, alpha=-1)
    with pytest.raises(InvalidConfigError):
        fit_cpts(dag, d, prior="k2")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="no variable 'Z'"):
        fit_cpts(DAG.from_parents([(), ()], ["X0", "Z"]), d)
    dm = CategoricalData.from_array(np.array([[0, 1], [1, 0]]),
                                    missing=np.array([[True, False], [False, False]]))
    with pytest.raises(DataError, match="missing"):
        fit_cpts(dag, dm)
