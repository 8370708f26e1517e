"""The papers' tables from stored results: ΔBIC in Raftery categories and sign tests.

ΔBIC = BIC(A) − BIC(B) on the same data and cache (docs/ALGORITHMS.md §10). Categories
(Raftery 1995, as used by Scanagatta et al. 2018): ΔBIC > 10 extremely positive,
6 < ΔBIC ≤ 10 strongly positive, 2 ≤ ΔBIC ≤ 6 positive, |ΔBIC| < 2 neutral, and the
mirrored negatives. A boundary value goes to the weaker category, except ±2, which
counts as (negative) positive evidence so that the categories agree with the sign test:
A wins when ΔBIC ≥ 2, B wins when ΔBIC ≤ −2, the rest are ties and are dropped; the
two-sided binomial p-value (exact) is significant at p < 0.01.

Tables are split by size — n ≤ 200, 200 < n < 2000, n ≥ 2000 variables — and/or by
treewidth, as Tables 2–4 of Scanagatta et al. (Machine Learning 2018) and Table 3 of
Scanagatta et al. (IJAR 2018).

References
----------
A. E. Raftery, "Bayesian model selection in social research", Sociological Methodology
25, 1995, §4.3. M. Scanagatta, G. Corani, C. P. de Campos, M. Zaffalon, "Approximate
structure learning for large Bayesian networks", Machine Learning 107, 2018, §4.3
(Table 2), §5.3 (Tables 3, 4). M. Scanagatta, G. Corani, M. Zaffalon, J. Yoo, U. Kang,
"Efficient learning of bounded-treewidth Bayesian networks from complete and
incomplete data sets", IJAR 95, 2018, §4 (Table 3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd

from bnsl_dist._io import atomic_write_text
from bnsl_dist.reporting.text import write_text_table
from bnsl_dist.results.records import CellFailure

__all__ = [
    "CATEGORIES",
    "SIZE_CLASSES",
    "Comparison",
    "SignTest",
    "DeltaTable",
    "raftery_category",
    "size_class",
    "binomial_two_sided_p",
    "sign_test",
    "experiment_scores",
    "paired_deltas",
    "delta_table",
    "default_comparisons",
    "write_tables",
    "failures_table",
    "write_failures_table",
]

CATEGORIES: tuple[str, ...] = ("extremely positive", "strongly positive", "positive",
                               "neutral", "negative", "strongly negative",
                               "extremely negative")
SIZE_CLASSES: tuple[str, ...] = ("n <= 200", "200 < n < 2000", "n >= 2000")
#: ΔBIC at which one model wins (sign test) and at which evidence stops being neutral.
WIN_THRESHOLD = 2.0
ALPHA = 0.01


def raftery_category(delta: float) -> str:
    """Raftery's category of a ΔBIC (see the module docstring for the boundaries).

    Examples
    --------
    >>> [raftery_category(d) for d in (12.0, 10.0, 6.0, 2.0, 1.99, -2.0, -6.5, -11)]
    ['extremely positive', 'strongly positive', 'positive', 'positive', 'neutral', \
'negative', 'strongly negative', 'extremely negative']
    """
    if not math.isfinite(delta):
        raise ValueError(f"ΔBIC must be finite, got {delta}")
    a = abs(delta)
    if a < WIN_THRESHOLD:
        return "neutral"
    level = 0 if a > 10 else 1 if a > 6 else 2
    return CATEGORIES[level] if delta > 0 else CATEGORIES[6 - level]


def size_class(n_vars: int) -> str:
    """The paper's size class of a data set with ``n_vars`` variables."""
    if n_vars <= 200:
        return SIZE_CLASSES[0]
    if n_vars < 2000:
        return SIZE_CLASSES[1]
    return SIZE_CLASSES[2]


