"""`bnsl-dist impute`: completes every missing cell, keeps observed ones, writes a BIF."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import bundled_path, read_data, write_csv
from bnsl_dist.data.masking import mask_mcar
from bnsl_dist.model.bif import read_bif
from bnsl_dist.model.sampling import sample


def test_impute_cli_serial(tmp_path):
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 600, np.random.default_rng(0))
    masked = mask_mcar(truth, 0.1, np.random.default_rng(1))
    src = tmp_path / "masked.csv"
    write_csv(masked, src)
    out = tmp_path / "done.csv"
    net = tmp_path / "net.bif"
    res = CliRunner().invoke(main, ["impute", str(src), "-k", "2", "--serial",
                                    "--scores-per-variable", "60", "--search-iterations", "30",
                                    "--max-iterations", "3", "-o", str(out),
                                    "--network", str(net)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["n_missing_imputed"] == int(masked.missing.sum())
    done = read_data(out)
    assert done.missing is None
    back = read_data(src, missing="mask")
    # observed cells kept (labels map back to the same codes)
    obs = ~back.missing
    assert np.array_equal(done.codes[obs], back.codes[obs])
    assert read_bif(net).n_vars == truth.n_vars


def test_impute_cli_writes_zero_padded_states_as_they_were(tmp_path):
    """A column of "01", "02", "10" came back as "1", "2", "10" (read as codes, arity 11);
    the output holds the file's own tokens, observed cells verbatim, imputed ones from
    the column's states."""
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 400, np.random.default_rng(0))
    masked = mask_mcar(truth, 0.1, np.random.default_rng(1))
    src, out = tmp_path / "masked.csv", tmp_path / "done.csv"
    write_csv(masked, src, labels=False)
    lines = src.read_text().splitlines()
    pad = [lines[0]] + [",".join("?" if t == "?" else f"0{int(t) + 1}" for t in ln.split(","))
                        for ln in lines[1:]]
    src.write_text("\n".join(pad) + "\n")
    res = CliRunner().invoke(main, ["impute", str(src), "-k", "2", "--serial",
                                    "--scores-per-variable", "30", "--search-iterations", "10",
                                    "--max-iterations", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    rows = [ln.split(",") for ln in out.read_text().splitlines()[1:]]
    given = [ln.split(",") for ln in pad[1:]]
    for g, r in zip(given, rows, strict=True):
        for j, (a, b) in enumerate(zip(g, r, strict=True)):
            assert b == a if a != "?" else b in {f"0{c + 1}" for c in range(truth.arities[j])}


def test_impute_cli_time_limit_keeps_the_first_iteration(tmp_path):
    """A limit that the first iteration already passes: that iteration's network
    imputes (the first always runs), stop reason "time limit", not converged; a limit
    no run reaches changes nothing."""
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 500, np.random.default_rng(3))
    masked = mask_mcar(truth, 0.1, np.random.default_rng(4))
    src = tmp_path / "masked.csv"
    write_csv(masked, src)
    args = ["impute", str(src), "-k", "2", "--serial", "--scores-per-variable", "40",
            "--search-iterations", "20", "--max-iterations", "4"]
    runs = {}
    for limit in ("0.001", "100000", None):
        out = tmp_path / f"done-{limit}.csv"
        extra = [] if limit is None else ["--time-limit", limit]
        res = CliRunner().invoke(main, [*args, "-o", str(out), *extra])
        assert res.exit_code == 0, res.output
        runs[limit] = json.loads(res.stdout[res.stdout.index("{"):]), out.read_text()
    short, _ = runs["0.001"]
    assert short["stop_reason"] == "time limit" and short["iterations"] == 1
    assert short["converged"] is False
    assert read_data(tmp_path / "done-0.001.csv").missing is None
    assert runs["100000"] == (runs[None][0] | {"output": str(tmp_path / "done-100000.csv")},
                              runs[None][1])


@pytest.mark.parametrize("args, needle", [
    (["--seconds-per-variable", "-1"], "--seconds-per-variable:"),
    (["--scores-per-variable", "0"], "--scores-per-variable:"),
    (["-k", "0"], "-k"),
    (["--seed", "-1"], "--seed"),  # a traceback from numpy's SeedSequence, exit 1
    (["--time-limit", "0"], "--time-limit"),
    (["--time-limit", "nan"], "--time-limit"),
])
def test_impute_cli_rejects_bad_settings_before_reading(tmp_path, args, needle):
    res = CliRunner().invoke(main, ["impute", "wine", "--serial", *args,
                                    "-o", str(tmp_path / "o.csv")])
    assert res.exit_code == 2 and "error:" in res.output and needle in res.output
    assert not (tmp_path / "o.csv").exists()


@pytest.mark.dask
def test_impute_cli_defaults_are_reproducible_serial_or_dask(tmp_path):
    """Without cache options the CLI uses the data-scaled exact-score budget (not a
    wall-clock one): --serial and --workers 2 write the same completion."""
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 400, np.random.default_rng(2))
    masked = mask_mcar(truth, 0.1, np.random.default_rng(3))
    src = tmp_path / "masked.csv"
    write_csv(masked, src)
    outs = []
    for extra in (["--serial"], ["--workers", "2"]):
        out = tmp_path / f"done{len(outs)}.csv"
        res = CliRunner().invoke(main, ["impute", str(src), "-k", "2", "--seed", "5",
                                        "--search-iterations", "40", "--max-iterations", "3",
                                        "-o", str(out), *extra])
        assert res.exit_code == 0, res.output
        summary = json.loads(res.stdout[res.stdout.index("{"):])
        assert summary["mode"] == ("serial" if extra == ["--serial"] else "dask")
        outs.append(out.read_text())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("flags, kwargs", [
    ([], {}),
    (["--imputation", "mpe", "--accumulate"], {"imputation": "mpe", "accumulate": True}),
])
def test_impute_cli_passes_imputation_and_accumulate(tmp_path, flags, kwargs):
    """--imputation and --accumulate reach structural_em: the CLI writes the library's
    completion with the same settings (defaults: marginal imputation, each M-step's
    cache its own build), and the two settings complete the data differently here."""
    from bnsl_dist.cache.spec import CacheSpec
    from bnsl_dist.model.generate import random_network
    from bnsl_dist.search import Budget
    from bnsl_dist.sem import structural_em

    truth = sample(random_network(8, 2, arity_range=(3, 4), rng=4), 600,
                   np.random.default_rng(4))
    masked = mask_mcar(truth, 0.4, np.random.default_rng(5))
    src = tmp_path / "masked.csv"
    write_csv(masked, src)
    out = tmp_path / "done.csv"
    res = CliRunner().invoke(main, ["impute", str(src), "-k", "2", "--serial",
                                    "--scores-per-variable", "30", "--search-iterations", "30",
                                    "--max-iterations", "3", "-o", str(out), *flags])
    assert res.exit_code == 0, res.output
    back = read_data(src, missing="mask")
    runs = {name: structural_em(back, k=2, rng=0, max_iterations=3,
                                cache=CacheSpec(scores_per_variable=30),
                                search_budget=Budget(max_iterations=30), **kw)
            for name, kw in (("given", kwargs), ("other", {"imputation": "mpe"}
                                                  if not kwargs else {}))}
    done = read_data(out)
    lib = runs["given"].completed
    assert [[done.state_label(v, c) for v, c in enumerate(row)] for row in done.codes] == \
        [[lib.state_label(v, c) for v, c in enumerate(row)] for row in lib.codes]
    assert not np.array_equal(runs["other"].completed.codes, lib.codes)


