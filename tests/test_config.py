"""Config schema: every shipped grid and cluster file validates; errors name file, field
and line; deploy recipes parse (and SLURM job scripts generate when dask-jobqueue is
installed)."""

from __future__ import annotations

import inspect
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from bnsl_dist.exceptions import InvalidConfigError
from bnsl_dist.pipeline.config import (
    ClusterConfig,
    GridConfig,
    load_cluster,
    load_grid,
)
from bnsl_dist.search import get_optimizer, optimizer_names

REPO = Path(__file__).resolve().parents[1]
GRIDS = sorted((REPO / "configs" / "grids").glob("*.yaml"))
CLUSTERS = sorted((REPO / "configs" / "clusters").glob("*.yaml"))

MINIMAL = """\
name: toy
datasets:
  - name: nltcs
    splits: [train]
cache:
  method: independence
  scores_per_variable: 10
algorithms:
  - name: kg
    k: [2]
budget:
  iterations: 10
"""


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "grid.yaml"
    p.write_text(text)
    return p


def test_shipped_files_exist():
    names = {p.stem for p in GRIDS}
    for want in ("asobs-ent-2018", "kmax-2018", "pops-2014", "twilp-2014", "qds-2018",
                 "sem-imputation-2018", "smoke", "quickstart"):
        assert want in names
    assert {p.stem for p in CLUSTERS} >= {"local", "slurm", "kubernetes"}


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: p.stem)
def test_shipped_grid_validates(path):
    grid = load_grid(path)
    assert grid.name == path.stem
    for alg in grid.algorithms:
        assert alg.name in optimizer_names(), alg.name
        assert all(k is None or k >= 1 for k in alg.treewidths(grid))


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: p.stem)
def test_shipped_grid_parameters_fit_registered_optimizers(path):
    """Parameters of every algorithm are accepted by its __init__ (an oracle apart from
    the registry's declaration, which validated them already)."""
    grid = load_grid(path)
    for alg in grid.algorithms:
        sig = inspect.signature(get_optimizer(alg.name).__init__)
        params = dict(alg.params)
        if alg.treewidths(grid) != (None,):
            params["k"] = alg.treewidths(grid)[0]
        sig.bind(None, **params)  # raises TypeError on an unknown parameter


@pytest.mark.parametrize("path", GRIDS, ids=lambda p: p.stem)
def test_shipped_grid_datasets_are_known(path, shared_data, monkeypatch):
    from bnsl_dist.data.registry import _BUNDLED_SPLITS
    from bnsl_dist.datasets.catalog import load_catalog

    monkeypatch.setenv("BNSL_SHARED_DATA", str(shared_data))
    cat = load_catalog()
    for ds in load_grid(path).datasets:
        if ds.path is not None:
            import os

            for split in ds.splits:
                assert Path(os.path.expandvars(ds.path.replace('{split}', split))).is_file(), ds.path
        elif ds.name not in _BUNDLED_SPLITS:
            entry = cat.dataset(ds.name)
            assert set(ds.splits) <= set(entry.spec.splits), (ds.name, ds.splits)


def test_paper_grids_in_full():
    g = load_grid(REPO / "configs/grids/asobs-ent-2018.yaml")
    real = [d for d in g.datasets if not d.name.startswith("r")]
    synth = [d for d in g.datasets if re.fullmatch(r"r\d+", d.name)]
    assert len(real) == 20 and all(d.splits == ("train", "valid", "test") for d in real)
    assert len(synth) == 15
    assert g.cache.method == "independence" and g.cache.seconds_per_variable == 60
    assert g.cache.max_indegree is None and g.budget.seconds == 3600
    assert {a.name for a in g.algorithms} >= {"asobs", "asobs-ent", "ilp", "kg", "kg-ent"}
    assert tuple(g.treewidths) == (2, 4, 5, 6, 8)
    k = load_grid(REPO / "configs/grids/kmax-2018.yaml")
    kreal = [d for d in k.datasets if len(d.splits) == 3]
    assert len(kreal) == 18 and not {"nltcs", "msnbc"} & {d.name for d in kreal}
    assert {"andes-s5000", "diabetes-s5000", "pigs-s5000", "link-s5000",
            "munin-s5000"} <= {d.name for d in k.datasets}