def binomial_two_sided_p(wins: int, n: int) -> float:
    """Exact two-sided p-value of ``wins`` successes in ``n`` fair coin flips.

    p = min(1, 2 · P(X ≤ min(wins, n − wins))), X ~ Binomial(n, 1/2); 1 when n = 0.
    Computed in exact rational arithmetic.

    Examples
    --------
    >>> round(binomial_two_sided_p(9, 10), 6)
    0.021484
    """
    if n < 0 or not 0 <= wins <= n:
        raise ValueError(f"need 0 <= wins <= n, got wins={wins}, n={n}")
    if n == 0:
        return 1.0
    lo = min(wins, n - wins)
    tail = Fraction(sum(math.comb(n, i) for i in range(lo + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


@dataclass(frozen=True, slots=True)
class SignTest:
    """Wins of A (ΔBIC ≥ 2), wins of B (ΔBIC ≤ −2), ties, and the two-sided p-value."""

    wins_a: int
    wins_b: int
    ties: int
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA

    @property
    def n(self) -> int:
        return self.wins_a + self.wins_b + self.ties


def sign_test(deltas: Iterable[float], threshold: float = WIN_THRESHOLD) -> SignTest:
    """Sign test on ΔBIC values (ties, |Δ| < threshold, dropped).

    Examples
    --------
    >>> sign_test([12, 3, -1, 2, -2.5]).wins_a, sign_test([12, 3, -1, 2, -2.5]).ties
    (3, 1)
    """
    d = np.asarray(list(deltas), dtype=np.float64)
    wa = int((d >= threshold).sum())
    wb = int((d <= -threshold).sum())
    ties = int(d.size - wa - wb)
    return SignTest(wa, wb, ties, binomial_two_sided_p(wa, wa + wb))


# ---------------------------------------------------------------------------- pairing
@dataclass(frozen=True, slots=True)
class Comparison:
    """A table: algorithm label ``a`` against ``b``; columns by ``size`` and/or ``k``."""

    a: str
    b: str
    title: str = ""
    columns: tuple[str, ...] = ("size",)
    grid: str | None = None

    @property
    def name(self) -> str:
        g = f"{self.grid}__" if self.grid else ""
        return f"{g}{self.a}_vs_{self.b}".replace("/", "-").replace(" ", "_")


def _score_at(elapsed: Sequence[float], scores: Sequence[float], t: float) -> float:
    """The best score found within ``t`` seconds; −inf when the run had found none."""
    best = -math.inf
    for e, s in zip(elapsed, scores, strict=False):
        if e <= t and s > best:
            best = s
    return best


def experiment_scores(frame: pd.DataFrame, at: float | None = None) -> pd.DataFrame:
    """One score per (grid, dataset, split, label, k): the median over seeds of each
    run's best score (or its best within ``at`` seconds, from the anytime trace).

    A run that had found no network within ``at`` seconds counts as the worst run of
    the median (−inf), not as a run that is not there: the median of the runs that
    had found one would favour the label whose slow runs are left out. A median of
    −inf (half the runs or more without a network) is NaN: no score."""
    if frame.empty:
        return pd.DataFrame(columns=["grid", "dataset", "split", "label", "k", "n_vars",
                                     "score"])
    f = frame.copy()
    if at is None:
        f["score"] = f["best_score"].astype(float)
    else:
        f["score"] = [_score_at(e, s, at) for e, s in zip(f["trace_elapsed"],
                                                          f["trace_scores"], strict=True)]
    f["k"] = f["k"].astype("Int64")
    keys = ["grid", "dataset", "split", "label", "k"]
    out = (f.groupby(keys, dropna=False, sort=True)
           .agg(n_vars=("n_vars", "max"), score=("score", "median"))
           .reset_index())
    out["score"] = out["score"].astype(float).replace(-math.inf, math.nan)
    return out


def paired_deltas(frame: pd.DataFrame, a: str, b: str, *, at: float | None = None,
                  grid: str | None = None) -> pd.DataFrame:
    """ΔBIC = score(a) − score(b) per experiment (data set, split and, when both are
    bounded, treewidth). Experiments missing either side are left out.

    Returns columns ``grid, dataset, split, k, n_vars, size, score_a, score_b, delta``.
    """
    s = experiment_scores(frame if grid is None else frame[frame["grid"] == grid], at)
    sa, sb = s[s["label"] == a], s[s["label"] == b]
    cols = ["grid", "dataset", "split", "k", "n_vars", "size", "score_a", "score_b", "delta"]
    if sa.empty or sb.empty:
        return pd.DataFrame(columns=cols)
    on = ["grid", "dataset", "split"]
    if sa["k"].notna().any() and sb["k"].notna().any():
        on.append("k")
    m = sa.merge(sb, on=on, suffixes=("_a", "_b"))
    if "k" not in on:
        m["k"] = m["k_a"].combine_first(m["k_b"])
    m = m.rename(columns={"score_a": "score_a", "score_b": "score_b"})
    m["n_vars"] = m["n_vars_a"]
    m = m[np.isfinite(m["score_a"].astype(float)) & np.isfinite(m["score_b"].astype(float))]
    m["delta"] = m["score_a"].astype(float) - m["score_b"].astype(float)
    m["size"] = [size_class(int(n)) for n in m["n_vars"]]
    return m[cols].sort_values(["grid", "dataset", "split", "k"]).reset_index(drop=True)


@dataclass
class DeltaTable:
    """Counts per Raftery category and the sign test, one column per group."""

    comparison: Comparison
    counts: pd.DataFrame  # index: CATEGORIES; columns: groups
    tests: dict[str, SignTest]
    deltas: pd.DataFrame = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """The table as printed: category counts, then wins, ties and p-values."""
        rows = self.counts.copy().astype(object)
        for label, fn in ((f"{self.comparison.a} wins (ΔBIC ≥ 2)", lambda t: t.wins_a),
                          (f"{self.comparison.b} wins (ΔBIC ≤ −2)", lambda t: t.wins_b),
                          ("ties", lambda t: t.ties),
                          ("p-value (sign test)", lambda t: _fmt_p(t.p_value))):
            rows.loc[label] = [fn(self.tests[c]) for c in rows.columns]
        return rows

    def to_markdown(self) -> str:
        f = self.to_frame()
        title = self.comparison.title or f"{self.comparison.a} vs {self.comparison.b}"
        head = ["ΔBIC", *[str(c) for c in f.columns]]
        lines = [f"### {title}", "",
                 f"ΔBIC = BIC({self.comparison.a}) − BIC({self.comparison.b}); "
                 f"p-values in bold are significant (p < {ALPHA}).", "",
                 "| " + " | ".join(head) + " |",
                 "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|"]
        for idx, row in f.iterrows():
            cells = []
            for col, v in zip(f.columns, row, strict=True):
                if idx == "p-value (sign test)" and self.tests[col].significant:
                    cells.append(f"**{v}**")
                else:
                    cells.append(str(v))
            lines.append("| " + " | ".join([str(idx), *cells]) + " |")
        n = {c: self.tests[c].n for c in f.columns}
        lines += ["", "Experiments per column: " + ", ".join(f"{c}: {v}" for c, v in n.items())]
        return "\n".join(lines) + "\n"


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p < 0.001 else f"{p:.3f}"


def _group_label(size: str | None, k: object) -> str:
    parts = []
    if size is not None:
        parts.append(size)
    if k is not None and not (isinstance(k, float) and math.isnan(k)) and k is not pd.NA:
        parts.append(f"k={int(k)}")  # type: ignore[call-overload]
    return ", ".join(parts) or "all"


def delta_table(deltas: pd.DataFrame, comparison: Comparison) -> DeltaTable:
    """Count ΔBIC categories and run the sign test per column group.

    With ``columns`` containing ``"size"`` every size class gets a column (also when
    empty, as in the papers); with ``"k"`` every treewidth present.
    """
    by_size = "size" in comparison.columns
    by_k = "k" in comparison.columns
    sizes: list[str | None] = list(SIZE_CLASSES) if by_size else [None]
    ks: list[int | None] = [*sorted({int(k) for k in deltas["k"].dropna()})] if by_k else []
    ks = ks or [None]
    groups: dict[str, pd.DataFrame] = {}
    for sz in sizes:
        for k in ks:
            sel = deltas
            if sz is not None:
                sel = sel[sel["size"] == sz]
            if k is not None:
                sel = sel[sel["k"] == k]
            groups[_group_label(sz, k)] = sel
    counts = pd.DataFrame(0, index=list(CATEGORIES), columns=list(groups), dtype=np.int64)
    tests = {}
    for g, sel in groups.items():
        for d in sel["delta"].astype(float):
            counts.loc[raftery_category(d), g] += 1
        tests[g] = sign_test(sel["delta"].astype(float))
    return DeltaTable(comparison, counts, tests, deltas)


def default_comparisons(labels: Iterable[str]) -> list[Comparison]:
    """The papers' comparisons among the labels present."""
    have = set(labels)
    cands = [
        Comparison("asobs-ent", "asobs", "Table 2 (ASOBS-ENT paper): ASOBS-ENT vs ASOBS",
                   ("size",)),
        Comparison("asobs-ent", "ilp", "Table 2 (ASOBS-ENT paper): ASOBS-ENT vs ILP",
                   ("size",)),
        Comparison("kg-ent", "kg", "Tables 3–4 (ASOBS-ENT paper): k-G_ENT vs k-G",
                   ("size", "k")),
        Comparison("kg-ent", "s2", "§5 (ASOBS-ENT paper): k-G_ENT vs S2", ("size", "k")),
        Comparison("kmax", "kg", "Table 3 (k-MAX paper): k-MAX vs k-G", ("k",)),
    ]
    return [c for c in cands if c.a in have and c.b in have]


def write_tables(frame: pd.DataFrame, comparisons: Sequence[Comparison],
                 out_dir: str | Path, *, at: float | None = None) -> list[Path]:
    """Write each comparison as ``<name>.md``, ``<name>.csv`` (the table) and
    ``<name>.deltas.csv`` (every ΔBIC), plus ``tables.md`` with all of them."""
    out = Path(out_dir)
    written: list[Path] = []
    parts = []
    for comp in comparisons:
        deltas = paired_deltas(frame, comp.a, comp.b, at=at, grid=comp.grid)
        table = delta_table(deltas, comp)
        md = table.to_markdown()
        parts.append(md)
        for suffix, text in ((".md", md), (".csv", table.to_frame().to_csv()),
                             (".deltas.csv", deltas.to_csv(index=False))):
            p = out / f"{comp.name}{suffix}"
            atomic_write_text(p, text)
            written.append(p)
    if parts:
        when = "end of budget" if at is None else f"best within {at:g} s"
        p = out / "tables.md"
        atomic_write_text(p, f"# ΔBIC tables ({when})\n\n" + "\n".join(parts))
        written.append(p)
    return written


def failures_table(failures: Iterable[CellFailure]) -> pd.DataFrame:
    """The failed cells as text, sorted by key: key, data set, split, label, k, seed,
    status and the first line of the error."""
    rows = [{"key": f.key, "dataset": f.dataset, "split": f.split, "label": f.label,
             "k": "" if f.k is None else str(f.k), "seed": str(f.seed), "status": f.status,
             "error": f.error.splitlines()[0] if f.error else ""}
            for f in sorted(failures, key=lambda f: f.key)]
    return pd.DataFrame(rows, columns=["key", "dataset", "split", "label", "k", "seed",
                                       "status", "error"])


def write_failures_table(failures: Iterable[CellFailure], out_dir: str | Path,
                         name: str) -> list[Path]:
    """``<name>__failures.md/.csv`` when there are failures, else nothing."""
    table = failures_table(failures)
    if table.empty:
        return []
    return write_text_table(table, out_dir, f"{name}__failures", f"{name}: failed cells",
                            [f"{len(table)} cells without a result (a rerun retries them)."])
