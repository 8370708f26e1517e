"""bnsl_dist/sem/underflow.py's bounds against brute force (every completion of a small
masked data set, every clique entry of a junction tree computed naively in logs), and
workflows/sem_underflow.py's committed table against its JSON and a recomputation."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.graph.dag import DAG
from bnsl_dist.inference import build_junction_tree
from bnsl_dist.model.fit import fit_cpts
from bnsl_dist.sem.underflow import (
    TINY,
    clique_log_floor,
    log_prob_floor,
    uncertified_rows,
    underflow_threshold,
)

PARENTS = [[], [], [0, 1], [2], [1, 2], [0], [0], [0]]
ARITIES = [2, 3, 2, 2, 2, 2, 2, 2]
ORDER = [3, 4, 5, 6, 7, 0, 1, 2]  # 0's three children come in messages from own cliques


def _masked(seed: int, rows: int = 7, cells: int = 5):
    rng = np.random.default_rng(seed)
    truth = np.column_stack([rng.integers(0, r, rows) for r in ARITIES])
    for v, p in ((3, 2), (5, 0), (6, 0), (7, 0)):  # dependences
        truth[:, v] = np.where(rng.random(rows) < 0.8, truth[:, p], truth[:, v])
    missing = np.zeros(truth.shape, bool)
    missing.flat[rng.choice(truth.size, cells, replace=False)] = True
    return truth, missing


def _completions(truth, missing):
    where = np.argwhere(missing)
    for states in itertools.product(*(range(ARITIES[v]) for _, v in where)):
        d = truth.copy()
        for (b, v), s in zip(where, states, strict=True):
            d[b, v] = s
        yield d


def _network(codes):
    data = CategoricalData.from_array(codes, arities=ARITIES)
    return fit_cpts(DAG.from_parents(PARENTS), data, alpha=1.0)


def _cpt_row(parents, x):
    """The CPT row of the parents' states ``x[p]``: the first parent varies fastest."""
    j, stride = 0, 1
    for p in parents:
        j += x[p] * stride
        stride *= ARITIES[p]
    return j


def _naive_collect(net, jt, ev, mode):
    """Per clique (children first): ln of its largest separator entry before rescaling,
    and ln of its least entry that agrees with the evidence ``ev`` (-1: unobserved),
    computed entry by entry in logs from the definition of the messages."""
    pos = {v: i for i, v in enumerate(jt.order)}
    cpt_home = [jt.home[min((v, *PARENTS[v]), key=pos.get)] for v in range(len(PARENTS))]
    msgs: dict[int, dict[tuple[int, ...], float]] = {}
    out = []
    for c, vars_c in enumerate(jt.cliques):
        sep = jt.separators[c]
        up: dict[tuple[int, ...], float] = {}
        least = math.inf
        for s in itertools.product(*(range(ARITIES[u]) for u in vars_c)):
            x = dict(zip(vars_c, s, strict=True))
            val = 0.0
            for v in (v for v in range(len(PARENTS)) if cpt_home[v] == c):
                val += math.log(net.cpts[v][_cpt_row(PARENTS[v], x), x[v]])
            agrees = all(ev[u] < 0 or ev[u] == x[u] for u in vars_c)
            if not all(ev[v] < 0 or ev[v] == x[v] for v in vars_c if jt.home[v] == c):
                val = -math.inf
            for f in (f for f in range(c) if jt.parent[f] == c):
                val += msgs[f][tuple(x[u] for u in jt.separators[f])]
            if agrees:
                least = min(least, val)
            t = tuple(x[u] for u in sep)
            if mode == "sum":
                up[t] = np.logaddexp(up.get(t, -math.inf), val)
            else:
                up[t] = max(up.get(t, -math.inf), val)
        m = max(up.values())
        msgs[c] = {t: u - m for t, u in up.items()}
        out.append((m, least))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_prob_floor_bounds_every_completions_network(seed):
    truth, missing = _masked(seed)
    floor = log_prob_floor(PARENTS, ARITIES, truth, missing, truth)
    worst = np.full(truth.shape[0], np.inf)
    for d in _completions(truth, missing):
        net = _network(d)
        worst = np.minimum(worst, net.log_prob_rows(truth))
    assert np.all(floor <= worst + 1e-9)
    # nothing missing: the bound is the fitted log-likelihood itself
    none = np.zeros_like(missing)
    net = _network(truth)
    assert np.allclose(log_prob_floor(PARENTS, ARITIES, truth, none, truth),
                       net.log_prob_rows(truth))


