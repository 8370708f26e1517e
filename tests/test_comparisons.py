"""Each COMPARISON.md's figures, recounted from the committed records.

One function per results folder (or per section) computes, from ``records.parquet`` (and
the other committed inputs a section names: ``mrf.json``, a second budget's records),
the lines its COMPARISON.md states: counts, ranges, medians, two-sided sign-test
p-values, in the file's own wording; the test fails when a line is not in the file, so a
figure that no longer follows from the records (a rerun, a re-export) is found.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from bnsl_dist.reporting.tables import binomial_two_sided_p, sign_test
from bnsl_dist.results.export import load_records

RESULTS = Path(__file__).resolve().parents[1] / "workflows" / "results"


def _signed(x: float) -> str:
    """A figure as COMPARISON.md writes it: signed, thousands separated, − for minus."""
    return f"{x:+,.0f}".replace("-", "−")


def _num(x: float, spec: str) -> str:
    """``x`` formatted by ``spec`` with a typographic minus."""
    return format(x, spec).replace("-", "−")


def _p_value(p: float) -> str:
    """A sign test's p as the COMPARISON files write it: two significant digits
    (``0.030``, ``0.11``, ``0.00028``), those below 10⁻⁴ as ``7.6·10⁻⁶``."""
    if p >= 1e-4:
        return f"{p:#.2g}"
    mantissa, exponent = f"{p:.1e}".split("e")
    return f"{mantissa}·10{str(int(exponent)).translate(str.maketrans('-0123456789', '⁻⁰¹²³⁴⁵⁶⁷⁸⁹'))}"


def _cells(folder: Path, *extra: str) -> pd.DataFrame:
    """A folder's committed cells (every part of its records): label, data set, split, k,
    best score and the ``extra`` columns."""
    columns = ["label", "dataset", "split", "k", "best_score", *extra]
    return pd.concat(pd.read_parquet(f, columns=columns)
                     for f in sorted(folder.glob("records*.parquet")))


def _scores(cells: pd.DataFrame, label: str) -> pd.Series:
    """One label's best scores by (data set, split, k)."""
    return cells[cells.label == label].set_index(["dataset", "split", "k"]).best_score


def _s2_gaps(cells: pd.DataFrame) -> pd.Series:
    """BIC(k-G_ENT) − BIC(S2) per (data set, split, k) where both ran."""
    return (_scores(cells, "kg-ent") - _scores(cells, "s2")).dropna()


def _assert_in_comparison(folder: str, lines: list[str]) -> None:
    """Each of ``lines`` stands in ``folder``'s COMPARISON.md (whitespace folded)."""
    path = RESULTS / folder / "COMPARISON.md"
    text = " ".join(path.read_text(encoding="utf-8").split())
    for line in lines:
        assert line in text, f"{path.relative_to(RESULTS.parents[1])} lacks: {line}"


def _index_row(folder: str) -> str:
    """The row of the results index (workflows/results/README.md) that links ``folder``."""
    return next(r for r in (RESULTS / "README.md").read_text(encoding="utf-8").splitlines()
                if f"]({folder}/COMPARISON.md)" in r)


def _experiments(cells: pd.Series) -> int:
    """How many (data set, split) a per-(data set, split, k) series covers."""
    return len(cells.index.droplevel("k").unique())


def test_kg_section_of_the_hundredth_comparison_recomputes():
    """The k-G / k-G_ENT figures of asobs-ent-2018-hundredth's COMPARISON.md and of the
    index row, recomputed here from the committed records of both budgets: per (data
    set, split, k) the difference of ``best_score``, on the data sets whose k-G cells ran
    at ÷100 (so that each exported piece's prose is checked against its records)."""
    hundredth, reduced = "asobs-ent-2018-hundredth", "asobs-ent-2018-reduced"
    records = {folder: _cells(RESULTS / folder) for folder in (hundredth, reduced)}

    def scores(folder: str, label: str) -> pd.Series:
        return _scores(records[folder], label)

    kg = scores(hundredth, "kg")
    text = (RESULTS / hundredth / "COMPARISON.md").read_text(encoding="utf-8")
    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    n_exp = len(kg.index.droplevel("k").unique())
    assert f"k-G cells of {n_exp} of 29 experiments" in text

    def diff(folder: str, a: str, b: str) -> pd.Series:
        x = scores(folder, a) - scores(folder, b)
        return x[x.index.isin(kg.index)].dropna()

    def span(d: pd.Series) -> str:
        return f"{_signed(d.min())} to {_signed(d.max())}, median {_signed(d.median())}"

    ent, ent_r = diff(hundredth, "kg-ent", "kg"), diff(reduced, "kg-ent", "kg")
    n = len(ent)
    assert n == 5 * n_exp and len(ent_r) == n
    w = int((ent > 0).sum())
    assert (f"**k-G_ENT wins {w} of {n}** (ΔBIC {span(ent)}, p = "
            f"{binomial_two_sided_p(w, w + int((ent < 0).sum())):.2g}); {n_exp} of {n_exp} at every k"
            ) in text
    assert all((g > 0).all() for _, g in ent.groupby(level="k"))
    w_r = int((ent_r > 0).sum())
    assert f"| {w_r} of {n} ({span(ent_r)}) |" in text

    late, late_r = diff(hundredth, "kg-ent-late", "kg"), diff(reduced, "kg-ent-late", "kg")
    lost, lost_r = int((late < 0).sum()), int((late_r < 0).sum())
    assert (f"| k-G wins {lost} of {n} ({span(late)}) | {lost_r} of {n} ({span(late_r)}) |"
            ) in text
    assert (f"k-G_ENT (early) beats k-G in {w} of {n} cells (÷1,000: {w_r}), the late "
            f"direction loses {lost} of {n}") in index

    own = []
    for label in ("kg", "kg-ent", "kg-ent-late"):
        d = scores(hundredth, label) - scores(reduced, label)
        d = d[d.index.isin(kg.index)].dropna()
        own.append(f"{int((d > 0).sum())} of {len(d)} ({span(d)})")
    assert (f"k-G above it in\n{own[0]}, k-G_ENT {own[1]},\n`kg-ent-late` {own[2]}."
            ) in text
    _assert_in_comparison(hundredth, [hundredth_gain_line()])


def hundredth_gain_line() -> str:
    """What ten times the budget gives each unbounded solver of the ASOBS-ENT grid (its
    ÷100 score against its own ÷1,000 one, per experiment), and whether the heuristics
    rank in the same order at both budgets: the sentence of asobs-ent-2018-hundredth's
    COMPARISON.md."""
    heuristics = ["asobs", "asobs-ent", "asobs-ent-last"]
    scores = {}
    for folder in ("asobs-ent-2018-hundredth", "asobs-ent-2018-reduced"):
        c = _cells(RESULTS / folder)
        c = c[c.k.isna() & c.label.isin([*heuristics, "ilp"])]
        scores[folder] = c.pivot_table(index=["dataset", "split"], columns="label",
                                       values="best_score").dropna()
    ten, one = scores["asobs-ent-2018-hundredth"], scores["asobs-ent-2018-reduced"]
    gain = (ten - one.reindex(ten.index)).dropna()
    assert (gain > 0).all().all()  # "every solver gains"
    real = ~gain.index.get_level_values("dataset").str.fullmatch(r"r\d+")

    def span(x: pd.DataFrame) -> str:
        v = x.to_numpy()
        return f"{_signed(v.min())} to {_signed(v.max())}"

    def order(w: pd.DataFrame) -> pd.Series:
        return w[heuristics].apply(lambda r: tuple(r.sort_values().index), axis=1)

    same = order(ten.loc[gain.index]) == order(one.loc[gain.index])
    odd = [f"{d}/{s}" for d, s in same[real & ~same.to_numpy()].index]
    return (f"On all {int(real.sum())} real experiments every solver gains from the larger "
            f"caches and longer searches (ΔBIC against its own ÷1,000 score: "
            f"{span(gain[real][heuristics])} for the heuristics, {span(gain[real][['ilp']])} "
            f"for the ILP; on r0–r4 {span(gain[~real][heuristics])} and "
            f"{span(gain[~real][['ilp']])}); the heuristics rank in the same order at both "
            f"budgets on {int(same[real].sum())} of them (not on {', '.join(odd)})")


#: The unbounded comparisons of asobs-ent-2018-hundredth's two tables, in their order, with
#: the names its cells give the labels.
HUNDREDTH_PAIRS = [("asobs-ent", "asobs", "`asobs-ent` (paper's) vs ASOBS"),
                   ("asobs-ent-last", "asobs", "`asobs-ent-last` vs ASOBS"),
                   ("asobs-ent", "asobs-ent-last", "`asobs-ent` vs `asobs-ent-last`"),
                   ("asobs-ent", "ilp", "`asobs-ent` vs ILP"),
                   ("asobs-ent-last", "ilp", "`asobs-ent-last` vs ILP")]
