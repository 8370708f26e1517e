"""Evidence: from names, labels and arrays to one ``(n_rows, n_vars)`` code array.

``-1`` marks an unobserved variable. A state is given by its label or by its code
(labels win when a token is both, e.g. a state labelled "1" that is not code 1).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from bnsl_dist._io import is_plain_int
from bnsl_dist.exceptions import DataError
from bnsl_dist.model.network import BayesianNetwork

__all__ = ["Evidence", "as_evidence", "parse_assignments", "variable_index", "state_code"]

#: One row: a variable (name or index) to its state (label or code).
Assignment = Mapping[str, str | int] | Mapping[int, str | int] | Mapping[str | int, str | int]
Evidence = NDArray[np.integer] | Assignment | Sequence[Assignment]


def variable_index(net: BayesianNetwork, var: str | int) -> int:
    """Index of a variable given by name or index."""
    if isinstance(var, (int, np.integer)) and not isinstance(var, bool):
        if not 0 <= int(var) < net.n_vars:
            raise DataError(f"variable index {var} out of range 0..{net.n_vars - 1}")
        return int(var)
    try:
        return net.names.index(str(var))
    except ValueError:
        raise DataError(f"unknown variable {var!r}") from None


def state_code(net: BayesianNetwork, v: int, state: str | int) -> int:
    """Code of a state of variable ``v`` given by label or code."""
    labels = net.states[v]
    if isinstance(state, str):
        if state in labels:
            return labels.index(state)
        tok = state.strip()
        if tok in labels:
            return labels.index(tok)
        if is_plain_int(tok) and tok[0] != "+":  # not "--1", "²" (int fails), "٣" (3)
            state = int(tok)
        else:
            raise DataError(f"variable {net.names[v]!r} has no state {state!r}; "
                            f"its states are {list(labels)}")
    code = int(state)
    if not 0 <= code < len(labels):
        raise DataError(f"state code {code} of variable {net.names[v]!r} out of range "
                        f"0..{len(labels) - 1}")
    return code


def parse_assignments(text: str) -> dict[str, str]:
    """``"X=1,Y=yes"`` -> ``{"X": "1", "Y": "yes"}`` (empty text: no evidence)."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, val = part.partition("=")
        if not sep or not name.strip() or not val.strip():
            raise DataError(f"bad evidence {part!r}: expected NAME=STATE")
        if name.strip() in out:
            raise DataError(f"variable {name.strip()!r} is given twice in the evidence")
        out[name.strip()] = val.strip()
    return out


def as_evidence(net: BayesianNetwork, evidence: Evidence | None) -> NDArray[np.int32]:
    """Normalise evidence to an int32 array of shape ``(n_rows, n_vars)``, -1 unobserved.

    Parameters
    ----------
    net : BayesianNetwork
    evidence : array, mapping, sequence of mappings or None
        An integer array ``(n_rows, n_vars)`` or ``(n_vars,)`` of codes (-1: unobserved);
        one mapping ``{variable: state}`` (a single row); or a list of such mappings.
        None is one row with no evidence.

    Raises
    ------
    DataError
        Unknown variables or states, codes out of range, a wrong shape.
    """
    n = net.n_vars
    ar = net.arities
    if evidence is None:
        return np.full((1, n), -1, dtype=np.int32)
    if isinstance(evidence, Mapping):
        evidence = [evidence]
    if isinstance(evidence, np.ndarray) or (
            isinstance(evidence, Sequence) and len(evidence) > 0
            and not isinstance(evidence[0], Mapping)):
        arr = np.asarray(evidence)
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != n:
            raise DataError(f"evidence array of shape {arr.shape}: expected (rows, {n})")
        if arr.dtype.kind not in "iu":
            raise DataError(f"evidence codes must be integers, got dtype {arr.dtype}")
        arr = arr.astype(np.int64)
        bad = (arr < -1) | (arr >= ar[None, :])
        if bad.any():
            row, col = (int(x) for x in np.argwhere(bad)[0])
            raise DataError(f"evidence row {row}: code {arr[row, col]} of variable "
                            f"{net.names[col]!r} out of range -1..{ar[col] - 1}")
        return np.ascontiguousarray(arr, dtype=np.int32)
    rows = list(evidence)
    out = np.full((len(rows), n), -1, dtype=np.int32)
    for i, given in enumerate(rows):
        if not isinstance(given, Mapping):
            raise DataError(f"evidence row {i} is not a mapping of variables to states")
        for var, state in given.items():
            v = variable_index(net, var)
            out[i, v] = state_code(net, v, state)
    return out
