"""Benchmark: reading a CSV of state labels, beside pandas' own reading of it.

Most real CSVs hold state names ("LOW", "TRUE", ...), not integer codes: the reader
then maps each column's labels to codes. This times ``bnsl_dist.data.read_data`` on
generated files of 5,000 rows (as the peers' samples):

* ``labels``: 400 columns of 2-4 labels each;
* ``labels_missing``: the same with 2% of the cells "?" (``missing="mask"``);
* ``ints``: 400 columns of integer codes (the integer fast path);

best of ``--repeat`` reads each, with ``pandas.read_csv(dtype=str)`` of the same file as
the floor a CSV parser sets (``ratio``: bnsl_dist / pandas). Files go to
``out/read_csv_data/`` (regenerated only when absent).

Run: ``python -m workflows.benchmarks.read_csv [--repeat 3]``; writes out/read_csv.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workflows.benchmarks._common import OUT_DIR, write_result

ROWS, COLS = 5000, 400


def make_files(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    labels = np.array(["LOW", "NORMAL", "HIGH", "ZERO"])
    arity = 2 + np.arange(COLS) % 3
    codes = rng.integers(0, arity, size=(ROWS, COLS))
    names = [f"v{j}" for j in range(COLS)]
    frames = {"labels": pd.DataFrame(labels[codes], columns=names),
              "ints": pd.DataFrame(codes, columns=names)}
    masked = labels[codes].astype(object)
    masked[rng.random(masked.shape) < 0.02] = "?"
    frames["labels_missing"] = pd.DataFrame(masked, columns=names)
    out = {}
    for name, df in frames.items():
        path = folder / f"{name}_{ROWS}x{COLS}.csv"
        if not path.is_file():
            df.to_csv(path, index=False)
        out[name] = path
    return out


def best_of(repeat: int, fn: Any) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    from bnsl_dist.data import read_data

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows = []
    for name, path in make_files(OUT_DIR / "read_csv_data").items():
        missing = "mask" if "missing" in name else "error"
        ours = best_of(args.repeat, lambda p=path, m=missing: read_data(p, missing=m))
        floor = best_of(args.repeat, lambda p=path: pd.read_csv(p, dtype=str,
                                                                keep_default_na=False))
        rows.append({"file": name, "rows": ROWS, "columns": COLS, "seconds": ours,
                     "pandas_seconds": floor, "ratio": ours / floor})
        print(rows[-1], flush=True)
    print(f"wrote {write_result('read_csv', {'settings': vars(args), 'rows': rows})}")


if __name__ == "__main__":
    main()