SHORT = {"asobs-ent": "ASOBS-ENT", "asobs": "ASOBS", "asobs-ent-last": "`-last`", "ilp": "ILP"}


def hundredth_asobs_rows() -> list[str]:
    """The first three cells of each row of asobs-ent-2018-hundredth's unbounded tables (the
    24 real experiments of 200 < n < 2,000, then r0-r4): per pair of labels the wins at
    ΔBIC ≥ 2 of each, the ΔBIC range and the sign test at ÷100, and the same experiments'
    wins and range at ÷1,000 (asobs-ent-2018-reduced)."""
    ten, one = (_cells(RESULTS / f) for f in ("asobs-ent-2018-hundredth", "asobs-ent-2018-reduced"))
    ten, one = ten[ten.k.isna()], one[one.k.isna()]
    rows = []
    for synthetic in (False, True):
        for a, b, name in HUNDREDTH_PAIRS:
            d = (_scores(ten, a) - _scores(ten, b)).dropna()
            d = d[d.index.get_level_values("dataset").str.fullmatch(r"r\d+") == synthetic]
            e = (_scores(one, a) - _scores(one, b)).reindex(d.index)
            assert e.notna().all()
            t, t1 = sign_test(d), sign_test(e)
            rows.append(f"| {name} | {SHORT[a]} {t.wins_a}, {SHORT[b]} {t.wins_b}"
                        f"{f', {t.ties} tied' if t.ties else ''} (ΔBIC {_signed(d.min())} to "
                        f"{_signed(d.max())}, p = {_p_value(t.p_value)}) | "
                        f"{t1.wins_a}–{t1.wins_b}{f' ({t1.ties} tied)' if t1.ties else ''}"
                        f" ({_signed(e.min())} to {_signed(e.max())}) |")
    return rows


def test_hundredth_asobs_tables_recompute():
    """asobs-ent-2018-hundredth's unbounded tables at both budgets, from the records."""
    _assert_in_comparison("asobs-ent-2018-hundredth", hundredth_asobs_rows())


def s2_summary(cells: pd.DataFrame) -> tuple[str, str]:
    """k-G_ENT against S2 (the ASOBS-ENT paper's §5.3) from a folder's cells: per (data
    set, split, k) the difference of ``best_score``; the line of its COMPARISON.md and
    the index's."""
    d = _s2_gaps(cells)
    w, lost = int((d > 0).sum()), int((d < 0).sum())
    span = f"ΔBIC {_signed(d.min())} to {_signed(d.max())}, median {_signed(d.median())}"
    return (f"**k-G_ENT higher in {w} of {len(d)}** ({span}), p = "
            f"{binomial_two_sided_p(w, w + lost):.2g}",
            f"k-G_ENT higher in {w} of {len(d)} ({span})")


def asobs_ent_rows() -> list[str]:
    """The figures of asobs-ent-2018-reduced's main table (the ASOBS-ENT paper's Tables
    2-4 at ÷1,000), from its records: per size column (n ≤ 200, 200 < n < 2,000, the
    synthetic n ≥ 2,000) the ΔBIC of each pair of labels per experiment, counted as the
    ΔBIC tables do (a win at ΔBIC ≥ 2, a tie between), with the two-sided sign test."""
    cells = _cells(RESULTS / "asobs-ent-2018-reduced", "n_vars")
    n = cells.drop_duplicates("dataset").set_index("dataset").n_vars

    def delta(a: str, b: str, col: str) -> pd.Series:
        d = (_scores(cells, a) - _scores(cells, b)).dropna()
        size = n.reindex(d.index.get_level_values("dataset")).to_numpy()
        keep = {"small": size <= 200, "mid": (size > 200) & (size < 2000),
                "large": size >= 2000}[col]
        return d[keep]

    def count(d: pd.Series) -> tuple[int, int, int, str]:
        t = sign_test(d)
        return t.wins_a, t.wins_b, t.ties, _p_value(t.p_value)

    def ties(t: int) -> str:
        return f", {t} ties" if t else ""

    def ilp_wins(d: pd.Series) -> str:
        per = (d <= -2).groupby(level="dataset").sum()
        per = per[per > 0]
        parts = []
        for c in sorted(set(per), reverse=True):
            names = ", ".join(sorted(per.index[per == c]))
            parts.append(f"{names} ({'1 each' if c == 1 else f'{c}/3'})")
        return ", ".join(parts)

    def span(d: pd.Series) -> str:
        lo, hi = (d.max(), d.min()) if (d < 0).all() else (d.min(), d.max())
        return f"{_signed(lo)} to {_signed(hi)}"

    rows = []
    # Table 2, n <= 200 and 200 < n < 2,000: the paper's variant and the other against ASOBS
    d, e = delta("asobs-ent", "asobs", "small"), delta("asobs-ent-last", "asobs", "small")
    w, lost, t, p = count(d)
    w2, lost2, t2, p2 = count(e)
    rows.append(f"{len(d)} experiments, ASOBS-ENT wins {w}, ASOBS {lost}{ties(t)} (p = {p}; "
                f"median ΔBIC {_num(d.median(), '+.1f')}). Beside it `asobs-ent-last`: wins "
                f"{w2}, ASOBS {lost2}{ties(t2)} (p = {p2})")
    d, e = delta("asobs-ent", "asobs", "mid"), delta("asobs-ent-last", "asobs", "mid")
    w, lost, t, p = count(d)
    w2, lost2, t2, p2 = count(e)
    assert w == 0 and t == 0
    rows.append(f"ASOBS wins {lost} of {len(d)}** (p = {p}; ΔBIC {span(d)}, median "
                f"{_signed(d.median())}; {int((d < -10).sum())} of them < −10). `asobs-ent-last`: "
                f"wins {w2}, ASOBS {lost2}{ties(t2)} (p = {p2}; median {_signed(e.median())})")
    # against the 3.6 s ILP
    for col in ("small", "mid"):
        d, e = delta("asobs-ent", "ilp", col), delta("asobs-ent-last", "ilp", col)
        w, lost, t, p = count(d)
        w2, lost2, t2, p2 = count(e)
        med = f"; median ΔBIC {_signed(d.median())}" if col == "mid" else ""
        rows.append(f"`asobs-ent` wins {w}, ILP {lost}{ties(t)} (p = {p}{med}); the ILP wins on "
                    f"{ilp_wins(d)}. `asobs-ent-last`: {w2} / {lost2}{f' / {t2}' if t2 else ''} "
                    f"(p = {p2})")
    # Tables 3-4: k-G_ENT (early) against k-G, per k
    by_k = [count(g) for _, g in delta("kg-ent", "kg", "small").groupby(level="k")]
    ws, ls = [c[0] for c in by_k], [c[1] for c in by_k]
    worst = max(by_k, key=lambda c: binomial_two_sided_p(c[0], c[0] + c[1]))[3]
    m = _experiments(delta("kg-ent", "kg", "small"))
    rows.append(f"k-G_ENT (`early`) wins {min(ws)}–{max(ws)} of {m} for every k, k-G "
                f"{min(ls)}–{max(ls)} (p ≤ {worst} at every k")
    mid = delta("kg-ent", "kg", "mid")
    per_k = [count(g) for _, g in mid.groupby(level="k")]
    m = _experiments(mid)
    assert all(c[0] == m for c in per_k) and (mid > 10).all()
    rows.append(f"k-G_ENT wins {m} of {m} for every k, all by ΔBIC > 10 (p = {per_k[0][3]})")
    # n >= 2,000 (r0-r14)
    d = delta("asobs-ent", "asobs", "large")
    w, lost, t, p = count(d)
    won, lost_at = d[d >= 2], d[d <= -2]
    big = d[d.index.get_level_values("dataset").isin([f"r{i}" for i in range(10, 15)])]
    e = delta("asobs-ent-last", "asobs", "large")
    f = delta("asobs-ent", "asobs-ent-last", "large")
    we, le, _, pe = count(e)
    wf, _, _, pf = count(f)
    assert we == 0 and (big >= 2).all()
    losses = ", ".join(f"{i[0]} {_signed(v)}" for i, v in lost_at.items())
    rows.append(f"`asobs-ent` wins {w} of {len(d)}** (ΔBIC {span(won)}; {losses}; p = {p}; "
                f"r10–r14 {len(big)} of {len(big)}, {span(big)}); `asobs-ent-last` loses all "
                f"{le} ({span(e)}, p = {pe}); `asobs-ent` beats `asobs-ent-last` {wf} of {len(f)} "
                f"({span(f)}, p = {pf})")
    d = delta("asobs-ent", "ilp", "large")
    assert (d >= 2).all()
    rows.append(f"rerun r0–r14: `asobs-ent` wins {len(d)} of {len(d)} ({span(d)})")
    large = delta("kg-ent", "kg", "large")
    groups: dict[tuple[int, int, str], list[int]] = {}
    for k, g in large.groupby(level="k"):
        w, lost, _, p = count(g)
        groups.setdefault((w, lost, p), []).append(int(k))
    assert (large[large > 0] > 10).all()
    parts = []
    for (w, lost, p), ks in sorted(groups.items(), key=lambda kv: -kv[0][0]):
        where = f"k = {', '.join(map(str, ks))}"
        if lost:
            lo = large[(large <= -2) & large.index.get_level_values("k").isin(ks)]
            parts.append(f"{w}–{lost} ({where}, p = {p}; "
                         + "; ".join(f"{i[0]}, {_signed(v)}" for i, v in lo.items()) + ")")
        else:
            parts.append(f"{w}–{lost} ({where}; p = {p})")
    big = large[large.index.get_level_values("dataset").isin([f"r{i}" for i in range(10, 15)])]
    assert (big >= 2).all()
    rows.append(f"k-G_ENT wins {' and '.join(parts)}, all by ΔBIC > 10; r10–r14 "
                f"{_experiments(big)} of {_experiments(big)} at every k ({span(big)})")
    # `late` against k-G
    late = []
    for col in ("small", "mid", "large"):
        ls = [count(g)[1] for _, g in delta("kg-ent-late", "kg", col).groupby(level="k")]
        m = _experiments(delta("kg-ent-late", "kg", col))
        late.append(f"{min(ls)}–{max(ls)} of {m}" if min(ls) != max(ls) else f"{ls[0]} of {m}")
    rows.append(f"k-G wins {late[0]} (n ≤ 200), {late[1]} (200 < n < 2,000) and {late[2]} "
                "(n ≥ 2,000) for every k")
    return rows


