"""Parquet data files (``.parquet``, ``.pq``): integer columns are codes; string or
categorical columns are labels (mapped to codes in sorted order); nulls and empty strings
are missing values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from bnsl_dist.data.readers import (
    LabelPolicy,
    MissingPolicy,
    RawTable,
    Reader,
    column_label,
    register_reader,
)
from bnsl_dist.exceptions import DataError, MissingValueError

__all__: list[str] = []


def _parse(path: Path, header: bool | None, labels: LabelPolicy,
           missing: MissingPolicy) -> RawTable:
    spath = str(path)
    try:
        df = pd.read_parquet(path)
    except FileNotFoundError:
        raise DataError("no such file", path=spath) from None
    except Exception as exc:  # pyarrow raises many types
        raise DataError(f"cannot read Parquet: {exc}", path=spath) from None
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise DataError("empty file", path=spath)
    names = [str(c) for c in df.columns]
    miss = df.isna().to_numpy(copy=True)
    for j, name in enumerate(df.columns):  # "" is a missing cell, as in text files (it
        if not pd.api.types.is_numeric_dtype(df[name].dtype):  # marks one among labels)
            miss[:, j] |= (df[name] == "").to_numpy(dtype=bool, na_value=False)
    if miss.any() and missing != "mask":
        r, c = np.argwhere(miss)[0]
        raise MissingValueError("missing value where none are allowed", path=spath,
                                line=int(r) + 1, column=column_label(names, int(c)))
    cols: list[NDArray[Any]] = []
    label_sets: list[list[str] | None] = []
    for j, name in enumerate(df.columns):
        s = df[name]
        if pd.api.types.is_integer_dtype(s.dtype) or (
            pd.api.types.is_float_dtype(s.dtype)
            and bool((s.dropna() == s.dropna().round()).all())
        ):
            full = s.fillna(0).to_numpy()
            as_float = full.astype(np.float64)
            big = ~np.isfinite(as_float) | (np.abs(as_float) >= 2.0**63)  # no int64 holds it
            if big.any():
                r = int(np.argmax(big))
                raise DataError(f"code {full[r]} out of range", path=spath, line=r + 1,
                                column=column_label(names, j))
            v = full.astype(np.int64)
            if v.min() < 0:
                r = int(np.argmin(v))
                raise DataError(f"negative code {v[r]}", path=spath, line=r + 1,
                                column=column_label(names, j))
            cols.append(v)
            label_sets.append(None)
        elif pd.api.types.is_float_dtype(s.dtype):
            raise DataError("non-integer code", path=spath, column=column_label(names, j))
        else:
            try:
                text = s.astype("string")
            except UnicodeDecodeError:  # a binary column
                raise DataError("bytes that are not UTF-8 text", path=spath,
                                column=column_label(names, j)) from None
            codes, uniq = pd.factorize(text.fillna(""))
            cols.append(codes)
            label_sets.append([str(u) for u in uniq])
    return RawTable(spath, names, None, cols, label_sets, miss if miss.any() else None,
                    lambda r: r + 1)  # the row number, as in the messages above


def _peek(path: Path) -> tuple[int, int]:
    import pyarrow.parquet as pq

    meta = pq.read_metadata(path)
    index = (meta.schema.to_arrow_schema().pandas_metadata or {}).get("index_columns", [])
    width = meta.num_columns - sum(isinstance(c, str) for c in index)
    return width, meta.num_rows


register_reader(Reader("parquet", (".parquet", ".pq"), _parse, _peek))
