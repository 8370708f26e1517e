"""The inference study as a grid kind (Scanagatta et al. 2018, §6.3): the ``inference``
section validated with errors naming the field; cells run through ``run_cell`` store
queries and answers that brute-force enumeration reproduces (learned models with CPTs
refitted here by counting; the true network regenerated from its recipe); same seed,
same queries and answers; the tables' mae from the records equal the brute-force ones;
``grid run --dry-run`` of the reduced paper grid lists its cells."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import load_bundled_dataset
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.inference.study import answer_queries, mae_marginals, mae_pe, random_evidence
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.model.sampling import sample
from bnsl_dist.pipeline import run as run_mod
from bnsl_dist.pipeline.config import GridConfig, load_grid
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.pipeline.tasks import inference as inference_task
from bnsl_dist.reporting.inference import inference_frame, inference_tables
from bnsl_dist.results.records import CellResult
from bnsl_dist.results.store import ResultStore
from tests.inference.naive_inference import joint_table

REPO = Path(__file__).resolve().parents[1]

MINI = """
collection: infer-mini
networks:
  infer-tiny: {kind: random, n_vars: 7, max_indegree: 2, arity_range: [2, 3], seed: 42}
datasets:
  infer-tiny:
    kind: sampled
    network: infer-tiny
    splits:
      train: {n_samples: 400, seed: 7}
"""

GRID = """\
name: infer-toy
kind: inference
seed: 11
datasets:
  - {name: nltcs, splits: [train]}
  - {name: infer-tiny, splits: [train]}
cache:
  method: sequential
  max_indegree: 2
algorithms:
  - {name: kg-ent, k: [2]}
  - {name: asobs-ent}
budget:
  iterations: 10
inference:
  reference: asobs-ent
  queries: 8
  evidence_vars: 3
  marginal_queries: 4
  lw_samples: 100
  truth_pe_samples: 1000
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "grid.yaml"
    p.write_text(text)
    return p


# ------------------------------------------------------------------ configuration
@pytest.mark.parametrize("edit, needle", [
    (("kind: inference\n", ""), "an 'inference' section needs kind: inference"),
    (("inference:\n  reference: asobs-ent\n", "other:\n  reference: asobs-ent\n"),
     "other: Extra inputs are not permitted"),
    (("kind: inference\n", "kind: inference\n"), None),
    (("  reference: asobs-ent\n", "  reference: asobs\n"),
     "inference.reference names 'asobs', which is not an algorithm label"),
    (("  reference: asobs-ent\n", "  reference: kg-ent\n"),
     "'kg-ent' must be an unbounded learner"),
    (("  queries: 8\n", "  queries: -1\n"), "inference.queries: Input should be greater"),
    (("  queries: 8\n  evidence_vars: 3\n  marginal_queries: 4\n",
      "  queries: 0\n  evidence_vars: 3\n  marginal_queries: 0\n"),
     "needs 'queries' or 'marginal_queries' > 0"),
    (("  lw_samples: 100\n", "  lw_samples: 100\n  samples: 5\n"),
     "inference.samples: Extra inputs are not permitted"),
    (("  lw_samples: 100\n", "  lw_samples: 0\n"), "inference.lw_samples"),
    (("  lw_samples: 100\n", "  lw_samples: 100\n  memory_gib: 0\n"), "inference.memory_gib"),
])
def test_inference_section_errors_name_the_field(tmp_path, data_root, edit, needle):
    p = _write(tmp_path, GRID.replace("infer-tiny", "msnbc").replace(*edit))
    if needle is None:
        assert load_grid(p).inference is not None
        return
    with pytest.raises(InvalidConfigError, match=re.escape(needle)) as info:
        load_grid(p)
    assert str(p) in str(info.value)


def test_kind_inference_needs_its_section(tmp_path, data_root):
    text = GRID.replace("infer-tiny", "msnbc").split("inference:\n")[0]
    with pytest.raises(InvalidConfigError, match="needs an 'inference' section"):
        load_grid(_write(tmp_path, text))


def test_cells_one_per_dataset_model_k_seed(data_root):
    g = GridConfig.model_validate({
        "name": "t", "kind": "inference", "datasets": [{"name": "nltcs"}, {"name": "msnbc"}],
        "cache": {"method": "sequential", "max_indegree": 1},
        "algorithms": [{"name": "kg-ent", "k": [2, 4]}, {"name": "asobs-ent"}],
        "seeds": [0, 1], "budget": {"iterations": 5},
        "inference": {"reference": "asobs-ent", "queries": 3}})
    cells = expand_grid(g)
    assert len(cells) == 2 * 3 * 2
    assert all(c.kind == "inference" and c.inference is not None for c in cells)
    assert [c.inference.reference for c in cells if c.inference] == \
        [c.label == "asobs-ent" for c in cells]
    assert len({c.key for c in cells}) == len(cells)
    # the query stream: one per data set, split and seed, whatever the model
    streams = {(c.dataset, c.seed): set() for c in cells}
    for c in cells:
        streams[(c.dataset, c.seed)].add(
            tuple(c.data_seed_sequence("inference-queries").generate_state(4)))
    assert all(len(s) == 1 for s in streams.values())
    assert len({next(iter(s)) for s in streams.values()}) == 4