def test_asobs_ent_comparison_recomputes():
    """asobs-ent-2018-reduced's main table, and the index row's counts, recounted from its
    records."""
    rows = asobs_ent_rows()
    _assert_in_comparison("asobs-ent-2018-reduced", rows)
    small = re.search(r"ASOBS-ENT wins (\d+), ASOBS (\d+)", rows[0])
    mid = re.search(r"ASOBS wins (\d+) of (\d+)\*\* \(p = ([^;]+);", rows[1])
    last = re.search(r"`asobs-ent-last`: wins (\d+), ASOBS (\d+)[^(]*\(p = ([^;]+);", rows[1])
    large = re.search(r"wins (\d+) of (\d+)\*\* .*?; p = ([^;]+);", rows[6])
    assert small and mid and last and large
    row = _index_row("asobs-ent-2018-reduced")
    for said in (f"it loses to ASOBS {mid[1]} of {mid[2]} at 200 < n < 2,000 (p = {mid[3]})",
                 f"and {small[2]}–{small[1]} at n ≤ 200",
                 f"it wins {large[1]} of {large[2]} at n ≥ 2,000 (r0–r14, p = {large[3]}",
                 f"({last[1]}–{last[2]}, p = {last[3]})"):
        assert said in row, f"README.md's asobs-ent-2018-reduced row lacks: {said}"


def test_s2_sections_recompute():
    """The k-G_ENT vs S2 figures of each COMPARISON.md that reports them, and of the
    index, recounted from the committed records of its folder."""
    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    checked = 0
    for folder in ("asobs-ent-2018-reduced-s2", "asobs-ent-2018-hundredth"):
        cells = _cells(RESULTS / folder)
        if "s2" not in set(cells.label):
            continue
        line, short = s2_summary(cells)
        _assert_in_comparison(folder, [line])
        assert short in index, f"README.md lacks: {short}"
        checked += 1
    assert checked


def s2_detail(folder: Path, tenfold: Path) -> list[str]:
    """The k-G_ENT vs S2 figures of ``asobs-ent-2018-reduced-s2``'s COMPARISON.md beyond
    its summary line, from the records: the gaps by size (n < 200, 200 <= n < 2,000, the
    synthetic r0-r14), per k at the extremes, as shares of |BIC(S2)|, the least per data
    set, the k-trees S2 drew against k-G_ENT's orders (the records' ``iterations``), and
    against the gaps of the same cells at ten times the budget (``tenfold``'s records)."""
    cells = _cells(folder, "n_vars", "iterations")
    d = _s2_gaps(cells)
    n = cells.drop_duplicates("dataset").set_index("dataset").n_vars
    size = n.reindex(d.index.get_level_values("dataset")).to_numpy()
    # per data set: the least gap, and the median k-trees (S2) and orders (k-G_ENT) drawn
    least = d.groupby(level="dataset").min().nsmallest(3)
    drawn = cells.groupby(["label", "dataset"]).iterations.median()
    ktrees, orders = drawn["s2"], drawn["kg-ent"]
    synthetic_ds = ktrees.index.isin(n.index[n >= 2000])
    fewest, fewest_real = ktrees[synthetic_ds].idxmin(), ktrees[~synthetic_ds].idxmin()
    assert (ktrees >= orders.reindex(ktrees.index)).all()  # "as many as or more than"

    def part(g: pd.Series) -> tuple[int, str]:
        return (_experiments(g),
                f"{int((g > 0).sum())} of {len(g)}, {_signed(g.min())} to {_signed(g.max())}, "
                f"median {_signed(g.median())}")

    small, mid, large = (part(d[size < 200]), part(d[(size >= 200) & (size < 2000)]),
                         part(d[size >= 2000]))
    share = d / _scores(cells, "s2").abs().reindex(d.index)
    real, synthetic = share[size < 2000], share[size >= 2000]
    by_k = d.groupby(level="k")
    k_line = (f"At every k, {min(int((g > 0).sum()) for _, g in by_k)} of "
              f"{max(len(g) for _, g in by_k)} (the median {_signed(by_k.median()[2])} at "
              f"k = 2, {_signed(by_k.median()[8])} at k = 8)")
    both = pd.concat({"here": d, "ten": _s2_gaps(_cells(tenfold))}, axis=1).dropna()
    smallest = ", ".join(f"{ds} ({n[ds]:,}{' variables' if i == 0 else ''}, {_signed(g)}"
                         f"{' at least' if i == 0 else ''})"
                         for i, (ds, g) in enumerate(least.items()))
    return [f"the smallest per data set are {smallest}",
            f"a median of {ktrees[fewest]:,.0f} on {fewest} and {ktrees[fewest_real]:,.0f} on "
            f"{fewest_real} to {ktrees.max():,.0f} on {ktrees.idxmax()}, as many as or more "
            "than k-G_ENT's orders on every data set",
            f"n < 200 ({small[0]} experiments), {small[1]}",
            f"200 < n < 2,000 ({mid[0]}), {mid[1]}",
            f"r0–r14 ({large[0]}, 2,000 to 10,000 variables), {large[1]}",
            k_line,
            f"a median of {real.median():.1%} over the {_experiments(real)} real experiments' "
            f"cells (at most {real.max():.0%}",
            f"{100 * synthetic.min():.1f}–{synthetic.max():.1%} in every cell of r0–r14",
            f"the gap's median is {_signed(both.here.median())} here and "
            f"{_signed(both.ten.median())} at ÷ 100 (`{tenfold.name}`), smaller at ÷ 100 in "
            f"{int((both.ten < both.here).sum())} of {len(both)} cells"]


def test_s2_detail_of_the_reduced_comparison_recomputes():
    """The by-size, per-k, share, least-gap, draw-count and tenfold-budget figures of
    ``asobs-ent-2018-reduced-s2``'s
    COMPARISON.md, recounted from its records and ``asobs-ent-2018-hundredth``'s."""
    folder = RESULTS / "asobs-ent-2018-reduced-s2"
    _assert_in_comparison(folder.name, s2_detail(folder, RESULTS / "asobs-ent-2018-hundredth"))


