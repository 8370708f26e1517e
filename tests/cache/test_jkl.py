"""`.jkl` score caches: reading every staged file, round trips, errors."""

from __future__ import annotations

import gzip
import math

import numpy as np
import pytest

from bnsl_dist.cache import ParentSetCache, read_jkl, write_jkl
from bnsl_dist.exceptions import CacheFormatError

# (file, variables, parent sets): the table of $BNSL_SHARED_DATA/README.md §5 and §5b.
STAGED = [
    ("wine.BIC.3.jkl.gz", 14, 592),
    ("asia_10000.dat.3.jkl.gz", 8, 512),
    ("child-5000.blip.jkl.gz", 20, 627),
    ("minobs_asia_1000_1.BDeu.jkl.gz", 8, 512),
    ("minobs_asia_250_1.BDeu.jkl.gz", 8, 512),
    ("minobs_cancer_1000_1.BDeu.jkl.gz", 5, 75),
    ("minobs_cancer_250_1.BDeu.jkl.gz", 5, 75),
    ("minobs_child_2000_1.BDeu.jkl.gz", 20, 23200),
    ("minobs_child_500_1.BDeu.jkl.gz", 20, 23200),
    ("minobs_earthquake_1000_1.BDeu.jkl.gz", 5, 75),
    ("minobs_earthquake_250_1.BDeu.jkl.gz", 5, 75),
    ("minobs_insurance_2000_1.BDeu.jkl.gz", 27, 79704),
    ("minobs_insurance_500_1.BDeu.jkl.gz", 27, 79704),
    ("minobs_sachs_1000_1.BDeu.jkl.gz", 11, 1936),
    ("minobs_sachs_250_1.BDeu.jkl.gz", 11, 1936),
    ("minobs_survey_1000_1.BDeu.jkl.gz", 6, 156),
    ("minobs_survey_250_1.BDeu.jkl.gz", 6, 156),
    ("minobs_water_1000_1.BDeu.jkl.gz", 32, 159744),
    ("minobs_water_4000_1.BDeu.jkl.gz", 32, 159744),
    ("blip-is/nltcs.train.bic.jkl.gz", 16, 3060),
    ("blip-is/plants.train.bic.jkl.gz", 69, 15911),
    ("blip-is/dna.train.bic.jkl.gz", 180, 6272),
    ("blip-is/book.train.bic.jkl.gz", 500, 306329),
    ("blip-is/cwebkb.train.bic.jkl.gz", 839, 457986),
]
LARGE = {"blip-is/book.train.bic.jkl.gz", "blip-is/cwebkb.train.bic.jkl.gz",
         "minobs_water_1000_1.BDeu.jkl.gz", "minobs_water_4000_1.BDeu.jkl.gz",
         "minobs_insurance_2000_1.BDeu.jkl.gz", "minobs_insurance_500_1.BDeu.jkl.gz"}


def naive_parse(path, keep=None):
    """An independent reader: per variable header, {frozenset of tokens: score}.

    Only the variables at positions in ``keep`` (all when None) are kept.
    """
    with gzip.open(path, "rt") as fh:
        lines = [ln.split("#")[0].split() for ln in fh]
    lines = [t for t in lines if t]
    n = int(lines[0][0])
    out, k = {}, 1
    for pos in range(n):
        head, m = lines[k][0], int(lines[k][1])
        if keep is None or pos in keep:
            body = lines[k + 1:k + 1 + m]
            out[head] = {frozenset(t[2:]): float(t[0]) for t in body}
            assert all(int(t[1]) == len(t) - 2 for t in body)
        k += 1 + m
    assert k == len(lines)
    return n, out


def _params():
    return [pytest.param(f, n, m, marks=[pytest.mark.slow] if f in LARGE else [], id=f)
            for f, n, m in STAGED]


