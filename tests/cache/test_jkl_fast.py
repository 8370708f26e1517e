"""The fast ``.jkl`` reader against the paths it shortcuts: the comments found by
searching for ``#`` against every line visited (``_comments_by_line``), and the whole
fast reader against the line-by-line reader (``_read_slow``, an independent parser), on
the staged and shipped files and on generated ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnsl_dist._io import read_text
from bnsl_dist.cache import _jkl_parse as P
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.exceptions import CacheFormatError


def _same(a: ParentSetCache, b: ParentSetCache) -> None:
    assert a.names == b.names
    for f in ("offsets", "scores", "par_offsets", "par_flat"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.dtype == y.dtype and np.array_equal(x, y), f  # scores bit for bit
    for f in ("arities", "entropies"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None and y is None) or np.array_equal(x, y), f
    assert a.meta == b.meta


def _check(text: str) -> None:
    """The comments found line by line, and the fast reader's cache equal the slow
    reader's."""
    body, comments, stored = P._comments(text, "f")
    body2, comments2, stored2 = P._comments_by_line(text, "f")
    assert (body.split(), comments, stored) == (body2.split(), comments2, stored2)
    fast = P._read_fast(body, None, stored, comments, "f")
    _same(fast, P._read_slow(body2, None, stored2, comments2, "f"))


@st.composite
def jkl_texts(draw: st.DrawFn) -> str:
    """A valid cache's text: variables by index or by name, in any order, parents in any
    order, comments (whole lines, after records, the metadata line), blank lines, tabs
    and Windows line ends."""
    n = draw(st.integers(1, 6))
    named = draw(st.booleans())
    names = [f"v{i}" if named else str(i) for i in range(n)]
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    sp = draw(st.sampled_from([" ", "\t", "  "]))
    lines = [str(n)]
    if draw(st.booleans()):
        lines.insert(0, '# bnsl_dist: {"meta": {"k": 1}}')
    for v in draw(st.permutations(range(n))):
        others = [u for u in range(n) if u != v]
        sets = draw(st.lists(st.lists(st.sampled_from(others), unique=True, max_size=3)
                             .map(frozenset), unique=True, max_size=5)) if others else []
        sets = [frozenset(), *[s for s in sets if s]]
        lines.append(f"{names[v]}{sp}{len(sets)}")
        for s in sets:
            score = draw(st.floats(-1e4, 0, allow_nan=False, width=64))
            ps = draw(st.permutations(sorted(s)))
            rec = sp.join([repr(score), str(len(ps)), *(names[p] for p in ps)])
            if draw(st.integers(0, 9)) == 0:
                rec += " # a note"
            lines.append(rec)
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(st.sampled_from(["", "# a comment line", "   "])))
    return nl.join(lines) + nl


@settings(max_examples=100, deadline=None)
@given(jkl_texts())
def test_generated_files_read_as_by_the_walk_and_the_slow_reader(text):
    _check(text)


@pytest.mark.parametrize("name", ["wine.BIC.3.jkl.gz", "child-5000.blip.jkl.gz"])
def test_shipped_files(name):
    _check(read_text(bundled_path(f"jkl/{name}"), CacheFormatError))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cwebkb.train.bic.jkl.gz", "book.train.bic.jkl.gz"])
def test_staged_blip_files(shared_data, name):
    path = shared_data / "jkl" / "blip-is" / name
    if not path.exists():
        pytest.skip(f"{path} not staged")
    _check(read_text(path, CacheFormatError))


@pytest.mark.parametrize("at", [1, 3, 5])
def test_metadata_error_names_the_same_line(at):
    lines = ["2", "0 1", "-1.0 0", "1 1", "-2.0 0"]
    lines.insert(at - 1, "# bnsl_dist: [1]")
    text = "\n".join(lines) + "\n"
    for strip in (P._comments, P._comments_by_line):
        with pytest.raises(CacheFormatError, match=f"line {at}"):
            strip(text, "f")
