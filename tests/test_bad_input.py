"""Bad input through the CLI (issue 16): every failure is one line on stderr, exit code 2,
names the file / option / field, comes before any compute, and leaves nothing written.

"Before any compute" is enforced by the ``no_compute`` fixture: building a score cache,
starting a Dask cluster or connecting a client fails the test.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.cli._checks import check_output_dir, check_output_file
from bnsl_dist.data import bundled_path
from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample

NLTCS = [f"X{i}" for i in range(16)]


def _run(args: list[str]):
    return CliRunner().invoke(main, args)


def _one_line_error(res, *needles: str) -> None:
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "Traceback" not in res.output


def _nothing_in(folder: Path, before: set[str] = frozenset()) -> None:
    assert {p.name for p in folder.iterdir()} <= set(before), list(folder.iterdir())


@pytest.fixture()
def no_compute(monkeypatch):
    """Fail the test if a cache build or a Dask cluster / client starts."""
    import distributed

    import bnsl_dist.cache

    def boom(*_a, **_k):
        raise AssertionError("compute started before the arguments were checked")

    monkeypatch.setattr(bnsl_dist.cache, "build_cache", boom)
    monkeypatch.setattr(distributed.LocalCluster, "__init__", boom)
    monkeypatch.setattr(distributed.Client, "__init__", boom)


@pytest.fixture()
def a_file(tmp_path) -> Path:
    p = tmp_path / "plain.txt"
    p.write_text("x")
    return p


# ------------------------------------------------------------------ the checks themselves
def test_checks_accept_new_nested_paths_and_create_nothing(tmp_path):
    check_output_file(tmp_path / "a" / "b" / "r.json", "-o")
    check_output_dir(tmp_path / "c" / "d", "--results")
    check_output_file(None, "-o")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("check", [check_output_file, check_output_dir])
def test_checks_reject_proc_and_paths_under_a_file(check, a_file):
    for bad in ("/proc/x.json", a_file / "x.json"):
        with pytest.raises(InvalidConfigError, match=f"^--opt {bad}: "):
            check(bad, "--opt")


def test_checks_reject_the_wrong_kind(tmp_path, a_file):
    with pytest.raises(InvalidConfigError, match="is a directory"):
        check_output_file(tmp_path, "-o")
    with pytest.raises(InvalidConfigError, match="not a regular file"):
        check_output_file("/dev/null", "-o")
    with pytest.raises(InvalidConfigError, match="not a directory"):
        check_output_dir(a_file, "--results")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_checks_reject_a_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(InvalidConfigError, match="Permission denied"):
            check_output_file(ro / "x.json", "-o")
    finally:
        ro.chmod(0o700)


# ------------------------------------------------------------------ outputs of each command
def _unwritable(tmp_path: Path, a_file: Path) -> list[Path]:
    return [Path("/proc/x.out"), a_file / "x.out", tmp_path]


def test_cache_build_output(tmp_path, a_file, no_compute):
    for bad in _unwritable(tmp_path, a_file):
        res = _run(["cache", "build", "nltcs", "--scores-per-variable", "5", "-o", str(bad)])
        _one_line_error(res, "--output", str(bad))
    res = _run(["cache", "build", "nltcs", "--workers", "1", "--cache-dir", str(a_file),
                "-o", str(tmp_path / "c.jkl")])
    _one_line_error(res, "--cache-dir", str(a_file))
    res = _run(["cache", "build", "nltcs", "--workers", "1", "--cache-dir", "/proc/caches",
                "-o", str(tmp_path / "c.jkl")])
    _one_line_error(res, "--cache-dir", "/proc/caches")
    _nothing_in(tmp_path, {a_file.name})


def test_data_sample_and_fetch_outputs(tmp_path, a_file):
    res = _run(["data", "sample", "asia", "-n", "10", "-o", "/proc/x.csv"])
    _one_line_error(res, "--output", "/proc/x.csv")
    res = _run(["data", "fetch", "asia", "--root", str(a_file)])
    _one_line_error(res, "--root", str(a_file))
    _nothing_in(tmp_path, {a_file.name})


def test_data_sample_refuses_a_state_that_reads_back_as_missing(tmp_path):
    """pathfinder's state "NA": a CSV of labels would read back with missing values."""
    bif = tmp_path / "na.bif"
    bif.write_text("network n { }\n"
                   "variable A { type discrete [ 3 ] { NA, No, Yes }; }\n"
                   "probability ( A ) { table 0.4, 0.3, 0.3; }\n")
    out = tmp_path / "s.csv"
    res = _run(["data", "sample", str(bif), "-n", "50", "-o", str(out)])
    _one_line_error(res, str(out), "'NA'", "--codes")
    _nothing_in(tmp_path, {bif.name})
    res = _run(["data", "sample", str(bif), "-n", "50", "--codes", "-o", str(out)])
    assert res.exit_code == 0, res.output


