"""The data-reader registry: dispatch by suffix, one module per format, one shape rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bnsl_dist.data import read_data
from bnsl_dist.data import readers as R
from bnsl_dist.data.io import peek_shape


def test_every_suffix_goes_to_its_reader():
    assert R.reader_for("x.parquet").name == "parquet"
    assert R.reader_for("x.PQ").name == "parquet"
    assert R.reader_for("x.csv.gz").name == "text"
    assert R.reader_for("x.dat").name == "text"
    assert R.reader_for("x.unknown").name == "text"  # the default: delimited text


def test_pq_files_peek_like_parquet(tmp_path):
    """A ``.pq`` file is Parquet for the shape hint too (it was read as text there)."""
    codes = np.random.default_rng(0).integers(0, 3, size=(11, 4))
    pd.DataFrame(codes, columns=list("abcd")).to_parquet(tmp_path / "d.pq")
    d = read_data(tmp_path / "d.pq")
    assert peek_shape(tmp_path / "d.pq") == (d.n_vars, d.n_samples) == (4, 11)
    assert d.codes.tolist() == codes.tolist()


def test_a_new_format_is_one_registration(tmp_path, monkeypatch):
    """A reader registered for a new suffix is what read_data and peek_shape use."""
    monkeypatch.setattr(R, "_READERS", dict(R._READERS))

    def parse(path, header, labels, missing):
        rows = [line.split(":") for line in path.read_text().split()]
        cols = [np.array([int(r[j]) for r in rows], dtype=np.int64) for j in range(2)]
        return R.RawTable(str(path), ["u", "v"], None, cols, [None, None], None,
                          lambda r: r + 1)

    R.register_reader(R.Reader("colon", (".colon",), parse, lambda p: (2, 3)))
    f = tmp_path / "t.colon"
    f.write_text("0:1\n1:2\n1:0\n")
    d = read_data(f)
    assert d.names == ("u", "v")
    assert d.codes.tolist() == [[0, 1], [1, 2], [1, 0]]
    assert d.arities.tolist() == [2, 3]
    assert peek_shape(f) == (2, 3)
    with pytest.raises(ValueError, match="overlap"):
        R.register_reader(R.Reader("other", (".colon",), parse, lambda p: (0, 0)))