def kmax_hundredth_cells() -> list[str]:
    """The ΔBIC = BIC(k-MAX) − BIC(k-G) cells of kmax-2018-hundredth's COMPARISON.md, per
    group of experiments (the 24 real ones of 200 < n < 2,000, the five network samples,
    r0-r4) and k: at ÷100 (this grid) and at ÷1,000 (kmax-2018-reduced, the same
    experiments); then the Table 3 row over all 34 and the tenfold budget's gain per cell."""
    ten, one = (_cells(RESULTS / f) for f in ("kmax-2018-hundredth", "kmax-2018-reduced"))
    d_ten = (_scores(ten, "kmax") - _scores(ten, "kg")).dropna()
    d_one = (_scores(one, "kmax") - _scores(one, "kg")).reindex(d_ten.index)
    assert d_one.notna().all()
    ds = d_ten.index.get_level_values("dataset")
    groups = {"real": ~ds.str.fullmatch(r"r\d+") & ~ds.str.endswith("-s5000"),
              "networks": ds.str.endswith("-s5000"), "synthetic": ds.str.fullmatch(r"r\d+")}

    def counts(d: pd.Series) -> tuple[int, int, str]:
        w, lost = int((d > 0).sum()), int((d < 0).sum())
        return w, lost, _p_value(binomial_two_sided_p(w, w + lost))

    def span(d: pd.Series) -> str:
        return f"{_signed(d.min())} to {_signed(d.max())}, median {_signed(d.median())}"

    out = []
    for name, sel in groups.items():
        for k in (2, 5, 8):
            at = sel & (d_ten.index.get_level_values("k") == k)
            a, b = d_ten[at], d_one[at]
            w, lost, p = counts(a)
            w1, lost1, p1 = counts(b)
            big = f"ΔBIC > 10 in {int((a > 10).sum())}; " if name == "real" else ""
            tail = f"; p = {p}" if name == "real" else ""
            out.append(f"| k = {k} | k-MAX {w}–{lost} ({big}{span(a)}{tail}) | {w1}–{lost1} "
                       f"({span(b)}{f'; p = {p1}' if lost1 else ''}) |")
    by_k = [(d_ten.xs(k, level="k"), d_one.xs(k, level="k")) for k in (2, 5, 8)]
    n = len(by_k[0][0])
    ps = {counts(a)[2] for a, _ in by_k}
    assert len(ps) == 1 and all(int((a > 10).sum()) == n for a, _ in by_k)
    out.append(f"ΔBIC > 10 for k-MAX in {n} of {n} at every k (sign test p = {ps.pop()} each) | "
               + ", ".join(str(int((b > 10).sum())) for _, b in by_k[:-1])
               + f" and {int((by_k[-1][1] > 10).sum())} of {n}")
    gain = pd.concat([_scores(ten, lab) - _scores(one, lab) for lab in ("kmax", "kg")]).dropna()
    out.append(f"{int((gain > 0).sum())} of {len(gain)} cells score above their ÷1,000 "
               f"counterpart (up to {_signed(gain.max())})")
    return out


def kmax_reduced_rows() -> list[str]:
    """The Table 3-4 rows of kmax-2018-reduced's COMPARISON.md, from its records: ΔBIC =
    BIC(k-MAX) − BIC(k-G) per experiment and k (wins, ΔBIC > 10, sign test), on r0-r9 and
    on r10-r14; the median iterations of each on 200 < n < 2,000."""
    c = _cells(RESULTS / "kmax-2018-reduced")
    d = (_scores(c, "kmax") - _scores(c, "kg")).dropna()
    ks = (2, 5, 8)
    per = {k: d.xs(k, level="k") for k in ks}
    n = len(per[2])
    assert all(len(x) == n for x in per.values())
    assert all(((x > 0) == (x > 10)).all() for x in per.values())  # no win of 10 or less
    ds = per[2].index.get_level_values("dataset")
    r09 = ds.isin([f"r{i}" for i in range(10)])
    r10 = ds.isin([f"r{i}" for i in range(10, 15)])
    assert all((per[k][r09] > 10).all() and (per[k][r10] > 10).all() for k in ks)
    low = pd.concat([per[k][r09] for k in ks])
    meds = [per[k][r09].median() for k in ks]
    big = pd.concat([per[k][r10] for k in ks])
    won = [int((per[k] > 10).sum()) for k in ks]
    lost = [int((per[k] < 0).sum()) for k in ks]
    ps = [_p_value(binomial_two_sided_p(w, w + lo)) for w, lo in zip(won, lost, strict=True)]
    it = _cells(RESULTS / "kmax-2018-reduced", "iterations", "n_vars")
    it = it[(it.n_vars > 200) & (it.n_vars < 2000)]
    med = it.groupby(["k", "label"]).iterations.median()
    tm = it[(it.dataset == "tmovie") & (it.split == "test") & (it.k == 5)].set_index("label")
    iters = (f"200 < n < 2,000 ({_experiments(it.set_index(['dataset', 'split', 'k']).iterations)} "
             "experiments), median iterations in 3.6 s: "
             + "; ".join(f"k = {k}: {med[k, 'kmax']:,.0f} vs {med[k, 'kg']:,.0f}" for k in ks)
             + f"; on tmovie.test at k = 5 {tm.iterations['kmax']:,} vs {tm.iterations['kg']:,}")
    return [iters,
            f"ΔBIC > 10 for k-MAX in {won[0]} (k = 2), {won[1]} (k = 5) and {won[2]} (k = 8) of "
            f"{n} (no win of 10 or less); on r0–r9 in {int(r09.sum())} of {int(r09.sum())} at every "
            f"k (ΔBIC ≥ {_signed(math.floor(low.min()))}; medians {_signed(min(meds))} to {_signed(max(meds))}); "
            f"on r10–r14 (10,000 variables) in {int(r10.sum())} of {int(r10.sum())} at every k "
            f"(ΔBIC {_signed(big.min())} to {_signed(big.max())})",
            f"{won[0]}–{lost[0]}, {won[1]}–{lost[1]}, {won[2]}–{lost[2]} at k = 2, 5, 8 (sign test "
            f"p = {ps[0]}, {ps[1]}, {ps[2]})"]


def test_kmax_reduced_comparison_recomputes():
    """kmax-2018-reduced's Table 3 rows and the index row's counts, recounted from its
    records."""
    rows = kmax_reduced_rows()
    _assert_in_comparison("kmax-2018-reduced", rows)
    won = [int(x) for x in re.findall(r"(\d+) \(k = \d\)", rows[1])]
    n = re.search(r"of (\d+) \(no win", rows[1])
    assert len(won) == 3 and n
    said = f"ΔBIC > 10 for k-MAX in {min(won)}–{max(won)} of {n[1]} at every k"
    assert said in _index_row("kmax-2018-reduced"), f"README.md's kmax row lacks: {said}"


def test_kmax_hundredth_comparison_recomputes():
    """kmax-2018-hundredth's COMPARISON.md tables, recounted from the records of both
    budgets."""
    _assert_in_comparison("kmax-2018-hundredth", kmax_hundredth_cells())


def twilp_lines() -> list[str]:
    """The counts of twilp-2014-reduced's COMPARISON.md (the shape of Table 1), from its
    records: the unbounded optimum against TWILP at k = 2 and 3 (wins at ΔBIC ≥ 2, ties
    below, sign test),
    k = 3 against k = 2, and the cells proven optimal."""
    c = _cells(RESULTS / "twilp-2014-reduced", "status")
    free = c[c.label == "unbounded"].set_index("dataset").best_score
    tw = {k: c[(c.label == "twilp") & (c.k == k)].set_index("dataset").best_score for k in (2, 3)}
    cmp = {k: (free - tw[k]).dropna() for k in (2, 3)}
    n = len(free)
    assert all(len(d) == n and (d > -1e-6).all() for d in cmp.values())
    tests = {k: sign_test(d) for k, d in cmp.items()}  # the ΔBIC tables' tie: |Δ| < 2
    wins = {k: t.wins_a for k, t in tests.items()}
    ps = {k: t.p_value for k, t in tests.items()}
    above = int((tw[3] - tw[2] >= -1e-6).sum())
    proven = c.status == "optimal"
    return [f"unbounded ≥ TWILP on {n}/{n} at k = 2 and k = 3 (ΔBIC table: {wins[2]} and "
            f"{wins[3]} wins, {n - wins[2]} and {n - wins[3]} ties; sign test p = {ps[2]:.2g} / "
            f"{ps[3]:.2g})",
            f"k = 3 ≥ k = 2 on {above}/{n} here",
            f"{int(proven[c.label == 'twilp'].sum())} of {int((c.label == 'twilp').sum())} "
            f"TWILP cells proven optimal in 43 s (the unbounded ILP: "
            f"{int(proven[c.label == 'unbounded'].sum())} of {n})"]


def test_twilp_comparison_recomputes():
    """twilp-2014-reduced's COMPARISON.md counts, recounted from its records."""
    _assert_in_comparison("twilp-2014-reduced", twilp_lines())


