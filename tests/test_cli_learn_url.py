"""`bnsl-dist learn URL`: data named by a URL (read with fsspec) learns what the same
file's plain path learns."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.pipeline.run import load_data
from bnsl_dist.pipeline.specs import DataRef
from tests.orchestrate.test_staging import _small_csv


@pytest.fixture()
def runner():
    return CliRunner()


def test_learn_reads_a_url_as_its_plain_path(runner, tmp_path):
    csv = _small_csv(tmp_path / "data" / "small.csv")
    url = csv.resolve().as_uri()
    ref = DataRef.parse(url)
    assert (ref.name, ref.split, ref.file) == ("small", "train", url)
    assert load_data(ref).content_hash() == load_data(DataRef.parse(str(csv))).content_hash()
    got = {}
    for name, source in (("path", str(csv)), ("url", url)):
        out = tmp_path / f"{name}.json"
        res = runner.invoke(main, ["learn", source, "--algorithm", "asobs-ent",
                                   "--iterations", "20", "--serial", "--max-indegree",
                                   "2", "-o", str(out), "-q"])
        assert res.exit_code == 0, res.output
        got[name] = json.loads(out.read_text())
    assert got["url"]["spec"]["data"]["path"] == url
    assert got["url"]["dag"] == got["path"]["dag"]
    assert got["url"]["score"] == got["path"]["score"]
    assert [c["score"] for c in got["url"]["checkpoints"]] == \
        [c["score"] for c in got["path"]["checkpoints"]]


def test_learn_a_missing_url_is_one_line(runner, tmp_path):
    url = "file:///nonexistent/x.csv"
    out = tmp_path / "r.json"
    res = runner.invoke(main, ["learn", url, "--iterations", "5", "--serial",
                               "-o", str(out)])
    assert res.exit_code == 2
    assert res.output.strip() == f"error: {url}: no such file"
    assert not out.exists()