@pytest.mark.parametrize("path", CLUSTERS, ids=lambda p: p.stem)
def test_shipped_cluster_validates(path):
    assert isinstance(load_cluster(path), ClusterConfig)


def test_cache_defaults_are_resolved(tmp_path):
    from bnsl_dist.cache.spec import ITERATION_CACHE_SCORES

    bare = MINIMAL.replace("  scores_per_variable: 10\n", "")
    g = load_grid(_write(tmp_path, bare.replace("iterations: 10", "seconds: 10")))
    assert g.cache.seconds_per_variable == 1.0  # the default applied, recorded
    # an iteration budget: the exact-score default of learn --iterations (reproducible)
    g = load_grid(_write(tmp_path, bare))
    assert g.cache.seconds_per_variable is None
    assert g.cache.scores_per_variable == ITERATION_CACHE_SCORES
    assert GridConfig.model_validate(g.model_dump(), context={"stored": True}) == g


def test_minimal_grid(tmp_path):
    g = load_grid(_write(tmp_path, MINIMAL))
    assert g.algorithms[0].treewidths(g) == (2,)
    assert g.seeds == (0,)
    with pytest.raises(ValueError):  # frozen
        g.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("edit, field, line", [
    (("    k: [2]\n", "    k: [2]\n    bogus: 1\n"), "algorithms[0].bogus", 11),
    (("  iterations: 10\n", "  iterations: 0\n"), "budget.iterations", 12),
    (("  iterations: 10\n", "  seconds: .inf\n"), "budget.seconds", 12),
    (("  scores_per_variable: 10\n", "  scores_per_variable: -1\n"),
     "cache.scores_per_variable", 7),
    (("  - name: kg\n", "  - name: dpp\n"), "algorithms[0].name", 9),
    (("    k: [2]\n", "    k: [2]\n    params: {nope: 1}\n"), "algorithms[0].params", 11),
    (("  method: independence\n", "  method: independence\n  bogus: 1\n"),
     "cache.bogus", 7),
    (("    splits: [train]\n", "    splits: [train, train]\n"), "datasets[0].splits", 4),
    (("    k: [2]\n", "    k: [2, 2]\n"), "algorithms[0].k", 10),
    # YAML booleans where a number is due: pydantic's lax mode read true as 1
    (("  iterations: 10\n", "  iterations: true\n"), "budget.iterations", 12),
    (("    k: [2]\n", "    k: [true]\n"), "algorithms[0].k", 10),
    (("  scores_per_variable: 10\n", "  scores_per_variable: yes\n"),
     "cache.scores_per_variable", 7),
    (("    k: [2]\n", "    k: [2]\n    params: {max_parents: true}\n"),
     "algorithms[0].params", 11),
    (("  method: independence\n", "  method: independence\n  score: bdeu\n  ess: 1.0e+10\n"),
     "cache.ess", 8),  # past MAX_ESS: BDeu's scores lose their precision
])
def test_error_names_file_field_and_line(tmp_path, edit, field, line):
    p = _write(tmp_path, MINIMAL.replace(*edit))
    with pytest.raises(InvalidConfigError) as ei:
        load_grid(p)
    msg = str(ei.value)
    assert str(p) in msg and field in msg and f"line {line}" in msg, msg