def test_tables_output(tmp_path, a_file):
    res = _run(["tables", str(tmp_path), "--out", str(a_file / "t")])
    _one_line_error(res, "--out", str(a_file))
    _nothing_in(tmp_path, {a_file.name})


def test_learn_output(tmp_path, a_file, no_compute):
    for bad in _unwritable(tmp_path, a_file):
        res = _run(["learn", "nltcs", "--serial", "--iterations", "5", "-o", str(bad)])
        _one_line_error(res, "--output", str(bad))
    res = _run(["learn", "nltcs", "--serial", "--iterations", "5", "--save-cache",
                "/proc/c.jkl", "-o", str(tmp_path / "r.json")])
    _one_line_error(res, "--save-cache", "/proc/c.jkl")
    _nothing_in(tmp_path, {a_file.name})


def test_grid_results_folder(tmp_path, a_file, no_compute):
    grid = Path(__file__).resolve().parents[1] / "configs" / "grids" / "smoke.yaml"
    for bad in (Path("/proc/results"), a_file):
        res = _run(["grid", "run", str(grid), "--results", str(bad), "--workers", "1"])
        _one_line_error(res, "--results", str(bad))
    _nothing_in(tmp_path, {a_file.name})


def test_impute_outputs(tmp_path, a_file, no_compute):
    src = tmp_path / "m.csv"
    src.write_text("a,b\n0,?\n1,1\n0,0\n")
    res = _run(["impute", str(src), "--serial", "-o", "/proc/x.csv"])
    _one_line_error(res, "--output", "/proc/x.csv")
    res = _run(["impute", str(src), "--serial", "-o", str(tmp_path / "o.csv"),
                "--network", str(a_file / "n.bif")])
    _one_line_error(res, "--network", str(a_file))
    _nothing_in(tmp_path, {a_file.name, src.name})


# ------------------------------------------------------------------ numbers checked first
@pytest.mark.parametrize("args,needle", [
    (["cache", "build", "nltcs", "--workers", "0", "-o", "c.jkl"], "--workers"),
    (["cache", "build", "nltcs", "--seconds-per-variable", "0", "-o", "c.jkl"],
     "--seconds-per-variable"),
    (["cache", "build", "nltcs", "--ess", "-1", "-o", "c.jkl"], "--ess"),
    (["cache", "build", "nltcs", "--scheduler", "notanaddress", "-o", "c.jkl"],
     "--scheduler notanaddress: not a scheduler address"),
    (["cache", "build", "nltcs", "--scheduler", "tcp://h:port", "-o", "c.jkl"],
     "--scheduler tcp://h:port"),
    (["score", "nltcs", "--dag", "nope.json"], "nope.json"),
    (["loglik", "asia", "nltcs", "--samples", "0"], "--samples"),
    (["infer", "asia", "--seed", "-1"], "--seed"),
])
def test_bad_numbers_and_paths_are_one_line(tmp_path, monkeypatch, no_compute, args, needle):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, args)
    _one_line_error(res, needle)
    assert not Path("c.jkl").exists()


