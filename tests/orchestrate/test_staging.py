"""Grids on workers that do not see the client's files: data and caches travel through
Dask (:mod:`bnsl_dist.orchestrate.staging`), the client writes every file, and the
records equal serial runs. The workers here are blindfolded: in their processes,
reading a data file, reading a cache file, or writing a file under the client's
folders raises (tests/cluster/ runs the same on hosts that really share nothing)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bnsl_dist.data.io import write_csv
from bnsl_dist.exceptions import DataError
from bnsl_dist.orchestrate.grid import run_grid
from bnsl_dist.pipeline.config import GridConfig
from bnsl_dist.pipeline.grid import expand_grid
from bnsl_dist.pipeline.run import load_data, run_cell
from bnsl_dist.pipeline.specs import DataRef
from bnsl_dist.results.store import ResultStore
from tests.orchestrate.test_grid import (
    _without_timings,
    comparable,
    small_grid,
    write_nltcs_caches,
)

pytestmark = [pytest.mark.dask, pytest.mark.timeout(300)]


def _blindfold(folders: list[str]) -> None:
    """In a worker process: any read of a data or cache file, or any atomic write,
    under ``folders`` raises."""
    import bnsl_dist.cache.jkl as jkl
    import bnsl_dist.pipeline.run as run
    from bnsl_dist.exceptions import DataError

    def hidden(path: object) -> bool:
        return any(str(Path(str(path)).resolve()).startswith(f) for f in folders)

    load, read, write = run._load_data, run._read_cache_file, jkl.atomic_writer

    def load_data(ref):
        if ref.file is not None and hidden(ref.file):
            raise DataError("no such file (blindfolded worker)", path=ref.file)
        return load(ref)

    def read_cache(path, *args):
        if hidden(path):
            raise DataError("no such cache file (blindfolded worker)", path=path)
        return read(path, *args)

    def writer(path, fn):
        if hidden(path):
            raise OSError(f"{path}: a worker wrote under the client's folders")
        return write(path, fn)

    run._load_data, run._read_cache_file, jkl.atomic_writer = load_data, read_cache, writer


@pytest.fixture(scope="module")
def client():
    from bnsl_dist.orchestrate.cluster import connect

    with connect(workers=2, announce=False, memory_limit=None) as c:
        yield c


@pytest.fixture()
def blind(client, tmp_path):
    """The client's folders (tmp_path), hidden from the workers."""
    folders = [str(tmp_path.resolve())]
    client.run(_blindfold, folders)
    return folders


def _grid(csv: Path | str) -> GridConfig:
    return GridConfig.model_validate({
        "name": "staged", "seed": 2,
        "datasets": [{"name": "nl", "path": str(csv), "splits": ["train"]}],
        "cache": {"method": "independence", "scores_per_variable": 40, "max_indegree": 3},
        "algorithms": [{"name": "kg", "k": [2]}, {"name": "asobs-ent"},
                       {"name": "hc-tabu", "label": "qds", "screening": {"epsilon": 0.05}}],
        "seeds": [0, 1],
        "budget": {"iterations": 10, "iteration_checkpoints": [5, 10]}})


def _records(folder: Path) -> dict:
    return {r.key: comparable(r) for r in ResultStore(folder).read_results()}


def test_a_grid_runs_on_workers_that_cannot_see_its_files(client, blind, tmp_path):
    """Data read by the client and scattered, caches built on the workers and written
    by the client (one task, and fanned out), a resumed run reading the client's cache
    files through Dask: every record equals the serial run's, and each cache file the
    shared-file-system path writes (timings aside)."""
    csv = tmp_path / "data" / "nl.csv"
    csv.parent.mkdir()
    write_csv(load_data(DataRef(name="nltcs", split="test")), csv)
    grid = _grid(csv)
    serial = {c.key: comparable(run_cell(c)) for c in expand_grid(grid)}
    with pytest.raises(Exception, match="blindfolded"):  # the workers cannot see it
        client.submit(load_data, expand_grid(grid)[0].data).result()

    for name, fan in (("one-task", float("inf")), ("fanned", 0.0)):
        res = tmp_path / name
        summary = run_grid(client, grid, res, progress=False, report=False,
                           shared_fs=False, fan_out_seconds=fan)
        assert not summary.failed, summary.errors
        assert _records(res) == serial
        files = sorted((res / "caches").glob("*.jkl.gz"))
        assert len(files) == 2  # the full data's and the screened roots'
    for a, b in zip(sorted((tmp_path / "one-task" / "caches").glob("*")),
                    sorted((tmp_path / "fanned" / "caches").glob("*")), strict=True):
        assert _without_timings(a)[1] == _without_timings(b)[1]

    # resumed: the records gone, the client's caches sent to the workers
    res = tmp_path / "one-task"
    before = {f.name: f.read_bytes() for f in (res / "caches").glob("*")}
    shutil.rmtree(res / "results")
    summary = run_grid(client, grid, res, progress=False, report=False, shared_fs=False)
    assert len(summary.computed) == len(serial) and _records(res) == serial
    assert {f.name: f.read_bytes() for f in (res / "caches").glob("*")} == before


