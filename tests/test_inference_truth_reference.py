"""An inference grid without a reference learner (k-MAX's Figs. 4-5, Scanagatta et al.,
IJAR 2018, §5): bounded models only, scored against the true network. Checked: the
section's errors name the field; exactly one cell per data set (the first algorithm's
first treewidth) answers the true network's queries, and its answers equal brute-force
enumeration of the true network and pgmpy's variable elimination; every cell's mae of
P(e), computed here from its answers and the enumerated truth, equals the table's; the
cell keys of grids with a reference learner do not change."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.model.generate import random_network
from bnsl_dist.pipeline import run as run_mod
from bnsl_dist.pipeline.config import load_grid
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import run_cell
from bnsl_dist.pipeline.tasks import inference as inference_task
from bnsl_dist.reporting.inference import (
    TRUE_NETWORK,
    figs45_table,
    inference_frame,
    inference_table,
    inference_tables,
)
from bnsl_dist.results.store import ResultStore
from tests.inference.naive_inference import brute_prob_evidence

REPO = Path(__file__).resolve().parents[1]

MINI = """
collection: truth-mini
networks:
  truth-tiny: {kind: random, n_vars: 7, max_indegree: 3, arity_range: [2, 3], seed: 5}
  truth-tiny2: {kind: random, n_vars: 6, max_indegree: 2, arity_range: [2, 4], seed: 6}
datasets:
  truth-tiny:
    kind: sampled
    network: truth-tiny
    splits:
      train: {n_samples: 300, seed: 8}
  truth-tiny2:
    kind: sampled
    network: truth-tiny2
    splits:
      train: {n_samples: 200, seed: 9}
  truthless:
    kind: files
    splits:
      train: {path: truthless/train.csv, sha256: "%s"}
""" % ("0" * 64)

GRID = """\
name: truth-toy
kind: inference
seed: 3
datasets:
  - {name: truth-tiny, splits: [train]}
  - {name: truth-tiny2, splits: [train]}
cache:
  method: sequential
  max_indegree: 3
algorithms:
  - {name: kmax}
treewidths: [1, 2, 3]
budget:
  iterations: 6
inference:
  queries: 12
  evidence_vars: 3
  marginal_queries: 0
  lw_samples: 100
  truth_pe_samples: 1000
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "grid.yaml"
    p.write_text(text)
    return p


@pytest.fixture()
def registry(tmp_path, monkeypatch):
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "mini.yaml").write_text(MINI)
    monkeypatch.setenv("BNSL_DATA", str(tmp_path / "root"))
    monkeypatch.setenv("BNSL_DATASETS", str(tmp_path / "cfg"))
    monkeypatch.delenv("BNSL_MIRROR", raising=False)
    run_mod._load_data.cache_clear()
    inference_task.true_network.cache_clear()
    yield tmp_path
    run_mod._load_data.cache_clear()
    inference_task.true_network.cache_clear()


@pytest.mark.parametrize("edit, needle", [
    (("  - {name: truth-tiny2, splits: [train]}\n", "  - {name: truthless, splits: [train]}\n"),
     "needs data sets sampled from a known network; 'truthless' is not"),
    (("  truth_pe_samples: 1000\n", "  truth_pe_samples: 0\n"),
     "truth_pe_samples must be > 0"),
])
def test_grid_without_reference_errors_name_the_field(registry, edit, needle):
    p = _write(registry, GRID.replace(*edit))
    with pytest.raises(InvalidConfigError, match=re.escape(needle)) as info:
        load_grid(p)
    assert str(p) in str(info.value)


def _truth(name: str):
    seed, n, indeg, ar = {"truth-tiny": (5, 7, 3, (2, 3)),
                          "truth-tiny2": (6, 6, 2, (2, 4))}[name]
    return random_network(n, indeg, ar, 1.0, np.random.default_rng(seed))


def _brute_pe(net, evidence) -> np.ndarray:
    """P(e) per query ([variable, state] pairs) by enumerating the joint."""
    out = []
    for pairs in evidence:
        ev = np.full(net.n_vars, -1, dtype=np.int64)
        for v, s in pairs:
            ev[v] = s
        out.append(brute_prob_evidence(net, ev))
    return np.array(out)


def _pgmpy_pe(net, evidence) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pytest.importorskip("pgmpy")
        from pgmpy.inference import VariableElimination

        from bnsl_dist.model import to_pgmpy

        ve = VariableElimination(to_pgmpy(net))
        out = []
        for pairs in evidence:
            ev = {net.names[v]: net.states[v][s] for v, s in pairs}
            joint = ve.query(list(ev), joint=True, show_progress=False)
            out.append(float(joint.get_value(**ev)))
    return np.array(out)