@pytest.mark.parametrize("text, needle", [
    (MINIMAL.replace("    k: [2]\n", ""), "needs a treewidth"),
    (MINIMAL.replace("    k: [2]\n", "") + "treewidths: [3, 3]\n", "duplicate treewidths"),
    (MINIMAL + "comparisons:\n  - {a: kg, b: kmax}\n", "'kmax'"),
    (MINIMAL.replace("  iterations: 10\n", "  seconds: 5\n  checkpoints: [1, 10]\n"),
     "go past the budget"),
    (MINIMAL.replace("  iterations: 10\n", "  seconds: 5\n  checkpoints: [2, 1]\n"),
     "strictly increasing"),
    (MINIMAL.replace("  - name: kg\n    k: [2]\n", "  - {name: kg, k: [2]}\n  - {name: kg, k: [3]}\n"),
     "labels used twice"),
    (MINIMAL.replace("    k: [2]\n", "    k: [2]\n    params: {k: 3}\n"), "field 'k'"),
    (MINIMAL.replace("name: kg\n", "name: dpp\n"), "unknown algorithm 'dpp'"),
    (MINIMAL.replace("    k: [2]\n", "    k: [2]\n    params: {max_parent: 3}\n"),
     "has no parameter 'max_parent'; it takes max_parents"),
    (MINIMAL.replace("    k: [2]\n", "    k: [2]\n    params: {max_parents: many}\n"),
     "max_parents: int | None = None, got 'many'"),
    (MINIMAL.replace("  - name: kg\n    k: [2]\n", "  - {name: asobs, k: [2]}\n"),
     "takes no treewidth bound"),
    (MINIMAL.replace("  - name: nltcs\n", "  - name: nltcs-nope\n"), "unknown data set"),
    (MINIMAL.replace("    k: [2]\n", "    k: [2]\n    screening: {epsilon: 0.1, "
                     "root_fraction: 0.5}\n"), "epsilon or root_fraction, not both"),
    (MINIMAL + "kind: sem\n", "needs a 'sem' section"),
])
def test_semantic_errors(tmp_path, text, needle):
    with pytest.raises(InvalidConfigError, match=re.escape(needle)):
        load_grid(_write(tmp_path, text))


@pytest.mark.parametrize("algorithm, needle", [
    ("{name: kg, k: [2], params: {max_parents: -1}}", "max_parents"),
    ("{name: kmax, k: [2], params: {max_parents: -3}}", "max_parents"),
    ("{name: kg-ent, k: [2], params: {direction: lat}}", "'lat'"),
    ("{name: astar, params: {constraints: recursiv}}", "'recursiv'"),
    ("{name: awastar, params: {p: 0}}", "p must be"),
    ("{name: bfbnb, params: {pdb_group_size: 30}}", "pdb_group_size"),
    ("{name: ilp, params: {encoding: magic}}", "'magic'"),
    ("{name: twilp, k: [2], params: {n_greedy: 0}}", "n_greedy"),
    ("{name: dp, params: {max_vars: 0}}", "max_vars"),  # was refused only when run
])
def test_bad_parameter_values_fail_where_the_grid_is_read(tmp_path, algorithm, needle):
    """A value its optimizer refuses (not only a wrong type) is reported with the file,
    the field and the line when the grid is loaded, not by every cell after its data
    and cache are built."""
    text = MINIMAL.replace("  - name: kg\n    k: [2]\n", f"  - {algorithm}\n")
    p = _write(tmp_path, text)
    with pytest.raises(InvalidConfigError) as ei:
        load_grid(p)
    msg = str(ei.value)
    assert str(p) in msg and "algorithms[0].params" in msg and "line 9" in msg, msg
    assert needle in msg, msg
    # the defaults are fine
    good = re.sub(r", params: \{[^}]*\}", "", algorithm)
    load_grid(_write(tmp_path, MINIMAL.replace("  - name: kg\n    k: [2]\n", f"  - {good}\n")))


def test_booleans_only_where_a_field_takes_one():
    """A boolean field still takes YAML's true/false; a numeric one refuses them,
    in grids, clusters and the library's specs alike."""
    from bnsl_dist._spec import make
    from bnsl_dist.search.spec import BudgetSpec

    assert ClusterConfig.model_validate({"kind": "local", "tls": False}).tls is False
    with pytest.raises(ValueError, match="got the boolean true"):
        ClusterConfig.model_validate({"kind": "local", "workers": True})
    with pytest.raises(InvalidConfigError, match="budget.seconds: got the boolean false"):
        make(BudgetSpec, seconds=False, prefix="budget")
    assert make(BudgetSpec, seconds=2).seconds == 2.0  # an int is still a number


