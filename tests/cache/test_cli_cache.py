"""`bnsl-dist cache build | info`: output equals the library; one-line errors, exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cache import build_cache, read_jkl
from bnsl_dist.cli import main
from bnsl_dist.data import read_data, write_csv
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample


@pytest.fixture(scope="module")
def data_file(tmp_path_factory):
    d = sample(read_bif(bundled_path("bif/sachs.bif.gz")), 800, rng=3)
    p = tmp_path_factory.mktemp("cli") / "sachs.csv"
    write_csv(d, p, header=True)
    return p


def test_build_writes_the_library_cache(data_file, tmp_path):
    out = tmp_path / "c.jkl"
    res = CliRunner().invoke(main, ["cache", "build", str(data_file), "--method", "sequential",
                                    "--max-indegree", "2", "--score", "bdeu", "-o", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # the phases are on stderr
    ref = build_cache(read_data(data_file), method="sequential", max_indegree=2, score="bdeu")
    got = read_jkl(out)
    assert summary["n_sets"] == ref.n_sets == got.n_sets
    assert np.array_equal(got.scores, ref.scores)
    assert np.array_equal(got.par_flat, ref.par_flat)
    assert got.meta["method"] == "sequential" and got.meta["score"] == "bdeu"


def test_build_without_comments_and_info(data_file, tmp_path):
    out = tmp_path / "c.jkl.gz"
    res = CliRunner().invoke(main, ["cache", "build", str(data_file), "--scores-per-variable",
                                    "40", "--no-comments", "-o", str(out)])
    assert res.exit_code == 0, res.output
    import gzip

    assert "#" not in gzip.decompress(out.read_bytes()).decode()
    cache = read_jkl(out)
    res = CliRunner().invoke(main, ["cache", "info", str(out), "--json"])
    assert res.exit_code == 0, res.output
    info = json.loads(res.output)
    assert info["n_vars"] == cache.n_vars == 11
    assert [r["sets"] for r in info["per_variable"]] == [cache.n_sets_of(v) for v in range(11)]
    sizes = [len(cache.parents_at(i)) for i in range(cache.n_sets)]
    assert info["indegree_histogram"] == {str(k): sizes.count(k) for k in sorted(set(sizes))}
    text = CliRunner().invoke(main, ["cache", "info", str(out)])
    assert text.exit_code == 0 and "in-degree histogram" in text.output


@pytest.mark.parametrize("args,msg", [
    (["--seconds-per-variable", "1", "--scores-per-variable", "5"], "not both"),
    (["--seconds-per-variable", "-1"],  # the model's check, as in learn
         "--seconds-per-variable: Input should be greater than 0"),
    (["--workers", "2", "--scheduler", "tcp://x:1"], "at most one of"),
    (["--scheduler-file", "none.json", "--workers", "2"], "at most one of"),
])
def test_bad_options_are_one_line_exit_2(data_file, tmp_path, args, msg):
    out = tmp_path / "c.jkl"
    res = CliRunner().invoke(main, ["cache", "build", str(data_file), *args, "-o", str(out)])
    assert res.exit_code == 2
    assert msg in res.output
    assert not out.exists()


def test_missing_and_malformed_files_exit_2(tmp_path):
    res = CliRunner().invoke(main, ["cache", "build", str(tmp_path / "nope.csv"), "-o",
                                    str(tmp_path / "c.jkl")])
    assert res.exit_code == 2 and "nope.csv" in res.output
    bad = tmp_path / "bad.jkl"
    bad.write_text("2\n0 1\n-1 0\n")
    res = CliRunner().invoke(main, ["cache", "info", str(bad)])
    assert res.exit_code == 2
    assert res.output.count("\n") == 1 and "line" in res.output