@pytest.mark.parametrize("flags, expand", [
    ([], False),
    (["--scores-per-variable", "30"], False),
    (["--expand-dominated", "true"], True),
    (["--expand-dominated", "false", "--seconds-per-variable", "0.1"], False),
])
def test_impute_cli_explores_without_expanding_dominated_sets_unless_told(
        tmp_path, monkeypatch, flags, expand):
    """The cache spec the CLI hands to structural_em: dominated sets are not expanded
    (the SEM default) whatever the budget, unless --expand-dominated says otherwise."""
    import bnsl_dist.sem

    seen = {}

    class Stop(Exception):
        pass

    def fake(data, **kwargs):
        seen.update(kwargs)
        raise Stop

    monkeypatch.setattr(bnsl_dist.sem, "structural_em", fake)
    truth = sample(read_bif(bundled_path("bif/asia.bif.gz")), 50, np.random.default_rng(0))
    src = tmp_path / "masked.csv"
    write_csv(mask_mcar(truth, 0.1, np.random.default_rng(1)), src)
    res = CliRunner().invoke(main, ["impute", str(src), "--serial", *flags,
                                    "-o", str(tmp_path / "o.csv")])
    assert isinstance(res.exception, Stop)
    assert seen["cache"].expand_dominated is expand
    assert seen["imputation"] == "marginal" and seen["accumulate"] is False
