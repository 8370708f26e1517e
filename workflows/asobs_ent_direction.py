"""Merge the rerun of the ASOBS family (``asobs``, the paper's ``asobs-ent``,
``asobs-ent-last``, ``ilp``) into the committed records of the ASOBS-ENT grid.

The grid's records ran ASOBS-ENT with high-entropy variables processed last (read as
``asobs-ent-last``, :mod:`bnsl_dist.results.legacy`). The rerun builds its own caches, so
an experiment (data set and split) is taken from it only when all four of its cells are
stored there; for those experiments the old ``asobs``, ``asobs-ent-last`` and ``ilp`` rows
are dropped (``asobs`` and ``ilp`` have the same keys as before and are replaced; the old
ASOBS-ENT row, on the old cache, would pair with nothing). Every other row stays as
committed (k-G, k-G_ENT on their caches; the ASOBS family of the experiments not rerun).
The rerun's grid definition (which names both variants and their comparisons) is the
one stored.

Run (after ``bnsl-dist grid run configs/grids/asobs-ent-2018-reduced.yaml --results
RUN --labels asobs,asobs-ent,asobs-ent-last,ilp ...``)::

    python -m workflows.asobs_ent_direction --rerun RUN [--work /tmp/asobs-ent-merged]
    bnsl-dist tables workflows/results/asobs-ent-2018-reduced/records.parquet \\
        --out workflows/results/asobs-ent-2018-reduced/

It prints which experiments came from the rerun and rewrites
``workflows/results/asobs-ent-2018-reduced/records.parquet`` (in parts under 4.5 MB,
best DAGs only). Rerunnable: the committed file read at the start is the merged one the
second time, and the same rerun gives the same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import pyarrow as pa

from bnsl_dist.results.export import (
    RecordSet,
    export_records,
    import_records,
    load_records,
    read_records,
)

RECORDS = Path(__file__).resolve().parent / "results" / "asobs-ent-2018-reduced" / "records.parquet"
FAMILY = ("asobs", "asobs-ent", "asobs-ent-last", "ilp")


def _subset(recs: RecordSet, keep: list[bool]) -> RecordSet:
    table = recs.table.filter(pa.array(keep, type=pa.bool_()))
    keys = set(table.column("key").to_pylist())
    return RecordSet(table, recs.grids, [f for f in recs.failures if f.key in keys])


def merge(rerun: Path, work: Path, out: Path = RECORDS) -> list[tuple[str, str]]:
    """Write the merged records to ``out``; returns the experiments taken from ``rerun``."""
    new, old = load_records(rerun), read_records(out)
    nf = new.frame()
    fam = nf[nf.label.isin(FAMILY)]
    labels = fam.groupby(["dataset", "split"]).label.agg(set)
    done = sorted(e for e, got in labels.items() if got == set(FAMILY))
    taken = set(done)
    new_keep = [(d, s) in taken and lab in FAMILY
                for d, s, lab in zip(nf.dataset, nf.split, nf.label, strict=True)]
    newest = set(nf.key[new_keep])
    of = old.frame()
    old_keep = [k not in newest and not ((d, s) in taken and lab in FAMILY)
                for k, d, s, lab in zip(of.key, of.dataset, of.split, of.label, strict=True)]
    if work.exists():
        shutil.rmtree(work)
    import_records(_subset(old, old_keep), work)
    import_records(_subset(new, new_keep), work)  # its grid definition replaces the old
    export_records(work, out, dags="best", max_bytes=int(4.5e6))
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rerun", type=Path, required=True, help="the rerun's results folder")
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "asobs-ent-merged")
    ap.add_argument("--out", type=Path, default=RECORDS)
    args = ap.parse_args()
    done = merge(args.rerun, args.work, args.out)
    recs = read_records(args.out)
    print(f"{len(done)} experiments from {args.rerun}: "
          + ", ".join(f"{d}/{s}" for d, s in done))
    print(f"{args.out}: {recs.table.num_rows} results")


if __name__ == "__main__":
    main()
