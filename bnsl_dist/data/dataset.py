"""CategoricalData: integer-coded categorical samples with declared arities.

Codes are stored column-major (Fortran order) in the smallest unsigned dtype that holds
every state (uint8 up to 256 states, uint16 up to 65,536), because every score kernel
scans whole columns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from bnsl_dist.exceptions import DataError

__all__ = ["CategoricalData", "Dataset", "MAX_STATES", "code_dtype"]

#: The largest number of states a variable may have (uint16 codes).
MAX_STATES = 65_536


def code_dtype(max_arity: int) -> np.dtype:
    """Smallest unsigned dtype able to hold codes ``0 .. max_arity-1``."""
    if max_arity <= 256:
        return np.dtype(np.uint8)
    if max_arity <= MAX_STATES:
        return np.dtype(np.uint16)
    raise DataError(f"{max_arity} states exceed the maximum of {MAX_STATES - 1 + 1}")


@dataclass(frozen=True, eq=False)
class CategoricalData:
    """Samples of ``n_vars`` categorical variables.

    Parameters
    ----------
    codes : ndarray of shape (n_samples, n_vars)
        State codes ``0 .. arities[i]-1``, Fortran order, uint8 or uint16.
    arities : ndarray of shape (n_vars,)
        Number of states of each variable (int64).
    names : tuple of str
        Variable names.
    states : tuple, optional
        Per variable, the labels of its states (index = code), or None when the codes
        are the labels.
    missing : ndarray of bool, optional
        True where a value is missing (its code is then 0 and meaningless).

    Use :meth:`from_array` to build one from any integer array; the constructor
    trusts its inputs.

    Examples
    --------
    >>> d = CategoricalData.from_array([[0, 1], [1, 2], [1, 0]], names=["A", "B"])
    >>> d.n_samples, d.n_vars, d.arities.tolist(), d.codes.dtype.name
    (3, 2, [2, 3], 'uint8')
    >>> d.select([1]).names
    ('B',)
    """

    codes: NDArray[np.unsignedinteger]
    arities: NDArray[np.int64]
    names: tuple[str, ...]
    states: tuple[tuple[str, ...] | None, ...] | None = None
    missing: NDArray[np.bool_] | None = None
    source: str | None = field(default=None, compare=False)

    # ------------------------------------------------------------------ building
    @classmethod
    def from_array(
        cls,
        values: ArrayLike,
        *,
        arities: Sequence[int] | NDArray[np.integer] | None = None,
        names: Sequence[str] | None = None,
        states: Sequence[Sequence[str] | None] | None = None,
        missing: ArrayLike | None = None,
        source: str | None = None,
    ) -> CategoricalData:
        """Validate an integer array and store it as codes.

        Raises
        ------
        DataError
            Negative or non-integer codes, codes not below the declared arities,
            wrong shapes, more than 65,536 states, a list of state labels whose length
            is not the variable's arity.
        """
        arr = np.asarray(values)
        if arr.ndim != 2:
            raise DataError(f"expected a 2-D array of codes, got {arr.ndim} dimension(s)", path=source)
        if arr.shape[0] == 0 or arr.shape[1] == 0:
            raise DataError("no data (empty array)", path=source)
        mask = None
        if missing is not None:
            mask = np.asarray(missing, dtype=bool)
            if mask.shape != arr.shape:
                raise DataError("missing mask shape differs from the data", path=source)
        if arr.dtype.kind == "f":
            check = arr if mask is None else np.where(mask, 0, arr)
            if not np.all(np.isfinite(check)) or not np.all(check == np.round(check)):
                bad = np.argwhere(~np.isfinite(check) | (check != np.round(check)))[0]
                raise DataError("non-integer code", path=source, line=int(bad[0]) + 1,
                                column=int(bad[1]) + 1)
            big = np.abs(check) >= 2.0**63  # no int64 holds it: the cast would wrap
            if big.any():
                bad = np.argwhere(big)[0]
                raise DataError(f"code {check[tuple(bad)]:g} out of range", path=source,
                                line=int(bad[0]) + 1, column=int(bad[1]) + 1)
            arr = check.astype(np.int64)
        elif arr.dtype.kind not in "iub":
            raise DataError(f"codes must be integers, got dtype {arr.dtype}", path=source)
        if mask is not None:
            arr = np.where(mask, 0, arr)
        if arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max:  # would wrap
            bad = np.argwhere(arr > np.iinfo(np.int64).max)[0]
            raise DataError(f"code {arr[tuple(bad)]} out of range", path=source,
                            line=int(bad[0]) + 1, column=int(bad[1]) + 1)
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            bad = np.argwhere(arr < 0)[0]
            raise DataError(f"negative code {arr[tuple(bad)]}", path=source,
                            line=int(bad[0]) + 1, column=int(bad[1]) + 1)
        n_vars = arr.shape[1]
        observed = arr.max(axis=0).astype(np.int64) + 1
        if arities is None:
            ar = np.maximum(observed, 1)
        else:
            ar = np.asarray(arities, dtype=np.int64)
            if ar.shape != (n_vars,):
                raise DataError(f"{ar.shape[0]} arities given for {n_vars} variables", path=source)
            if np.any(ar < 1):
                raise DataError("arities must be at least 1", path=source)
            over = np.nonzero(observed > ar)[0]
            if over.size:
                j = int(over[0])
                row = int(np.argmax(arr[:, j] >= ar[j]))
                raise DataError(f"code {arr[row, j]} not below the arity {ar[j]}", path=source,
                                line=row + 1, column=j + 1)
        if ar.max() > MAX_STATES:
            j = int(np.argmax(ar))
            raise DataError(f"{ar[j]} states exceed the maximum of {MAX_STATES}", path=source,
                            column=j + 1)
        dt = code_dtype(int(ar.max()))
        codes = np.asfortranarray(arr.astype(dt, copy=False))
        if names is None:
            names = [f"X{i}" for i in range(n_vars)]
        names_t = tuple(str(s) for s in names)
        if len(names_t) != n_vars:
            raise DataError(f"{len(names_t)} names given for {n_vars} variables", path=source)
        if len(set(names_t)) != n_vars:
            dup = next(s for s in names_t if names_t.count(s) > 1)
            raise DataError(f"duplicate variable name {dup!r}", path=source)
        states_t = None
        if states is not None:
            states_t = tuple(None if s is None else tuple(str(x) for x in s) for s in states)
            if len(states_t) != n_vars:
                raise DataError("states given for the wrong number of variables", path=source)
            for j, lab in enumerate(states_t):  # code k is labelled lab[k]: one per state
                if lab is not None and len(lab) != ar[j]:
                    raise DataError(f"{len(lab)} state labels for {ar[j]} states", path=source,
                                    column=f"{j + 1} ({names_t[j]})")
        if mask is not None:
            mask = np.asfortranarray(mask)
            if not mask.any():
                mask = None
        return cls(codes=codes, arities=ar, names=names_t, states=states_t, missing=mask,
                   source=source)

    # ------------------------------------------------------------------ views
    @property
    def n_samples(self) -> int:
        return int(self.codes.shape[0])

    @property
    def n_vars(self) -> int:
        return int(self.codes.shape[1])

    def index_of(self, name: str | int) -> int:
        """Index of a variable given by name (or an index, returned unchanged)."""
        if isinstance(name, (int, np.integer)):
            if not 0 <= int(name) < self.n_vars:
                raise DataError(f"variable index {name} out of range 0..{self.n_vars - 1}")
            return int(name)
        try:
            return self.names.index(name)
        except ValueError:
            raise DataError(f"unknown variable {name!r}") from None

    def take_rows(self, rows: ArrayLike) -> CategoricalData:
        """A new data set with the given rows (indices or boolean mask)."""
        idx = np.asarray(rows)
        miss = None if self.missing is None else np.asfortranarray(self.missing[idx])
        if miss is not None and not miss.any():
            miss = None
        return CategoricalData(np.asfortranarray(self.codes[idx]), self.arities, self.names,
                               self.states, miss, self.source)

    def select(self, variables: Sequence[int]) -> CategoricalData:
        """A new data set with only the given variables, in that order."""
        v = np.asarray(variables, dtype=np.int64)
        miss = None if self.missing is None else np.asfortranarray(self.missing[:, v])
        states = None if self.states is None else tuple(self.states[i] for i in v)
        return CategoricalData(np.asfortranarray(self.codes[:, v]), self.arities[v].copy(),
                               tuple(self.names[i] for i in v), states, miss, self.source)

    def with_codes(self, codes: NDArray[np.integer], missing: NDArray[np.bool_] | None = None
                   ) -> CategoricalData:
        """Same variables, other rows (e.g. completed by imputation)."""
        return CategoricalData(np.asfortranarray(codes.astype(self.codes.dtype, copy=False)),
                               self.arities, self.names, self.states, missing, self.source)

    def state_label(self, var: int, code: int) -> str:
        """The label of a state (its code as text when the data carry no labels)."""
        labels = None if self.states is None else self.states[var]
        return str(code) if labels is None else labels[code]

    def content_hash(self) -> str:
        """SHA-256 of codes, arities and names: the key of a data-loading task."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.codes).tobytes())
        h.update(self.arities.tobytes())
        h.update("\x1f".join(self.names).encode())
        if self.missing is not None:
            h.update(np.packbits(self.missing).tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        miss = "" if self.missing is None else f", {int(self.missing.sum())} missing"
        return (f"CategoricalData(n_samples={self.n_samples}, n_vars={self.n_vars}, "
                f"max_arity={int(self.arities.max())}{miss})")


@dataclass(frozen=True, eq=False)
class Dataset:
    """A named data set with splits (e.g. train/valid/test) that agree on arities."""

    name: str
    splits: Mapping[str, CategoricalData]

    def __post_init__(self) -> None:
        if not self.splits:
            raise DataError(f"dataset {self.name!r} has no splits")
        first = next(iter(self.splits.values()))
        for split, d in self.splits.items():
            if d.names != first.names or not np.array_equal(d.arities, first.arities):
                raise DataError(f"dataset {self.name!r}: split {split!r} disagrees on variables "
                                "or arities with the others")
        labels: dict[int, tuple[str, tuple[str, ...]]] = {}  # variable -> (split, labels)
        for split, d in self.splits.items():  # a code must name the same state everywhere
            for v, lab in enumerate(d.states or ()):
                if lab is None:
                    continue
                if v not in labels:
                    labels[v] = (split, lab)
                elif labels[v][1] != lab:
                    raise DataError(f"dataset {self.name!r}: split {split!r} labels the states "
                                    f"of variable {d.names[v]!r} {lab}, split {labels[v][0]!r} "
                                    f"{labels[v][1]}", path=d.source)

    def __getitem__(self, split: str) -> CategoricalData:
        try:
            return self.splits[split]
        except KeyError:
            raise DataError(f"dataset {self.name!r} has no split {split!r}; "
                            f"it has {sorted(self.splits)}") from None

    @property
    def arities(self) -> NDArray[np.int64]:
        return next(iter(self.splits.values())).arities
