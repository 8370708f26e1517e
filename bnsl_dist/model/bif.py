"""Read and write Bayesian networks in the BIF interchange format.

The grammar (Cozman's Interchange Format, as written by bnlearn and pgmpy)::

    network NAME { property ...; }
    variable NAME { type discrete [ R ] { s1, s2, ... }; property ...; }
    probability ( CHILD | P1, P2, ... ) {
        table v1, v2, ...;              // all entries, CHILD slowest, LAST parent fastest
        (a, b) v1, v2, ...;             // one row: P1 = a, P2 = b (BIF parent order)
        default v1, v2, ...;            // every row not listed
        property ...;
    }

``//`` and ``/* */`` comments (outside double-quoted strings) are ignored, names may be
double-quoted, and commas are optional between numbers. CPTs are converted to the
project's layout (:mod:`bnsl_dist.model.network`): parents sorted ascending by variable
index, row index mixed-radix with the *first* parent fastest.

References
----------
F. G. Cozman, "The Interchange Format for Bayesian Networks" (BIF 0.15), 1998,
section "probability blocks" (order of ``table`` entries).
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bnsl_dist._io import atomic_write_text
from bnsl_dist.exceptions import BIFFormatError, DataError
from bnsl_dist.model._bif_parse import parse_bif
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["read_bif", "parse_bif", "write_bif", "format_bif", "check_bif_names"]

_PLAIN_NAME = re.compile(r'^[^\s{}()\[\],;|"]+$')
_UNWRITABLE = re.compile(r'["{}()\[\];]|//|/\*')


def read_bif(path: str | os.PathLike[str]) -> BayesianNetwork:
    """Read a BIF file (gzip-compressed when the name ends in ``.gz``).

    Variables are indexed in the order of their ``variable`` blocks; each CPT is
    converted to the project's layout (parents sorted ascending, first parent fastest).

    Raises
    ------
    BIFFormatError
        Malformed file; the message names the file and the line.

    References
    ----------
    F. G. Cozman, "The Interchange Format for Bayesian Networks", 1998.

    Examples
    --------
    >>> from bnsl_dist.data import bundled_path
    >>> net = read_bif(bundled_path("bif/asia.bif.gz"))
    >>> net.n_vars, net.dag.n_arcs, net.n_parameters()
    (8, 8, 18)
    """
    p = Path(path)
    try:
        raw = p.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except FileNotFoundError:
        raise BIFFormatError("no such file", path=str(p)) from None
    except (OSError, EOFError) as exc:
        raise BIFFormatError(f"cannot read: {exc}", path=str(p)) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_bif(text, str(p))


def _quote(name: str, what: str) -> str:
    if _PLAIN_NAME.match(name) and not _UNWRITABLE.search(name):
        return name
    if not name or _UNWRITABLE.search(name):
        raise DataError(f"{what} {name!r} cannot be written in BIF")
    return f'"{name}"'


def check_bif_names(names: Sequence[str], states: Sequence[Sequence[str] | None] | None
                    ) -> None:
    """Raise the :class:`DataError` of :func:`format_bif` for the first variable or state
    name it cannot write (a ``"``, a brace, bracket, parenthesis or ``;``, ``//`` or
    ``/*``), before a network is learned for them; a variable without state names
    (``None``: integer codes) is written with its codes.

    Examples
    --------
    >>> check_bif_names(["age", "sex"], [("young", "old"), None])
    >>> check_bif_names(["age (years)"], None)
    Traceback (most recent call last):
    ...
    bnsl_dist.exceptions.DataError: variable name 'age (years)' cannot be written in BIF
    """
    for v, nm in enumerate(names):
        _quote(nm, "variable name")
        for s in (states[v] if states is not None else None) or ():
            _quote(s, "state name")


def format_bif(net: BayesianNetwork, name: str = "unknown") -> str:
    """BIF text of ``net``: roots as ``table``, others one row per parent configuration.

    Rows are listed with the last (BIF-listed) parent varying fastest; parents are listed
    in ascending variable index. Numbers use Python's shortest round-trip repr, so
    reading the text back gives bit-identical CPTs.
    """
    names = [_quote(s, "variable name") for s in net.names]
    states = [[_quote(s, "state name") for s in st] for st in net.states]
    out = [f"network {_quote(name, 'network name')} {{\n}}\n"]
    for v in range(net.n_vars):
        out.append(f"variable {names[v]} {{\n  type discrete [ {len(states[v])} ] "
                   f"{{ {', '.join(states[v])} }};\n}}\n")
    for v in range(net.n_vars):
        ps = net.dag.parents[v]
        cpt = net.cpts[v]
        if not ps:
            out.append(f"probability ( {names[v]} ) {{\n  table "
                       f"{', '.join(map(repr, cpt[0].tolist()))};\n}}\n")
            continue
        out.append(f"probability ( {names[v]} | {', '.join(names[p] for p in ps)} ) {{\n")
        pr = [len(states[p]) for p in ps]
        # our row j: first parent fastest; BIF listing: last parent fastest.
        arr = cpt.reshape(*reversed(pr), cpt.shape[1])
        arr = arr.transpose([*reversed(range(len(ps))), len(ps)]).reshape(-1, cpt.shape[1])
        grids = np.indices(pr).reshape(len(ps), -1).T
        for idx, row in zip(grids.tolist(), arr.tolist(), strict=True):
            labels = ", ".join(states[p][k] for p, k in zip(ps, idx, strict=True))
            out.append(f"  ({labels}) {', '.join(map(repr, row))};\n")
        out.append("}\n")
    return "".join(out)


def write_bif(net: BayesianNetwork, path: str | os.PathLike[str], *,
              name: str = "unknown") -> None:
    """Write ``net`` as BIF, atomically (gzip-compressed when the name ends in ``.gz``).

    Examples
    --------
    >>> import os, tempfile
    >>> from bnsl_dist.data import bundled_path
    >>> net = read_bif(bundled_path("bif/cancer.bif.gz"))
    >>> p = os.path.join(tempfile.mkdtemp(), "cancer.bif.gz")
    >>> write_bif(net, p)
    >>> read_bif(p).dag == net.dag
    True
    """
    atomic_write_text(path, format_bif(net, name))
