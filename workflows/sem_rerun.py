"""The rerun of the SEM cells that the junction tree's clique underflow (fixed in c06cf61)
could have touched, in pieces that survive between machines.

The cells are those ``workflows/sem_underflow.py`` leaves open (``underflow.json``: a row
of the best network's completion, or of the first E-step's chain, that no bound keeps from
the kernels' ``TINY``; 91 of the 1,080). They run from copies of the grid
``configs/grids/sem-imputation-2018-reduced.yaml`` restricted to one data set, missing rate
and budget scale each, with the seeds of the open cells of that piece: the grid's name,
seed and every other field are the grid's own, so each cell keeps the full grid's key and
seed stream (:func:`pieces` checks both against ``expand_grid`` of the full grid). The
stored reruns are kept in ``workflows/results/sem-imputation-2018-reduced/
rerun-c06cf61.parquet`` (the full grid's JSON inside), until all of them are in and
replace the old cells of ``records.parquet``; ``tests/test_sem_underflow.py`` checks that
every record there is an open cell, run clean from a commit at or after c06cf61.

Run (``BNSL_SHARED_DATA`` naming the staged data), in the background beside nothing
else timed, as many times as it takes::

    python -m workflows.sem_rerun run RESULTS --stop-at 17:45 [--cpus 2]
    git add workflows/results/sem-imputation-2018-reduced/rerun-c06cf61.parquet
    python -m workflows.sem_rerun land      # once all are in; then `bnsl-dist tables`

``run`` writes a grid copy per piece still to run (none of its cells in the committed
file or in RESULTS) and the lists ``cpuN.txt`` (``plan``: the pieces split over the cores
by the old cells' wall seconds, longest first), runs each list on one worker pinned to
core N (``bnsl-dist grid run PIECE.yaml --results RESULTS/cpuN --workers 1 --stop-at
...``), and adds the open cells stored to the committed file (``save``, atomically),
refusing a cell run dirty or before the fix. ``land`` moves them into ``records.parquet``.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from bnsl_dist.exceptions import DataError
from workflows.sem_underflow import BEFORE, GRID, OUT

RERUN = OUT / "rerun-c06cf61.parquet"
#: The commit that fixed the clique underflow: every rerun descends from it.
FIX = "c06cf61"
REPO = Path(__file__).resolve().parents[1]


def open_keys() -> set[str]:
    """The keys of the cells whose best network or chain leaves rows open
    (``underflow.json``)."""
    rows = json.loads((OUT / "underflow.json").read_text(encoding="utf-8"))["rows"]
    return {r["key"] for r in rows if r["best_open_rows"] or r["chain_open_rows"]}


def after_fix(commit: str) -> bool | None:
    """Whether ``commit`` is :data:`FIX` or descends from it; None without the history
    (a shallow clone, an unknown commit)."""
    for c in (FIX, commit):
        if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{c}^{{commit}}"],
                          capture_output=True).returncode:
            return None
    return subprocess.run(["git", "-C", str(REPO), "merge-base", "--is-ancestor", FIX,
                           commit], capture_output=True).returncode == 0


def stored_keys(folders: Iterable[Path] = ()) -> set[str]:
    """The cells stored in the committed rerun file and in the results ``folders``."""
    from bnsl_dist.results.export import read_records
    from bnsl_dist.results.store import ResultStore

    keys = (set(read_records(RERUN).table.column("key").to_pylist())
            if RERUN.is_file() else set())
    for f in folders:
        if f.is_dir():
            keys |= ResultStore(f).done_keys()
    return keys


def pieces(keys: set[str]) -> list[tuple[str, dict[str, Any], set[str]]]:
    """The grid copies that run exactly the cells ``keys``: (name, the grid as a mapping,
    its cells' keys), one per data set x missing rate x budget scale, each checked to
    give its cells the full grid's keys and seed streams."""
    from bnsl_dist.pipeline.config import GridConfig, load_grid
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.pipeline.tasks.sem import SemTask

    base = yaml.safe_load(GRID.read_text(encoding="utf-8"))
    full = {c.key: c for c in expand_grid(load_grid(GRID))}
    unknown = keys - set(full)
    if unknown:
        raise DataError(f"{len(unknown)} keys are not cells of the grid", path=str(GRID))
    by: dict[tuple[str, float, float], set[str]] = {}
    for k in keys:
        c = full[k]
        assert isinstance(c.task, SemTask)
        by.setdefault((c.dataset, c.task.sem.missing_rate, c.task.sem.budget_scale),
                      set()).add(k)
    out = []
    for (ds, rate, scale), ks in sorted(by.items()):
        g = copy.deepcopy(base)
        g["datasets"] = [d for d in base["datasets"] if d["name"] == ds]
        g["seeds"] = sorted({full[k].seed for k in ks})
        g["sem"]["missing_rates"] = [rate]
        g["sem"]["budget_scales"] = [scale]
        got = {c.key: c for c in expand_grid(GridConfig.model_validate(g))}
        if set(got) != ks or any(
                got[k].seed_sequence().spawn_key != full[k].seed_sequence().spawn_key
                or got[k].seed_sequence().entropy != full[k].seed_sequence().entropy
                for k in ks):
            raise AssertionError(f"the copy for {ds} {rate:g} x{scale:g} does not run the "
                                 f"full grid's cells")
        out.append((f"{ds}-{rate:g}-x{scale:g}", g, ks))
    return out


def expected_seconds(keys: Iterable[str], folders: Iterable[Path] = ()
                     ) -> dict[str, float | None]:
    """Each of ``keys``' expected wall seconds from the reruns stored (the committed file
    and the results ``folders``), as ``grid run --stop-at`` expects a cell from the
    stored cells like it (:func:`~bnsl_dist.pipeline.forecast.estimate_left`); None
    where no rerun is like it."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.pipeline.forecast import estimate_left, stored_walls
    from bnsl_dist.pipeline.grid import expand_grid
    from bnsl_dist.results.export import read_records
    from bnsl_dist.results.store import ResultStore, StoreStatus

    walls: dict[str, float] = {}
    if RERUN.is_file():
        t = read_records(RERUN).table
        walls.update(zip(t.column("key").to_pylist(), t.column("wall_seconds").to_pylist(),
                         strict=True))
    for f in folders:
        if f.is_dir():
            walls.update(stored_walls(f, ResultStore(f).done_keys()))
    want = set(keys) - set(walls)
    est = estimate_left(expand_grid(load_grid(GRID)),
                        StoreStatus(tuple(walls), (), tuple(want)), walls)
    return {k: est.get(k) for k in want}


def plan(out: Path, stored: Iterable[Path] = (), cpus: int = 2
         ) -> tuple[list[list[str]], dict[str, set[str]]]:
    """Write the grid copies of the open cells not stored yet into ``out`` and the lists
    ``cpuN.txt`` balanced by the old cells' wall seconds; returns the lists and each
    copy's cell keys (by its path)."""
    from bnsl_dist.results.export import load_records

    opened = open_keys()
    left = opened - stored_keys(stored)
    f = load_records(OUT / "records.parquet").frame()
    wall = dict(zip(f["key"], f["wall_seconds"], strict=True))
    out.mkdir(parents=True, exist_ok=True)
    loads = [0.0] * cpus
    lists: list[list[str]] = [[] for _ in range(cpus)]
    keys: dict[str, set[str]] = {}
    for name, g, ks in sorted(pieces(left), key=lambda p: -sum(wall[k] for k in p[2])):
        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump(g, sort_keys=False), encoding="utf-8")
        j = loads.index(min(loads))
        loads[j] += sum(wall[k] for k in ks)
        lists[j].append(str(path))
        keys[str(path)] = ks
    for j, lst in enumerate(lists):
        (out / f"cpu{j}.txt").write_text("".join(p + "\n" for p in lst), encoding="utf-8")
    print(f"{len(left)} of {len(opened)} open cells left, "
          f"{sum(wall[k] for k in left) / 3600:.1f} h of the old cells' wall time; "
          f"per list: {', '.join(f'{x / 3600:.1f} h' for x in loads)}")
    return lists, keys


