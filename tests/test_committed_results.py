"""Every committed table is regenerated from the committed records alone.

For each ``workflows/results/<grid>/records.parquet``, the tables (markdown and CSV, no
plots) are written afresh into a temp folder and each must equal the committed file of
the same name beside the records. Whether or not any records are committed, the round
trip is checked on a synthetic results folder: the tables from its exported records
file equal the tables from the folder itself.
"""

from __future__ import annotations

from pathlib import Path

from bnsl_dist.cli.tables import write_all_tables
from bnsl_dist.results.export import export_records, load_records
from tests.results import synthetic as S

RESULTS = Path(__file__).resolve().parents[1] / "workflows" / "results"


def _tables(source: Path, out: Path) -> dict[str, str]:
    paths = write_all_tables(load_records(source), out, plots=False)
    assert paths, f"{source}: no tables written"
    return {p.name: p.read_text(encoding="utf-8") for p in paths}


def test_committed_tables_regenerate(tmp_path):
    for records in sorted(RESULTS.glob("*/records.parquet")):
        fresh = _tables(records, tmp_path / records.parent.name)
        for name, text in fresh.items():
            committed = records.parent / name
            assert committed.is_file(), f"{committed}: regenerated but not committed"
            assert committed.read_text(encoding="utf-8") == text, \
                f"{committed} differs from its regeneration from {records}"


def test_records_file_gives_the_folders_tables(tmp_path):
    S.write_store(tmp_path / "res")
    records = export_records(tmp_path / "res", tmp_path / "records.parquet")
    from_folder = _tables(tmp_path / "res", tmp_path / "a")
    from_file = _tables(records, tmp_path / "b")
    assert from_file == from_folder
    # every kind of table of the synthetic grid is among them
    for name in ("tables.md", f"{S.GRID}__exact.md", f"{S.GRID}__top-p.csv",
                 f"{S.GRID}__screening.md", f"{S.GRID}__failures.csv"):
        assert name in from_file


def test_index_lists_every_results_folder():
    """``workflows/results/README.md`` names every folder of committed records, and each
    COMPARISON.md it links to exists."""
    import re

    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    for records in sorted(RESULTS.glob("*/records.parquet")):
        name = records.parent.name
        assert f"`{name}`" in index or f"`{name}/`" in index, \
            f"{RESULTS / 'README.md'}: no entry for {name}/"
    links = re.findall(r"\]\(([^)]+)\)", index)
    assert links, "the index links no COMPARISON.md"
    for link in links:
        assert (RESULTS / link).is_file(), f"{RESULTS / 'README.md'}: broken link {link}"
