"""workflows/qds_fig7.py (Rahier et al. 2018, Fig. 7's sota curves): a point's network
respects its parent bound and is scored with its ESS, checked against BDeu computed by
counting; the committed table against its redrawing from the committed JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bnsl_dist.data.dataset import CategoricalData
from tests.naive_scores import naive_bdeu
from workflows.qds_fig7 import NAME, OUT, markdown, sota_point


def _data(rng, n):
    a = rng.integers(0, 2, n)
    b = (a + (rng.random(n) < 0.1)) % 2
    c = (a & b) ^ (rng.random(n) < 0.1)
    d = (b + rng.integers(0, 2, n)) % 3
    return CategoricalData.from_array(np.column_stack([a, b, c, d]), arities=[2, 2, 2, 3],
                                      names=list("ABCD"))


@pytest.mark.parametrize(("ess", "bound"), [(1.0, 1), (1e-6, None), (5.0, 2)])
def test_point_respects_its_bound_and_scores_with_its_ess(ess, bound):
    rng = np.random.default_rng(11)
    train = _data(rng, 400)
    held = {"valid": _data(rng, 50), "test": _data(rng, 50)}
    p = sota_point(train, held, ess=ess, max_parents=bound, scores=20, seeds=(0,))
    parents = json.loads(p["dag"])["parents"]
    col = {s: i for i, s in enumerate(train.names)}
    assert bound is None or max(len(ps) for ps in parents.values()) <= bound
    codes = np.asarray(train.codes)
    bdeu = sum(naive_bdeu(codes, train.arities, col[v], [col[q] for q in ps], ess=ess)
               for v, ps in parents.items())
    assert p["bdeu"] == pytest.approx(bdeu / train.n_samples, abs=1e-6)
    assert p["arcs"] == sum(len(ps) for ps in parents.values())
    assert p["test"] < 0 and p["valid"] < 0


def test_committed_table_is_drawn_from_the_committed_json():
    points = json.loads((OUT / f"{NAME}.json").read_text(encoding="utf-8"))["points"]
    assert (OUT / f"{NAME}.md").read_text(encoding="utf-8") == markdown(points)
