"""Local scores against an independent naive implementation (and pgmpy's BDeu)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bnsl_dist.data import CategoricalData, resolve_data
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.scores import LocalScorer
from tests.naive_scores import naive_bdeu, naive_bic, naive_entropy, naive_ll


def _random_data(rng, n_rows, arities):
    cols = [rng.integers(0, a, size=n_rows) for a in arities]
    # make some columns depend on others so scores are not trivial
    for j in range(1, len(cols)):
        if rng.random() < 0.5:
            cols[j] = (cols[j] + cols[j - 1] * rng.integers(0, 2, size=n_rows)) % arities[j]
    return CategoricalData.from_array(np.stack(cols, axis=1), arities=arities)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 300),
       n_par=st.integers(0, 4), ess=st.floats(0.1, 20.0))
def test_scores_equal_naive_oracle(seed, n_rows, n_par, ess):
    rng = np.random.default_rng(seed)
    arities = rng.integers(1, 5, size=6)
    d = _random_data(rng, n_rows, arities)
    child = int(rng.integers(0, 6))
    others = [v for v in range(6) if v != child]
    parents = sorted(rng.choice(others, size=n_par, replace=False).tolist())
    codes = d.codes
    for kind, oracle in [("bic", naive_bic(codes, arities, child, parents)),
                         ("bdeu", naive_bdeu(codes, arities, child, parents, ess)),
                         ("ll", naive_ll(codes, child, parents))]:
        got = LocalScorer(d, kind, ess).score(child, parents)
        assert got == pytest.approx(oracle, rel=1e-9, abs=1e-9)


def test_sparse_path_and_many_parents():
    """q*r far above N (sort-based counting) and a radix above 2^40 (re-ranking)."""
    rng = np.random.default_rng(3)
    arities = np.array([7] * 18)
    d = _random_data(rng, 500, arities)
    s_bic, s_bd = LocalScorer(d, "bic"), LocalScorer(d, "bdeu", 2.0)
    for parents in ([1, 2, 3, 4], list(range(1, 18))):
        assert s_bic.score(0, parents) == pytest.approx(
            naive_bic(d.codes, arities, 0, parents), rel=1e-9)
        assert s_bd.score(0, parents) == pytest.approx(
            naive_bdeu(d.codes, arities, 0, parents, 2.0), rel=1e-9)


def test_uint16_codes():
    rng = np.random.default_rng(5)
    arities = np.array([300, 3, 2])
    d = _random_data(rng, 2000, arities)
    assert d.codes.dtype == np.uint16
    s = LocalScorer(d, "bic")
    assert s.score(0, [1, 2]) == pytest.approx(naive_bic(d.codes, arities, 0, [1, 2]), rel=1e-9)


def test_entropies_and_conditional_entropy():
    d = resolve_data("nltcs/test")
    s = LocalScorer(d, "bic")
    ent = s.entropies()
    for v in (0, 5, 15):
        assert ent[v] == pytest.approx(naive_entropy(d.codes, v), rel=1e-12)
        assert s.conditional_entropy(v, [1, 2]) == pytest.approx(
            naive_entropy(d.codes, v, [1, 2]), rel=1e-9)


def test_bdeu_equals_pgmpy():
    pgmpy = pytest.importorskip("pgmpy.estimators")
    import pandas as pd

    d = resolve_data("child-5000")
    df = pd.DataFrame(d.codes.astype(np.int64), columns=list(d.names))
    state_names = {n: list(range(int(a))) for n, a in zip(d.names, d.arities, strict=True)}
    ref = pgmpy.BDeu(df, equivalent_sample_size=1, state_names=state_names)
    s = LocalScorer(d, "bdeu", 1.0)
    for child, parents in [(0, []), (3, [0]), (5, [1, 4, 7]), (19, [2, 6])]:
        expect = ref.local_score(d.names[child], [d.names[p] for p in parents])
        assert s.score(child, parents) == pytest.approx(expect, rel=1e-9)


def test_bic_is_ml_ll_minus_real_penalty():
    d = resolve_data("wine")
    s = LocalScorer(d, "bic")
    ll = s.log_likelihood(2, [0, 1])
    pen = 0.5 * np.log(d.n_samples) * (d.arities[2] - 1) * d.arities[0] * d.arities[1]
    assert s.score(2, [0, 1]) == pytest.approx(ll - pen, rel=1e-12)
    assert s.penalty(2, [0, 1]) == pytest.approx(pen, rel=1e-12)


def test_scorer_rejects_bad_settings():
    d = resolve_data("wine")
    with pytest.raises(InvalidConfigError):
        LocalScorer(d, "aic")
    with pytest.raises(InvalidConfigError):
        LocalScorer(d, "bdeu", ess=0)
    masked = CategoricalData.from_array(d.codes, missing=np.eye(d.n_samples, d.n_vars, dtype=bool))
    with pytest.raises(DataError, match="missing"):
        LocalScorer(masked)


def test_score_dag_sums_families():
    d = resolve_data("nltcs/test")
    s = LocalScorer(d, "bic")
    parents = [[]] + [[i - 1] for i in range(1, d.n_vars)]
    per = s.score_parents(parents)
    assert per.sum() == pytest.approx(sum(naive_bic(d.codes, d.arities, v, p)
                                          for v, p in enumerate(parents)), rel=1e-9)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 200))
def test_state_bitsets_and_pair_tables_count_as_the_rows_do(seed, n_rows):
    # N across word boundaries, unseen states, arities above the bitset limit
    from bnsl_dist.scores import _kernels as K
    from bnsl_dist.scores.local import BITSET_MAX_ARITY

    rng = np.random.default_rng(seed)
    arities = np.array([1, 2, 3, 5, BITSET_MAX_ARITY + 3][: 3 + seed % 3], dtype=np.int64)
    d = _random_data(rng, n_rows, arities)
    bits, offs, sizes = LocalScorer(d, "bic").state_bitsets()
    for v, a in enumerate(arities):
        if a > BITSET_MAX_ARITY:
            assert offs[v] == -1
            continue
        for s in range(a):
            rows = np.flatnonzero(d.codes[:, v] == s)
            assert sizes[offs[v] + s] == len(rows)
            mask = np.unpackbits(bits[offs[v] + s].view(np.uint8), bitorder="little")
            assert np.array_equal(np.flatnonzero(mask), rows)
    counts = np.zeros(1024, dtype=np.int64)
    for x, y in [(x, y) for x in range(len(arities)) for y in range(len(arities))
                 if x != y and offs[x] >= 0 and offs[y] >= 0]:
        K.pair_table(bits, sizes, offs[x], arities[x], offs[y], arities[y], counts)
        naive = np.zeros((arities[y], arities[x]), dtype=np.int64)
        np.add.at(naive, (d.codes[:, y], d.codes[:, x]), 1)
        assert np.array_equal(counts[: arities[x] * arities[y]], naive.ravel())


def test_state_bitsets_are_made_once_per_data_set_and_not_beyond_their_memory_cap(
        monkeypatch):
    from bnsl_dist.scores import local

    d = CategoricalData.from_array(np.random.default_rng(0).integers(0, 3, (500, 4)))
    first = LocalScorer(d, "bic").state_bitsets()
    assert LocalScorer(d, "bdeu").state_bitsets() is first  # shared by the data's scorers
    monkeypatch.setattr(local, "BITSET_MAX_BYTES", 0)
    wide = CategoricalData.from_array(np.random.default_rng(0).integers(0, 20, (500, 4)))
    bits, offs, sizes = LocalScorer(wide, "bic").state_bitsets()  # 20 rows > 2 x codes
    assert (offs == -1).all() and bits.shape[0] == 0
    bits, offs, _ = LocalScorer(d, "bic", bitsets=False).state_bitsets()  # made, not used
    assert (offs == -1).all() and bits.shape[0] == 0


@pytest.mark.parametrize("child,parents,what", [
    (3, [], "child index 3"),  # past the last variable: was a garbage score (read past codes)
    (-1, [], "child index -1"),  # was the last variable's score (numpy wrap-around)
    (0, [3], "parent index 3"),
    (0, [-1], "parent index -1"),
    (0, [0], "own parent"),  # was LL(X | X) = 0 less a penalty
    (0, [1, 1], "repeated"),  # was scored with q = r_1 * r_1
])
def test_a_family_of_unknown_or_repeated_variables_is_refused(child, parents, what):
    d = CategoricalData.from_array(np.random.default_rng(0).integers(0, 3, size=(50, 3)))
    s = LocalScorer(d, "bic")
    for call in (s.score, s.score_and_ll, s.log_likelihood, s.penalty,
                 s.conditional_entropy):
        with pytest.raises(InvalidConfigError, match=what):
            call(child, parents)
    if not parents:
        with pytest.raises(InvalidConfigError, match=what):
            s.entropy(child)
    lists: list[list[int]] = [[], [], []]
    if 0 <= child < 3:
        lists[child] = list(parents)
        with pytest.raises(InvalidConfigError, match=what):
            s.score_parents(lists)
    # a valid family still scores as the oracle does, given in any order
    assert s.score(0, (2, 1)) == pytest.approx(naive_bic(d.codes, d.arities, 0, [1, 2]),
                                               rel=1e-12)
