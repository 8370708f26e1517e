"""Junction tree against pgmpy's exact inference on the bundled BIF networks.

P(e) and posterior marginals come from pgmpy's VariableElimination; the MPE value from a
max-product variable elimination written here on pgmpy factors (pgmpy's own map_query
builds the full joint on these networks). asia is parsed by pgmpy's BIF reader itself.
"""

from __future__ import annotations

import gzip
import warnings

import numpy as np
import pytest

from bnsl_dist.data import bundled_path
from bnsl_dist.inference import build_junction_tree
from bnsl_dist.model import to_pgmpy
from bnsl_dist.model.bif import read_bif

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    pytest.importorskip("pgmpy")
    from pgmpy.factors import factor_product
    from pgmpy.inference import VariableElimination
    from pgmpy.inference.EliminationOrder import MinFill
    from pgmpy.readwrite import BIFReader


def _pgmpy_model(name, net):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "asia":
            text = gzip.decompress(bundled_path("bif/asia.bif.gz").read_bytes()).decode()
            return BIFReader(string=text).get_model()
        return to_pgmpy(net)


def _max_product(model, ev):
    """ln max_x P(x, e) by variable elimination with max on pgmpy factors."""
    factors = []
    for cpd in model.get_cpds():
        f = cpd.to_factor()
        red = [(v, s) for v, s in ev.items() if v in f.scope()]
        factors.append(f.reduce(red, inplace=False) if red else f)
    hidden = [v for v in model.nodes() if v not in ev]
    total = 0.0
    with np.errstate(divide="ignore"):
        for v in MinFill(model).get_elimination_order(hidden, show_progress=False):
            fs = [f for f in factors if v in f.scope()]
            factors = [f for f in factors if v not in f.scope()]
            g = factor_product(*fs) if len(fs) > 1 else fs[0]
            if g.scope() == [v]:
                total += np.log(g.values.max())
            else:
                factors.append(g.maximize([v], inplace=False))
        for f in factors:
            total += np.log(np.asarray(f.values).max())
    return float(total)


def _pgmpy_log_joint(model, assignment):
    return float(sum(np.log(cpd.get_value(**{u: assignment[u] for u in cpd.variables}))
                     for cpd in model.get_cpds()))


@pytest.mark.parametrize("name", ["asia", "alarm", "child", "insurance"])
def test_exact_inference_equals_pgmpy(name):
    net = read_bif(bundled_path(f"bif/{name}.bif.gz"))
    model = _pgmpy_model(name, net)
    ve = VariableElimination(model)
    jt = build_junction_tree(net)
    rng = np.random.default_rng(42)
    for trial in range(3):
        k = 3 if trial == 0 else 5
        vs = rng.choice(net.n_vars, k, replace=False)
        ev = {net.names[v]: net.states[v][int(rng.integers(len(net.states[v])))] for v in vs}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            joint = ve.query(list(ev), joint=True, show_progress=False)
            pe = float(joint.get_value(**ev))
        logp = jt.log_prob_evidence(ev)[0]
        if pe == 0:
            assert logp == -np.inf
            continue
        # pgmpy normalises its answer; BIF CPT rows sum to 1 only to ~1e-8
        assert np.exp(logp) == pytest.approx(pe, rel=1e-7)
        query = [s for s in net.names if s not in ev][:6]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = ve.query(query, evidence=ev, joint=False, show_progress=False)
        ours = jt.marginals(ev, query)
        for s in query:
            v = net.names.index(s)
            f = res[s]
            theirs = [f.values[f.state_names[s].index(st)] for st in net.states[v]]
            np.testing.assert_allclose(ours[v][0], theirs, atol=1e-10)
        mpe = jt.mpe(ev)
        best = _max_product(model, ev)
        assert mpe.log_prob[0] == pytest.approx(best, rel=1e-9)
        assignment = {s: net.states[v][int(mpe.assignment[0, v])]
                      for v, s in enumerate(net.names)}
        assert _pgmpy_log_joint(model, assignment) == pytest.approx(best, rel=1e-9)
        assert all(assignment[s] == st for s, st in ev.items())
