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
from tests.results import synthetic as S


def sem_record(dataset: str, rate: float, seed: int, acc: float, mpe: float | None,
               mode: float | None, em: int, converged: bool, wall: float):
    extra = {"missing_rate": rate, "imputation_accuracy": acc, "em_iterations": em,
             "converged": converged, "max_em_iterations": 10}
    if mpe is not None:
        extra["imputation_accuracy_mpe"] = mpe
    if mode is not None:
        extra["imputation_accuracy_mode"] = mode
    r = S.record("sem-kmax", "kmax", -10.0, seed=seed, dataset=dataset, k=4, extra=extra)
    return dataclasses.replace(r, key=f"{r.key}-{rate}", wall_seconds=wall)


@pytest.fixture
def frame() -> pd.DataFrame:
    recs = [sem_record("kdd", 0.1, 0, 0.90, 0.88, 0.70, 3, True, 10.0),
            sem_record("kdd", 0.1, 1, 0.80, 0.79, 0.60, 5, False, 20.0),
            sem_record("kdd", 0.2, 0, 0.75, None, None, 4, True, 30.0),  # older record
            S.record("sota", "hc-tabu", -5.0)]  # not an imputation cell
    return records_to_table(recs).to_pandas()


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
    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.results import ResultStore

    grid = json.loads(S.grid_config().model_dump_json())
    grid.update(kind="sem", sem={"missing_rates": [0.1, 0.2]},
                algorithms=[{"name": "kmax", "label": "sem-kmax", "k": [4]}], comparisons=[])
    st = ResultStore(tmp_path / "res")
    for rec in (sem_record("kdd", 0.1, 0, 0.90, 0.88, 0.70, 3, True, 10.0),
                sem_record("kdd", 0.2, 0, 0.75, 0.74, 0.55, 4, True, 30.0)):
        st.write_result(rec)
    st.save_text(f"grids/{S.GRID}.json", json.dumps(grid))
    r = CliRunner().invoke(main, ["tables", str(tmp_path / "res"), "--out",
                                  str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "t" / f"{S.GRID}__imputation.md").read_text()
    assert "| kdd | test | 3 | sem-kmax k=4 | 10% | 1 | 0.9000 |" in md
    assert (tmp_path / "t" / f"{S.GRID}__imputation.png").stat().st_size > 0
