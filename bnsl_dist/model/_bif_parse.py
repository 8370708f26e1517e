"""Parsing BIF text (the grammar: :mod:`bnsl_dist.model.bif`): a scanner over the
text with its comments blanked (line numbers kept), the ``variable`` and ``probability``
blocks (``table``, per-row and ``default`` entries), each CPT checked (rows summing to 1
within a tolerance, sizes) and converted to the project's layout: parents sorted
ascending, first parent fastest.

References
----------
F. G. Cozman, "The Interchange Format for Bayesian Networks" (BIF 0.15), 1998,
section "probability blocks" (order of ``table`` entries).
"""

from __future__ import annotations

import math
import re

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._io import all_plain, is_plain_float
from bnsl_dist.exceptions import BIFFormatError, NotADAGError
from bnsl_dist.graph.dag import DAG
from bnsl_dist.model.fit import MAX_CPT_ENTRIES
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["parse_bif"]

#: a double-quoted string (kept: ``//`` in a URL is text) or a comment (dropped)
_COMMENT = re.compile(r'"[^"]*"|//[^\n]*|/\*.*?\*/', re.S)
_WS = re.compile(r"[\s,|]*")  # ',' and '|' are ignored between tokens (BIF 0.15)
_WORD = re.compile(r'"([^"]*)"|([^\s{}()\[\],;|"]+)')
_ROW = re.compile(r"\(([^)]*)\)([^;{}]*);")
_STATEMENT_END = re.compile(r'[;"{}]')
_ROW_TOL = 1e-6


