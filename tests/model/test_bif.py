"""BIF reading and writing: pgmpy's reader as oracle, the published counts, round trips on
all 24 staged networks, hand-computed CPT layouts and precise errors on malformed files."""

from __future__ import annotations

import functools
import gzip
import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from bnsl_dist.data import bundled_path
from bnsl_dist.exceptions import BIFFormatError, DataError
from bnsl_dist.graph import DAG
from bnsl_dist.model import BayesianNetwork
from bnsl_dist.model.bif import format_bif, parse_bif, read_bif, write_bif

ALL_NETS = ["alarm", "andes", "asia", "barley", "cancer", "child", "diabetes", "earthquake",
            "hailfinder", "hepar2", "insurance", "link", "mildew", "munin", "munin1", "munin2",
            "munin3", "munin4", "pathfinder", "pigs", "sachs", "survey", "water", "win95pts"]


@functools.cache
def _net(path: str) -> BayesianNetwork:
    return read_bif(path)


def _readme_counts(shared: Path) -> dict[str, tuple[int, int, int]]:
    text = (shared / "README.md").read_text()
    rows = re.findall(r"^\| `bif/(\w+)\.bif\.gz` \| (\d+) \| (\d+) \| (\d+) \|", text, re.M)
    return {name: (int(n), int(a), int(p)) for name, n, a, p in rows}


def _cpt_entry_oracle(net: BayesianNetwork, v: int, assignment: dict[int, int]) -> np.ndarray:
    """Row of v's CPT for a parent assignment, by the documented layout (first parent fastest)."""
    j, radix = 0, 1
    for p in net.dag.parents[v]:
        j += assignment[p] * radix
        radix *= len(net.states[p])
    return net.cpts[v][j]


def _same(a: BayesianNetwork, b: BayesianNetwork) -> None:
    assert a.dag == b.dag
    assert a.states == b.states
    for ta, tb in zip(a.cpts, b.cpts, strict=True):
        assert ta.shape == tb.shape
        np.testing.assert_allclose(ta, tb, rtol=0, atol=1e-12)


# ------------------------------------------------------------------ real networks
def test_counts_match_the_published_table(shared_data):
    table = _readme_counts(shared_data)
    assert sorted(table) == sorted(ALL_NETS)
    for name, (n, arcs, params) in table.items():
        net = _net(str(shared_data / "bif" / f"{name}.bif.gz"))
        # free parameters counted independently of BayesianNetwork.n_parameters
        free = sum((len(net.states[v]) - 1) * int(np.prod([len(net.states[p])
                                                           for p in net.dag.parents[v]]))
                   for v in range(net.n_vars))
        assert (net.n_vars, net.dag.n_arcs, free) == (n, arcs, params), name
        assert net.n_parameters() == params


@pytest.mark.parametrize("name", ["asia", "sachs", "insurance"])  # pgmpy parses slowly
def test_cpts_equal_pgmpy(shared_data, name):
    from pgmpy.readwrite import BIFReader

    path = shared_data / "bif" / f"{name}.bif.gz"
    text = gzip.decompress(path.read_bytes()).decode()
    model = BIFReader(string=text).get_model()
    net = _net(str(path))
    idx = {s: i for i, s in enumerate(net.names)}
    assert set(model.nodes()) == set(net.names)
    for cpd in model.get_cpds():
        child, evidence = cpd.variables[0], cpd.variables[1:]
        v = idx[child]
        assert sorted(idx[e] for e in evidence) == list(net.dag.parents[v])
        assert tuple(cpd.state_names[child]) == net.states[v]
        values = cpd.get_values()  # (r_child, prod of evidence cards), last evidence fastest
        labels = [cpd.state_names[e] for e in evidence]
        for col, combo in enumerate(itertools.product(*labels)):
            assignment = {idx[e]: net.states[idx[e]].index(s)
                          for e, s in zip(evidence, combo, strict=True)}
            np.testing.assert_allclose(_cpt_entry_oracle(net, v, assignment), values[:, col],
                                       rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ALL_NETS)
def test_round_trip_all_networks(shared_data, name):
    net = _net(str(shared_data / "bif" / f"{name}.bif.gz"))
    _same(net, parse_bif(format_bif(net)))