def pops_lines() -> list[str]:
    """The counts of pops-2014-reduced's COMPARISON.md (Yuan & Malone's POPS constraints),
    from its records and failures: the runs proven optimal per solver and constraint, A*,R
    against A* in seconds, A*,R against A*,O and A* against AWA* in nodes expanded."""
    recs = load_records(RESULTS / "pops-2014-reduced" / "records.parquet")
    c = recs.frame().set_index(["label", "dataset"])
    solved = (c.status == "optimal").groupby(level="label").sum()
    failed = sorted(str(f.dataset).removesuffix("1000") for f in recs.failures
                    if f.label == "astar")

    def gap(label: str) -> str:
        x = c.loc[label]
        x = x[x.status != "optimal"]
        assert len(x) == 1
        g = float((x.bound - x.best_score).abs().iloc[0] / x.best_score.abs().iloc[0])
        return f"{x.index[0]}: gap {np.format_float_positional(float(f'{g:.1g}'), trim='-')}"

    def per(label: str, col: str) -> pd.Series:
        x = c.loc[label]
        return x[x.status == "optimal"][col]

    sec_r, sec = per("astar-pops-r", "elapsed"), per("astar", "elapsed")
    # A* without constraints failed where it found no network; A*,R solved those
    assert len(sec_r) == len(c.loc["astar-pops-r"]) and len(sec) + len(failed) == len(sec_r)
    faster = int((sec_r < sec.reindex(sec_r.index)).sum()) + len(failed)
    nodes_r, nodes_o = per("astar-pops-r", "iterations"), per("astar-pops", "iterations")
    both = nodes_r.index.intersection(nodes_o.index)
    a_star, awa = per("astar", "iterations"), per("awastar", "iterations")
    common = a_star.index.intersection(awa.index)
    return [f"| A* | {solved['astar']} ({len(failed)} found no network: {', '.join(failed)}) | "
            f"{solved['astar-pops']} | {solved['astar-pops-r']} |",
            f"| AWA* | {solved['awastar']} | — | {solved['awastar-pops-r']} "
            f"({gap('awastar-pops-r')}) |",
            f"| BFBnB | {solved['bfbnb']} | — | {solved['bfbnb-pops-r']} ({gap('bfbnb-pops-r')}) |",
            f"A*,R faster than A* on {faster} of {len(sec_r)}, {len(failed)} of them "
            "out-of-budget runs turned into solved ones",
            f"A*,R ≤ A*,O on {int((nodes_r[both] <= nodes_o[both]).sum())}/{len(both)} "
            f"(strictly fewer on {int((nodes_r[both] < nodes_o[both]).sum())})",
            f"on the {len(common)} sets both solve: fewer or equal on "
            f"{int((a_star[common] <= awa[common]).sum())}/{len(common)}"]


def pops_top_p_lines() -> list[str]:
    """The Figure 4 figures of pops-2014-top-p-reduced's COMPARISON.md (Fan, Malone & Yuan's
    top-p POPS constraint, one AWA* run per p), from its records: the runs proven optimal
    and their seconds, ε = score / bound at the p the text names, the largest subproblem
    per run of p, the parent sets kept, and the best score of the sweep."""
    from bnsl_dist.reporting.exact import top_p_frame

    recs = load_records(RESULTS / "pops-2014-top-p-reduced" / "records.parquet").frame()
    f = top_p_frame(recs).set_index("p")
    solved = f["proved optimal"].astype(bool)
    first_open = int(solved.idxmin())
    before = f.loc[: first_open - 1]
    assert before["proved optimal"].all() and not solved.all()
    open_ps = [int(x) for x in f.index[~solved]]
    later = [int(x) for x in f.index[solved & (f.index > first_open)]]
    budget = float(recs.budget_seconds.iloc[0])
    assert all(f.seconds[q] >= budget for q in open_ps)

    def runs(col: str) -> str:
        out, start = [], f.index[0]
        for q in f.index:
            if q == f.index[-1] or f[col][q + 1] != f[col][q]:
                out.append(f"{f[col][q]} (p = {start}{f'–{q}' if q != start else ''})")
                if q != f.index[-1]:
                    start = q + 1
        return ", ".join(out)

    eps = f.epsilon
    below = int(eps.index[eps < 1.01][0])
    best = f.score.max()
    at = int(f.index[f.score == best][0])
    total = int(recs.n_parent_sets.iloc[0])
    ceiling = math.ceil(before.seconds.max() * 100) / 100  # an upper bound rounds up
    return [f"solved (proof of optimality under the constraint) in ≤ {ceiling:.2f} s "
            f"for p ≤ {first_open - 1}; p = {' and '.join(map(str, open_ps))} hit the "
            f"{budget:.0f} s budget unsolved; p = {', '.join(map(str, later))} solved in "
            + ", ".join(f"{f.seconds[q]:.1f} s" for q in later),
            f"ε = {eps[1]:.3f} (p = 1) → {eps[3]:.3f} (p = 3) → {eps[7]:.4f} (p = 7) → "
            f"{eps[9]:.4f} (p = 9) → {eps[13]:.3f} (p = 13): below 1% from p = {below}",
            runs("largest subproblem"),
            f"{f['sets kept'][1]} (p = 1) … {f['sets kept'][10]} (p = 10) … {f['sets kept'][13]} "
            f"(p = 13) of {total}",
            f"p = {at} already reaches the best score of the sweep ({_num(best, ',.1f')}), proven "
            f"within ε = {eps[at]:.3f}"]


def test_pops_top_p_comparison_recomputes():
    """pops-2014-top-p-reduced's Figure 4 figures, recounted from its records."""
    _assert_in_comparison("pops-2014-top-p-reduced", pops_top_p_lines())


def test_pops_comparison_recomputes():
    """pops-2014-reduced's COMPARISON.md counts, recounted from its records."""
    _assert_in_comparison("pops-2014-reduced", pops_lines())


def qds_lines() -> dict[str, list[str]]:
    """Rahier et al.'s Table 1 figures of the two qds COMPARISON.md files (÷100 and ÷10),
    from the records through the screening table's means over the seeds: total seconds,
    BDeu per row, arcs of sota and qds(ε_0.5), and the loss of score."""
    from bnsl_dist.reporting.screening import screening_frame

    t = {}
    for folder in ("qds-2018-reduced", "qds-2018-tenth"):
        recs = load_records(RESULTS / folder / "records.parquet").frame()
        rows = recs.drop_duplicates("label").set_index("label").n_samples
        f = screening_frame(recs).set_index("label").loc[["sota", "qds-x0.5"]]
        t[folder] = (f, int(rows["sota"]))

    def per_row(folder: str, label: str) -> float:
        f, n = t[folder]
        return float(f.loc[label, "score mean"]) / n

    def loss(folder: str) -> str:
        f, n = t[folder]
        d = float(f.loc["qds-x0.5", "score mean"] - f.loc["sota", "score mean"])
        return f"{_num(d / n, '.3f')} nats per row (ΔBIC {_signed(d)}"

    (one, _), (ten, _) = t["qds-2018-reduced"], t["qds-2018-tenth"]
    s1, q1 = one["total s"]
    s10, q10 = ten["total s"]
    gain = per_row("qds-2018-tenth", "sota") - per_row("qds-2018-reduced", "sota")
    bdeu = [_num(per_row(f, lab), ".3f") for f in t for lab in ("sota", "qds-x0.5")]
    a1, a10 = one["arcs"].round().astype(int).tolist(), ten["arcs"].round().astype(int).tolist()
    reduced = [f"| time (s) | 252 | 36 (7.0× faster) | {s1:.2f} | {q1:.2f} ({s1 / q1:.1f}× faster) |",
               f"| BDeu per row | −6.2 | −6.5 | {bdeu[0]} | {bdeu[1]} |",
               f"| arcs | 102 | 37 | {a1[0]} | {a1[1]} |",
               loss("qds-2018-reduced")]
    tenth = [f"| time (s) | 252 | 36 (7.0× faster) | {s1:.2f} | {q1:.2f} ({s1 / q1:.1f}×) | "
             f"{s10:.1f} | {q10:.2f} ({s10 / q10:.0f}×) |",
             f"| BDeu per row | −6.2 | −6.5 | {bdeu[0]} | {bdeu[1]} | {bdeu[2]} | {bdeu[3]} |",
             f"| arcs | 102 | 37 | {a1[0]} | {a1[1]} | {a10[0]} | {a10[1]} |",
             loss("qds-2018-tenth"),
             f"the loss grows (÷100: {loss('qds-2018-reduced').split(' nats')[0]}) because sota "
             f"gains {gain:.2f} per row from the larger cache"]
    return {"qds-2018-reduced": reduced, "qds-2018-tenth": tenth}