def save(folders: Iterable[Path]) -> int:
    """Add the open cells stored in ``folders`` to :data:`RERUN` (kept: the cells already
    there); returns the number of cells in it."""
    from bnsl_dist.results.export import read_records
    from bnsl_dist.results.records import records_to_table
    from bnsl_dist.results.store import ResultStore

    want = open_keys()
    cells = {r.key: r for r in read_records(RERUN).results()} if RERUN.is_file() else {}
    fixed: dict[str, bool | None] = {}  # commit -> after_fix (git, once per commit)
    for folder in folders:
        src = ResultStore(folder)
        for r in src.read_results(sorted(src.done_keys() & want)):
            commit = str(r.commit)
            if commit not in fixed:
                fixed[commit] = after_fix(commit)
            if r.dirty is not False or fixed[commit] is not True:
                raise DataError(f"cell {r.key} ran at {r.commit} (dirty: {r.dirty}): "
                                f"not clean at or after {FIX}", path=str(folder))
            cells.setdefault(r.key, r)
    _export(records_to_table(cells.values()), RERUN)
    print(f"{RERUN}: {len(cells)} of {len(want)} open cells")
    return len(cells)


def _export(table: Any, out: Path) -> None:
    """Write the result rows ``table`` (:data:`~bnsl_dist.results.records.RESULT_SCHEMA`)
    as the records file ``out`` of the full grid, each cell's best DAG only (as the
    committed records)."""
    from bnsl_dist.pipeline.config import load_grid
    from bnsl_dist.results.export import RecordSet, export_records

    grid = load_grid(GRID)
    export_records(RecordSet(table, {grid.name: json.loads(grid.model_dump_json())}), out,
                   dags="best")


