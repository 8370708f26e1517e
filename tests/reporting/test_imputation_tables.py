"""The SEM imputation study's table and figure on hand-made records: means, sds,
paired differences and counts checked by hand; records without the newer figures leave
their cells empty; other cells are ignored; `bnsl-dist tables` writes them for a sem
grid."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import pytest

from bnsl_dist.reporting.imputation import imputation_frame, imputation_table
from bnsl_dist.results import records_to_table
from bnsl_dist.results.records import records_frame
from tests.results import synthetic as S


def sem_record(dataset: str, rate: float, seed: int, acc: float, mpe: float | None,
               mode: float | None, em: int, converged: bool, wall: float):
    sem = {"missing_rate": rate, "imputation_accuracy": acc, "em_iterations": em,
           "converged": converged, "max_em_iterations": 10}
    if mpe is not None:
        sem["imputation_accuracy_mpe"] = mpe
    if mode is not None:
        sem["imputation_accuracy_mode"] = mode
    r = S.record("sem-kmax", "kmax", -10.0, seed=seed, dataset=dataset, k=4,
                 outputs={"sem": sem})
    return dataclasses.replace(r, key=f"{r.key}-{rate}", wall_seconds=wall)


def tables_cli(tmp_path, sem: dict, records: list) -> None:
    """`bnsl-dist tables` on a results folder of a sem grid (``sem``) holding ``records``;
    the tables go to ``tmp_path / "t"``."""
    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.results import ResultStore

    grid = json.loads(S.grid_config().model_dump_json())
    grid.update(kind="sem", sem=sem, comparisons=[],
                algorithms=[{"name": "kmax", "label": "sem-kmax", "k": [4]}])
    st = ResultStore(tmp_path / "res")
    for rec in records:
        st.write_result(rec)
    st.save_text(f"grids/{S.GRID}.json", json.dumps(grid))
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "res"), "--out",
                                  str(tmp_path / "t")])
    assert r.exit_code == 0, r.output


@pytest.fixture
def frame() -> pd.DataFrame:
    recs = [sem_record("kdd", 0.1, 0, 0.90, 0.88, 0.70, 3, True, 10.0),
            sem_record("kdd", 0.1, 1, 0.80, 0.79, 0.60, 5, False, 20.0),
            sem_record("kdd", 0.2, 0, 0.75, None, None, 4, True, 30.0),  # older record
            S.record("sota", "hc-tabu", -5.0)]  # not an imputation cell
    return records_frame(records_to_table(recs))


def test_imputation_table_by_hand(frame):
    cells = imputation_frame(frame)
    assert len(cells) == 3 and set(cells["label"]) == {"sem-kmax"}
    t = imputation_table(cells)
    assert t["missing"].tolist() == ["10%", "20%"]
    first, second = t.iloc[0], t.iloc[1]
    assert first["learner"] == "sem-kmax k=4" and first["runs"] == "2"
    assert first["accuracy"] == "0.8500"
    assert first["sd"] == f"{pd.Series([0.9, 0.8]).std():.4f}"  # 0.0707
    assert first["MPE (paper's)"] == "0.8350"
    assert first["marginal − MPE"] == "+0.0150"  # (0.02 + 0.01) / 2
    assert first["mode baseline"] == "0.6500"
    assert (first["EM iterations"], first["converged"], first["seconds"]) == \
        ("4.0", "1/2", "15.0")
    # a difference that rounds to zero is printed without a sign of its own
    tiny = cells.assign(accuracy_mpe=cells["accuracy"] + 1e-6)
    assert imputation_table(tiny).iloc[0]["marginal − MPE"] == "+0.0000"
    # one run: no sd; a record without the MPE and mode figures leaves them empty
    assert (second["runs"], second["sd"], second["MPE (paper's)"],
            second["marginal − MPE"], second["mode baseline"]) == ("1", "", "", "", "")


def test_tables_cli_writes_the_sem_tables(tmp_path, frame):
    tables_cli(tmp_path, {"missing_rates": [0.1, 0.2]},
               [sem_record("kdd", 0.1, 0, 0.90, 0.88, 0.70, 3, True, 10.0),
                sem_record("kdd", 0.2, 0, 0.75, 0.74, 0.55, 4, True, 30.0)])
    md = (tmp_path / "t" / f"{S.GRID}__imputation.md").read_text()
    assert "| kdd | test | 3 | sem-kmax k=4 | 10% | 1 | 0.9000 |" in md
    assert (tmp_path / "t" / f"{S.GRID}__imputation.png").stat().st_size > 0


def scaled_record(dataset: str, scale: float, seed: int, mpe: float, wall: float,
                  n_samples: int = 100):
    r = sem_record(dataset, 0.1, seed, mpe, mpe, 0.5, 3, True, wall)
    sem = {**r.outputs["sem"], "budget_scale": scale}
    return dataclasses.replace(r, key=f"{r.key}-x{scale}", n_samples=n_samples,
                               outputs={"sem": sem})


def test_tuning_table_by_hand():
    """Seconds and accuracy per scale, the gains paired per repetition, the sign test
    (exact binomial by hand), data sets by size n·N; the main table gains a scale
    column only when there are several."""
    from bnsl_dist.reporting.imputation import tuning_table

    recs = [scaled_record("kdd", 1.0, 0, 0.80, 10.0, 5000),
            scaled_record("kdd", 1.0, 1, 0.70, 20.0, 5000),
            scaled_record("kdd", 2.0, 0, 0.85, 30.0, 5000),
            scaled_record("kdd", 2.0, 1, 0.70, 50.0, 5000),
            scaled_record("plants", 1.0, 0, 0.60, 1.0), scaled_record("plants", 1.0, 1, 0.60, 3.0),
            scaled_record("plants", 2.0, 0, 0.70, 2.0), scaled_record("plants", 2.0, 1, 0.80, 4.0),
            scaled_record("plants", 2.0, 2, 0.99, 4.0)]  # seed 2 has no ×1 run: unpaired
    cells = imputation_frame(records_frame(records_to_table(recs)))
    t = tuning_table(cells)
    assert t["data set"].tolist() == ["plants", "kdd", "all"]  # 3·100 < 3·5,000
    plants, kdd, every = (t.iloc[i] for i in range(3))
    assert (kdd["seconds ×1"], kdd["seconds ×2"]) == ("15.0", "40.0")
    assert (kdd["MPE ×1"], kdd["MPE ×2"]) == ("0.7500", "0.7750")
    assert (kdd["gain ×1→×2"], kdd["up/down ×1→×2"], kdd["p ×1→×2"]) == \
        ("+0.0250", "1/0", "1")  # one raised, one tie: p = 2 · 1/2
    assert plants["MPE ×2"] == f"{(0.7 + 0.8 + 0.99) / 3:.4f}"  # all runs at the scale
    assert (plants["gain ×1→×2"], plants["up/down ×1→×2"], plants["p ×1→×2"]) == \
        ("+0.1500", "2/0", "0.5")  # paired runs only; p = 2 · (1/2)²
    assert (every["gain ×1→×2"], every["up/down ×1→×2"], every["p ×1→×2"]) == \
        ("+0.0875", "3/0", "0.25")  # (0.05 + 0 + 0.1 + 0.2) / 4; p = 2 · (1/2)³
    main = imputation_table(cells)
    assert main["budget ×"].tolist() == ["1", "2", "1", "2"]
    assert "budget ×" not in imputation_table(cells[cells["budget_scale"] == 1.0]).columns


def test_tables_cli_writes_the_tuning_study(tmp_path):
    tables_cli(tmp_path, {"missing_rates": [0.1], "budget_scales": [1, 2]},
               [scaled_record("kdd", 1.0, 0, 0.80, 10.0),
                scaled_record("kdd", 2.0, 0, 0.85, 30.0)])
    md = (tmp_path / "t" / f"{S.GRID}__sem_tuning.md").read_text()
    assert "| kdd | 3 | 100 | 10.0 | 0.8000 | 30.0 | 0.8500 | +0.0500 | 1/0 | 1 |" in md
    for fig in ("sem_tuning_time", "sem_tuning_accuracy", "imputation"):
        assert (tmp_path / "t" / f"{S.GRID}__{fig}.png").stat().st_size > 0


def test_tuning_study_keeps_the_data_sets_run_at_every_scale(tmp_path):
    """A grid stored in pieces: plants at x0.5, x1 and x2, kdd at x1 only. The main table
    has both; the tuning table and figures plants alone (kdd has nothing to pair)."""
    tables_cli(tmp_path, {"missing_rates": [0.1], "budget_scales": [0.5, 1, 2]},
               [scaled_record("plants", 0.5, 0, 0.70, 5.0),
                scaled_record("plants", 1.0, 0, 0.80, 10.0),
                scaled_record("plants", 2.0, 0, 0.75, 30.0),
                scaled_record("kdd", 1.0, 0, 0.90, 12.0)])
    main = (tmp_path / "t" / f"{S.GRID}__imputation.md").read_text()
    assert "| kdd |" in main and "| plants |" in main
    md = (tmp_path / "t" / f"{S.GRID}__sem_tuning.md").read_text()
    assert "| kdd |" not in md
    assert ("| plants | 3 | 100 | 5.0 | 0.7000 | 10.0 | 0.8000 | 30.0 | 0.7500 | +0.1000 | 1/0 "
            "| 1 | -0.0500 | 0/1 | 1 |") in md
    assert "| all |  |  | 5.0 | 0.7000 | 10.0 | 0.8000 | 30.0 | 0.7500 |" in md
