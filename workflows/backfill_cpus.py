"""Give the committed records written before records kept ``cpus`` their host's core count.

Records carry the logical core count of the machine that ran each cell (``cpus``,
docs/RECORDS.md) since 3daf482; the committed sets written before it name their host
(``hostname``) but not its cores. Every one of them ran on the project's development
machine, host ``vm``: 2 logical cores (run on a host it is given, the script checks that
host's own core count against the one given). This script writes ``cpus`` into the constants of each records file whose
rows all name one host given on the command line (``--host vm=2``) and have no ``cpus``
yet, and says so in the file's metadata (``bnsl_dist.backfilled``: the column, the rule,
the date): the rows, the tables and every other byte of meaning stay as they were. A file
that keeps ``cpus`` for some rows only (old and new records merged) gets it in the others,
when each names a host given. Files of other hosts are left alone and listed.

    python -m workflows.backfill_cpus workflows/results/*/records*.parquet --host vm=2
"""

from __future__ import annotations

import argparse
import io
import json
import os
import socket
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bnsl_dist._io import atomic_write_bytes
from bnsl_dist._json import canonical_json
from bnsl_dist.results.export import _META_CONSTANTS, _ZSTD_LEVEL

_META_BACKFILLED = b"bnsl_dist.backfilled"


def backfill(path: Path, hosts: dict[str, int]) -> str:
    """Backfill one file; returns what was done, in a few words."""
    table = pq.read_table(io.BytesIO(path.read_bytes()), use_threads=False)
    meta = dict(table.schema.metadata or {})
    constants = json.loads(meta[_META_CONSTANTS])
    if constants.get("cpus") is not None:  # files written since keep it (None: unknown)
        return "has cpus"
    if "cpus" in table.column_names:
        return _fill_rows(path, table, meta, hosts)
    names = ({constants["hostname"]} if "hostname" in constants
             else set(table.column("hostname").to_pylist()) if table.num_rows else set())
    if len(names) != 1 or (host := names.pop()) not in hosts:
        return f"left alone (hosts {sorted(map(str, names))})"
    constants["cpus"] = hosts[host]
    notes = json.loads(meta.get(_META_BACKFILLED, b"{}"))
    notes["cpus"] = (f"from hostname {host!r}: {hosts[host]} logical cores, given to "
                     f"workflows/backfill_cpus.py on {time.strftime('%Y-%m-%d')}")
    meta[_META_CONSTANTS] = canonical_json(constants).encode()
    _write(path, table, meta, notes)
    return f"cpus = {hosts[host]} ({host})"


def _fill_rows(path: Path, table: pa.Table, meta: dict[bytes, bytes],
               hosts: dict[str, int]) -> str:
    """A file whose rows keep ``cpus`` but some lack it (records merged from runs before
    and after 3daf482): fill those rows from their ``hostname``, when every such row
    names a host given."""
    cpus = table.column("cpus").to_pylist()
    names = (table.column("hostname").to_pylist() if "hostname" in table.column_names
             else [json.loads(meta[_META_CONSTANTS]).get("hostname")] * table.num_rows)
    empty = [i for i, c in enumerate(cpus) if c is None]
    if not empty:
        return "has cpus"
    unknown = sorted({str(names[i]) for i in empty if names[i] not in hosts})
    if unknown:
        return f"left alone (rows without cpus on hosts {unknown})"
    filled = [hosts[names[i]] if c is None else c for i, c in enumerate(cpus)]
    at = table.column_names.index("cpus")
    table = table.set_column(at, table.schema.field(at), pa.array(filled, pa.int64()))
    given = sorted({names[i] for i in empty})
    notes = json.loads(meta.get(_META_BACKFILLED, b"{}"))
    notes["cpus"] = (f"{len(empty)} of {len(cpus)} rows, from hostname "
                     + ", ".join(f"{h!r}: {hosts[h]} logical cores" for h in given)
                     + f", given to workflows/backfill_cpus.py on {time.strftime('%Y-%m-%d')}")
    _write(path, table, meta, notes)
    return f"cpus = {', '.join(str(hosts[h]) for h in given)} on {len(empty)} rows"


def _write(path: Path, table: pa.Table, meta: dict[bytes, bytes],
           notes: dict[str, str]) -> None:
    """Write ``table`` back to ``path`` atomically with ``meta`` and the backfill noted."""
    meta[_META_BACKFILLED] = canonical_json(notes).encode()
    buf = io.BytesIO()
    pq.write_table(table.replace_schema_metadata(meta), buf, compression="zstd",
                   compression_level=_ZSTD_LEVEL)
    atomic_write_bytes(path, buf.getvalue())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--host", action="append", required=True, metavar="NAME=CPUS",
                    help="a host and its logical core count (repeatable)")
    args = ap.parse_args(argv)
    hosts = {}
    for h in args.host:
        name, _, n = h.partition("=")
        if not name or not n.isdigit() or int(n) < 1:
            ap.error(f"--host {h!r}: expected NAME=CPUS with CPUS >= 1")
        hosts[name] = int(n)
    here = socket.gethostname()
    if here in hosts and hosts[here] != os.cpu_count():
        ap.error(f"--host {here}={hosts[here]}: this is {here}, with {os.cpu_count()} cores")
    for f in args.files:
        print(f"{f}: {backfill(f, hosts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
