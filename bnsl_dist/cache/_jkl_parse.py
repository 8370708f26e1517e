"""Parsing a ``.jkl`` score cache's text (the format: :mod:`bnsl_dist.cache.jkl`): the
``#`` comments and the ``# bnsl_dist:`` metadata line, then the body twice if need be —
a token-stream reader with vectorised checks, and, when it meets anything unusual, a
record-by-record reader that names the line of the first problem."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._io import all_plain, is_plain_float, is_plain_int
from bnsl_dist.cache.parent_sets import ParentSetCache
from bnsl_dist.data.dataset import MAX_STATES
from bnsl_dist.exceptions import CacheFormatError

__all__ = ["META_TAG", "is_index", "parse_jkl"]


#: Prefix of the comment line holding names, arities and metadata as JSON.
META_TAG = "# bnsl_dist:"


def _parse_int(tok: str, what: str, src: str, line: int) -> int:
    if not is_plain_int(tok):
        raise CacheFormatError(f"{what} must be an integer, got {tok!r}", path=src, line=line)
    return int(tok)


class _Fallback(Exception):
    """The fast reader met something unusual: re-read line by line for a precise error."""


#: Line breaks of ``str.splitlines`` other than ``"\n"`` (and ``"\r\n"``'s ``"\r"``).
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")


def _comments(text: str, src: str) -> tuple[str, list[str], dict[str, Any] | None]:
    """Strip ``#`` comments; return (text without them, comment lines, stored metadata).
    Only the lines with a ``#`` are visited (a cache's comments are a few lines at its
    top), unless the text has line breaks other than ``"\n"``: then every line is."""
    if "#" not in text:
        return text, [], None
    if not text.isascii() or any(c in text for c in _OTHER_BREAKS):
        return _comments_by_line(text, src)
    comments: list[str] = []
    stored: dict[str, Any] | None = None
    kept: list[str] = []
    done, line, counted = 0, 1, 0  # text kept up to ``done``; ``line`` of ``counted``
    at = text.find("#")
    while at >= 0:
        line += text.count("\n", counted, at)
        counted = at
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        comment = text[at:end].rstrip()
        stored = _comment(comment, comments, stored, src, line)
        kept.append(text[done:at])
        done = end
        at = text.find("#", end)
    kept.append(text[done:])
    return "".join(kept), comments, stored


def _comments_by_line(text: str, src: str) -> tuple[str, list[str], dict[str, Any] | None]:
    """:func:`_comments`, line by line (``str.splitlines``'s lines)."""
    comments: list[str] = []
    stored: dict[str, Any] | None = None
    kept: list[str] = []
    for i, line in enumerate(text.splitlines(), start=1):
        at = line.find("#")
        if at < 0:
            kept.append(line)
            continue
        stored = _comment(line[at:].rstrip(), comments, stored, src, i)
        kept.append(line[:at])
    return "\n".join(kept), comments, stored


def _comment(comment: str, comments: list[str], stored: dict[str, Any] | None, src: str,
             i: int) -> dict[str, Any] | None:
    """One comment (of line ``i``): the metadata it stores, else appended to
    ``comments``; returns the metadata stored so far."""
    if comment.startswith(META_TAG):
        try:
            stored = json.loads(comment[len(META_TAG):])
        except json.JSONDecodeError as exc:
            raise CacheFormatError(f"unreadable bnsl_dist metadata: {exc}", path=src,
                                   line=i) from None
        if not isinstance(stored, dict):
            raise CacheFormatError("bnsl_dist metadata must be a JSON object", path=src,
                                   line=i)
        problem = _metadata_problem(stored)
        if problem:
            raise CacheFormatError(f"bnsl_dist metadata: {problem}", path=src, line=i)
    else:
        comments.append(comment)
    return stored


def _metadata_problem(stored: dict[str, Any]) -> str | None:
    """What is wrong with the fields :func:`~bnsl_dist.cache.jkl.write_jkl` stores (their count is checked
    against the variables later), or None."""
    def finite(x: Any) -> bool:  # an integer past float's range overflows math.isfinite
        return isinstance(x, (int, float)) and not isinstance(x, bool) and (
            abs(x) < 2**1023 if isinstance(x, int) else math.isfinite(x))

    def numbers(v: Any) -> bool:
        return isinstance(v, list) and all(finite(x) for x in v)

    names = stored.get("names")
    if names is not None and not (isinstance(names, list)
                                  and all(isinstance(x, str) for x in names)):
        return "'names' must be a list of strings"
    ar = stored.get("arities")
    if ar is not None and not (numbers(ar) and all(isinstance(a, int) and 1 <= a <= MAX_STATES
                                                   for a in ar)):
        return f"'arities' must be a list of integers in 1..{MAX_STATES}"
    meta = stored.get("meta")
    if meta is not None and not isinstance(meta, dict):
        return "'meta' must be a JSON object"
    h = stored.get("entropies", (meta or {}).get("entropies"))
    if h is not None and not numbers(h):
        return "'entropies' must be a list of finite numbers"
    return None


def is_index(tok: str) -> bool:
    return is_plain_int(tok, plus=False)


def _index_file(heads: list[str], stored: dict[str, Any] | None) -> bool:
    """Whether the file lists variables by index (every header an integer), so that an
    integer token is an index even where a name is the same text (names "1", "0": the
    data's, or those stored by :func:`~bnsl_dist.cache.jkl.write_jkl`). :func:`~bnsl_dist.cache.jkl.write_jkl` marks files that
    name the variables (``use_names``); those read by name."""
    return (all(is_index(h) for h in heads)
            and not (stored is not None and stored.get("labels") == "names"))


def _lookup(final_names: list[str], n: int, by_index: bool) -> dict[str, int]:
    """Token -> variable: indices ``"0".."n-1"`` and names; in an index file an index
    wins over an equal name, in a named file a name wins over an equal index."""
    index = {str(i): i for i in range(n)}
    named = {nm: i for i, nm in enumerate(final_names)}
    return {**named, **index} if by_index else {**index, **named}


def _final_names(heads: list[str], n: int, names: Sequence[str] | None,
                 stored: dict[str, Any] | None, src: str) -> list[str]:
    if names is not None:
        out = [str(s) for s in names]
        if len(out) != n:
            raise CacheFormatError(f"{len(out)} names given for {n} variables", path=src)
    elif all(is_index(h) for h in heads):
        stored_names = None if stored is None else stored.get("names")
        out = ([str(s) for s in stored_names]
               if isinstance(stored_names, list) and len(stored_names) == n
               else [str(i) for i in range(n)])
    else:
        out = list(heads)
    if len(set(out)) != n:
        raise CacheFormatError("duplicate variable names", path=src)
    return out


def _stored_meta(stored: dict[str, Any] | None, n: int, src: str
                 ) -> tuple[dict[str, Any], list[int] | None, list[float] | None]:
    """Metadata, arities and entropies kept by :func:`~bnsl_dist.cache.jkl.write_jkl` (entropies of files
    written before they had their own field are taken from the metadata)."""
    meta: dict[str, Any] = {}
    arities = None
    entropies = None
    if stored is not None:
        meta.update(stored.get("meta", {}) or {})
        ar = stored.get("arities")
        if ar is not None:
            if len(ar) != n:
                raise CacheFormatError(f"stored arities list {len(ar)} values for {n} variables",
                                       path=src)
            arities = [int(a) for a in ar]
        h = stored.get("entropies", meta.pop("entropies", None))
        if h is not None:
            if not isinstance(h, list) or len(h) != n:
                raise CacheFormatError(f"stored entropies: expected {n} values", path=src)
            entropies = [float(x) for x in h]
    return meta, arities, entropies


_Layout = tuple[list[str], list[int], list[int], list[int], NDArray[np.int64]]


def _by_token(toks: list[str], n: int) -> _Layout:
    """Where the records of ``toks`` start: the variables' headers, their token
    positions and numbers of sets, and each set's first token and size. Raises
    ValueError, IndexError or :class:`_Fallback` on a malformed stream."""
    heads: list[str] = []
    var_pos: list[int] = []
    set_starts: list[int] = []
    sizes: list[int] = []
    n_sets: list[int] = []
    pos = 1
    for _ in range(n):
        heads.append(toks[pos])
        m = int(toks[pos + 1])
        if m < 1:
            raise _Fallback
        n_sets.append(m)
        var_pos.append(pos)
        pos += 2
        for _ in range(m):
            set_starts.append(pos)
            size = int(toks[pos + 1])
            sizes.append(size)
            pos += 2 + size
    if pos != len(toks):
        raise _Fallback
    return heads, var_pos, n_sets, set_starts, np.asarray(sizes, dtype=np.int64)


def _read_fast(text: str, names: Sequence[str] | None, stored: dict[str, Any] | None,
               comments: list[str], src: str) -> ParentSetCache:
    """Token-stream reader with vectorised checks; raises _Fallback on anything odd."""
    toks = text.split()
    try:
        n = int(toks[0])
        if n < 1:
            raise _Fallback
        layout = _by_token(toks, n)
    except (ValueError, IndexError):
        raise _Fallback from None
    heads, var_pos, n_sets, set_starts, sizes = layout
    final_names = _final_names(heads, n, names, stored, src)
    lookup = _lookup(final_names, n, _index_file(heads, stored))
    try:
        var_of_block = np.fromiter(map(lookup.__getitem__, heads), dtype=np.int64, count=n)
    except KeyError:
        raise _Fallback from None
    if len(np.unique(var_of_block)) != n:
        raise _Fallback
    starts = np.asarray(set_starts, dtype=np.int64)
    n_total = len(set_starts)
    try:
        scores = np.fromiter(map(float, map(toks.__getitem__, set_starts)),
                             dtype=np.float64, count=n_total)
    except ValueError:
        raise _Fallback from None
    if np.any(sizes < 0) or not np.all(np.isfinite(scores)):
        raise _Fallback
    if ("_" in text or not text.isascii()) and not all_plain(
            [toks[0]] + [toks[p + 1] for p in var_pos]
            + [toks[s + d] for s in set_starts for d in (0, 1)]):
        raise _Fallback  # "1_5", non-ASCII digits: Python reads them, no file means them
    par_offsets = np.zeros(n_total + 1, dtype=np.int64)
    np.cumsum(sizes, out=par_offsets[1:])
    n_par = int(par_offsets[-1])
    set_of_par = np.repeat(np.arange(n_total, dtype=np.int64), sizes)
    ppos = starts[set_of_par] + 2 + (np.arange(n_par, dtype=np.int64) - par_offsets[set_of_par])
    try:
        par_flat = np.fromiter(map(lookup.__getitem__, map(toks.__getitem__, ppos.tolist())),
                               dtype=np.int64, count=n_par)
    except KeyError:
        raise _Fallback from None
    set_var = np.repeat(var_of_block, np.asarray(n_sets, dtype=np.int64))
    # Parents ascending within each set; no repeats, no self-parents.
    order = np.lexsort((par_flat, set_of_par))
    par_flat = par_flat[order]
    same_set = set_of_par[1:] == set_of_par[:-1]
    if np.any(same_set & (par_flat[1:] == par_flat[:-1])):
        raise _Fallback
    if np.any(par_flat == set_var[set_of_par]):
        raise _Fallback
    # Exactly one empty set per variable; no duplicate sets (hash, then exact check).
    if not np.array_equal(np.bincount(set_var[sizes == 0], minlength=n), np.ones(n, np.int64)):
        raise _Fallback
    keys = np.random.default_rng(0x6A6B6C).integers(0, 2**63, size=n, dtype=np.int64)
    h = np.zeros(n_total, dtype=np.int64)
    if n_par:
        nonempty = sizes > 0
        h[nonempty] = np.bitwise_xor.reduceat(keys[par_flat], par_offsets[:-1][nonempty])
    hs = np.lexsort((h, set_var))
    dup = (set_var[hs][1:] == set_var[hs][:-1]) & (h[hs][1:] == h[hs][:-1])
    if np.any(dup):
        def members(i: int) -> tuple[int, ...]:
            return tuple(par_flat[par_offsets[i]:par_offsets[i + 1]].tolist())
        for a, b in zip(hs[:-1][dup], hs[1:][dup], strict=True):
            if members(int(a)) == members(int(b)):
                raise _Fallback
    # Sort: variable, best first, larger first, then lexicographic (ties resolved below).
    perm = np.lexsort((-sizes, -scores, set_var))
    sv, ss, sz = set_var[perm], scores[perm], sizes[perm]
    tie = (sv[1:] == sv[:-1]) & (ss[1:] == ss[:-1]) & (sz[1:] == sz[:-1])
    if np.any(tie):
        perm = perm.copy()
        t = 0
        idx = np.flatnonzero(tie)
        while t < len(idx):
            a = int(idx[t])
            b = a + 1
            while t + 1 < len(idx) and int(idx[t + 1]) == b:
                t += 1
                b += 1
            group = perm[a:b + 1].tolist()
            group.sort(key=lambda i: tuple(par_flat[par_offsets[i]:par_offsets[i + 1]].tolist()))
            perm[a:b + 1] = group
            t += 1
    new_sizes = sizes[perm]
    new_offsets = np.zeros(n_total + 1, dtype=np.int64)
    np.cumsum(new_sizes, out=new_offsets[1:])
    gather = (np.repeat(par_offsets[:-1][perm], new_sizes)
              + np.arange(n_par, dtype=np.int64) - np.repeat(new_offsets[:-1], new_sizes))
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(set_var, minlength=n), out=offsets[1:])
    meta, arities, entropies = _stored_meta(stored, n, src)
    meta["source"] = src
    meta["comments"] = comments
    return ParentSetCache(tuple(final_names), offsets, np.ascontiguousarray(scores[perm]),
                          new_offsets, np.ascontiguousarray(par_flat[gather]),
                          None if arities is None else np.asarray(arities, dtype=np.int64), meta,
                          None if entropies is None else np.asarray(entropies))