@pytest.mark.parametrize("args,needle", [
    (["learn", "nltcs", "--algorithm", "kmax", "-k", "0"], "-k"),
    (["learn", "nltcs", "--seeds", "0"], "--seeds"),
    (["learn", "nltcs", "--workers", "0"], "--workers"),
    (["learn", "nltcs", "--iterations", "0"], "--iterations"),
    # inf seconds and no iterations: an anytime search that never stops
    (["learn", "nltcs", "--seconds", "inf"], "seconds: Input should be a finite number"),
])
def test_learn_numbers_checked_before_compute(tmp_path, no_compute, args, needle):
    out = tmp_path / "r.json"
    res = _run([*args, "-o", str(out)])
    _one_line_error(res, needle)
    assert not out.exists()


@pytest.mark.parametrize("args", [["learn", "nltcs", "-o", "r.json"],
                                  ["impute", "m.csv", "-o", "o.csv"],
                                  ["grid", "run", "g.yaml", "--results", "r"]])
def test_malformed_scheduler_address_before_any_read(tmp_path, monkeypatch, no_compute, args):
    grid = Path(__file__).resolve().parents[1] / "configs" / "grids" / "smoke.yaml"
    monkeypatch.chdir(tmp_path)
    Path("m.csv").write_text("a,b\n0,?\n1,1\n")
    Path("g.yaml").write_text(grid.read_text())
    res = CliRunner().invoke(main, [*args, "--scheduler", "notanaddress"])
    _one_line_error(res, "--scheduler notanaddress")
    assert sorted(p.name for p in Path().iterdir()) == ["g.yaml", "m.csv"]


def _grid_with(tmp_path: Path, old: str, new: str) -> Path:
    smoke = Path(__file__).resolve().parents[1] / "configs" / "grids" / "smoke.yaml"
    text = smoke.read_text()
    assert old in text
    p = tmp_path / "g.yaml"
    p.write_text(text.replace(old, new))
    return p


@pytest.mark.parametrize("old,new", [("{name: dp}", "{name: dpp}"),
                                     ("{name: nltcs,", "{name: nosuchset,")])
@pytest.mark.parametrize("dry", [True, False])
def test_grid_unknown_names_fail_before_compute(tmp_path, no_compute, old, new, dry):
    grid = _grid_with(tmp_path, old, new)
    res = _run(["grid", "run", str(grid), "--results", str(tmp_path / "r"), "--workers", "1",
                *(["--dry-run"] if dry else [])])
    _one_line_error(res, new.split()[1].rstrip("},"))
    assert not (tmp_path / "r").exists()


def test_grid_workers_zero(tmp_path, no_compute):
    grid = Path(__file__).resolve().parents[1] / "configs" / "grids" / "smoke.yaml"
    res = _run(["grid", "run", str(grid), "--results", str(tmp_path / "r"), "--workers", "0"])
    _one_line_error(res, "--workers")
    assert not (tmp_path / "r").exists()


def test_usage_errors_are_one_line():
    _one_line_error(_run(["cache", "build", "nltcs"]), "cache build", "--output")
    _one_line_error(_run(["no-such-command"]), "no-such-command")
    _one_line_error(_run(["--no-such-option"]), "--no-such-option")


# ------------------------------------------------------------------ OS errors, --debug
def test_os_error_deep_inside_is_one_line_and_debug_shows_it(tmp_path, monkeypatch):
    import bnsl_dist.cache

    out = tmp_path / "c.jkl"

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))

    monkeypatch.setattr(bnsl_dist.cache, "write_jkl", full)
    args = ["cache", "build", "nltcs", "--scores-per-variable", "3", "--max-indegree", "1",
            "-o", str(out), "-q"]  # -q: no phase lines before the error
    _one_line_error(_run(args), str(out), "No space left on device")
    res = _run(["--debug", *args])
    assert res.exit_code == 2 and "Traceback" in res.stderr and "OSError" in res.stderr


# ------------------------------------------------------------------ readers, via the CLI
def _score(data: Path, dag: dict, *extra: str):
    dag_file = data.with_name(data.name + ".dag.json")
    dag_file.write_text(json.dumps(dag))
    return _run(["score", str(data), "--dag", str(dag_file), *extra])


