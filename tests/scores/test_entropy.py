"""Pairwise entropies (qds-BNSL's screening statistics) against the naive oracle."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.naive_scores import naive_entropy

_CHILD = """
import json, resource, sys
limit = 4 << 30
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
import numpy as np
from bnsl_dist.data import CategoricalData
from bnsl_dist.scores.entropy import conditional_entropy_matrix, joint_entropy_matrix
x = np.array(json.loads(sys.stdin.read()))
d = CategoricalData.from_array(x, arities=[65536, 3, 40000, 1, 5])
print(json.dumps([joint_entropy_matrix(d, chunk=2).tolist(),
                  conditional_entropy_matrix(d).tolist()]))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is Linux's")
def test_many_state_variables_are_counted_in_bounded_memory():
    # Two variables of 65,536 and 40,000 states (uint16 codes), a constant and one with
    # unused states. Every pair used to be counted in a table of max(r)^2 cells, made
    # whatever the pair: 2^32 int64 here, 32 GiB, refused under a 4 GiB address space.
    rng = np.random.default_rng(0)
    n_rows = 200
    x = np.stack([rng.integers(0, 65536, n_rows), rng.integers(0, 3, n_rows),
                  rng.integers(0, 40000, n_rows), np.zeros(n_rows, dtype=np.int64),
                  rng.integers(0, 3, n_rows)], axis=1)
    x[:, 2] = np.where(rng.random(n_rows) < 0.5, x[:, 0] % 40000, x[:, 2])
    x[: n_rows // 2, 1] = x[: n_rows // 2, 4]
    res = subprocess.run([sys.executable, "-c", _CHILD], input=json.dumps(x.tolist()),
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr[-2000:]
    joint, cond = (np.array(m) for m in json.loads(res.stdout))
    for i in range(x.shape[1]):
        for j in range(x.shape[1]):
            _, counts = np.unique(x[:, i] * 65536 + x[:, j], return_counts=True)
            p = counts / n_rows
            assert joint[i, j] == pytest.approx(-(p * np.log(p)).sum(), rel=1e-12, abs=1e-12)
            expect = 0.0 if i == j else naive_entropy(x, i, [j])
            assert cond[i, j] == pytest.approx(expect, rel=1e-9, abs=1e-12)