def land() -> None:
    """Once every open cell is in :data:`RERUN`: ``records.parquet`` takes the reruns in
    place of the old open cells, which move to :data:`BEFORE`; :data:`RERUN` is removed.
    The cores given to the old records by ``workflows/backfill_cpus.py`` stay noted."""
    import io

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from bnsl_dist.results.export import read_records
    from workflows.backfill_cpus import _META_BACKFILLED, _write

    records = OUT / "records.parquet"
    rerun = read_records(RERUN).table
    want = open_keys()
    left = want - set(rerun.column("key").to_pylist())
    if left:
        raise DataError(f"{len(left)} of the {len(want)} open cells are not rerun yet",
                        path=str(RERUN))
    old_file = pq.read_metadata(records).metadata or {}
    old = read_records(records).table
    is_open = pa.array([k in want for k in old.column("key").to_pylist()])
    _export(old.filter(is_open), BEFORE)
    _export(pa.concat_tables([old.filter(pc.invert(is_open)), rerun.select(old.column_names)
                              .cast(old.schema)]), records)
    if _META_BACKFILLED in old_file:
        notes = json.loads(old_file[_META_BACKFILLED])
        notes = {k: f"{v}; the cells run before c06cf61 only (its rerun's carry their own)"
                 for k, v in notes.items()}
        table = pq.read_table(io.BytesIO(records.read_bytes()), use_threads=False)
        _write(records, table, dict(table.schema.metadata or {}), notes)
    RERUN.unlink()
    print(f"{records}: {len(want)} cells rerun after c06cf61; the old ones in {BEFORE}")


def rerun_records() -> Any:
    """The rerun cells' records (a :class:`~bnsl_dist.results.export.RecordSet`): those
    of :data:`RERUN` while the rerun goes on, the open cells of ``records.parquet`` once
    it has landed."""
    import pyarrow as pa

    from bnsl_dist.results.export import read_records

    if RERUN.is_file():
        return read_records(RERUN)
    recs = read_records(OUT / "records.parquet")
    want = open_keys()
    keep = pa.array([k in want for k in recs.table.column("key").to_pylist()])
    return dataclasses.replace(recs, table=recs.table.filter(keep))


def run(results: Path, stop_at: str, cpus: int = 2) -> int:
    """Run the open cells not yet stored until ``stop_at`` (as ``grid run --stop-at``):
    the pieces left planned (``results/pieces``), each list run piece after piece by one
    worker pinned to its core, into ``results/cpuN`` (its log ``results/cpuN.log``),
    then the stored reruns saved. A piece whose cells are all expected to take longer
    than the time left (:func:`expected_seconds`: the reruns stored like them) is not
    started; the list goes on to the next. Returns the number of cells in
    :data:`RERUN`."""
    import os
    import sys
    import threading
    import time

    from bnsl_dist.cli._common import stop_time

    end = stop_time(stop_at)  # checked before anything starts
    folders = [results / f"cpu{j}" for j in range(cpus)]
    lists, keys = plan(results / "pieces", folders, cpus)
    est = expected_seconds({k for ks in keys.values() for k in ks}, folders)
    shortest = {p: min((e for k in ks if (e := est[k]) is not None), default=0.0)
                for p, ks in keys.items()}  # grid run starts its first cell on this
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cli = [sys.executable, "-c", "from bnsl_dist.cli import main; main()"]

    results.mkdir(parents=True, exist_ok=True)

    def one(cpu: int) -> None:
        with open(results / f"cpu{cpu}.log", "a", encoding="utf-8") as log:
            for piece in lists[cpu]:
                if time.time() >= end:
                    return
                if time.time() + shortest[piece] > end:
                    log.write(f"== {time.strftime('%H:%M:%S')} {piece}: not started, its "
                              f"cells expected to take {shortest[piece] / 60:.1f} min or "
                              f"more (the reruns stored like them)\n")
                    continue
                log.write(f"== {time.strftime('%H:%M:%S')} {piece}\n")
                log.flush()
                rc = subprocess.run(
                    [*cli, "grid", "run", piece, "--results", str(folders[cpu]),
                     "--workers", "1", "--no-progress", "--no-report", "--stop-at", stop_at],
                    stdout=log, stderr=subprocess.STDOUT, env=env,
                    preexec_fn=lambda: os.sched_setaffinity(0, {cpu})).returncode
                log.write(f"== {piece}: exit status {rc}\n")
                log.flush()
                if rc == 3:  # too late for its next cell: so for the next piece's
                    return

    threads = [threading.Thread(target=one, args=(j,)) for j in range(cpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return save([f for f in folders if f.is_dir()])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="grid copies of the open cells not stored yet")
    p.add_argument("out", type=Path)
    p.add_argument("--stored", type=Path, action="append", default=[])
    p.add_argument("--cpus", type=int, default=2)
    s = sub.add_parser("save", help="add the stored open cells to the committed file")
    s.add_argument("folders", type=Path, nargs="+")
    r = sub.add_parser("run", help="resume the rerun until --stop-at, then save")
    r.add_argument("results", type=Path)
    r.add_argument("--stop-at", required=True)
    r.add_argument("--cpus", type=int, default=2)
    sub.add_parser("land", help="replace the old open cells of records.parquet by the "
                                "reruns, once all are in")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        plan(a.out, a.stored, a.cpus)
    elif a.cmd == "save":
        save(a.folders)
    elif a.cmd == "run":
        run(a.results, a.stop_at, a.cpus)
    else:
        land()


if __name__ == "__main__":
    main()