class _Scanner:
    """A cursor over comment-free BIF text; errors name file and line."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self.pos = 0

    def line_at(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def error(self, message: str, pos: int | None = None) -> BIFFormatError:
        return BIFFormatError(message, path=self.path,
                              line=self.line_at(self.pos if pos is None else pos))

    def skip(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at_end(self) -> bool:
        self.skip()
        return self.pos >= len(self.text)

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> int:
        self.skip()
        if self.text[self.pos:self.pos + 1] != char:
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of file"
            raise self.error(f"expected {char!r}, found {found!r}")
        self.pos += 1
        return self.pos - 1

    def word(self, what: str) -> str:
        self.skip()
        m = _WORD.match(self.text, self.pos)
        if m is None:
            found = self.text[self.pos:self.pos + 12].split("\n")[0] or "end of file"
            raise self.error(f"expected {what}, found {found!r}")
        self.pos = m.end()
        return m.group(1) if m.group(1) is not None else m.group(2)

    def statement(self) -> tuple[int, str]:
        """Raw text up to the next ';' (quotes respected); returns (start, text).

        A brace before the ';' means the ';' is missing.
        """
        self.skip()
        start = i = self.pos
        text = self.text
        while True:
            m = _STATEMENT_END.search(text, i)
            if m is None:
                raise self.error("missing ';'", start)
            c = m.group(0)
            if c == '"':
                close = text.find('"', m.end())
                if close < 0:
                    raise self.error("unterminated string", m.start())
                i = close + 1
                continue
            if c != ";":
                raise self.error("missing ';'", start)
            self.pos = m.end()
            return start, text[start:m.start()]

    def skip_block(self) -> None:
        """Skip a ``{ ... }`` block of property statements."""
        self.expect("{")
        while self.peek() != "}":
            if self.at_end():
                raise self.error("missing '}'")
            self.statement()
        self.expect("}")


def _numbers(sc: _Scanner, at: list[int], toks: list[str], count: int, what: str
             ) -> NDArray[np.float64]:
    """Parse ``toks`` (``len(at)`` equal-length rows starting at text positions ``at``)."""
    if len(toks) != count:
        raise sc.error(f"{what}: expected {count} values, found {len(toks)}", at[0])
    per_row = max(count // len(at), 1)
    try:
        vals = np.array([float(t) for t in toks], dtype=np.float64)
        if not all_plain(toks):  # "1_5", non-ASCII digits: Python reads them, BIF does not
            raise ValueError
    except ValueError:
        i = next(i for i, t in enumerate(toks) if not is_plain_float(t))
        raise sc.error(f"{what}: {toks[i]!r} is not a number", at[i // per_row]) from None
    bad = ~np.isfinite(vals) | (vals < 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise sc.error(f"{what}: probabilities must be finite and non-negative, found "
                       f"{toks[i]!r}", at[i // per_row])
    return vals


def _variable(sc: _Scanner, names: list[str], states: list[tuple[str, ...]],
              index: dict[str, int]) -> None:
    at = sc.pos
    name = sc.word("a variable name")
    if name in index:
        raise sc.error(f"variable {name!r} defined twice", at)
    sc.expect("{")
    labels: tuple[str, ...] | None = None
    while sc.peek() != "}":
        if sc.at_end():
            raise sc.error(f"variable {name!r}: missing '}}'")
        kw_at = sc.pos
        kw = sc.word("'type' or 'property'")
        if kw == "property":
            sc.statement()
            continue
        if kw != "type":
            raise sc.error(f"variable {name!r}: unexpected {kw!r}", kw_at)
        kind = sc.word("'discrete'")
        if kind != "discrete":
            raise sc.error(f"variable {name!r}: only discrete variables are supported, "
                           f"found type {kind!r}", kw_at)
        sc.expect("[")
        n_at = sc.pos
        n_tok = sc.word("the number of states")
        if not (n_tok.isascii() and n_tok.isdigit()) or int(n_tok) < 1:
            raise sc.error(f"variable {name!r}: bad number of states {n_tok!r}", n_at)
        sc.expect("]")
        sc.expect("{")
        labs: list[str] = []
        while sc.peek() != "}":
            labs.append(sc.word("a state name"))
        sc.expect("}")
        sc.expect(";")
        if len(labs) != int(n_tok):
            raise sc.error(f"variable {name!r}: declares {n_tok} states but lists "
                           f"{len(labs)}", kw_at)
        if len(set(labs)) != len(labs):
            raise sc.error(f"variable {name!r}: a state is listed twice", kw_at)
        labels = tuple(labs)
    sc.expect("}")
    if labels is None:
        raise sc.error(f"variable {name!r} has no 'type discrete' statement", at)
    index[name] = len(names)
    names.append(name)
    states.append(labels)


def _probability(sc: _Scanner, states: list[tuple[str, ...]], index: dict[str, int],
                 tables: dict[int, tuple[list[int], NDArray[np.float64], int]]) -> None:
    head = sc.expect("(")
    vars_: list[str] = []
    while sc.peek() != ")":
        at = sc.pos
        v = sc.word("a variable name")
        if v not in index:
            raise sc.error(f"probability block names undeclared variable {v!r}", at)
        vars_.append(v)
    sc.expect(")")
    if not vars_:
        raise sc.error("probability block names no variable", head)
    child = index[vars_[0]]
    parents = [index[v] for v in vars_[1:]]
    if child in tables:
        raise sc.error(f"second probability block for {vars_[0]!r}", head)
    if len(set(parents)) != len(parents) or child in parents:
        raise sc.error(f"probability block of {vars_[0]!r} repeats a variable", head)
    r = len(states[child])
    pr = [len(states[p]) for p in parents]
    q = math.prod(pr)  # Python ints: an int64 product wraps
    if q * r > MAX_CPT_ENTRIES:  # np.full failed (array too big) or ran out of memory
        raise sc.error(f"probability block of {vars_[0]!r}: {q:,} parent configurations "
                       f"x {r} states exceed {MAX_CPT_ENTRIES:,} table entries", head)
    rows = np.full((q, r), np.nan)  # row = C-order index over BIF parents (last fastest)
    default: NDArray[np.float64] | None = None
    table = False  # a table gives every row: a second one, or rows too, were overwritten
    lookup = [{s: k for k, s in enumerate(states[p])} for p in parents]
    row_j: list[int] = []  # rows are collected, then converted in one step
    row_at: list[int] = []
    row_tok: list[str] = []
    seen: set[int] = set()
    sc.expect("{")
    text = sc.text
    while True:
        sc.skip()
        c = text[sc.pos:sc.pos + 1]
        if c == "}":
            sc.pos += 1
            break
        if c == "":
            raise sc.error(f"probability block of {vars_[0]!r}: missing '}}'", head)
        if c == "(":
            at = sc.pos
            m = _ROW.match(text, at)
            if m is None:
                raise sc.error("malformed table row (expected '(states) values;')", at)
            if table:
                raise sc.error(f"probability block of {vars_[0]!r}: rows besides a table", at)
            cfg = m.group(1)
            toks = (cfg.replace(",", " ").split() if '"' not in cfg else
                    [w.group(1) if w.group(1) is not None else w.group(2)
                     for w in _WORD.finditer(cfg)])
            if len(toks) != len(parents):
                raise sc.error(f"row names {len(toks)} parent states, expected {len(parents)}",
                               at)
            j = 0
            for t, lut, rp in zip(toks, lookup, pr, strict=True):
                k = lut.get(t)
                if k is None:
                    if t.isascii() and t.isdigit() and int(t) < rp:  # states by index
                        k = int(t)
                    else:
                        raise sc.error(f"unknown parent state {t!r}", at)
                j = j * rp + k
            if j in seen:
                raise sc.error(f"parent configuration ({cfg.strip()}) given twice", at)
            seen.add(j)
            vt = m.group(2).replace(",", " ").split()
            if len(vt) != r:
                raise sc.error(f"row of {vars_[0]!r}: expected {r} values, found {len(vt)}", at)
            row_j.append(j)
            row_at.append(at)
            row_tok.extend(vt)
            sc.pos = m.end()
            continue
        at = sc.pos
        kw = sc.word("'table', 'default', '(' or 'property'")
        if kw == "property":
            sc.statement()
        elif kw == "table":
            if table or row_j:
                raise sc.error(f"probability block of {vars_[0]!r}: "
                               + ("a second table" if table else "a table besides rows"), at)
            table = True
            _, body = sc.statement()
            vals = _numbers(sc, [at], body.replace(",", " ").split(), q * r,
                            f"table of {vars_[0]!r}")
            rows[:] = vals.reshape(r, q).T
        elif kw == "default":
            if default is not None:
                raise sc.error(f"probability block of {vars_[0]!r}: a second default", at)
            _, body = sc.statement()
            default = _numbers(sc, [at], body.replace(",", " ").split(), r,
                               f"default of {vars_[0]!r}")
        else:
            raise sc.error(f"unexpected {kw!r} in probability block", at)
    if row_j:
        vals = _numbers(sc, row_at, row_tok, len(row_j) * r, f"row of {vars_[0]!r}")
        rows[np.array(row_j)] = vals.reshape(-1, r)
    missing = np.isnan(rows[:, 0])
    if missing.any():
        if default is None:
            raise sc.error(f"probability block of {vars_[0]!r}: {int(missing.sum())} parent "
                           "configuration(s) have no row and there is no default", head)
        rows[missing] = default
    sums = rows.sum(axis=1)
    bad = np.nonzero(np.abs(sums - 1.0) > _ROW_TOL)[0]
    if bad.size:
        where = dict(zip(row_j, row_at, strict=True)).get(int(bad[0]), head)
        raise sc.error(f"probability block of {vars_[0]!r}: a row sums to "
                       f"{sums[bad[0]]:.9g}, not 1", where)
    tables[child] = (parents, rows, head)


def _to_project_layout(parents: list[int], pr: list[int], rows: NDArray[np.float64]
                       ) -> tuple[tuple[int, ...], NDArray[np.float64]]:
    """BIF rows (C order over parents as listed) -> rows over sorted parents, first fastest."""
    if len(parents) <= 1:
        return tuple(parents), np.ascontiguousarray(rows)
    r = rows.shape[1]
    arr = rows.reshape(*pr, r)
    order = sorted(range(len(parents)), key=lambda m: parents[m])
    # C order makes the last axis (before the child) fastest: put sorted parents reversed.
    arr = arr.transpose([*reversed(order), len(parents)])
    return tuple(parents[m] for m in order), np.ascontiguousarray(arr.reshape(-1, r))


def parse_bif(text: str, path: str = "<string>") -> BayesianNetwork:
    """Parse BIF text (see :func:`~bnsl_dist.model.bif.read_bif`); ``path`` only labels
    error messages.

    Examples
    --------
    >>> net = parse_bif('''
    ... network toy { }
    ... variable A { type discrete [ 2 ] { a0, a1 }; }
    ... variable B { type discrete [ 2 ] { b0, b1 }; }
    ... probability ( A ) { table 0.3, 0.7; }
    ... probability ( B | A ) { (a0) 0.9, 0.1; (a1) 0.4, 0.6; }
    ... ''')
    >>> net.names, net.dag.parents, net.cpts[1].tolist()
    (('A', 'B'), ((), (0,)), [[0.9, 0.1], [0.4, 0.6]])
    >>> from bnsl_dist.model.bif import format_bif
    >>> parse_bif(format_bif(net)).cpts[0].tolist()
    [[0.3, 0.7]]
    """
    # CR-only line ends as '\n': a '//' comment ran to the end of the file, lines uncounted
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0).startswith('"')
                        else "\n" * m.group(0).count("\n"), text)
    sc = _Scanner(text, path)
    names: list[str] = []
    states: list[tuple[str, ...]] = []
    index: dict[str, int] = {}
    tables: dict[int, tuple[list[int], NDArray[np.float64], int]] = {}
    seen_network = False
    while not sc.at_end():
        at = sc.pos
        kw = sc.word("'network', 'variable' or 'probability'")
        if kw == "network":
            if seen_network:
                raise sc.error("second network block", at)
            seen_network = True
            if sc.peek() != "{":
                sc.word("a network name")
            sc.skip_block()
        elif kw == "variable":
            _variable(sc, names, states, index)
        elif kw == "probability":
            _probability(sc, states, index, tables)
        else:
            raise sc.error(f"unexpected {kw!r} (expected 'network', 'variable' or "
                           "'probability')", at)
    if not names:
        raise BIFFormatError("no variables", path=path)
    lacking = [names[v] for v in range(len(names)) if v not in tables]
    if lacking:
        raise BIFFormatError(f"no probability block for variable {lacking[0]!r}"
                             + (f" (and {len(lacking) - 1} more)" if len(lacking) > 1 else ""),
                             path=path)
    parent_lists: list[tuple[int, ...]] = []
    cpts: list[NDArray[np.float64]] = []
    for v in range(len(names)):
        ps, rows, _ = tables[v]
        sorted_ps, cpt = _to_project_layout(ps, [len(states[p]) for p in ps], rows)
        parent_lists.append(sorted_ps)
        cpts.append(cpt)
    try:
        dag = DAG.from_parents(parent_lists, names)
    except NotADAGError as exc:
        raise BIFFormatError(str(exc), path=path) from None
    return BayesianNetwork(dag, tuple(states), tuple(cpts))