def test_quoted_fields_bom_and_crlf_are_read(tmp_path):
    p = tmp_path / "cities.csv"
    p.write_bytes("\ufeffcity,sunny\r\n\"Paris, FR\",yes\r\nLyon,no\r\n\"Paris, FR\",no".encode())
    res = _score(p, {"nodes": ["city", "sunny"], "parents": {"sunny": ["city"]}}, "--score",
                 "ll")
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert set(out["per_variable"]) == {"city", "sunny"}
    # ll of city: 2 x ln(2/3) + ln(1/3); of sunny given city: Paris 1:1, Lyon 1:0
    assert out["per_variable"]["city"] == pytest.approx(2 * np.log(2 / 3) + np.log(1 / 3))
    assert out["per_variable"]["sunny"] == pytest.approx(2 * np.log(1 / 2))


@pytest.mark.parametrize("text,line,col", [
    ("0,1\n1,x\n", 2, 2),
    ("0,1\n\"1\",0\r\n\r\n0,-1\n", 4, 2),
    ("\ufeff0 1\n1 0.5\n", 2, 2),
])
def test_bad_cells_name_file_line_and_column(tmp_path, text, line, col):
    p = tmp_path / "bad.data"
    p.write_bytes(text.encode())
    res = _score(p, {"nodes": ["X0", "X1"], "parents": {}})
    _one_line_error(res, str(p), f"line {line}", f"column {col}")


def test_partial_dag_is_an_error_unless_allowed(tmp_path):
    dag = {"nodes": NLTCS[:10], "parents": {"X1": ["X0"]}}
    dag_file = tmp_path / "dag.json"
    dag_file.write_text(json.dumps(dag))
    res = _run(["score", "nltcs", "--dag", str(dag_file)])
    _one_line_error(res, str(dag_file), "10 of the 16", "X10, X11, X12, X13, X14, X15",
                    "--allow-partial-dag")
    res = _run(["score", "nltcs", "--dag", str(dag_file), "--allow-partial-dag"])
    assert res.exit_code == 0, res.output
    full = dict(dag, nodes=NLTCS)
    dag_file.write_text(json.dumps(full))
    ref = json.loads(_run(["score", "nltcs", "--dag", str(dag_file)]).stdout)
    assert json.loads(res.stdout) == ref