def test_qds_comparisons_recompute():
    """Table 1's figures in the two qds COMPARISON.md files, recounted from the records."""
    for folder, lines in qds_lines().items():
        _assert_in_comparison(folder, lines)


def inference_rows() -> list[str]:
    """The table of inference-2018-reduced's COMPARISON.md (the ASOBS-ENT paper's §6.3,
    Table 5 and Figs. 5-7), from its records: on the 20 real experiments, ms per P(e) query
    of ASOBS-ENT's unbounded networks and of k-G_ENT's per k, and k-G_ENT's mae of P(e); on
    r0-r14, ms per marginal and k-G_ENT's relative mae of the marginals."""
    from bnsl_dist.reporting.inference import inference_frame

    c = inference_frame(load_records(RESULTS / "inference-2018-reduced" / "records.parquet")
                        .frame())
    synthetic = c.dataset.str.fullmatch(r"r\d+")
    real, syn = c[~synthetic], c[synthetic]

    def two_digits(x: float) -> str:  # a ratio to two significant digits
        return f"{float(f'{x:.2g}'):,.0f}"

    def side(cells: pd.DataFrame, col: str, digits: str) -> tuple[pd.Series, pd.Series, str]:
        free = cells[cells.label == "asobs-ent"]
        kg = cells[cells.label == "kg-ent"].groupby("k")[col].mean()
        fast = free[col].mean() / kg
        return free, kg, (" / ".join(f"{x:{digits}}" for x in kg) + " at k = 2 / 4 / 6 / 8 — "
                          f"{two_digits(fast.min())}× to {two_digits(fast.max())}× faster")

    free, _, kg = side(real, "ms_pe", ".3f")
    n, exact = len(free), int(free.exact.sum())
    mae = real[real.label == "kg-ent"].groupby("k").mae_pe.mean()
    free2, _, kg2 = side(syn, "ms_marginal", ".3f")
    rel = syn[syn.label == "kg-ent"].groupby("k").relative_mae_marginals.agg(["median", "min", "max"])
    assert rel["median"].round(3).nunique() == 1 and not free2.exact.any()
    return [f"mean ms per P(e) query {free.ms_pe.mean():.1f} (median {free.ms_pe.median():.1f}; "
            f"exact on {exact} of {n}, widths {free.width.min():.0f}–{free.width.max():.0f}; "
            f"likelihood weighting on the other {n - exact}), k-G_ENT {kg} on average",
            "rerun: mean mae " + " / ".join(f"{x:.5f}" for x in mae) + " at k = 2 / 4 / 6 / 8",
            f"rerun: mean ms per marginal, ASOBS-ENT {free2.ms_marginal.mean():.2f} (median "
            f"{free2.ms_marginal.median():.2f}; exact on none of the {len(free2)}, each by "
            f"likelihood weighting), k-G_ENT {kg2}",
            f"rerun: median {rel['median'].iloc[0]:.3f} at every k (range {rel['min'].min():.2f}–"
            f"{rel['max'].max():.2f})"]


def test_inference_comparison_recomputes():
    """inference-2018-reduced's table, recounted from its records."""
    _assert_in_comparison("inference-2018-reduced", inference_rows())


def kmax_inference_summary(records: Path) -> list[str]:
    """The figures of kmax-inference-2018-reduced's COMPARISON.md (k-MAX's Figs. 4-5),
    counted here from the records: per data set with all three k and the true network's
    answers, the mae of P(e), the ms per query and the learned width of each k, and the
    true network's ms per query."""
    from bnsl_dist.reporting.inference import TRUE_NETWORK, inference_frame

    cells = inference_frame(load_records(records).frame())
    learned = cells[cells.label != TRUE_NETWORK]
    mae = cells.pivot_table(index="dataset", columns="k", values="mae_pe")
    ms = learned.pivot_table(index="dataset", columns="k", values="ms_pe")
    width = learned.pivot_table(index="dataset", columns="k", values="width")
    truth = cells[cells.label == TRUE_NETWORK].set_index("dataset")
    done = sorted(set(mae.dropna().index) & set(truth.index))
    mae, ms, width, truth = mae.loc[done], ms.loc[done], width.loc[done], truth.loc[done]
    n = len(done)

    def below(a: pd.Series, b: pd.Series) -> str:
        w, lose = int((a < b).sum()), int((a > b).sum())
        return f"{w} of {n} (p = {binomial_two_sided_p(w, w + lose):.2g})"

    spread = (mae.max(axis=1) / mae.min(axis=1)).max()
    ratio = truth["ms_pe"] / ms[8]
    wider = width[8] > width[5]
    return [f"{n} data sets",
            f"| mae, k = 8 below k = 2 | {below(mae[8], mae[2])} |",
            f"| mae, k = 5 below k = 2 | {below(mae[5], mae[2])} |",
            f"| a data set's largest mae over its smallest (across k), at most | "
            f"{spread:.2f} |",
            f"| time per query, k = 5 above k = 2 | {below(ms[2], ms[5])} |",
            f"| time per query, k = 8 above k = 5 | {below(ms[5], ms[8])} |",
            f"| time per query, k = 8 above k = 2 | {below(ms[2], ms[8])} |",
            f"| the slowest k-MAX model's time per query | {ms.max().max():.2g} ms |",
            f"| time per query, k = 8 above k = 5 where k = 8's model is wider | "
            f"{int((ms[8] > ms[5])[wider].sum())} of {int(wider.sum())} |",
            f"| k-MAX's width at k = 5, mean | {width[5].mean():.1f} |",
            f"| k-MAX's width at k = 8, mean | {width[8].mean():.1f} |",
            f"| the true network's time per query over k = 8's | {ratio.min():,.0f}× to "
            f"{ratio.max():,.0f}× (median {ratio.median():,.0f}×) |",
            f"| the true network answered exactly | {int(truth['exact'].sum())} of {n} |"]


def test_kmax_inference_comparison_recomputes():
    """Every figure of the Figs. 4-5 table of kmax-inference-2018-reduced's COMPARISON.md
    and its data-set count (there and in the index) equal those counted from its
    committed records (:func:`kmax_inference_summary`)."""
    folder = RESULTS / "kmax-inference-2018-reduced"
    text = (folder / "COMPARISON.md").read_text(encoding="utf-8")
    index = (RESULTS / "README.md").read_text(encoding="utf-8")
    head, *rows = kmax_inference_summary(folder / "records.parquet")
    assert f"on {head}" in text and f"on {head}" in index
    for row in rows:
        assert row in text, f"{folder / 'COMPARISON.md'}: no row {row!r}"


def _mrf_runs(folder: Path) -> pd.DataFrame:
    """The mRF runs paired with the SEM records (``mrf.json``), with each run's ratios of
    SEM-kMAX's MPE accuracy and wall time to mRF's (the summaries are recounted from them,
    not read from the file's own)."""
    runs = pd.DataFrame(json.loads((folder / "mrf.json").read_text(encoding="utf-8"))["runs"])
    runs["ratio"] = runs.sem_accuracy_mpe / runs.accuracy
    runs["time_ratio"] = runs.sem_wall_seconds / runs.wall_seconds
    return runs