def _read_slow(text: str, names: Sequence[str] | None, stored: dict[str, Any] | None,
               comments: list[str], src: str) -> ParentSetCache:
    """Line-by-line reader: slower, but names the line of every error."""
    rows: list[tuple[int, list[str]]] = []  # (1-based line number, tokens)
    for i, line in enumerate(text.splitlines(), start=1):
        toks = line.split()
        if toks:
            rows.append((i, toks))
    if not rows:
        raise CacheFormatError("empty file: expected the number of variables", path=src)
    line0, toks0 = rows[0]
    if len(toks0) != 1:
        raise CacheFormatError(f"expected the number of variables alone on the line, got "
                               f"{' '.join(toks0)!r}", path=src, line=line0)
    n = _parse_int(toks0[0], "the number of variables", src, line0)
    if n < 1:
        raise CacheFormatError(f"the number of variables must be positive, got {n}", path=src,
                               line=line0)

    # Blocks: header (var, m) then m set lines.
    blocks: list[tuple[int, str, list[tuple[int, list[str]]]]] = []
    k = 1
    while k < len(rows):
        hline, toks = rows[k]
        if len(toks) != 2:
            raise CacheFormatError(f"expected a variable header '<var> <number of sets>', got "
                                   f"{' '.join(toks)!r}", path=src, line=hline)
        m = _parse_int(toks[1], "the number of parent sets", src, hline)
        if m < 1:
            raise CacheFormatError(f"variable {toks[0]} has {m} parent sets; at least the empty "
                                   "set is required", path=src, line=hline)
        body = rows[k + 1:k + 1 + m]
        if len(body) < m:
            raise CacheFormatError(f"variable {toks[0]} announces {m} parent sets, the file "
                                   f"ends after {len(body)}", path=src, line=hline)
        blocks.append((hline, toks[0], body))
        k += 1 + m
    if len(blocks) != n:
        where = blocks[-1][0] if blocks else line0
        raise CacheFormatError(f"the file announces {n} variables but lists {len(blocks)}",
                               path=src, line=where)
    heads = [b[1] for b in blocks]
    final_names = _final_names(heads, n, names, stored, src)
    index = _lookup(final_names, n, _index_file(heads, stored))

    def resolve(tok: str, line: int) -> int:
        j = index.get(tok)
        if j is not None:
            return j
        if is_index(tok):
            j = int(tok)
            if 0 <= j < n:
                return j
            raise CacheFormatError(f"variable index {j} out of range 0..{n - 1}", path=src,
                                   line=line)
        raise CacheFormatError(f"unknown variable {tok!r}", path=src, line=line)

    lists: list[list[tuple[tuple[int, ...], float]] | None] = [None] * n
    for bline, head, body in blocks:
        v = resolve(head, bline)
        if lists[v] is not None:
            raise CacheFormatError(f"variable {final_names[v]} listed twice", path=src, line=bline)
        items: list[tuple[tuple[int, ...], float]] = []
        seen: set[tuple[int, ...]] = set()
        for sline, toks in body:
            if len(toks) < 2:
                raise CacheFormatError(f"expected '<score> <size> <parents...>', got "
                                       f"{' '.join(toks)!r}", path=src, line=sline)
            if not is_plain_float(toks[0]):
                raise CacheFormatError(f"score must be a number, got {toks[0]!r}", path=src,
                                       line=sline)
            s = float(toks[0])
            if not math.isfinite(s):
                raise CacheFormatError(f"non-finite score {toks[0]!r}", path=src, line=sline)
            size = _parse_int(toks[1], "the parent-set size", src, sline)
            if size != len(toks) - 2:
                raise CacheFormatError(f"the line announces {size} parents and lists "
                                       f"{len(toks) - 2}", path=src, line=sline)
            ps = tuple(sorted(resolve(t, sline) for t in toks[2:]))
            if len(set(ps)) != len(ps):
                raise CacheFormatError("a parent is repeated", path=src, line=sline)
            if v in ps:
                raise CacheFormatError(f"variable {final_names[v]} is in its own parent set",
                                       path=src, line=sline)
            if ps in seen:
                raise CacheFormatError(f"parent set {list(ps)} listed twice for variable "
                                       f"{final_names[v]}", path=src, line=sline)
            seen.add(ps)
            items.append((ps, s))
        if () not in seen:
            raise CacheFormatError(f"variable {final_names[v]} has no empty parent set",
                                   path=src, line=bline)
        lists[v] = items

    meta, arities, entropies = _stored_meta(stored, n, src)
    meta["source"] = src
    meta["comments"] = comments
    return ParentSetCache.from_lists([lst or [] for lst in lists], names=final_names,
                                     arities=arities, meta=meta, source=src, entropies=entropies)


def parse_jkl(text: str, names: Sequence[str] | None, src: str) -> ParentSetCache:
    """The cache in ``text`` (the contents of the file ``src``), sorted best-first;
    ``names`` as :func:`~bnsl_dist.cache.jkl.read_jkl` takes them."""
    text, comments, stored = _comments(text, src)
    try:
        return _read_fast(text, names, stored, comments, src)
    except _Fallback:
        return _read_slow(text, names, stored, comments, src)
