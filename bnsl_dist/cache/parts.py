"""The finished batches of a cache build, kept on disk so that a build cut off (``grid run
--stop-at``, a killed job) resumes where it stopped.

A build explores its variables in batches (:func:`bnsl_dist.cache.build.build_cache`
with ``stored``); each batch's results are written, atomically, as one JSON file in a
folder beside the cache file, ``caches/<cache key>.parts/``, named by the batch's
variables and holding the data's content hash. A later build of the same cache reads
them and explores only the variables none holds; the folder is removed once the cache
file is written. Each variable's exploration depends only on the data, the settings and
(with a seconds budget) its own time, never on the others, so the resumed cache equals
an uninterrupted build with a score budget (and holds the very results stored with a
seconds budget). Scores and entropies are written as Python's shortest round-trip
decimal form: read back, they are the same floats.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from bnsl_dist._io import atomic_write_text
from bnsl_dist.cache.independence import ExploreStats
from bnsl_dist.exceptions import DataError

if TYPE_CHECKING:
    from bnsl_dist.cache.build import VariableResult

__all__ = ["BuildStopped", "StoredBatches"]

_FORMAT = 1


class BuildStopped(Exception):  # noqa: N818 - an outcome, not an error
    """A cache build stopped at a batch boundary (its stop time): the batches it finished
    are stored, a later build resumes from them."""


class StoredBatches:
    """The stored batches of one cache build: the folder ``folder``, for data of content
    hash ``data_hash`` (files of other data are not read: the data at a path changed)."""

    def __init__(self, folder: str | os.PathLike[str], data_hash: str) -> None:
        self.folder = Path(folder)
        self.data_hash = data_hash

    @classmethod
    def beside(cls, cache_path: str | os.PathLike[str], data_hash: str) -> StoredBatches:
        """The batches of the cache file ``cache_path`` (``<key>.jkl.gz`` ->
        ``<key>.parts/``)."""
        p = Path(cache_path)
        stem = p.name.split(".jkl")[0] if ".jkl" in p.name else p.stem
        return cls(p.with_name(f"{stem}.parts"), data_hash)

    def save(self, results: Iterable[VariableResult]) -> Path | None:
        """Write one batch's results (atomically); None for an empty batch."""
        rows = [{"variable": int(r.variable),
                 "sets": [[[int(p) for p in ps], float(s)] for ps, s in r.sets],
                 "stats": asdict(r.stats), "entropy": float(r.entropy)} for r in results]
        if not rows:
            return None
        names = ",".join(str(r["variable"]) for r in rows)
        digest = hashlib.sha256(names.encode()).hexdigest()[:16]
        path = self.folder / f"{rows[0]['variable']:06d}-{digest}.json"
        atomic_write_text(path, json.dumps({"format": _FORMAT, "data_hash": self.data_hash,
                                            "results": rows}, default=_plain) + "\n")
        return path

    def load(self) -> dict[int, VariableResult]:
        """Every stored variable's result (of these data), by variable.

        Raises
        ------
        DataError
            A batch file that is not one (naming the file).
        """
        from bnsl_dist.cache.build import VariableResult

        out: dict[int, VariableResult] = {}
        if not self.folder.is_dir():
            return out
        for path in sorted(self.folder.glob("*.json")):
            try:
                obj = json.loads(path.read_text(encoding="utf-8"))
                if obj.get("format") != _FORMAT or obj.get("data_hash") != self.data_hash:
                    continue
                for r in obj["results"]:
                    out.setdefault(int(r["variable"]), VariableResult(
                        int(r["variable"]),
                        [(tuple(int(p) for p in ps), float(s)) for ps, s in r["sets"]],
                        ExploreStats(**r["stats"]), float(r["entropy"])))
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                raise DataError(f"unreadable stored batch of a cache build: "
                                f"{type(exc).__name__}: {exc} (delete it to rebuild "
                                f"its variables)", path=str(path)) from None
        return out

    def clear(self) -> None:
        """Remove the folder (the cache is stored: its batches are no longer needed)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _plain(obj: object) -> object:
    """A numpy scalar of the stats as the Python number it holds."""
    item = getattr(obj, "item", None)
    if item is None:
        raise TypeError(f"not JSON: {type(obj).__name__}")
    return item()