def test_missing_values_hint_names_what_the_cli_offers(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("a,b\n0,1\n1,?\n0,0\n")
    res = _score(p, {"nodes": ["a", "b"], "parents": {}})
    _one_line_error(res, str(p), "line 3", "column 2 (b)", "bnsl-dist impute")
    assert "missing=" not in res.stderr
    res = _run(["loglik", "asia", str(p), "--missing", "error"])
    _one_line_error(res, str(p), "line 3", "--missing mask")
    assert "missing=" not in res.stderr
    for budget in (["--iterations", "3", "--serial"], ["--time-limit", "2"]):  # the first
        out = tmp_path / "r.json"                                   # gave no hint
        res = _run(["learn", str(p), *budget, "-q", "-o", str(out)])
        _one_line_error(res, str(p), "line 3", "column 2 (b)", "bnsl-dist impute")
        assert not out.exists()


@pytest.mark.parametrize("header,row,needle", [
    ("age (years),b", "1,0", "'age (years)'"),           # a name BIF cannot hold
    ("a,b", '"(0, 10]",0', "'(0, 10]'"),                 # a state (pandas.cut's labels)
])
def test_bif_outputs_checked_before_compute(tmp_path, no_compute, header, row, needle):
    """`learn --export bif` and `impute --network` on data whose names or states cannot
    be written as BIF: one line naming the option and the name, before any compute, and
    nothing written (the result JSON / the completed CSV used to be left behind, after
    the whole search, with exit code 2)."""
    data = tmp_path / "d.csv"
    data.write_text(f"{header}\n{row}\n0,1\n1,1\n0,0\n")
    res = _run(["learn", str(data), "--serial", "--iterations", "5", "--export", "bif",
                "-o", str(tmp_path / "r.json")])
    _one_line_error(res, "--export bif", needle, "cannot be written")
    missing = tmp_path / "m.csv"
    missing.write_text(f"{header}\n{row}\n0,?\n1,1\n0,0\n")
    res = _run(["impute", str(missing), "--serial", "-o", str(tmp_path / "o.csv"),
                "--network", str(tmp_path / "n.bif")])
    _one_line_error(res, "--network", needle, "cannot be written")
    _nothing_in(tmp_path, {data.name, missing.name})


def test_impute_rejects_a_column_without_observed_value(tmp_path, no_compute):
    src = tmp_path / "m.csv"
    src.write_text("a,b,c\n0,?,1\n1,?,0\n0,NA,1\n")
    out = tmp_path / "o.csv"
    res = _run(["impute", str(src), "--serial", "-o", str(out)])
    _one_line_error(res, str(src), "column 2 (b)", "no observed value")
    assert not out.exists()


# ------------------------------------------------------------------ every `data list` name
def _asia_s5000_train() -> np.ndarray:
    """The registry's recipe for asia-s5000/train, sampled here."""
    import yaml

    cfg = Path(__file__).resolve().parents[1] / "bnsl_dist" / "datasets" / "registry" / "bnlearn.yaml"
    spec = yaml.safe_load(cfg.read_text())["datasets"]["asia-s5000"]["splits"]["train"]
    net = read_bif(bundled_path("bif/asia.bif.gz"))
    return sample(net, spec["n_samples"], np.random.default_rng(spec["seed"])).codes


def test_data_list_names_are_data(tmp_path, data_root):
    dag = tmp_path / "dag.json"
    names = list(read_bif(bundled_path("bif/asia.bif.gz")).names)
    dag.write_text(json.dumps({"nodes": names, "parents": {}}))
    res = _run(["score", "asia-s5000", "--dag", str(dag), "--score", "ll"])
    assert res.exit_code == 0, res.output
    codes = _asia_s5000_train()
    n = codes.shape[0]
    counts = [np.bincount(codes[:, j]) for j in range(codes.shape[1])]
    expected = sum(float(np.sum(c[c > 0] * np.log(c[c > 0] / n))) for c in counts)
    assert json.loads(res.stdout)["total"] == pytest.approx(expected, rel=1e-12)
    res = _run(["score", "no-such-set", "--dag", str(dag)])
    _one_line_error(res, "no-such-set", "bnsl-dist data list")


def test_learn_takes_data_list_names(tmp_path, data_root):
    out = tmp_path / "r.json"
    res = _run(["learn", "asia-s5000", "--serial", "--algorithm", "asobs", "--iterations",
                "5", "--scores-per-variable", "20", "-o", str(out), "-q"])
    assert res.exit_code == 0, res.output
    assert len(json.loads(out.read_text())["dag"]["nodes"]) == 8


def test_bundled_names_still_win(data_root):
    from bnsl_dist.cli._inputs import load_data

    d = load_data("nltcs/test")
    raw = np.loadtxt(bundled_path("nltcs/test.csv.gz"), delimiter=",", dtype=np.int64)
    assert np.array_equal(np.asarray(d.codes), raw)
    assert not data_root.exists()  # no fetch for a bundled set


def test_real_process_one_line_exit_2(tmp_path):
    import subprocess
    import sys

    cmd = [sys.executable, "-c", "from bnsl_dist.cli import main; main()", "cache", "build",
           "nltcs", "-o", "/proc/x.jkl"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.strip().splitlines() == [
        "error: --output /proc/x.jkl: cannot write in /proc (No such file or directory)"]


def test_closed_stdout_exits_quietly(monkeypatch):
    import bnsl_dist.cli.data

    def closed(*_a, **_k):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")

    monkeypatch.setattr(bnsl_dist.cli.data, "echo_json", closed)
    res = _run(["data", "list", "--json"])
    assert res.exit_code == 1 and res.stderr == ""
