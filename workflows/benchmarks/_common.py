"""Helpers shared by the benchmarks: output location, machine facts, JSON writing."""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

OUT_DIR = Path(os.environ.get("BNSL_BENCH_OUT", Path(__file__).resolve().parent / "out"))
SHARED_DATA = Path(os.environ.get("BNSL_SHARED_DATA",
                                  Path(__file__).resolve().parents[3] / "shared" / "data"))


def cache_path(name: str) -> tuple[str, Path]:
    """``NAME=PATH``, or the name of a cache of BLIP's independence selection
    (``$BNSL_SHARED_DATA/jkl/blip-is/NAME.train.bic.jkl.gz``): (label, path)."""
    if "=" in name:
        label, path = name.split("=", 1)
        return label, Path(path)
    return name, SHARED_DATA / "jkl" / "blip-is" / f"{name}.train.bic.jkl.gz"


def machine() -> dict[str, Any]:
    import numba
    import numpy

    import bnsl_dist

    return {"python": sys.version.split()[0], "platform": platform.platform(),
            "cpu": _cpu_model(), "cpu_count": os.cpu_count(), "numpy": numpy.__version__,
            "numba": numba.__version__, "bnsl_dist": bnsl_dist.__version__,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def _cpu_model() -> str | None:
    """The processor's model name (Linux: /proc/cpuinfo), else ``platform.processor()``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def train_data(name: str) -> Any:
    """The training split of a registered data set, its recipe made first when it is one
    not made yet (r0-r14, samples of networks)."""
    from bnsl_dist.datasets.catalog import fetch
    from bnsl_dist.exceptions import DataError
    from bnsl_dist.pipeline import DataRef, load_data

    try:
        return load_data(DataRef(name=name, split="train"))
    except DataError:
        fetch(name + "/train")
        return load_data(DataRef(name=name, split="train"))


def tree_env(tree: str | Path) -> dict[str, str]:
    """The environment that imports ``bnsl_dist`` (and ``workflows``) from the checkout
    ``tree`` (run the command in a neutral folder: ``python -c`` puts the working folder
    first)."""
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(tree).resolve()),
                                         *filter(None, [env.get("PYTHONPATH")])])
    return env


def write_result(name: str, payload: dict[str, Any]) -> Path:
    """Write ``out/<name>.json`` atomically and return its path."""
    from bnsl_dist._io import atomic_write_text

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    path = OUT_DIR / f"{name}.json"
    atomic_write_text(path, json.dumps({"machine": machine(), **payload}, indent=1) + "\n")
    return path


def write_report(name: str, payload: dict[str, Any], lines: list[str]) -> Path:
    """:func:`write_result` and ``out/<name>.md`` (the markdown ``lines``), both atomic;
    returns the JSON's path."""
    from bnsl_dist._io import atomic_write_text

    path = write_result(name, payload)
    atomic_write_text(OUT_DIR / f"{name}.md", "\n".join(lines) + "\n")
    return path


def bic_cells(rows: list[dict[str, Any]]) -> tuple[str, str]:
    """A table's median and per-seed cells of ``rows``' ``bic`` (in their order)."""
    import statistics

    return (f"{statistics.median(r['bic'] for r in rows):,.1f}",
            ", ".join(f"{r['bic']:,.1f}" for r in rows))
