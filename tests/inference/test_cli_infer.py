"""`bnsl-dist infer` and `bnsl-dist loglik`: JSON equals brute-force enumeration; errors are
one line with exit code 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import bundled_path
from bnsl_dist.model.bif import read_bif
from tests.inference.naive_inference import (
    brute_marginals,
    brute_mpe,
    brute_prob_evidence,
    joint_table,
)


@pytest.fixture(scope="module")
def asia():
    return read_bif(bundled_path("bif/asia.bif.gz"))


def _ev(net, assignment):
    ev = np.full(net.n_vars, -1)
    for s, label in assignment.items():
        v = net.names.index(s)
        ev[v] = net.states[v].index(label)
    return ev


def test_infer_marginals_pe_and_mpe(asia):
    # "xray=1" is a code: state 1 of xray
    res = CliRunner().invoke(main, ["infer", "asia", "--evidence", "smoke=yes,xray=1",
                                    "-q", "lung,bronc", "--query", "tub", "--mpe"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    xray1 = asia.states[asia.names.index("xray")][1]
    assert out["evidence"] == {"smoke": "yes", "xray": xray1}
    ev = _ev(asia, out["evidence"])
    assert out["exact"] is True
    assert out["prob_evidence"] == pytest.approx(brute_prob_evidence(asia, ev), rel=1e-9)
    truth = brute_marginals(asia, ev)
    assert sorted(out["marginals"]) == ["bronc", "lung", "tub"]
    for s, m in out["marginals"].items():
        v = asia.names.index(s)
        assert [m[label] for label in asia.states[v]] == pytest.approx(list(truth[v]), abs=1e-10)
    best, _ = brute_mpe(asia, ev)
    assert np.exp(out["mpe"]["log_prob"]) == pytest.approx(best, rel=1e-9)
    x = np.array([[asia.states[v].index(out["mpe"]["assignment"][s])
                   for v, s in enumerate(asia.names)]])
    assert np.exp(asia.log_prob_rows(x)[0]) == pytest.approx(best, rel=1e-9)


def test_infer_default_query_and_approximate_fallback(asia, tmp_path):
    res = CliRunner().invoke(main, ["infer", str(bundled_path("bif/asia.bif.gz")),
                                    "-e", "asia=yes"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out["marginals"]) == set(asia.names) - {"asia"}
    res = CliRunner().invoke(main, ["infer", "asia", "-e", "asia=yes", "--memory-limit", "1e-9",
                                    "--approximate", "--samples", "20000", "--seed", "3"])
    assert res.exit_code == 0, res.output
    approx = json.loads(res.output)
    assert approx["exact"] is False
    truth = brute_marginals(asia, _ev(asia, {"asia": "yes"}))
    v = asia.names.index("tub")
    assert approx["marginals"]["tub"][asia.states[v][0]] == pytest.approx(truth[v][0], abs=0.02)


@pytest.mark.parametrize("extra", [[], ["--memory-limit", "1e-9", "--approximate",
                                          "--samples", "2000"]])
def test_impossible_evidence_has_no_mpe(asia, extra):
    """tub=yes with either=no (either is tub OR lung, a deterministic CPT): P(e) = 0 by
    enumeration; the MPE's log-probability and assignment are both null (an arbitrary
    assignment was printed beside a null log-probability)."""
    ev = {"tub": "yes", "either": "no"}
    assert brute_prob_evidence(asia, _ev(asia, ev)) == 0.0
    res = CliRunner().invoke(main, ["infer", "asia", "-e", "tub=yes,either=no", "-q", "lung",
                                    "--mpe", *extra])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["prob_evidence"] == 0.0 and out["log_prob_evidence"] is None
    assert out["mpe"] == {"log_prob": None, "assignment": None}


@pytest.mark.parametrize("args, message", [
    (["infer", "asia", "-e", "nosuch=1"], "unknown variable 'nosuch'"),
    (["infer", "asia", "-e", "asia=maybe"], "no state 'maybe'"),
    (["infer", "nonet", "-e", "asia=yes"], "not a registered network"),
    (["infer", "asia", "-e", "asia=yes", "--memory-limit", "1e-9"], "junction tree too large"),
    # click's FloatRange takes nan and inf: int(GiB * 2**30) raised ValueError/OverflowError
    (["infer", "asia", "--memory-limit", "nan"], "'--memory-limit': nan is not a finite"),
    (["infer", "asia", "--memory-limit", "inf"], "'--memory-limit': inf is not a finite"),
    (["infer", "asia", "--memory-limit", "1e300"], "'--memory-limit': 1e+300 is not a finite"),
    (["loglik", "asia", "x.csv", "--memory-limit", "nan"], "'--memory-limit': nan is not"),
])
def test_infer_errors_one_line_exit_2(args, message):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2
    assert message in res.output and len(res.output.strip().splitlines()) == 1


def test_loglik_with_labels_and_missing_cells(asia, tmp_path):
    xs, p = joint_table(asia)
    rng = np.random.default_rng(0)
    rows = xs[rng.choice(len(xs), 40, p=p / p.sum())]
    lines = [",".join(asia.names)]
    expected = []
    for i, r in enumerate(rows):
        cells = [asia.states[v][k] for v, k in enumerate(r)]
        if i % 4 == 0:  # hide two cells: ln P(observed part)
            cells[1] = cells[5] = "?"
            mask = np.ones(len(xs), bool)
            for v in range(asia.n_vars):
                if v not in (1, 5):
                    mask &= xs[:, v] == r[v]
            expected.append(np.log(p[mask].sum()))
        else:
            expected.append(np.log(p[np.all(xs == r, axis=1)].sum()))
        lines.append(",".join(cells))
    f = tmp_path / "asia.csv"
    f.write_text("\n".join(lines) + "\n")
    res = CliRunner().invoke(main, ["loglik", "asia", str(f)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["n_rows"] == 40 and out["n_missing_rows"] == 10
    assert out["total"] == pytest.approx(sum(expected), rel=1e-10)
    assert out["mean"] == pytest.approx(sum(expected) / 40, rel=1e-10)
    bad = tmp_path / "bad.csv"
    bad.write_text(lines[0] + "\n" + lines[1].replace("yes", "perhaps", 1) + "\n")
    res = CliRunner().invoke(main, ["loglik", "asia", str(bad)])
    assert res.exit_code == 2 and "'perhaps' is not a state" in res.output