def test_one_truth_cell_per_data_set_scored_like_brute_force(registry):
    grid = load_grid(_write(registry, GRID))
    cells = expand_grid(grid)
    assert [(c.dataset, c.k) for c in cells if c.inference and c.inference.truth] == \
        [("truth-tiny", 1), ("truth-tiny2", 1)]
    assert not any(c.inference and c.inference.reference for c in cells)
    recs = [run_cell(c) for c in cells]
    store = ResultStore(registry / "results")
    for r in recs:
        store.write_result(r)
    table = inference_frame(store.read_frame())
    assert len(table) == len(cells) + 2 == 8
    truth_rows = table[table["label"] == TRUE_NETWORK]
    assert list(truth_rows["dataset"]) == ["truth-tiny", "truth-tiny2"]
    assert truth_rows["mae_pe"].isna().all() and truth_rows["exact"].all()
    figs45 = figs45_table(table).set_index("dataset")
    assert list(figs45.index) == ["truth-tiny", "truth-tiny2"]
    table = table[table["label"] != TRUE_NETWORK]
    for name in ("truth-tiny", "truth-tiny2"):
        infs = {c.k: dict(r.outputs["inference"]) for c, r in zip(cells, recs, strict=True)
                if c.dataset == name}
        assert set(infs) == {1, 2, 3}
        assert "truth" in infs[1] and "truth" not in infs[2] and "truth" not in infs[3]
        evidence = infs[1]["evidence"]
        assert all(i["evidence"] == evidence for i in infs.values())
        assert len(evidence) == 12 and all(len(pairs) == 3 for pairs in evidence)
        net = _truth(name)
        want = _brute_pe(net, evidence)
        np.testing.assert_allclose(np.exp(infs[1]["truth"]["log_pe"]), want, rtol=1e-9)
        np.testing.assert_allclose(_pgmpy_pe(net, evidence), want, rtol=1e-9)
        assert infs[1]["truth"]["exact"] is True
        assert truth_rows[truth_rows["dataset"] == name]["ms_pe"].iloc[0] == \
            pytest.approx(1e3 * infs[1]["truth"]["pe_seconds_per_query"])
        for k, inf in infs.items():
            mae = float(np.mean(np.abs(np.exp(np.array(inf["log_pe"])) - want)))
            row = table[(table["dataset"] == name) & (table["k"] == k)].iloc[0]
            assert row["known_network"] and not row["reference"]
            assert row["mae_pe"] == pytest.approx(mae, rel=1e-9)
            assert mae > 0  # learned CPTs never equal the true ones here
            assert np.isnan(row["relative_mae_pe"])
            assert row["ms_pe"] == pytest.approx(1e3 * inf["pe_seconds_per_query"])
            # k-MAX's Figs. 4-5: the same mae and time, one row per data set
            assert figs45.at[name, f"mae kmax k={k}"] == pytest.approx(mae, rel=1e-9)
            assert figs45.at[name, f"ms kmax k={k}"] == \
                pytest.approx(1e3 * inf["pe_seconds_per_query"])
        assert figs45.at[name, "ms true network"] == \
            pytest.approx(1e3 * infs[1]["truth"]["pe_seconds_per_query"])
        assert figs45.at[name, "true network exact"]
    written = {p.name for p in inference_tables(store.read_frame(), registry / "tables")}
    assert {"inference_figs45.md", "inference_figs45.csv", "inference_figs45.png"} <= written
    md = (registry / "tables" / "inference_figs45.md").read_text()
    assert md.count("| truth-tiny") == 2 and md.count("| exact |") == 2
    # a grid with a reference learner (the MLJ study) has no Figs. 4-5
    assert figs45_table(table.assign(reference=table["k"] == 3)).empty
    summary = inference_table(pd.concat([table, truth_rows]))
    assert list(summary["model"]) == ["kmax k=1", "kmax k=2", "kmax k=3", TRUE_NETWORK]
    for r in summary.to_dict("records")[:3]:
        g = table[table["model"] == r["model"]]
        assert r["mae_pe_known"] == pytest.approx(g["mae_pe"].mean(), rel=1e-12)
        assert np.isnan(r["mae_pe_real"])
    # a cell that answered other queries than the truth's holder is named as such
    frame = store.read_frame()
    at = frame.index[(frame["dataset"] == "truth-tiny") & (frame["k"] == 2)][0]
    inf = dict(frame.at[at, "inference"])
    inf["evidence"] = inf["evidence"][1:]
    frame.at[at, "inference"] = inf
    with pytest.raises(DataError, match="truth-tiny/.*kmax k=2 answered other queries "
                       "than the cell holding the true network's answers"):
        inference_frame(frame)
    # nor is a second cell holding the true network's answers (of another run)
    frame = store.read_frame()
    at = frame.index[(frame["dataset"] == "truth-tiny") & (frame["k"] == 1)][0]
    frame = pd.concat([frame, frame.loc[[at]].assign(k=9)], ignore_index=True)
    with pytest.raises(DataError, match="truth-tiny/.*two cells hold the true network's "
                       "answers, kmax k=1 and kmax k=9"):
        inference_frame(frame)


def test_reference_grids_keep_their_cell_keys(data_root):
    """``truth`` is left out of the canonical JSON when False: an inference cell of a
    grid with a reference learner has the fields (hence the key) of earlier versions."""
    from bnsl_dist.pipeline.specs import InferenceSettings
    from bnsl_dist.pipeline.tasks.inference import InferenceSpec

    before = set(InferenceSettings.model_fields) | {"reference"}
    assert set(InferenceSpec(reference=True).json_dict()) == before
    assert set(InferenceSpec(truth=True).json_dict()) == before | {"truth"}
    grid = load_grid(REPO / "configs" / "grids" / "inference-2018-reduced.yaml")
    assert all(set(c.json_dict()["inference"]) == before for c in expand_grid(grid))


def test_the_paper_grid_has_one_truth_cell_per_network(data_root):
    grid = load_grid(REPO / "configs" / "grids" / "kmax-inference-2018-reduced.yaml")
    cells = expand_grid(grid)
    assert len(cells) == 60 and {c.k for c in cells} == {2, 5, 8}
    truth = [c for c in cells if c.inference and c.inference.truth]
    assert sorted(c.dataset for c in truth) == sorted(d.name for d in grid.datasets)
    assert {c.k for c in truth} == {2}
