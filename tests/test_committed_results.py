"""Every committed table is regenerated from the committed records alone.

For each ``workflows/results/<grid>/records.parquet``, the tables (markdown and CSV, no
plots) are written afresh into a temp folder and each must equal the committed file of
the same name beside the records. Whether or not any records are committed, the round
trip is checked on a synthetic results folder: the tables from its exported records
file equal the tables from the folder itself. Every committed record carries its
provenance, and every other committed file names its maker. The figures each
COMPARISON.md states are recounted in ``tests/test_comparisons.py``.
"""

from __future__ import annotations

import json
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


#: What a reader of a committed result needs to judge it (issue 43 item 4): the code
#: (commit, dirty), the versions of the libraries a timed result depends on, and the
#: machine's core count.
PROVENANCE_VERSIONS = ("python", "numpy", "numba", "dask", "ortools")


def test_every_committed_record_carries_its_provenance():
    import json
    import re

    from bnsl_dist.results.export import read_records

    # every records file: the sets the tables read and the reruns kept beside them (the
    # parts after a file's first are read with it)
    files = sorted(p for p in RESULTS.glob("*/*.parquet")
                   if not re.fullmatch(r"records\.\d+\.parquet", p.name))
    assert files, f"{RESULTS}: no committed records"
    for records in files:
        table = read_records(records).table
        rows = table.select(["key", "commit", "dirty", "versions", "cpus"]).to_pylist()
        for row in rows:
            where = f"{records}: cell {row['key']}"
            assert isinstance(row["commit"], str) and len(row["commit"]) == 40, \
                f"{where}: no commit ({row['commit']!r})"
            assert isinstance(row["dirty"], bool), f"{where}: no dirty flag"
            versions = json.loads(row["versions"] or "{}")
            missing = [p for p in PROVENANCE_VERSIONS if not versions.get(p)]
            assert not missing, f"{where}: no version of {missing}"
            assert isinstance(row["cpus"], int) and row["cpus"] >= 1, \
                f"{where}: no core count ({row['cpus']!r})"


def test_backfill_gives_cpus_to_a_single_host_file_only(tmp_path):
    """workflows/backfill_cpus.py adds ``cpus`` to a records file of one named host,
    leaves every row as it was, notes the backfill, and leaves a file of another host
    alone."""
    import pyarrow.parquet as pq

    from bnsl_dist.results.export import read_records
    from workflows.backfill_cpus import backfill

    S.write_store(tmp_path / "res")
    f = export_records(tmp_path / "res", tmp_path / "records.parquet")
    before = read_records(f).table
    hosts = set(before.column("hostname").to_pylist())
    assert len(hosts) == 1 and set(before.column("cpus").to_pylist()) == {None}
    (host,) = hosts
    assert backfill(f, {"elsewhere": 8}).startswith("left alone")
    assert backfill(f, {host: 12}) == f"cpus = 12 ({host})"
    after = read_records(f).table
    assert after.column("cpus").to_pylist() == [12] * before.num_rows
    assert after.drop_columns(["cpus"]).equals(before.drop_columns(["cpus"]))
    assert b"bnsl_dist.backfilled" in pq.read_schema(f).metadata
    assert backfill(f, {host: 3}) == "has cpus"  # never overwritten