# ------------------------------------------------------------------ oracles
def _refit(dag: DAG, codes: np.ndarray, arities: np.ndarray, alpha: float = 1.0
           ) -> BayesianNetwork:
    """CPTs by counting, BDeu-spread prior alpha / (q r) (first parent fastest)."""
    cpts = []
    for v in range(dag.n_vars):
        ps = list(dag.parents[v])
        q = int(np.prod([arities[p] for p in ps])) if ps else 1
        r = int(arities[v])
        j = np.zeros(len(codes), dtype=np.int64)
        radix = 1
        for p in ps:
            j += codes[:, p].astype(np.int64) * radix
            radix *= int(arities[p])
        n = np.zeros((q, r))
        np.add.at(n, (j, codes[:, v].astype(np.int64)), 1.0)
        cpts.append((n + alpha / (q * r)) / (n.sum(axis=1, keepdims=True) + alpha / q))
    states = tuple(tuple(str(s) for s in range(int(a))) for a in arities)
    return BayesianNetwork(dag, states, tuple(cpts))


def _brute(net: BayesianNetwork, evidence: list[list[list[int]]], query: list[int]
           ) -> tuple[np.ndarray, list[np.ndarray]]:
    """P(e) per query and the marginals of ``query`` by enumerating the joint."""
    xs, p = joint_table(net)
    pe = []
    for pairs in evidence:
        m = np.ones(len(xs), dtype=bool)
        for v, s in pairs:
            m &= xs[:, v] == s
        pe.append(float(p[m].sum()))
    margs = [np.bincount(xs[:, v], weights=p, minlength=len(net.states[v])) for v in query]
    return np.array(pe), margs


def _tiny_truth() -> tuple[BayesianNetwork, np.ndarray]:
    net = random_network(7, 2, (2, 3), 1.0, np.random.default_rng(42))
    return net, sample(net, 400, np.random.default_rng(7)).codes


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """Every cell of the toy grid run serially through run_cell (twice: same seed)."""
    tmp = tmp_path_factory.mktemp("infer")
    (tmp / "cfg").mkdir()
    (tmp / "cfg" / "mini.yaml").write_text(MINI)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BNSL_DATA", str(tmp / "root"))
        mp.setenv("BNSL_DATASETS", str(tmp / "cfg"))
        mp.delenv("BNSL_MIRROR", raising=False)
        run_mod._load_data.cache_clear()
        inference_task.true_network.cache_clear()
        grid = load_grid(_write(tmp, GRID))
        cells = expand_grid(grid)
        first = [run_cell(c) for c in cells]
        again = [run_cell(c) for c in cells]
        run_mod._load_data.cache_clear()
        inference_task.true_network.cache_clear()
    return grid, cells, first, again


def _inf(rec: CellResult) -> dict:
    return dict(rec.outputs["inference"])