def test_bad_yaml_and_missing_file(tmp_path):
    with pytest.raises(InvalidConfigError, match=r"grid.yaml, line \d+: not valid YAML"):
        load_grid(_write(tmp_path, "name: x\ndatasets:\n  - [unclosed\n"))
    with pytest.raises(InvalidConfigError, match="no such file"):
        load_grid(tmp_path / "nope.yaml")
    with pytest.raises(InvalidConfigError, match="mapping at the top level"):
        load_grid(_write(tmp_path, "- 1\n- 2\n"))


@pytest.mark.parametrize("text, line, first", [
    (MINIMAL + "budget:\n  iterations: 1000\n", 13, 11),  # a second section
    (MINIMAL.replace("  iterations: 10\n", "  iterations: 10\n  iterations: 99\n"), 13, 12),
    (MINIMAL.replace("    k: [2]\n", "    k: [2]\n    k: [3]\n"), 11, 10),
    (MINIMAL.replace("    splits: [train]\n", "    splits: [train]\n    name: wine\n"), 5, 3),
])
def test_duplicate_keys_are_errors(tmp_path, text, line, first):
    """YAML keys are unique (YAML 1.2, 3.2.1.1); PyYAML keeps the last of two silently,
    so a grid with two 'budget' sections ran with the second. The error names the file,
    the line of the repeated key and that of the first."""
    p = _write(tmp_path, text)
    with pytest.raises(InvalidConfigError, match="duplicate key") as ei:
        load_grid(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}, line {line}:") and f"line {first}" in msg, msg


def test_merge_keys_may_override(tmp_path):
    """A key given beside a '<<' merge overrides the merged one: not a duplicate."""
    text = MINIMAL.replace("budget:\n  iterations: 10\n",
                           "budget:\n  <<: {iterations: 10, seconds: 5}\n  iterations: 20\n")
    g = load_grid(_write(tmp_path, text))
    assert (g.budget.iterations, g.budget.seconds) == (20, 5.0)


@pytest.mark.parametrize("obj, needle", [
    ({"kind": "address"}, "needs 'address'"),
    ({"kind": "address", "address": "localhost:8786"}, "tcp://"),
    ({"kind": "slurm"}, "'jobqueue' section"),
    ({"kind": "kubernetes"}, "'kubernetes' section"),
    ({"kind": "local", "workers": 0}, "greater than 0"),
])
def test_cluster_errors(obj, needle):
    with pytest.raises(ValueError, match=re.escape(needle)):
        ClusterConfig.model_validate(obj)


def test_grid_model_is_json_roundtrip():
    g = load_grid(REPO / "configs/grids/smoke.yaml")
    assert GridConfig.model_validate_json(g.model_dump_json()) == g


# ---------------------------------------------------------------------------- deploy
DEPLOY = REPO / "deploy"


def test_deploy_manifests_parse():
    files = sorted(DEPLOY.rglob("*.yaml")) + sorted(DEPLOY.rglob("*.yml"))
    assert files
    kinds = set()
    for f in files:
        for doc in yaml.safe_load_all(f.read_text()):
            assert doc is None or isinstance(doc, dict), f
            if doc and "kind" in doc:
                kinds.add(doc["kind"])
    assert {"DaskJob", "DaskCluster"} & kinds


def test_dockerfile_pins_versions():
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.\d+\.\d+-", text, re.M)
    pins = re.findall(r"\b([A-Za-z0-9_.-]+)==([0-9][^\s\\\"']*)", text)
    names = {n.lower() for n, _ in pins}
    for pkg in ("numpy", "numba", "dask", "distributed", "pandas", "pyarrow", "pydantic"):
        assert pkg in names, pkg