def test_a_grid_cache_path_is_sent_too_and_the_shared_path_fails_blind(client, blind,
                                                                         tmp_path):
    """The grid's own cache files (``cache.path``) are read by the client and sent;
    the same blindfolded workers told the file system is shared fail every cell."""
    grid = small_grid(write_nltcs_caches(tmp_path, splits=("test",)), name="given",
                      splits=("test",), seeds=(0,),
                      algorithms=[{"name": "kg", "k": [2]}, {"name": "asobs-ent"}])
    summary = run_grid(client, grid, tmp_path / "sent", progress=False, report=False,
                       shared_fs=False)
    assert not summary.failed
    assert _records(tmp_path / "sent") == {c.key: comparable(run_cell(c))
                                            for c in expand_grid(grid)}
    summary = run_grid(client, grid, tmp_path / "shared", progress=False, report=False,
                       shared_fs=True)
    assert len(summary.failed) == 2
    assert all("blindfolded" in e for e in summary.errors.values())


def _small_csv(path: Path) -> Path:
    """The first 300 rows of 9 of NLTCS's variables (data no other test here sends)."""
    d = load_data(DataRef(name="nltcs"))
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [",".join(d.names[:9])] + [",".join(map(str, r)) for r in d.codes[:300, :9]]
    path.write_text("\n".join(rows) + "\n")
    return path


def _sent_keys(dask_worker) -> list[str]:
    return sorted(getattr(dask_worker, "bnsl_inputs", {}))


def test_a_grid_whose_data_is_a_url_is_read_by_the_workers(client, tmp_path):
    """A ``file://`` data path, shared_fs off: the workers read it themselves (fsspec);
    the client sends no data (no ``data-<hash>`` input on any worker) and every
    record equals the same grid's with the plain path, run serially."""
    csv = _small_csv(tmp_path / "data" / "small.csv")
    url = csv.resolve().as_uri()
    assert url.startswith("file:///")
    by_path, by_url = _grid(csv), _grid(url)
    path_cells, url_cells = expand_grid(by_path), expand_grid(by_url)
    assert [c.data.file for c in url_cells] == [url] * len(url_cells)
    serial = {u.key: comparable(run_cell(p))[1:] for p, u in zip(path_cells, url_cells,
                                                                 strict=True)}
    sent = f"data-{load_data(path_cells[0].data).content_hash()}"

    summary = run_grid(client, by_url, tmp_path / "res", progress=False, report=False,
                       shared_fs=False)
    assert not summary.failed, summary.errors
    assert len(summary.computed) == len(url_cells) == 6
    assert {k: v[1:] for k, v in _records(tmp_path / "res").items()} == serial
    assert all(sent not in keys for keys in client.run(_sent_keys).values())
    # the plain path, the same run: the client sends the data (what the URL spared)
    run_grid(client, by_path, tmp_path / "sent", progress=False, report=False,
             shared_fs=False)
    assert all(sent in keys for keys in client.run(_sent_keys).values())


def test_a_missing_url_fails_in_one_line_before_any_cell_runs(client, tmp_path):
    url = "file:///nonexistent/x.csv"
    grid = _grid(url)
    with pytest.raises(DataError) as exc:
        run_grid(client, grid, tmp_path / "res", progress=False, report=False,
                 shared_fs=False)
    assert str(exc.value) == f"{url}: no such file"
    assert not ResultStore(tmp_path / "res").done_keys()
