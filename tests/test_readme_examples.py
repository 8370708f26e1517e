"""The README's library examples ("Use it as a library") run as written, on a small CSV
with their budgets shrunk (the cluster's too), and their networks score what the data say
(a naive BIC) and no more than the exact optimum (A* on an exhaustive cache).

The budgets are cut by replacing their exact text: an edit of the README that the
replacements no longer match fails here, so the examples and this test move together."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from bnsl_dist.data import read_data, write_csv
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.graph import DAG
from bnsl_dist.model import BayesianNetwork
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample
from bnsl_dist.pipeline.tasks.within import WithinResult
from bnsl_dist.search import Budget, make_optimizer
from tests.naive_scores import exhaustive_cache_builder, naive_bic

README = Path(__file__).resolve().parents[1] / "README.md"

#: (the README's text, what the test runs instead): budgets only
SHRINK = [("seconds_per_variable=1.0", "seconds_per_variable=0.02"),
          ("Budget(seconds=30)", "Budget(seconds=0.3)"),
          ("connect(workers=4)", "connect(workers=2, announce=False, dashboard=False)"),
          ("WithinTask(time_limit=60), seeds=4", "WithinTask(time_limit=8), seeds=2"),
          ("time_limit=60", "time_limit=1.5"),
          ('{"iterations": 500}', '{"iterations": 20}'),
          ("scores_per_variable=2000", "scores_per_variable=200")]


def _library_blocks() -> list[str]:
    text = README.read_text()
    start = text.index("## Use it as a library")
    section = text[start:text.index("\n## ", start + 1)]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def _naive_total(data, dag: DAG) -> float:
    codes = np.asarray(data.codes)
    return sum(naive_bic(codes, data.arities, v, list(p)) for v, p in enumerate(dag.parents))


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("readme") / "my_data.csv"
    write_csv(sample(read_bif(bundled_path("bif/asia.bif.gz")), 400, rng=7), path)
    return path


@pytest.mark.dask
def test_library_examples_run_and_score_what_the_data_say(csv_path, monkeypatch):
    blocks = _library_blocks()
    assert len(blocks) == 4, "the README's library section has four examples"
    code = "\n".join(blocks)
    for old, _ in SHRINK:
        assert old in code, f"README example no longer has {old!r}: update SHRINK"
    monkeypatch.chdir(csv_path.parent)
    ns: dict = {}
    results = []
    for block in blocks:  # in order, in one namespace, as a reader would paste them
        for old, new in SHRINK:
            block = block.replace(old, new)
        exec(compile(block, str(README), "exec"), ns)  # noqa: S102 - the README's code
        results.append(ns.get("result"))

    data = read_data(csv_path)
    cache = exhaustive_cache_builder()(data)
    optimum = None
    for inc in make_optimizer("astar").run(cache, Budget(seconds=60), np.random.default_rng(0)):
        optimum = inc.score
    assert optimum is not None

    # 1. cache + anytime optimizer + CPTs
    best, network = ns["best"], ns["network"]
    assert isinstance(network, BayesianNetwork)
    assert network.dag.parents == best.dag.parents
    assert best.score == pytest.approx(_naive_total(data, best.dag), abs=1e-6)
    assert best.score <= optimum + 1e-6
    # 2. learn_within: the best network within one limit, cache included
    within = results[1]
    assert isinstance(within, WithinResult)
    assert within.score == pytest.approx(_naive_total(data, within.dag), abs=1e-6)
    assert within.score <= optimum + 1e-6
    assert set(within.seconds) >= {"cache", "search", "total"}
    # 3. the same on a cluster: the result JSON of learn --time-limit
    out = ns["out"]
    dag = DAG.from_json_dict(out["dag"])
    assert out["score"] == pytest.approx(_naive_total(data, dag), abs=1e-6)
    assert out["score"] <= optimum + 1e-6 and len(out["runs"]) == 2
    # 4. the pipeline's learn: the best DAG over the seeds, as JSON
    result = results[3]
    dag = DAG.from_json_dict(result.dag)
    assert result.score == pytest.approx(_naive_total(data, dag), abs=1e-6)
    assert result.score <= optimum + 1e-6
    assert result.to_dict()["score"] == result.score
