"""Read and write ``.jkl`` score caches (the GOBNILP / BLIP "Jaakkola" format).

Format (docs/ALGORITHMS.md §3)::

    # comment lines start with '#'  (BLIP writes them; GOBNILP needs none)
    <n>
    <var> <m>                      # variable (index or name), number of sets
    <score> <size> <p1> <p2> ...   # m lines, parents by index or name

Reading accepts comments anywhere (a ``#`` starts a comment to the end of the line),
blank lines, variables named by 0-based index or by name, and variables in any
order. Writing uses indices, parents ascending, best set first, and scores printed
with ``repr`` (the shortest text that round-trips a float64), so a file read back
gives bit-identical scores. With ``comments=True`` a few ``#`` lines describe the
cache and one ``# bnsl_dist: {json}`` line keeps the names, arities, entropies and
metadata that the format itself cannot hold; with ``comments=False`` the file is plain GOBNILP input.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from bnsl_dist._io import atomic_writer, read_text
from bnsl_dist.cache._jkl_parse import META_TAG, is_index, parse_jkl
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.exceptions import CacheFormatError
from bnsl_dist.scores.registry import score_info, score_names

__all__ = ["read_jkl", "write_jkl", "META_TAG"]

def read_jkl(path: str | os.PathLike[str], *, names: Sequence[str] | None = None
             ) -> ParentSetCache:
    """Read a ``.jkl`` score cache (gzip-compressed when the name ends in ``.gz``).

    Parameters
    ----------
    path : path-like
        The file.
    names : sequence of str, optional
        Variable names in index order (e.g. the data's names). Tokens equal to a name
        mean that variable; other tokens must be 0-based indices. In a file of indices
        (every variable header an integer, as BLIP and GOBNILP write them) an integer
        token is always an index, even where a name is the same text. Without ``names``,
        a file that names its variables gets them in the order of their headers, and
        a file of indices gets the names stored by :func:`write_jkl` or ``"0".."n-1"``.

    Returns
    -------
    ParentSetCache
        Sorted best-first; ``meta["source"]`` is the path and ``meta["comments"]`` the
        comment lines.

    Raises
    ------
    CacheFormatError
        Naming the file and line: a bad count, a non-numeric score, an unknown or
        repeated variable, a wrong number of parents or of sets, a missing empty set.

    Examples
    --------
    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "t.jkl")
    >>> _ = open(p, "w").write("2\\n0 2\\n-1.5 1 1\\n-2.0 0\\n1 1\\n-3.0 0\\n")
    >>> read_jkl(p).sets_of(0)
    [((1,), -1.5), ((), -2.0)]
    """
    p = Path(path)
    src = str(p)
    return parse_jkl(read_text(p, CacheFormatError), names, src)


def _describe(cache: ParentSetCache) -> list[str]:
    m = cache.meta
    out = []
    method = m.get("method")
    if method:
        out.append(f"# Method: {method}")
    score = m.get("score")
    if score:
        ess = m.get("ess")
        uses_ess = score in score_names() and score_info(score).uses_ess
        out.append(f"# Score function: {score}" + (f" (ess: {ess})" if uses_ess else ""))
    if m.get("max_indegree") is not None:
        out.append(f"# Max in-degree: {m['max_indegree']}")
    return out


def _json_safe(meta: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in meta.items():
        if k in ("source", "comments"):
            continue
        try:
            json.dumps(v)
        except (TypeError, ValueError):
            continue
        out[k] = v
    return out


def write_jkl(cache: ParentSetCache, path: str | os.PathLike[str], *, comments: bool = True,
              use_names: bool = False) -> None:
    """Write a cache as ``.jkl`` (atomically; gzip when the name ends in ``.gz``).

    Parameters
    ----------
    cache : ParentSetCache
        The cache (its sets are already sorted best-first).
    path : path-like
        Target file; nothing is left there if writing fails.
    comments : bool
        Write ``#`` lines (BLIP-style description and the ``# bnsl_dist:`` metadata).
        ``False`` writes bare GOBNILP input.
    use_names : bool
        Name variables and parents by name instead of 0-based index (names must not
        contain white space).

    Raises
    ------
    CacheFormatError
        ``use_names`` with a name that contains white space or ``#``; ``use_names``
        without ``comments`` when every name is an integer but not every name its own
        index (the file would read as one of indices: the ``#`` metadata says otherwise).
    """
    if use_names:
        for nm in cache.names:
            if not nm or any(c.isspace() for c in nm) or "#" in nm:
                raise CacheFormatError(f"variable name {nm!r} (empty, white space or #) cannot "
                                       "be written in a .jkl file; write indices "
                                       "(use_names=False)", path=str(path))
        if not comments and all(is_index(nm) for nm in cache.names) \
                and list(cache.names) != [str(i) for i in range(cache.n_vars)]:
            raise CacheFormatError("integer variable names other than each variable's own "
                                   "index would read as indices in a file without comments; "
                                   "write indices (use_names=False) or comments",
                                   path=str(path))
        label = list(cache.names)
    else:
        label = [str(i) for i in range(cache.n_vars)]

    def write(fh: IO[bytes]) -> None:
        lines: list[str] = []
        if comments:
            lines.extend(_describe(cache))
            payload: dict[str, Any] = {"names": list(cache.names)}
            if cache.arities is not None:
                payload["arities"] = [int(a) for a in cache.arities]
            if cache.entropies is not None:
                payload["entropies"] = cache.entropies.tolist()
            payload["meta"] = _json_safe(cache.meta)
            if use_names:
                payload["labels"] = "names"  # tokens are names, even integer ones
            lines.append(f"{META_TAG} {json.dumps(payload, separators=(',', ':'))}")
        lines.append(str(cache.n_vars))
        fh.write(("\n".join(lines) + "\n").encode("utf-8"))
        scores = list(map(repr, cache.scores.tolist()))
        flat = [label[p] for p in cache.par_flat.tolist()]
        po = cache.par_offsets.tolist()
        off = cache.offsets.tolist()
        for v in range(cache.n_vars):
            lo, hi = off[v], off[v + 1]
            block = [f"{label[v]} {hi - lo}"]
            block.extend(" ".join([scores[i], str(po[i + 1] - po[i]), *flat[po[i]:po[i + 1]]])
                         for i in range(lo, hi))
            fh.write(("\n".join(block) + "\n").encode("utf-8"))

    atomic_writer(path, write)