def test_cells_answer_like_brute_force(records):
    grid, cells, recs, _ = records
    spec = grid.inference
    assert spec is not None
    nltcs = load_bundled_dataset("nltcs")["train"]
    truth, tiny_codes = _tiny_truth()
    for cell, rec in zip(cells, recs, strict=True):
        inf = _inf(rec)
        known = cell.dataset == "infer-tiny"
        assert inf["known_network"] is known and inf["reference"] is (cell.label == "asobs-ent")
        codes, ar = ((tiny_codes, truth.arities) if known else (nltcs.codes, nltcs.arities))
        # the queries: 3 distinct variables each, states in range
        assert len(inf["evidence"]) == spec.queries
        for pairs in inf["evidence"]:
            vs = [v for v, _ in pairs]
            assert len(set(vs)) == spec.evidence_vars
            assert all(0 <= s < ar[v] for v, s in pairs)
        if known:  # leaves of the true network first
            kids = truth.dag.children()
            leaves = {v for v in range(truth.n_vars) if not kids[v]}
            q = inf["marginal_vars"]
            nl = min(len(q), len(leaves))
            assert len(set(q)) == len(q) and set(q[:nl]) <= leaves
            assert all(v not in leaves and any(v in truth.dag.parents[u] for u in leaves)
                       for v in q[nl:])
            assert len(q) == min(spec.marginal_queries,
                                 len(leaves | {p for u in leaves for p in truth.dag.parents[u]}))
        else:
            assert inf["marginal_vars"] == []
        dag = DAG.from_json_dict(json.loads(rec.dag_json))
        model = _refit(dag, codes, ar)
        pe, margs = _brute(model, inf["evidence"], inf["marginal_vars"])
        assert inf["exact"] is True
        np.testing.assert_allclose(np.exp(inf["log_pe"]), pe, rtol=1e-9, atol=1e-15)
        for got, want in zip(inf["marginals"], margs, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        if cell.k is not None:
            assert inf["width"] <= rec.treewidth_bound <= cell.k  # moral graph in the k-tree
        if known and inf["reference"]:
            t_pe, t_margs = _brute(truth, inf["evidence"], inf["marginal_vars"])
            np.testing.assert_allclose(np.exp(inf["truth"]["log_pe"]), t_pe, rtol=1e-9)
            for got, want in zip(inf["truth"]["marginals"], t_margs, strict=True):
                np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
        else:
            assert "truth" not in inf


def _stable(inf: dict) -> dict:
    return {k: v for k, v in inf.items() if "seconds" not in k and k != "truth"} | (
        {"truth": _stable(inf["truth"])} if "truth" in inf else {})


def test_same_seed_same_queries_and_answers(records):
    _, cells, first, again = records
    for a, b in zip(first, again, strict=True):
        assert a.dag_json == b.dag_json
        assert _stable(_inf(a)) == _stable(_inf(b))
    by_ds: dict[str, set[str]] = {}
    for c, r in zip(cells, first, strict=True):
        inf = _inf(r)
        by_ds.setdefault(c.dataset, set()).add(json.dumps([inf["evidence"],
                                                           inf["marginal_vars"]]))
    assert all(len(v) == 1 for v in by_ds.values())  # one query set per data set


def test_tables_mae_from_records_match_brute_force(records, tmp_path):
    _, cells, recs, _ = records
    store = ResultStore(tmp_path / "results")
    for r in recs:
        store.write_result(r)
    frame = store.read_frame()
    table = inference_frame(frame)
    truth_rows = table[table["label"] == "true network"]
    assert list(truth_rows["dataset"]) == ["infer-tiny"]  # one per known network
    table = table[table["label"] != "true network"]
    assert len(table) == len(cells)
    ans = {(c.dataset, c.label): _inf(r) for c, r in zip(cells, recs, strict=True)}
    # nltcs: mae of P(e) against the unbounded model, by hand
    kg, ref = ans[("nltcs", "kg-ent")], ans[("nltcs", "asobs-ent")]
    want = np.mean(np.abs(np.exp(kg["log_pe"]) - np.exp(ref["log_pe"])))
    row = table[(table["dataset"] == "nltcs") & (table["label"] == "kg-ent")].iloc[0]
    assert row["mae_pe"] == pytest.approx(want, rel=1e-12)
    assert np.isnan(row["relative_mae_marginals"])
    # known network: mae against the truth and relative mae, by hand
    truth = ans[("infer-tiny", "asobs-ent")]["truth"]

    def marg_err(x: dict) -> float:
        return float(np.mean([np.mean(np.abs(np.array(a) - np.array(b)))
                              for a, b in zip(x["marginals"], truth["marginals"],
                                              strict=True)]))
    kg_t, ub_t = ans[("infer-tiny", "kg-ent")], ans[("infer-tiny", "asobs-ent")]
    row = table[(table["dataset"] == "infer-tiny") & (table["label"] == "kg-ent")].iloc[0]
    assert row["mae_marginals"] == pytest.approx(marg_err(kg_t), rel=1e-12)
    assert row["relative_mae_marginals"] == pytest.approx(marg_err(kg_t) / marg_err(ub_t),
                                                          rel=1e-12)
    written = inference_tables(frame, tmp_path / "a")
    again = inference_tables(frame, tmp_path / "b")
    names = sorted(p.name for p in written)
    assert names == ["inference_cells.csv", "inference_fig7_relative_mae.png",
                     "inference_table5.csv", "inference_table5.md"]
    for p, q in zip(written, again, strict=True):
        if p.suffix != ".png":
            assert p.read_text() == q.read_text()
    md = (tmp_path / "a" / "inference_table5.md").read_text()
    assert "| infer-toy | kg-ent k=2 | 2 |" in md


def test_mismatched_queries_are_refused(records):
    import pandas as pd

    from bnsl_dist.exceptions import DataError

    _, _, recs, _ = records
    rows = [{**r.to_row(), "inference": r.outputs.get("inference")} for r in recs]
    for r in rows:
        if r["dataset"] == "nltcs" and r["label"] == "kg-ent":
            inf = r["inference"]
            r["inference"] = {**inf, "evidence": inf["evidence"][1:]}
    with pytest.raises(DataError, match="other queries than the reference"):
        inference_frame(pd.DataFrame(rows))


def test_two_reference_cells_of_one_data_set_are_refused(records):
    """A folder holding two runs' reference cells of one data set (a rerun beside the
    cells it superseded) is refused, naming both, not answered from either."""
    import pandas as pd

    from bnsl_dist.exceptions import DataError

    _, _, recs, _ = records
    rows = [{**r.to_row(), "inference": r.outputs.get("inference")} for r in recs]
    ref = next(r for r in rows if r["dataset"] == "nltcs" and r["inference"]["reference"])
    inference_frame(pd.DataFrame(rows))  # one reference per data set: answered
    rows.append({**ref, "label": "asobs-ent-last"})
    with pytest.raises(DataError, match=f"nltcs/.*two cells hold the reference learner's "
                       f"answers, {ref['label']} and asobs-ent-last"):
        inference_frame(pd.DataFrame(rows))


# ------------------------------------------------------------------ library pieces
def test_approximate_answers_when_the_tree_is_too_large():
    from tests.inference.naive_inference import random_network as naive_net

    net = naive_net(6, np.random.default_rng(3))
    ev = random_evidence(net.arities, 4, 2, np.random.default_rng(1))
    pairs = [[[int(v), int(row[v])] for v in np.flatnonzero(row >= 0)] for row in ev]
    pe, margs = _brute(net, pairs, [0, 1])
    exact = answer_queries(net, None, ev, [0, 1], memory_limit=2**30, n_samples=10,
                           rng=np.random.SeedSequence(0))
    approx = answer_queries(net, None, ev, [0, 1], memory_limit=1, n_samples=20000,
                            rng=np.random.SeedSequence(0), marginal_samples=40000)
    assert exact.exact and not approx.exact and approx.width is None  # no tree tried
    np.testing.assert_allclose(np.exp(exact.log_pe), pe, rtol=1e-9)
    np.testing.assert_allclose(np.exp(approx.log_pe), pe, rtol=0.1, atol=0.01)
    assert mae_marginals(approx.marginals, margs) < 0.02
    assert mae_pe(exact.log_pe, np.log(pe)) < 1e-12
    again = answer_queries(net, None, ev, [0, 1], memory_limit=1, n_samples=20000,
                           rng=np.random.SeedSequence(0), marginal_samples=40000)
    np.testing.assert_array_equal(again.log_pe, approx.log_pe)


# ------------------------------------------------------------------ the paper grids
def test_reduced_grid_dry_run_lists_its_cells(tmp_path, data_root, shared_data, monkeypatch):
    monkeypatch.setenv("BNSL_SHARED_DATA", str(shared_data))
    full = load_grid(REPO / "configs/grids/inference-2018.yaml")
    red = load_grid(REPO / "configs/grids/inference-2018-reduced.yaml")
    assert [d.name for d in full.datasets] == [d.name for d in red.datasets]
    assert len(full.datasets) == 35 and {f"r{i}" for i in range(15)} <= \
        {d.name for d in full.datasets}
    assert full.budget.seconds == 1000 * (red.budget.seconds or 0)
    assert full.cache.seconds_per_variable == 1000 * (red.cache.seconds_per_variable or 0)
    assert full.algorithm("kg-ent").k == red.algorithm("kg-ent").k == (2, 4, 6, 8)
    res = CliRunner().invoke(main, ["grid", "run", str(REPO / "configs/grids/"
                                                       "inference-2018-reduced.yaml"),
                                    "--results", str(tmp_path / "r"), "--dry-run",
                                    "--workers", "2"])
    assert res.exit_code == 0, res.output
    assert "175 cells" in res.output and "caches to build: 35" in res.output
    for model in ("kg-ent k=2", "kg-ent k=4", "kg-ent k=6", "kg-ent k=8", "asobs-ent"):
        assert f"{model}: 35 cells" in res.output


def test_min_degree_early_stop_matches_a_full_elimination():
    from bnsl_dist.graph.moral import moral_graph
    from bnsl_dist.graph.treewidth import min_degree_order
    from bnsl_dist.inference._graph import elimination_cliques
    from bnsl_dist.inference.study import _min_degree_within

    for seed in range(5):
        net = random_network(40, 3, (2, 4), 1.0, np.random.default_rng(seed))
        adj = moral_graph(net.dag)
        order, width = min_degree_order(adj)
        assert _min_degree_within(adj, net.arities, 2**62) == width
        biggest = max(int(np.prod([net.arities[u] for u in c], dtype=object))
                      for c in elimination_cliques(adj, order))
        assert _min_degree_within(adj, net.arities, biggest) == width
        assert _min_degree_within(adj, net.arities, biggest - 1) is None
