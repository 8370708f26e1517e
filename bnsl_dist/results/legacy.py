"""Records of an earlier meaning of a name, read under the name that meaning has now.

``asobs-ent`` and ``winasobs-ent`` processed high-entropy variables last until they were
made the paper's variants (high-entropy variables first, the most parent sets;
docs/ALGORITHMS.md §4); that direction is now ``asobs-ent-last`` and
``winasobs-ent-last``. Since then a search spec of an entropy-sampling ASOBS always names
``high_entropy`` (:meth:`~bnsl_dist.search.ordering.asobs.ASOBS.pinned_params`), so a
record of one whose ``params`` do not name it ran before, processing them last. Such a
record is read as what it is: its algorithm renamed (``asobs-ent`` ->
``asobs-ent-last``; an ``asobs`` given ``sampler: entropy`` keeps its name), its label
too when it was the algorithm's name, ``high_entropy: "last"`` added to its params and
its spec (whose ``search`` block it describes). Its key stays: no cell of the new
meaning has it (the pinned parameter is in every new key). The grids stored with such
records are read the same way: an entry of the old meaning, and the comparisons and the
inference reference naming its label, are renamed, unless the grid already names the
new label (a grid of the new meaning, whose old records are renamed alone).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from bnsl_dist._json import canonical_json

__all__ = ["RENAMED", "revise_table", "revise_grids"]

#: Names whose meaning changed -> the name of their old meaning now.
RENAMED = {"asobs-ent": "asobs-ent-last", "winasobs-ent": "winasobs-ent-last"}
#: The values the pinned parameters had when specs did not name them.
_BEFORE = {"high_entropy": "last"}


def _old_meaning(algorithm: str, params: Mapping[str, Any]) -> bool:
    """Whether a run of ``algorithm`` with ``params`` predates the pinned parameters."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.search.base import optimizer_info

    try:
        pin = getattr(optimizer_info(algorithm).cls, "pinned_params", None)
    except InvalidConfigError:  # a name no longer registered: nothing to revise
        return False
    return pin is not None and bool(pin(params))


def _revise_spec(text: str, algorithm: str, label: str | None) -> str:
    try:
        spec = json.loads(text)
        search = spec["search"]
    except (ValueError, KeyError, TypeError):
        return text  # no spec (older records): nothing to describe
    search["algorithm"] = algorithm
    search["params"] = {**search.get("params", {}), **_BEFORE}
    if label is not None:
        spec["label"] = label
    return canonical_json(spec)


def revise_table(table: pa.Table) -> tuple[pa.Table, dict[str, dict[str, str]]]:
    """``table`` (result rows) with the rows of an old meaning revised, and per grid the
    labels renamed (old -> new). A table without the ``algorithm`` and ``params``
    columns is returned as it is."""
    names = table.column_names
    if table.num_rows == 0 or "algorithm" not in names or "params" not in names:
        return table, {}
    algos = table.column("algorithm").to_pylist()
    params = table.column("params").to_pylist()
    old = [i for i, (a, p) in enumerate(zip(algos, params, strict=True))
           if a is not None and _old_meaning(a, json.loads(p or "{}"))]
    if not old:
        return table, {}
    cols = {n: table.column(n).to_pylist()
            for n in ("algorithm", "label", "params", "spec", "grid") if n in names}
    renamed: dict[str, dict[str, str]] = {}
    for i in old:
        a = algos[i]
        new = RENAMED.get(a, a)
        cols["algorithm"][i] = new
        cols["params"][i] = canonical_json({**json.loads(params[i] or "{}"), **_BEFORE})
        relabel = "label" in cols and cols["label"][i] == a and new != a
        if relabel:
            cols["label"][i] = new
            if "grid" in cols:
                renamed.setdefault(cols["grid"][i], {})[a] = new
        if "spec" in cols and cols["spec"][i]:
            cols["spec"][i] = _revise_spec(cols["spec"][i], new, new if relabel else None)
    for n, values in cols.items():
        if n == "grid":
            continue
        i = names.index(n)
        table = table.set_column(i, table.schema.field(i),
                                 pa.array(values, type=table.schema.field(i).type))
    return table, renamed


def revise_grids(grids: Mapping[str, dict[str, Any]],
                 renamed: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, Any]]:
    """The stored grid definitions ``grids`` (name -> JSON data) with the labels
    ``renamed`` (grid -> old -> new, from :func:`revise_table`) renamed in their
    algorithm entries, comparisons and inference reference; a grid that already has an
    entry of a new label keeps its definition (it is of the new meaning)."""
    out = dict(grids)
    for name, labels in renamed.items():
        grid = out.get(name)
        if not grid:
            continue
        entries = grid.get("algorithms", [])
        have = {e.get("label") or e.get("name") for e in entries}
        todo = {o: n for o, n in labels.items() if n not in have}
        if not todo:
            continue
        grid = json.loads(json.dumps(grid))  # a copy: the caller's stays as read
        for e in grid.get("algorithms", []):
            label = e.get("label") or e.get("name")
            if label in todo and e.get("name") in RENAMED and \
                    "high_entropy" not in (e.get("params") or {}):
                e["name"] = RENAMED[e["name"]]
                if e.get("label") is not None:
                    e["label"] = todo[label]
        for c in grid.get("comparisons") or []:
            sides = [side for side in ("a", "b") if c.get(side) in todo]
            for side in sides:
                c[side] = todo[c[side]]
            if sides and c.get("title"):
                c["title"] += f" [ran as {', '.join(c[s] for s in sides)}]"
        inf = grid.get("inference")
        if isinstance(inf, dict) and inf.get("reference") in todo:
            inf["reference"] = todo[inf["reference"]]
        out[name] = grid
    return out