@pytest.mark.parametrize("suffix", [".bif", ".bif.gz"])
def test_write_read_file(tmp_path, suffix):
    net = read_bif(bundled_path("bif/insurance.bif.gz"))
    p = tmp_path / f"ins{suffix}"
    write_bif(net, p)
    assert (p.read_bytes()[:2] == b"\x1f\x8b") == suffix.endswith(".gz")
    _same(net, read_bif(p))
    assert [f.name for f in tmp_path.iterdir()] == [p.name]  # no temp files left


# ------------------------------------------------------------------ layout by hand
def _p(a: int, b: int, c: int) -> float:
    """P(C=c | A=a, B=b) of the hand-made network below (A: 2, B: 3, C: 2 states)."""
    p1 = (1 + a + 2 * b) / 10.0
    return p1 if c == 1 else 1.0 - p1


HEADER = """
// a comment
network "toy net" { property author = "me; you"; }
variable A { type discrete [ 2 ] { a0, a1 }; property position = (1, 2); }
/* block
   comment */
variable B { type discrete [3] { b0 b1 b2 }; }
variable "C var" { type discrete [ 2 ] { c0, c1 }; }
probability ( A ) { table 0.3, 0.7; }
probability ( B ) { table 0.2 0.3 0.5; }
"""


def _expected_c(net: BayesianNetwork) -> np.ndarray:
    c = net.names.index("C var")
    assert net.dag.parents[c] == (0, 1)  # sorted: A then B
    exp = np.zeros((6, 2))
    for a, b, k in itertools.product(range(2), range(3), range(2)):
        exp[a + 2 * b, k] = _p(a, b, k)  # project layout: first parent (A) fastest
    return exp


def test_table_form_with_parents_listed_out_of_order():
    # BIF table: child slowest, then parents as listed (B, A), the last (A) fastest.
    vals = [_p(a, b, k) for k in range(2) for b in range(3) for a in range(2)]
    text = HEADER + f'probability ( "C var" | B, A ) {{ table {" ".join(map(repr, vals))}; }}'
    net = parse_bif(text)
    np.testing.assert_allclose(net.cpts[2], _expected_c(net), atol=1e-15)


def test_row_form_default_property_and_state_indices():
    rows = [f"({['b0', 'b1', 'b2'][b]}, a{a}) {_p(a, b, 0)!r}, {_p(a, b, 1)!r};"
            for b in range(3) for a in range(2) if (a, b) != (1, 2)]
    rows.append("(2, 1) 0.1, 0.9;")  # states by index: B = b2, A = a1 ... given explicitly
    text = HEADER + ('probability ( "C var" | B, A ) {\n property x = 1;\n'
                     + "\n".join(rows) + "\n}")
    net = parse_bif(text)
    exp = _expected_c(net)
    exp[1 + 2 * 2] = [0.1, 0.9]
    np.testing.assert_allclose(net.cpts[2], exp, atol=1e-15)
    # the same with a default row for the missing configuration
    text = HEADER + ('probability ( "C var" | B, A ) {\n default 0.1 0.9;\n'
                     + "\n".join(rows[:-1]) + "\n}")
    np.testing.assert_allclose(parse_bif(text).cpts[2], exp, atol=1e-15)


def test_written_text_lists_last_parent_fastest_and_quotes_names():
    vals = [_p(a, b, k) for k in range(2) for b in range(3) for a in range(2)]
    net = parse_bif(HEADER + f'probability ( "C var" | B, A ) {{ table {" ".join(map(repr, vals))}; }}')
    text = format_bif(net)
    assert 'variable "C var"' in text
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("(")]
    # parents written in index order (A, B), B fastest
    assert [ln.split(")")[0] + ")" for ln in lines] == [
        "(a0, b0)", "(a0, b1)", "(a0, b2)", "(a1, b0)", "(a1, b1)", "(a1, b2)"]
    assert lines[1] == f"(a0, b1) {_p(0, 1, 0)!r}, {_p(0, 1, 1)!r};"
    _same(net, parse_bif(text))


