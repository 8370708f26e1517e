"""CategoricalData.from_array and Dataset: invariants every consumer relies on (one state
label per state, codes below the arities, splits that mean the same by each code)."""

from __future__ import annotations

import numpy as np
import pytest

from bnsl_dist.data import CategoricalData, Dataset, read_data
from bnsl_dist.exceptions import DataError
from bnsl_dist.graph import DAG
from bnsl_dist.model import fit_cpts


@pytest.mark.parametrize("labels,arity", [(("a",), None), (("lo", "mid", "hi"), None),
                                          (("a", "b"), 3)])
def test_state_labels_must_match_the_arity(labels, arity):
    """Code 1 is the second state: one label for a two-state variable left fit_cpts and
    every labelled writer indexing past the labels (IndexError); three labels for two
    states declared a state the arity did not have."""
    with pytest.raises(DataError, match=r"column 2 \(B\)") as exc:
        CategoricalData.from_array([[0, 0], [1, 1]], names=["A", "B"],
                                   arities=None if arity is None else [2, arity],
                                   states=[None, labels], source="d.csv")
    assert f"{len(labels)} state labels" in str(exc.value)
    assert str(exc.value).startswith("d.csv")


def test_declared_arity_beyond_the_labels_of_a_csv_column_is_named(tmp_path):
    """read_data with a declared arity on a column of labels gave data whose state labels
    were fewer than its states; fit_cpts on it raised IndexError."""
    p = tmp_path / "l.csv"
    p.write_text("A,B\nlo,x\nhi,y\nlo,y\n")
    with pytest.raises(DataError, match=r"column 1 \(A\): 2 state labels for 3 states"):
        read_data(p, arities=[3, 2])
    d = read_data(p, arities=[2, 2])  # as many states as labels: fine
    net = fit_cpts(DAG.from_parents([(), (0,)], ["A", "B"]), d, alpha=0.0)
    assert net.states == (("hi", "lo"), ("x", "y"))
    np.testing.assert_allclose(net.cpts[0], [[1 / 3, 2 / 3]])


@pytest.mark.parametrize("values,arities", [
    (np.array([[0, 1], [1, 2**63 + 5]], dtype=np.uint64), None),   # was code 5, arity 1
    (np.array([[0, 1], [1, 2**63 + 5]], dtype=np.uint64), [2, 2]),  # was code 5, arity 2
    (np.array([[0.0, 1.0], [1.0, 1e20]]), None),  # was "negative code -9223372036854775808"
])
def test_code_beyond_int64_is_out_of_range_on_its_row_and_column(values, arities):
    """A code no int64 holds wrapped in the int64 cast: a uint64 code 2**63 + 5 was
    stored as code 5 (uint8) under arity 1, silently."""
    with pytest.raises(DataError, match="out of range") as exc:
        CategoricalData.from_array(values, arities=arities, source="d.npy")
    assert (exc.value.path, exc.value.line, exc.value.column) == ("d.npy", 2, 2)
    masked = CategoricalData.from_array(values, arities=arities,
                                        missing=[[False, False], [False, True]])
    np.testing.assert_array_equal(masked.codes, [[0, 1], [1, 0]])


def test_splits_must_agree_on_state_labels():
    """Splits read one by one map labels to codes each in its own sorted order; with as
    many states in each, Dataset accepted them, and code 0 meant "a" in train and "b" in
    test (a test log-likelihood then scores other states than the ones learned)."""
    tr = CategoricalData.from_array([[0, 0], [1, 1]], names=["A", "B"],
                                    states=[("a", "b"), ("x", "y")])
    te = CategoricalData.from_array([[0, 1], [1, 0]], names=["A", "B"],
                                    states=[("a", "b"), ("b", "c")])
    with pytest.raises(DataError, match=r"split 'test'.*variable 'B'.*\('b', 'c'\)"):
        Dataset("d", {"train": tr, "test": te})
    same = CategoricalData.from_array([[1, 1]], names=["A", "B"],
                                      states=[("a", "b"), ("x", "y")])
    unlabelled = CategoricalData.from_array([[1, 1]], names=["A", "B"], arities=[2, 2])
    ds = Dataset("d", {"train": tr, "valid": same, "test": unlabelled})
    assert ds["valid"].states == tr.states