@pytest.mark.parametrize("name,n_vars,n_sets", _params())
def test_reads_every_staged_file(shared_data, name, n_vars, n_sets):
    path = shared_data / "jkl" / name
    cache = read_jkl(path)
    assert cache.n_vars == n_vars
    assert cache.n_sets == n_sets
    # Large files: compare the content of a few variables only (the counts cover all).
    keep = None if n_sets < 30_000 else {0, 1, n_vars // 2, n_vars - 1}
    n, ref = naive_parse(path, keep)
    assert n == n_vars
    by_label = {nm: i for i, nm in enumerate(cache.names)}
    for head, sets in ref.items():
        v = by_label[head] if head in by_label else int(head)
        got = cache.sets_of(v)
        assert len(got) == len(sets)
        for ps, s in got:
            key = frozenset(cache.names[p] if head in by_label and not head.isdigit() else str(p)
                            for p in ps)
            assert sets[key] == s
        # best first; ties larger first then lexicographic
        keys = [(-s, -len(ps), ps) for ps, s in got]
        assert keys == sorted(keys)


def test_names_file_maps_names_to_indices(shared_data):
    cache = read_jkl(shared_data / "jkl" / "asia_10000.dat.3.jkl.gz")
    assert cache.names == ("One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight")
    assert math.isclose(cache.score_of(0, [1, 2]), -6227.61575999)
    # Names given explicitly, in another order, reorder the variables.
    perm = list(reversed(cache.names))
    other = read_jkl(shared_data / "jkl" / "asia_10000.dat.3.jkl.gz", names=perm)
    assert other.names == tuple(perm)
    assert other.score_of(7, [5, 6]) == cache.score_of(0, [1, 2])


def _random_cache(rng, n=6):
    lists = []
    for v in range(n):
        others = [u for u in range(n) if u != v]
        sets = {(): float(rng.normal(-100, 10))}
        for _ in range(int(rng.integers(0, 8))):
            k = int(rng.integers(1, len(others) + 1))
            ps = tuple(sorted(rng.choice(others, size=k, replace=False).tolist()))
            sets[ps] = float(rng.normal(-100, 10)) * (1 + 1e-13 * rng.random())
        lists.append(list(sets.items()))
    return ParentSetCache.from_lists(lists, names=[f"V{i}" for i in range(n)],
                                     arities=rng.integers(2, 5, size=n),
                                     meta={"method": "test", "score": "bic"})


@pytest.mark.parametrize("suffix", [".jkl", ".jkl.gz"])
@pytest.mark.parametrize("comments", [True, False])
@pytest.mark.parametrize("use_names", [True, False])
def test_round_trip_is_bit_exact(tmp_path, suffix, comments, use_names):
    rng = np.random.default_rng(7)
    for rep in range(5):
        c = _random_cache(rng)
        p = tmp_path / f"c{rep}{suffix}"
        write_jkl(c, p, comments=comments, use_names=use_names)
        d = read_jkl(p)
        for k in ("offsets", "scores", "par_offsets", "par_flat"):
            assert np.array_equal(getattr(c, k), getattr(d, k)), k
        if comments or use_names:
            assert d.names == c.names
        if comments:
            assert np.array_equal(d.arities, c.arities)
            assert d.meta["method"] == "test"
    text = (p.read_bytes() if suffix == ".jkl" else gzip.decompress(p.read_bytes())).decode()
    assert ("#" in text) == comments


def test_gobnilp_output_has_no_comment_lines_and_counts(tmp_path):
    c = _random_cache(np.random.default_rng(3))
    p = tmp_path / "g.jkl"
    write_jkl(c, p, comments=False)
    lines = p.read_text().splitlines()
    assert lines[0] == str(c.n_vars)
    k = 1
    for v in range(c.n_vars):
        head, m = lines[k].split()
        assert int(head) == v and int(m) == c.n_sets_of(v)
        for ln in lines[k + 1:k + 1 + int(m)]:
            t = ln.split()
            assert int(t[1]) == len(t) - 2
            assert [int(x) for x in t[2:]] == sorted(int(x) for x in t[2:])
        k += 1 + int(m)
    assert k == len(lines)


BAD = [
    ("", "empty file"),
    ("x\n", "number of variables must be an integer"),
    ("2\n0 1\n-1 0\n", "announces 2 variables but lists 1"),
    ("1\n0 2\n-1 0\n", "announces 2 parent sets"),
    ("2\n0 1\n-1 0\n1 1\n-1 1 1\n", "own parent set"),
    ("2\n0 1\n-1 1 1\n1 1\n-1 0\n", "no empty parent set"),
    ("2\n0 2\n-1 0\n-2 2 1\n1 1\n-1 0\n", "announces 2 parents and lists 1"),
    ("2\n0 2\n-1 0\nabc 1 1\n1 1\n-1 0\n", "score must be a number"),
    ("2\n0 2\n-1 0\nnan 1 1\n1 1\n-1 0\n", "non-finite score"),
    ("2\n0 2\n-1 0\n-1_5 1 1\n1 1\n-1 0\n", "score must be a number, got '-1_5'"),
    ("2\n0 2\n-1 0\n-2 \u0661 1\n1 1\n-1 0\n", "parent-set size must be an integer"),
    ("2\n0 1_0\n-1 0\n1 1\n-1 0\n", "number of parent sets must be an integer"),
    ("2\nA_1 2\n-1 0\n-2_0 1 B\nB 1\n-1 0\n", "score must be a number, got '-2_0'"),
    ("2\n0 2\n-1 0\n-2 1 7\n1 1\n-1 0\n", "out of range"),
    ("2\n0 3\n-1 0\n-2 1 1\n-3 1 1\n1 1\n-1 0\n", "listed twice"),
    ("2\n0 1\n-1 0\n0 1\n-1 0\n", "listed twice"),
    ("2\nA 2\n-1 0\n-2 1 C\nB 1\n-1 0\n", "unknown variable 'C'"),
    ("# bnsl_dist: {oops\n1\n0 1\n-1 0\n", "metadata"),
]


@pytest.mark.parametrize("text,msg", BAD)
def test_malformed_files_name_file_and_line(tmp_path, text, msg):
    p = tmp_path / "bad.jkl"
    p.write_text(text)
    with pytest.raises(CacheFormatError, match=msg) as ei:
        read_jkl(p)
    assert str(p) in str(ei.value)
    if text:
        assert "line" in str(ei.value)


def test_missing_file_is_a_cache_error(tmp_path):
    with pytest.raises(CacheFormatError, match="no such file"):
        read_jkl(tmp_path / "nope.jkl")


def test_failed_write_leaves_nothing(tmp_path):
    c = ParentSetCache.from_lists([[((), -1.0)], [((), -2.0)]], names=["a b", "c"])
    p = tmp_path / "x.jkl"
    with pytest.raises(CacheFormatError, match="white space"):
        write_jkl(c, p, use_names=True)
    assert not p.exists()
    assert list(tmp_path.iterdir()) == []


def _by_name(c):
    """Each variable's sets as {parent names: score}, keyed by the variable's name."""
    return {c.names[v]: {tuple(c.names[p] for p in ps): s for ps, s in c.sets_of(v)}
            for v in range(c.n_vars)}


@pytest.mark.parametrize("names", [["1", "0", "2"], ["1", "2", "3"], ["2", "x", "0"]])
@pytest.mark.parametrize("comments", [True, False])
@pytest.mark.parametrize("use_names", [True, False])
def test_names_that_look_like_indices_round_trip(tmp_path, names, comments, use_names):
    """Data whose names are integers (a Parquet file's columns 1..n, a subset of
    variables named by their old indices) keep their sets: in a file of indices a
    token is an index, whatever the names; a file naming the variables says so."""
    c = ParentSetCache.from_lists(
        [[((), -1.0), ((1,), -0.5)], [((), -2.0), ((0, 2), -1.5)], [((), -3.0)]],
        names=names)
    expected = {names[0]: {(): -1.0, (names[1],): -0.5},
                names[1]: {(): -2.0, (names[0], names[2]): -1.5},
                names[2]: {(): -3.0}}
    assert _by_name(c) == expected
    p = tmp_path / "c.jkl"
    as_indices = all(nm.isdigit() for nm in names)  # the headers would read as indices
    if use_names and not comments and as_indices:  # and no metadata says they are names
        with pytest.raises(CacheFormatError, match="index"):
            write_jkl(c, p, comments=comments, use_names=use_names)
        assert not p.exists()
        return
    write_jkl(c, p, comments=comments, use_names=use_names)
    if comments:
        assert _by_name(read_jkl(p)) == expected
    assert _by_name(read_jkl(p, names=names)) == expected  # as the pipeline reads it


def test_index_file_read_with_integer_names():
    """A BLIP/GOBNILP file lists variables by index: names given for them (the data's)
    only label the indices, even names that are themselves integers."""
    import os
    import tempfile

    p = os.path.join(tempfile.mkdtemp(), "blip.jkl")
    with open(p, "w") as fh:
        fh.write("2\n0 2\n-1.5 1 1\n-2.0 0\n1 1\n-3.0 0\n")
    c = read_jkl(p, names=["1", "0"])
    assert c.names == ("1", "0")
    assert c.sets_of(0) == [((1,), -1.5), ((), -2.0)]
    assert c.sets_of(1) == [((), -3.0)]


@pytest.mark.parametrize("payload", [
    '{"arities":"ab"}', '{"arities":[2,"x"]}', '{"arities":[2.7,3]}', '{"arities":[0,-3]}',
    '{"arities":[true,2]}', '{"entropies":["x",1]}', '{"entropies":5}', '{"meta":[1]}',
    '{"names":"ab"}', '{"meta":{"entropies":["x",1]}}',
    # past int64 / float64 (OverflowError tracebacks), more states than data may have,
    # entropies that are no finite number (an error naming neither file nor line)
    '{"arities":[1%s,2]}' % ("0" * 30), '{"arities":[70000,2]}',
    '{"entropies":[1%s,1]}' % ("0" * 400), '{"entropies":[NaN,1]}',
    '{"meta":{"entropies":[1e400,1]}}',
])
def test_malformed_metadata_line_is_a_cache_error(tmp_path, payload):
    """A hand-edited or damaged '# bnsl_dist:' line is named (file, line), like every
    other defect of the file: it raised ValueError / TypeError / AttributeError (a
    traceback from the CLI), or was taken as it was (arities 0 and -3, 2.7 -> 2)."""
    p = tmp_path / "m.jkl"
    p.write_text(f"# a comment\n# bnsl_dist: {payload}\n2\n0 2\n-1.5 1 1\n-2.0 0\n1 1\n-3.0 0\n")
    with pytest.raises(CacheFormatError, match="metadata") as ei:
        read_jkl(p)
    assert (ei.value.path, ei.value.line) == (str(p), 2)