@pytest.mark.parametrize("seed", [0, 3])
def test_clique_floors_bound_every_entry_of_every_completions_junction_tree(seed):
    truth, missing = _masked(seed)
    codes = np.where(missing, -1, truth)
    cf = clique_log_floor(PARENTS, ARITIES, codes, missing, ORDER)
    pf = log_prob_floor(PARENTS, ARITIES, codes, missing, truth)
    log_r = underflow_threshold(PARENTS, ARITIES, ORDER) - math.log(TINY)
    for d in _completions(truth, missing):
        net = _network(d)
        jt = build_junction_tree(net, ORDER)
        for b, ev in enumerate(codes):
            for mode, slack in (("sum", log_r), ("max", 0.0)):
                for m, least in _naive_collect(net, jt, ev, mode):
                    assert m >= cf[b] - 1e-9 and least >= cf[b] - 1e-9
                    assert m >= pf[b] - slack - 1e-9


def test_uncertified_rows_are_the_rows_of_many_disagreeing_children():
    # c06cf61's case: a root with 300 children equal to it except in two rows, where
    # they all disagree (cost about 4.6 each), and rows left alone
    root = np.arange(200) % 2
    c = np.column_stack([root] * 301)
    c[[0, 7], 1:] ^= 1
    c[3, 1:5] ^= 1
    miss = np.zeros(c.shape, bool)
    miss[7, 0] = True
    par = [[]] + [[0]] * 300
    order = list(range(1, 301)) + [0]
    got = uncertified_rows(par, [2] * 301, c, miss, order, c)
    assert np.flatnonzero(got).tolist() == [0, 7]
    # the junction tree of such a network does need its log path: ln P(e) of row 0
    net = fit_cpts(DAG.from_parents(par), CategoricalData.from_array(c), alpha=1.0)
    jt = build_junction_tree(net, order)
    assert -math.inf < jt.log_prob_evidence(c[:1])[0] < math.log(TINY)


def test_bad_input_is_named():
    from bnsl_dist.exceptions import DataError, InvalidConfigError

    truth, missing = _masked(0)
    with pytest.raises(InvalidConfigError, match="alpha"):
        log_prob_floor(PARENTS, ARITIES, truth, missing, truth, alpha=0.0)
    other = truth.copy()
    other[~missing] = (other[~missing] + 1) % 2
    with pytest.raises(DataError, match="observed cell"):
        log_prob_floor(PARENTS, ARITIES, truth, missing, other)
    with pytest.raises(InvalidConfigError, match="order"):
        clique_log_floor(PARENTS, ARITIES, truth, missing, [0, 1, 2])


# ------------------------------------------------------------- the committed table
def test_committed_table_is_drawn_from_the_committed_json_and_covers_every_cell():
    from bnsl_dist.results.export import load_records
    from workflows.sem_underflow import OUT, markdown

    rows = json.loads((OUT / "underflow.json").read_text(encoding="utf-8"))["rows"]
    assert (OUT / "underflow.md").read_text(encoding="utf-8") == markdown(rows)
    keys = set(load_records(OUT / "records.parquet").frame()["key"])
    assert {r["key"] for r in rows} == keys and len(rows) == len(keys)


def test_committed_rows_recompute(shared_data):
    """The JSON's rows of a few cells of the smallest data sets, and of the cells where a
    bound leaves rows open, recomputed from the records and the staged data."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.results.export import load_records
    from workflows.sem_underflow import GRID, OUT, cell_rows

    rows = {r["key"]: r for r in json.loads((OUT / "underflow.json")
                                            .read_text(encoding="utf-8"))["rows"]}
    f = load_records(OUT / "records.parquet").frame()
    some = [r["key"] for r in rows.values() if r["dataset"] in ("dna", "plants")][::15]
    opened = [k for k, r in rows.items() if r["best_open_rows"] or r["chain_open_rows"]]
    pick = f[f["key"].isin(some + opened[:2])]
    cells = {c.key: c for c in expand_grid(load_grid(GRID)) if c.key in set(pick["key"])}
    for got in cell_rows(pick, cells):
        assert got == rows[got["key"]]