def test_shell_scripts_parse():
    scripts = sorted(DEPLOY.rglob("*.sh")) + sorted(DEPLOY.rglob("*.sbatch"))
    assert scripts
    for s in scripts:
        subprocess.run(["bash", "-n", str(s)], check=True)


def _stub(folder: Path, name: str, body: str) -> None:
    f = folder / name
    f.write_text("#!/usr/bin/env bash\n" + body + "\n")
    f.chmod(0o755)


@pytest.mark.parametrize(("grid_rc", "resubmit"), [(3, True), (3, False), (0, False)])
def test_sbatch_script_stops_before_the_time_limit_and_resumes(tmp_path, grid_rc,
                                                              resubmit):
    """grid.sbatch with SLURM, dask and bnsl-dist stubbed: `grid run` gets --stop-at ten
    minutes before the job's end (squeue's %e); exit 3 (cells left) ends the job
    cleanly, resubmitting it with BNSL_RESUBMIT, without tables; exit 0 makes them."""
    if subprocess.run(["date", "-d", "2026-01-01T00:00:00 10 minutes ago"],
                      capture_output=True).returncode != 0:
        pytest.skip("GNU date needed (as on SLURM's Linux hosts)")
    bin_, log = tmp_path / "bin", tmp_path / "calls.log"
    bin_.mkdir()
    _stub(bin_, "squeue", '[[ "$*" == *%l* ]] && echo 11:00 || echo 2026-11-29T23:50:00')
    _stub(bin_, "scontrol", f'echo "   StdOut={tmp_path}/77-7/bnsl-dist-7.out"')
    _stub(bin_, "srun", "exit 0")
    _stub(bin_, "dask", 'while [[ $# -gt 0 ]]; do [[ $1 == --scheduler-file ]] && '
                        'echo "{}" > "$2"; shift; done')
    _stub(bin_, "sbatch", f'echo "sbatch $*" >> {log}')
    _stub(bin_, "bnsl-dist", f'echo "bnsl-dist $*" >> {log}; '
                             f'[[ $2 == run ]] && exit {grid_rc}; exit 0')
    env = {"PATH": f"{bin_}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_NTASKS": "2",
           "SLURM_JOB_NUM_NODES": "1", "SLURM_NTASKS_PER_NODE": "2",
           "BNSL_NO_TLS": "1", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
           **({"BNSL_RESUBMIT": "1"} if resubmit else {})}
    script = DEPLOY / "slurm" / "grid.sbatch"
    r = subprocess.run(["bash", str(script), "g.yaml", str(tmp_path / "res")], env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    calls = log.read_text().splitlines()
    run = [c for c in calls if c.startswith("bnsl-dist grid run")]
    assert len(run) == 1 and run[0].endswith("--stop-at 2026-11-29T23:40:00"), calls
    assert any(c.startswith("bnsl-dist tables") for c in calls) == (grid_rc == 0)
    # resubmitted with this job's shape, time limit and log, not the script's defaults
    assert [c for c in calls if c.startswith("sbatch")] == (
        [f"sbatch --nodes=1 --ntasks=2 --ntasks-per-node=2 --time=11:00 "
         f"--output={tmp_path}/77-7/bnsl-dist-%j.out {script} g.yaml {tmp_path / 'res'}"]
        if resubmit else [])
    assert ("cells left at the time limit" in r.stderr) == (grid_rc == 3)


def test_slurm_job_script_from_cluster_config():
    pytest.importorskip("dask_jobqueue")
    from bnsl_dist.orchestrate.jobqueue import jobqueue_job_script

    cfg = load_cluster(REPO / "configs/clusters/slurm.yaml")
    script = jobqueue_job_script(cfg.kind, cfg.jobqueue, scheduler="tcp://10.0.0.1:8786")
    assert script.startswith("#!/")
    assert "#SBATCH" in script and "--exclusive" in script
    assert "-t 04:00:00" in script or "--time=04:00:00" in script
    assert "tcp://10.0.0.1:8786" in script and "--nthreads 1" in script