def test_unwritable_name_raises_and_writes_nothing(tmp_path):
    dag = DAG.from_parents([()], ["bad{name"])
    net = BayesianNetwork(dag, (("x", "y"),), (np.array([[0.5, 0.5]]),))
    with pytest.raises(DataError, match="cannot be written"):
        write_bif(net, tmp_path / "n.bif")
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ malformed files
GOOD = """network n {
}
variable A {
  type discrete [ 2 ] { a0, a1 };
}
variable B {
  type discrete [ 2 ] { b0, b1 };
}
probability ( A ) {
  table 0.4, 0.6;
}
probability ( B | A ) {
  (a0) 0.1, 0.9;
  (a1) 0.5, 0.5;
}
"""

BAD = [
    ("(a1) 0.5, 0.5;", "(a2) 0.5, 0.5;", 14, "unknown parent state 'a2'"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, 0.5, 0.1;", 14, "expected 2 values, found 3"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, x;", 14, "'x' is not a number"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, -0.5;", 14, "non-negative"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, 0_5;", 14, "'0_5' is not a number"),  # Python's 5.0
    ("(a1) 0.5, 0.5;", "(a1) 0.5, \u0660.5;", 14, "is not a number"),  # Arabic-Indic 0
    ("type discrete [ 2 ] { b0, b1 };", "type discrete [ \u0662 ] { b0, b1 };", 7,
     "bad number of states"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, 0.4;", 14, "sums to 0.9"),
    ("(a1) 0.5, 0.5;", "(a0) 0.5, 0.5;", 14, "given twice"),
    ("(a1) 0.5, 0.5;", "", 12, "no row and there is no default"),
    ("table 0.4, 0.6;", "table 0.4, 0.6", 10, "missing ';'"),
    ("table 0.4, 0.6;", "table 0.4;", 10, "expected 2 values, found 1"),
    ("probability ( B | A )", "probability ( B | Z )", 12, "undeclared variable 'Z'"),
    ("type discrete [ 2 ] { b0, b1 };", "type discrete [ 3 ] { b0, b1 };", 7, "declares 3"),
    ("type discrete [ 2 ] { b0, b1 };", "type continuous;", 7, "only discrete"),
    ("variable B {", "varable B {", 6, "unexpected 'varable'"),
    ("  (a1) 0.5, 0.5;\n}", "  (a1) 0.5, 0.5;\n", 12, "missing '}'"),
    ("probability ( A ) {\n  table 0.4, 0.6;",
     "probability ( A | B ) {\n  (b0) 0.4, 0.6;\n  (b1) 0.4, 0.6;", 9, "cycle"),
    ("variable B {", "variable A {\n  type discrete [ 2 ] { a0, a1 };\n}\nvariable B {", 6,
     "defined twice"),
    # one block giving a row twice (the last one was taken)
    ("table 0.4, 0.6;", "table 0.4, 0.6;\n  table 0.6, 0.4;", 11, "a second table"),
    ("(a1) 0.5, 0.5;", "(a1) 0.5, 0.5;\n  table 0.1, 0.5, 0.9, 0.5;", 15,
     "a table besides rows"),
    ("(a0) 0.1, 0.9;", "table 0.1, 0.5, 0.9, 0.5;\n  (a0) 0.2, 0.8;", 14, "rows besides a table"),
    ("(a1) 0.5, 0.5;", "default 0.5, 0.5;\n  default 0.3, 0.7;", 15, "a second default"),
]


@pytest.mark.parametrize("old,new,line,msg", BAD)
def test_malformed_bif_names_file_and_line(tmp_path, old, new, line, msg):
    assert old in GOOD
    p = tmp_path / "bad.bif"
    p.write_text(GOOD.replace(old, new, 1))
    with pytest.raises(BIFFormatError) as info:
        read_bif(p)
    text = str(info.value)
    assert msg in text
    assert text.startswith(str(p))
    if msg != "cycle":  # a cycle is a property of the whole file
        assert f"line {line}" in text


def test_missing_probability_block_and_missing_file(tmp_path):
    p = tmp_path / "m.bif.gz"
    p.write_bytes(gzip.compress(GOOD.split("probability ( B")[0].encode()))
    with pytest.raises(BIFFormatError, match=r"m\.bif\.gz: no probability block for variable 'B'"):
        read_bif(p)
    with pytest.raises(BIFFormatError, match="no such file"):
        read_bif(tmp_path / "absent.bif")


def test_good_toy_file_reads():
    net = parse_bif(GOOD)
    assert net.names == ("A", "B") and net.dag.parents == ((), (0,))
    np.testing.assert_array_equal(net.cpts[1], [[0.1, 0.9], [0.5, 0.5]])


def test_comment_markers_inside_quoted_strings_are_text():
    """``//`` and ``/*`` inside a double-quoted string (a URL in a property, a quoted
    name) are part of the string; comments outside strings are still dropped, quotes
    inside them included."""
    text = ('network "toy" { property "source = http://www.bnlearn.com/bnrepository"; }\n'
            '// a comment with a "quote\n'
            'variable "A//x" { type discrete [ 2 ] { "a/*0", a1 }; '
            'property "note = see http://example.org"; }\n'
            '/* block "comment\n   over two lines */\n'
            'variable B { type discrete [ 2 ] { b0, b1 }; }\n'
            'probability ( "A//x" ) { table 0.3, 0.7; }\n'
            'probability ( B | "A//x" ) { ("a/*0") 0.9, 0.1; (a1) 0.4, 0.6; }  // end\n')
    net = parse_bif(text)
    assert net.names == ("A//x", "B")
    assert net.states == (("a/*0", "a1"), ("b0", "b1"))
    assert net.dag.parents == ((), (0,))
    np.testing.assert_array_equal(net.cpts[0], [[0.3, 0.7]])
    np.testing.assert_array_equal(net.cpts[1], [[0.9, 0.1], [0.4, 0.6]])
    bad = text.replace("table 0.3, 0.7;", "table 0.3, 0.8;")  # lines still counted
    with pytest.raises(BIFFormatError, match="line 7"):
        parse_bif(bad)


@pytest.mark.parametrize("n_parents", [9, 10])
def test_probability_block_too_large_is_named(n_parents):
    # 100 ** 9 * 2 entries: np.full raised "array is too big" (a ValueError traceback);
    # 100 ** 10 wrapped in int64 first. Past MAX_CPT_ENTRIES the block is an error.
    from bnsl_dist.model.fit import MAX_CPT_ENTRIES

    states = ", ".join(f"s{i}" for i in range(100))
    text = "".join(f"variable P{i} {{ type discrete [ 100 ] {{ {states} }}; }}\n"
                   for i in range(n_parents))
    text += "variable C { type discrete [ 2 ] { a, b }; }\n"
    text += "".join(f"probability ( P{i} ) {{ default {', '.join(['0.01'] * 100)}; }}\n"
                    for i in range(n_parents))
    line = text.count("\n") + 1
    text += (f"probability ( C | {', '.join(f'P{i}' for i in range(n_parents))} ) "
             "{ default 0.5, 0.5; }\n")
    assert 100 ** n_parents * 2 > MAX_CPT_ENTRIES
    with pytest.raises(BIFFormatError, match=f"x.bif, line {line}: probability block of 'C': "
                       f"{100 ** n_parents:,} parent configurations x 2 states exceed"):
        parse_bif(text, "x.bif")


@pytest.mark.parametrize("eol", ["\r", "\r\n"])
def test_line_ends_other_than_lf(eol):
    # with CR-only line ends a '//' comment swallowed the rest of the file ("no
    # variables") and every error was on line 1
    text = "// a comment\n" + GOOD
    net = parse_bif(text.replace("\n", eol))
    ref = parse_bif(text)
    assert net.names == ref.names and net.states == ref.states and net.dag == ref.dag
    for a, b in zip(net.cpts, ref.cpts, strict=True):
        np.testing.assert_array_equal(a, b)
    bad = text.replace("(a1) 0.5, 0.5;", "(a2) 0.5, 0.5;")
    with pytest.raises(BIFFormatError, match="x.bif, line 15: unknown parent state 'a2'"):
        parse_bif(bad.replace("\n", eol), "x.bif")