def sem_summary(folder: Path) -> list[str]:
    """The figures of the SEM grid's COMPARISON.md table (Figs. 6-10 of Scanagatta et al.
    2018, §7), from its records and the mRF runs paired with them (``mrf.json``): the
    accuracy and time ratios against mRF, the fall with the missing rate, the spread over
    runs, the EM iterations, marginal argmax against MPE at ×1, and the wide data sets
    against the mode (the budget study's figures: :func:`sem_budget_lines`)."""
    from bnsl_dist.reporting.imputation import imputation_frame

    runs = _mrf_runs(folder)
    rates = runs.groupby("missing_rate")[["ratio", "time_ratio"]].mean()
    per_ds = runs.groupby("dataset").ratio.mean()
    time_ratio = runs.time_ratio
    frame = load_records(folder / "records.parquet").frame()
    cells = imputation_frame(frame)
    x1 = cells[cells.budget_scale == 1.0]
    assert len(runs) == len(x1) and set(runs.key) <= set(frame.key)
    lines = [
        "accuracy ratio SEM-kMAX (MPE) / mRF per missing rate over the 18 data sets: "
        + ", ".join(f"{r:.4f} ({m:.0%})" for m, r in rates.ratio.items())
        + f"; per data set {per_ds.min():.3f} ({per_ds.idxmin()}) to {per_ds.max():.3f} "
        f"({per_ds.idxmax()}); SEM higher in {int((runs.ratio > 1).sum())} of {len(runs)} runs, "
        f"mRF in {int((runs.ratio < 1).sum())}",
        f"SEM/mRF wall-time ratio {rates.time_ratio.min():.1f}–{rates.time_ratio.max():.1f} per "
        f"missing rate (per run {time_ratio.min():.1f}–{time_ratio.max():.0f})"]

    by = x1.groupby(["dataset", "missing_rate"])
    mpe = by.accuracy_mpe.mean().unstack()
    fall = (mpe[0.2] - mpe[0.01]).sort_values()
    drops, rises = fall[fall < 0], fall[fall > 0]
    lines.append(f"from 1% to 20% missing: {_num(drops.iloc[-1], '+.4f')} ({drops.index[-1]}) to "
                 f"{_num(drops.iloc[1], '.3f')} ({drops.index[1]}) and "
                 f"{_num(drops.iloc[0], '.3f')} ({drops.index[0]})"
                 + "".join(f", on {d} {_num(v, '+.4f')}" for d, v in rises.items()))
    lines.append(f"falls on {len(drops)} of {len(fall)}")
    sd = by.accuracy.std()
    lines.append(f"the sd over 5 runs is {sd.min():.5f}–{sd.max():.4f}")
    iters = by.em_iterations.mean()
    assert x1.converged.all() and x1.em_iterations.max() < 10
    lines.append(f"every one of the {len(x1)} runs stopped by its convergence rules (fixed "
                 f"point, oscillation or no improvement) in {iters.min():.1f}–{iters.max():.1f} "
                 "EM iterations on average, none at the 10-iteration cap")
    gap = (by.accuracy.mean() - by.accuracy_mpe.mean()).round(4)
    lines.append(f"marginal argmax − MPE, paired per run: {_num(gap.min(), '+.4f')} to "
                 f"{_num(gap.max(), '+.4f')} ({int((gap > 0).sum())} of {len(gap)} rows higher, "
                 f"{int((gap < 0).sum())} lower, {int((gap == 0).sum())} equal to 4 digits")

    # the wide data sets at ×1, per missing rate: SEM's MPE, the mode's, their gap, mRF's
    wide_sets = []
    for i, ds in enumerate(["ad", "bbc", "c20ng", "cr52", "cwebkb", "book"]):
        g = x1[x1.dataset == ds].groupby("missing_rate")[["accuracy_mpe", "accuracy_mode"]].mean()
        forest = runs[runs.dataset == ds].groupby("missing_rate").accuracy.mean()
        gain = g.accuracy_mpe - g.accuracy_mode

        def span(x: pd.Series) -> str:
            return f"{x.min():.4f}–{x.max():.4f}"

        gains = f"{_num(gain.min(), '+.4f')} to {_num(gain.max(), '+.4f')}"
        if gain.max() < 0:
            assert forest.max() < g.accuracy_mpe.min()
            wide_sets.append(f"{ds}: **below the mode** ({span(g.accuracy_mpe)} against "
                             f"{span(g.accuracy_mode)}, {gains}), and mRF further below "
                             f"({span(forest)})")
            continue
        first = i == 0
        mode = "the mode's " if first else ""
        line = (f"{ds}: {'SEM-kMAX (MPE) ' if first else ''}{span(g.accuracy_mpe)} against "
                f"{mode}{span(g.accuracy_mode)} ({gains}"
                f"{' per rate' if first else ''}), mRF {span(forest)}")
        if first:
            r = runs[runs.dataset == ds]
            line += (f", below SEM-kMAX in {int((r.accuracy < r.sem_accuracy_mpe).sum())} of "
                     f"{len(r)} runs")
        wide_sets.append(line)
    lines.append("; ".join(wide_sets))

    return lines


def sem_budget_lines(folder: Path) -> list[str]:
    """The budget study's figures in the SEM grid's COMPARISON.md (§7.4, Figs. 9-10), from
    its records: seconds per run at each budget scale, their ratios, and the sign tests
    of the MPE accuracy from one scale to the next."""
    from bnsl_dist.reporting.imputation import imputation_frame

    cells = imputation_frame(load_records(folder / "records.parquet").frame())
    lines = []
    # seconds per run, the mean per missing rate: its range over the rates at ×1 on the
    # data sets under 294 variables, per scale on the others
    secs = cells.groupby(["dataset", "budget_scale", "missing_rate"]).seconds.mean()
    nv = cells.groupby("dataset").n_vars.first().sort_values(kind="stable")
    small = secs.xs(1.0, level="budget_scale")[list(nv.index[nv < 294])]
    per_scale = []
    for ds in nv.index[nv >= 294]:
        x = secs.xs(ds, level="dataset")
        per_scale.append(f"{ds} " + " / ".join(
            f"{x.xs(b).min():,.0f}–{x.xs(b).max():,.0f}" for b in (0.5, 1.0, 2.0)))
    lines.append(f"Seconds per run, the mean per missing rate ({small.min():.1f}–{small.max():.1f} s "
                 f"at ×1 on the {int((nv < 294).sum())} data sets under 294 variables; at ×0.5 / "
                 "×1 / ×2 on the others: " + "; ".join(per_scale))

    # the budget study (Figs. 9-10): every data set at the three scales
    assert cells.groupby("dataset").budget_scale.nunique().eq(3).all()
    mean = cells.groupby("budget_scale").seconds.mean()
    sec = cells.groupby(["dataset", "budget_scale"]).seconds.mean().unstack()
    half, double = sec[0.5] / sec[1.0], sec[2.0] / sec[1.0]
    size = cells.groupby("dataset")[["n_vars", "n_samples"]].first()
    top = half.idxmax()
    assert (size.n_vars * size.n_samples).idxmax() == top and size.n_vars.idxmax() == "ad"
    others = half.drop(top)
    lines.append(
        f"mean seconds per run {mean[0.5]:.1f} / {mean[1.0]:.1f} / {mean[2.0]:.1f} "
        f"(×{mean[0.5] / mean[1.0]:.2f} and ×{mean[2.0] / mean[1.0]:.2f} of ×1); the ratio "
        f"×0.5/×1 is highest on {top} ({half[top]:.2f}; {size.n_samples[top]:,} rows, the "
        f"largest n·N here), {others.min():.2f}–{others.max():.2f} on the other seventeen; on "
        f"ad, the most variables ({size.n_vars['ad']:,}) but {size.n_samples['ad']:,} rows, "
        f"{half['ad']:.2f} and {double['ad']:.2f}")

    large = size.index[size.n_vars >= 294].sort_values(key=lambda i: size.n_vars[i])
    lines.append(f"×0.5 takes {mean[0.5] / mean[1.0]:.2f} of ×1's time and ×2 "
                 f"{mean[2.0] / mean[1.0]:.2f} of it (per data set of 294 variables or more: "
                 + "; ".join(f"{ds} {half[ds]:.2f} and {double[ds]:.2f}" for ds in large))

    wide = cells.pivot_table(index=["dataset", "missing_rate", "seed"], columns="budget_scale",
                             values="accuracy_mpe", aggfunc="first")

    def sign(a: float, b: float, rows: pd.DataFrame) -> tuple[float, int, int, str]:
        g = rows[b] - rows[a]
        up, down = int((g > 0).sum()), int((g < 0).sum())
        return g.mean(), up, down, _p_value(binomial_two_sided_p(up, up + down))

    g1, u1, d1, p1 = sign(0.5, 1.0, wide)
    g2, u2, d2, p2 = sign(1.0, 2.0, wide)
    _, u3, d3, p3 = sign(1.0, 2.0, wide.drop(index="ad", level="dataset"))
    _, u4, d4, p4 = sign(1.0, 2.0, wide.xs("ad", level="dataset", drop_level=False))
    lines.append(
        f"×0.5 → ×1: mean MPE-accuracy gain {_num(g1, '+.4f')}, {u1} of {u1 + d1} untied "
        f"repetitions up, {d1} down, sign test p = {p1}; ×1 → ×2: {_num(g2, '+.4f')}, {u2} up, "
        f"{d2} down, p = {p2} (without ad {u3} against {d3}, p = {p3}; ad alone {u4} against "
        f"{d4}, p = {p4})")
    return lines