def test_backfill_fills_only_the_rows_without_cpus(tmp_path):
    """A file merged from records before and after ``cpus`` existed: the rows without it
    get their host's count, the others keep theirs; an unknown host leaves it alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bnsl_dist.results.export import read_records
    from workflows.backfill_cpus import backfill

    S.write_store(tmp_path / "res")
    f = export_records(tmp_path / "res", tmp_path / "records.parquet")
    table = pq.read_table(f)
    n = table.num_rows
    assert n >= 2
    mixed = [7] + [None] * (n - 1)
    meta = dict(table.schema.metadata)  # cpus, all None, is a constant of the file
    constants = json.loads(meta[b"bnsl_dist.constants"])
    constants.pop("cpus", None)
    meta[b"bnsl_dist.constants"] = json.dumps(constants).encode()
    table = table.append_column("cpus", pa.array(mixed, pa.int64()))
    pq.write_table(table.replace_schema_metadata(meta), f)
    before = read_records(f).table
    host = before.column("hostname").to_pylist()[0]
    assert backfill(f, {"elsewhere": 8}).startswith("left alone")
    assert backfill(f, {host: 2}) == f"cpus = 2 on {n - 1} rows"
    after = read_records(f).table
    assert after.column("cpus").to_pylist() == [7] + [2] * (n - 1)
    assert after.drop_columns(["cpus"]).equals(before.drop_columns(["cpus"]))
    assert b"bnsl_dist.backfilled" in pq.read_schema(f).metadata
    assert backfill(f, {host: 3}) == "has cpus"


#: The committed files of a results folder that ``bnsl-dist tables`` does not write, by
#: folder and name prefix: the workflows/ script that made each, and the test that checks
#: it or why none can (issue 43's acceptance).
MADE_ELSEWHERE = {
    "asobs-ent-2018-reduced": {
        "entropy_cusum.": "workflows/entropy_cusum.py; not checked: it reads the rerun's "
                          "caches, which are not in the repository",
        "entropy_range.": "workflows/entropy_range.py; tests/test_entropy_range.py (the "
                          "markdown from the JSON; the JSON needs the rerun's caches)",
        "entropy_study.": "workflows/entropy_study.py; not checked: it reads the grid "
                          "run's caches, which are not in the repository",
    },
    "kmax-2018-reduced": {
        "kmax_testll.": "workflows/kmax_testll.py; tests/test_kmax_testll.py (the markdown "
                        "from the JSON; the JSON needs the staged Twenty Datasets)",
    },
    "pops-2014-top-p-reduced": {
        "pops_fig5.": "workflows/pops_fig5.py; tests/test_pops_fig5.py (the markdown from "
                      "the JSON; the JSON is 2 minutes of complete caches)",
    },
    "qds-2018-reduced": {
        "qds-2018-reduced__cvll.": "workflows/qds_cvll.py; tests/test_qds_cvll.py "
                                   "(regenerated from the records and the staged msnbc)",
        "qds-2018-reduced__fig7.": "workflows/qds_fig7.py; tests/test_qds_fig7.py (the "
                                   "markdown from the JSON; the JSON is 48 s of searches)",
    },
    "qds-2018-tenth": {
        "qds-2018-tenth__cvll.": "workflows/qds_cvll.py; tests/test_qds_cvll.py "
                                 "(regenerated from the records and the staged msnbc)",
    },
    "sem-imputation-2018-reduced": {
        "ad-x1-rerun.": "records of a rerun of four cells that no table reads "
                        "(COMPARISON.md)",
        "rerun-c06cf61.": "workflows/sem_rerun.py save; tests/test_sem_underflow.py (the "
                          "reruns of the cells underflow.json leaves open, stored as they "
                          "come; records that no table reads until they land)",
        "before-c06cf61.": "workflows/sem_rerun.py land; tests/test_sem_underflow.py (the "
                           "records that the reruns replaced, which underflow.json "
                           "describes)",
        "underflow.": "workflows/sem_underflow.py; tests/test_sem_underflow.py (the "
                      "markdown from the JSON; the JSON needs the staged Twenty Datasets, "
                      "some of its cells recomputed)",
        "mrf.": "workflows/benchmarks/impute_mrf.py; tests/test_benchmarks_impute_mrf.py "
                "(the pairing with the records and mrf.md from mrf.json, as --report-only "
                "redraws them; the random-forest imputations are timed runs, not rerun)",
    },
}


def test_every_other_committed_file_names_its_maker(tmp_path):
    """A committed file beside the records that ``bnsl-dist tables`` does not regenerate
    (its tables and plots) or that is not a part of the records is listed in
    :data:`MADE_ELSEWHERE` with the script that made it, and the test it names exists."""
    import re

    root = RESULTS.parents[1]
    for records in sorted(RESULTS.glob("*/records.parquet")):
        folder = records.parent
        made = {p.name for p in write_all_tables(load_records(records),
                                                 tmp_path / folder.name, plots=False)}
        stems = tuple(n.rsplit(".", 1)[0] + "." for n in made)
        known = MADE_ELSEWHERE.get(folder.name, {})
        drawn: set[str] | None = None  # the plots, drawn only where a name is not a table's
        for f in sorted(folder.iterdir()):
            if f.name in made or f.name == "COMPARISON.md" \
                    or re.fullmatch(r"records(\.\d+)?\.parquet", f.name) \
                    or (f.suffix == ".png" and f.name.startswith(stems)):
                continue
            if any(f.name.startswith(p) for p in known):
                continue
            if f.suffix == ".png" and drawn is None:
                drawn = {p.name for p in write_all_tables(
                    load_records(records), tmp_path / f"{folder.name}-plots", plots=True)}
            assert drawn is not None and f.name in drawn, \
                f"{f}: committed, not written by `bnsl-dist tables`, and not in MADE_ELSEWHERE"
    for why in (w for k in MADE_ELSEWHERE.values() for w in k.values()):
        for path in re.findall(r"(?:workflows|tests)/[\w/]+\.py", why):
            assert (root / path).is_file(), f"MADE_ELSEWHERE names {path}, which does not exist"