def sem_fig10_lines(folder: Path) -> list[str]:
    """The sentences of the SEM COMPARISON's Fig. 10 paragraph, from the records: the MPE
    accuracy of each repetition (data set, missing rate, seed) at ×0.5 against ×1 and ×1
    against ×2, counted up/down (ties dropped) with the two-sided sign test, over all data
    sets, without ad, per data set where p < 0.05, over those of 500 variables or more."""
    from bnsl_dist.reporting.imputation import imputation_frame

    cells = imputation_frame(load_records(folder / "records.parquet").frame())
    wide = cells.pivot_table(index=["dataset", "missing_rate", "seed"], columns="budget_scale",
                             values="accuracy_mpe", aggfunc="first")
    n_vars = cells.groupby("dataset").n_vars.first()

    def counts(rows: pd.DataFrame, a: float, b: float) -> tuple[int, int, float]:
        g = rows[b] - rows[a]
        up, down = int((g > 0).sum()), int((g < 0).sum())
        return up, down, binomial_two_sided_p(up, up + down)

    def said(c: tuple[int, int, float]) -> str:
        return f"{c[0]} against {c[1]} (p = {_p_value(c[2])})"

    lines = []
    for a, b in ((0.5, 1.0), (1.0, 2.0)):
        means = (wide[b] - wide[a]).groupby(level="dataset").mean()
        assert means.abs().max() < 0.001  # "every data set's mean gain is below 0.001"
        sig = {ds: counts(wide.xs(ds, level="dataset"), a, b) for ds in n_vars.index}
        sig = {ds: c for ds, c in sig.items() if c[2] < 0.05}
        up = [f"{ds} {said(c)}" for ds, c in sorted(sig.items()) if c[0] > c[1]]
        down = [f"{ds} {said(c)}" for ds, c in sorted(sig.items()) if c[0] < c[1]]
        wide_sets = wide[wide.index.get_level_values("dataset").isin(n_vars.index[n_vars >= 500])]
        lines += [f"×{a:g} → ×{b:g}: over all {len(n_vars)} data sets, {said(counts(wide, a, b))}",
                  f"without ad, {said(counts(wide.drop(index='ad', level='dataset'), a, b))}",
                  f"significant at 5% up on {', '.join(up) or 'none'}; down on "
                  f"{', '.join(down) or 'none'}",
                  f"the {int((n_vars >= 500).sum())} of 500 variables or more, "
                  f"{said(counts(wide_sets, a, b))}"]
    return lines


def sem_tuning_rows(folder: Path) -> list[str]:
    """The rows of the SEM COMPARISON's budget table (Figs. 9-10), from the tuning table
    that ``bnsl-dist tables`` writes (``__sem_tuning.csv``, itself regenerated from the
    records by tests/test_committed_results.py): per data set n, N, the mean seconds and
    MPE accuracy at each scale, each step's gain with its ups/downs and sign-test p."""
    table = pd.read_csv(folder / f"{folder.name}__sem_tuning.csv", dtype=str,
                        keep_default_na=False)

    def num(v: str) -> str:
        return f"{float(v):,.1f}" if "." in v else f"{int(v):,}" if v else ""

    def p(v: str) -> str:
        return _p_value(float(v)) if "e" in v else v

    rows = []
    for r in table.to_dict("records"):
        steps = [f"{_num(float(r[f'gain {s}']), '+.4f')} ({r[f'up/down {s}']}, "
                 f"{p(r[f'p {s}'])})" for s in ("×0.5→×1", "×1→×2")]
        rows.append(" ".join(("| " + " | ".join(
            [r["data set"], num(r["n"]), num(r["N"])]
            + [num(r[f"seconds ×{x}"]) for x in ("0.5", "1", "2")]
            + [r[f"MPE ×{x}"] for x in ("0.5", "1", "2")] + steps) + " |").split()))
    return rows


def sem_mrf_lines(folder: Path) -> list[str]:
    """The figures of the SEM COMPARISON's mRF paragraphs (Figs. 6-8), from the mRF runs
    paired with the records (``mrf.json``): the wall-time ratio per missing rate and per
    data set (summed over its runs); per run the ratio of SEM-kMAX's MPE accuracy to
    mRF's, per data set its mean and the runs SEM-kMAX is ahead in."""
    runs = _mrf_runs(folder)
    per = runs.groupby("dataset").ratio.agg(["mean", "size", lambda r: int((r > 1).sum())])
    per.columns = ["mean", "runs", "ahead"]
    per = per.sort_values("mean", ascending=False)
    sem, forest = per[per["mean"] > 1], per[per["mean"] < 1]
    low = runs.groupby(["dataset", "missing_rate"]).ratio.mean().nsmallest(2)
    close = forest.index[forest["mean"] > 0.999]
    sums = runs.groupby("dataset")[["sem_wall_seconds", "wall_seconds"]].sum()
    times = (sums.sem_wall_seconds / sums.wall_seconds).sort_values()
    rates = runs.groupby("missing_rate").time_ratio.mean()
    return [f"here SEM-kMAX took {rates.min():.1f}–{rates.max():.1f}× mRF's wall time (summed "
            "over a data set's runs: " + ", ".join(f"{t:.1f}× on {ds}" for ds, t in times.items()),
            f"The per-run ratio SEM-kMAX/mRF is {runs.ratio.min():.3f}–{runs.ratio.max():.3f}",
            "Per data set, the mean ratio (SEM-kMAX ahead in how many runs): "
            + "; ".join(f"{ds} {r['mean']:.4f} ({int(r.ahead)} of {int(r.runs)})" for ds, r in per.iterrows()),
            f"SEM-kMAX is ahead on average on {len(sem)} of {len(per)} data sets, by at most "
            f"{sem['mean'].iloc[1] - 1:.1%} but on {sem.index[0]} ({sem['mean'].iloc[0] - 1:.1%}); "
            f"mRF on {len(forest)}, within 0.1% on {', '.join(close[:-1])} and {close[-1]}, most on "
            + " and ".join(f"{ds} at {m:.0%} missing ({r:.3f})" for (ds, m), r in low.items())]


def test_sem_comparison_recomputes():
    """The table of the SEM grid's COMPARISON.md (Figs. 6-10) and its Fig. 10 paragraph,
    recounted from the committed records and mrf.json."""
    folder = RESULTS / "sem-imputation-2018-reduced"
    fig10 = sem_fig10_lines(folder)
    _assert_in_comparison(folder.name, sem_summary(folder) + sem_budget_lines(folder) + fig10
                          + sem_mrf_lines(folder) + sem_tuning_rows(folder))
    row = _index_row(folder.name)
    p_half = fig10[0].rsplit("(p = ", 1)[1].rstrip(")")
    assert f"in direction only (p = {p_half})" in row, "README.md's SEM row: Fig. 10's p"


def sem_rerun_line() -> str:
    """The rerun of the cells the clique underflow leaves open (workflows/sem_rerun.py):
    how many are stored, where they ran, and their completions' accuracy against the
    records run before c06cf61 (workflows/sem_underflow.py's ``pre_fix_records``)."""
    from workflows.sem_rerun import RERUN, open_keys, rerun_records
    from workflows.sem_underflow import pre_fix_records

    new = rerun_records().frame().set_index("key")
    old = pre_fix_records().set_index("key").loc[new.index]
    per = new["dataset"].value_counts()
    sets = ", ".join(f"{ds} {per[ds]}" for ds in sorted(per.index))
    commits = sorted({c[:7] for c in new["commit"]})
    cores = sorted({int(c) for c in new["cpus"]})
    parts = []
    for what, field in (("marginal-argmax accuracy", "imputation_accuracy"),
                        ("MPE", "imputation_accuracy_mpe")):
        d = np.array([n[field] - o[field] for n, o in zip(new["sem"], old["sem"],
                                                          strict=True)])
        parts.append(f"{what} {_num(d.min(), '+.5f')} to {_num(d.max(), '+.5f')} (mean "
                     f"{_num(d.mean(), '+.6f')}; "
                     f"{int((d > 0).sum())} up, {int((d < 0).sum())} down)")
    stored = (f"Stored: {len(new)} of the {len(open_keys())}" if RERUN.is_file() else
              f"Landed in records.parquet: all {len(new)}")
    return (f"{stored} cells ({sets}), run at "
            f"{', '.join(commits)} (clean) on {' and '.join(map(str, cores))}-core "
            f"machines, one worker per core; new − old: {parts[0]}, {parts[1]}.")


def test_the_sem_reruns_stored_are_stated():
    line = sem_rerun_line()
    _assert_in_comparison("sem-imputation-2018-reduced", [line])
    said = (f"rerun after the fix: {line.split(' of the ', 1)[0].removeprefix('Stored: ')} "
            "of 91 stored" if line.startswith("Stored: ") else "all 91 rerun after the fix")
    assert said in _index_row("sem-imputation-2018-reduced"), \
        "README.md's SEM row: the reruns stored"
