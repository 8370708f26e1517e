"""The dataset registry: shipped YAML against MANIFEST.tsv and the README, fetching from a
local mirror with checksums, deterministic recipes cached as Parquet, bad YAML named by
file and field, and the `bnsl-dist data` commands."""

from __future__ import annotations

import gzip
import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml
from click.testing import CliRunner

from bnsl_dist.cli import main
from bnsl_dist.data import bundled_path, read_data
from bnsl_dist.datasets.catalog import (
    data_root,
    fetch,
    load_network,
    load_registered,
)
from bnsl_dist.datasets.schema import (
    FilesDataset,
    RandomNetwork,
    SampledDataset,
    catalog_dir,
    load_catalog,
)
from bnsl_dist.exceptions import DataError, InvalidConfigError
from bnsl_dist.model import read_bif
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.sampling import sample

TWENTY = ["nltcs", "msnbc", "kdd", "plants", "baudio", "jester", "bnetflix", "accidents",
          "tretail", "pumsb_star", "dna", "kosarek", "msweb", "book", "tmovie", "cwebkb",
          "cr52", "c20ng", "bbc", "ad"]


@pytest.fixture()
def root(data_root):
    return data_root


def _manifest(shared: Path) -> dict[str, str]:
    lines = (shared / "MANIFEST.tsv").read_text().splitlines()[1:]
    return {ln.split("\t")[0]: ln.split("\t")[3] for ln in lines}


def _sha_of(path: Path) -> str:
    return hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()


# ------------------------------------------------------------------ shipped registry
def test_shipped_yaml_validates_and_covers_the_benchmarks():
    cat = load_catalog()
    assert all(n in cat.datasets for n in TWENTY)
    for n in TWENTY:
        spec = cat.datasets[n].spec
        assert isinstance(spec, FilesDataset) and set(spec.splits) == {"train", "valid", "test"}
        assert all(f.path == f"twenty/{n}/{s}.csv.gz" for s, f in spec.splits.items())
        assert any("{name}" in s.url for s in cat.datasets[n].sources)
    for i in range(15):
        net = cat.networks[f"r{i}"].spec
        assert isinstance(net, RandomNetwork)
        assert net.n_vars == (2000 if i < 5 else 4000 if i < 10 else 10000)
        data = cat.datasets[f"r{i}"].spec
        assert isinstance(data, SampledDataset) and data.network == f"r{i}"
        assert data.splits["train"].n_samples == 5000
    seeds = [cat.networks[f"r{i}"].spec.seed for i in range(15)]
    assert len(set(seeds)) == 15
    for net in ["andes", "diabetes", "pigs", "link", "munin"]:
        assert cat.datasets[f"{net}-s5000"].spec.splits["train"].n_samples == 5000


def test_registry_checksums_and_counts_match_manifest_and_readme(shared_data):
    man = _manifest(shared_data)
    readme = (shared_data / "README.md").read_text()
    cat = load_catalog()
    n_files = 0
    for e in list(cat.datasets.values()) + list(cat.networks.values()):
        specs = (e.spec.splits.values() if isinstance(e.spec, FilesDataset)
                 else [e.spec] if hasattr(e.spec, "sha256") else [])
        for f in specs:
            assert man[f.path] == f.sha256, f.path
            n_files += 1
    assert n_files == 60 + 24
    for name, nv, tr, va, te in re.findall(
            r"^\| `twenty/(\w+)/` \| [^|]+ \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|", readme, re.M):
        spec = cat.datasets[name].spec
        assert spec.n_vars == int(nv)
        assert [spec.splits[s].n_rows for s in ("train", "valid", "test")] == [
            int(tr), int(va), int(te)]
    for name, n, a, p in re.findall(r"^\| `bif/(\w+)\.bif\.gz` \| (\d+) \| (\d+) \| (\d+) \|",
                                    readme, re.M):
        spec = cat.networks[name].spec
        assert (spec.n_vars, spec.n_arcs, spec.n_parameters) == (int(n), int(a), int(p))


def test_default_locations(monkeypatch, tmp_path):
    monkeypatch.setenv("BNSL_DATA", str(tmp_path / "x"))
    assert data_root() == tmp_path / "x"
    monkeypatch.delenv("BNSL_DATA")
    assert "bnsl_dist" in str(data_root())
    assert catalog_dir().name == "registry"  # package data, not a path in the checkout
    assert "configs" not in str(catalog_dir())


# ------------------------------------------------------------------ fetching
def test_fetch_from_mirror_verifies_and_loads(shared_data, root):
    paths = fetch("nltcs", mirror=shared_data)
    assert [p.relative_to(root).as_posix() for p in paths] == [
        f"twenty/nltcs/{s}.csv.gz" for s in ("train", "valid", "test")]
    man = _manifest(shared_data)
    for p in paths:
        assert _sha_of(p) == man[p.relative_to(root).as_posix()]
    d = load_registered("nltcs", "test")
    ref = read_data(shared_data / "twenty" / "nltcs" / "test.csv.gz")
    np.testing.assert_array_equal(d.codes, ref.codes)
    assert d.arities.tolist() == [2] * 16
    # already present and valid: nothing is read from the mirror again
    assert fetch("nltcs/test", mirror=root / "nowhere") == [paths[2]]


def test_load_registered_fetches_missing_files_from_the_mirror(shared_data, root):
    d = load_registered("dna", "valid", mirror=shared_data)
    assert (d.n_samples, d.n_vars) == (400, 180)
    assert (root / "twenty" / "dna" / "valid.csv.gz").exists()


def _corrupt_mirror(shared: Path, tmp: Path) -> Path:
    mirror = tmp / "mirror"
    (mirror / "twenty" / "nltcs").mkdir(parents=True)
    for s in ("train", "valid"):
        shutil.copy(shared / "twenty" / "nltcs" / f"{s}.csv.gz", mirror / "twenty" / "nltcs")
    text = gzip.decompress((shared / "twenty" / "nltcs" / "test.csv.gz").read_bytes())
    bad = text.replace(b"1", b"0", 1)
    (mirror / "twenty" / "nltcs" / "test.csv.gz").write_bytes(gzip.compress(bad))
    return mirror


def test_checksum_mismatch_writes_nothing(shared_data, root, tmp_path):
    mirror = _corrupt_mirror(shared_data, tmp_path)
    with pytest.raises(DataError, match="SHA-256 mismatch"):
        fetch("nltcs/test", mirror=mirror)
    assert not root.exists() or not any(p.is_file() for p in root.rglob("*"))
    with pytest.raises(DataError, match="not in the mirror"):
        fetch("plants/test", mirror=mirror)


def test_fetch_network_uses_bundled_copy_then_mirror(shared_data, root):
    (p,) = fetch("asia")  # bundled with the package: no mirror, no download needed
    assert _sha_of(p) == _manifest(shared_data)["bif/asia.bif.gz"]
    (q,) = fetch("water", mirror=shared_data)
    net = read_bif(q)
    assert (net.n_vars, net.dag.n_arcs) == (32, 66)
    with pytest.raises(DataError, match="no registered dataset or network"):
        fetch("no-such-thing")
    with pytest.raises(DataError, match="no split"):
        load_registered("nltcs", "holdout")


# ------------------------------------------------------------------ recipes
def test_sampled_recipe_is_deterministic_and_cached(root):
    d = load_registered("asia-s5000")
    seed = load_catalog().datasets["asia-s5000"].spec.splits["train"].seed
    ref = sample(read_bif(bundled_path("bif/asia.bif.gz")), 5000, np.random.default_rng(seed))
    np.testing.assert_array_equal(d.codes, ref.codes)
    cached = sorted((root / "generated" / "asia-s5000").glob("train-*.parquet"))
    assert len(cached) == 1
    again = load_registered("asia-s5000")
    assert again.source == str(cached[0])
    np.testing.assert_array_equal(again.codes, ref.codes)
    assert again.states == ref.states and again.names == ref.names
    test = load_registered("asia-s5000", "test")
    assert (test.codes != d.codes).any()


def _mini_catalog(tmp: Path, body: str) -> Path:
    d = tmp / "cfg"
    d.mkdir(exist_ok=True)
    (d / "mini.yaml").write_text(body)
    return d


MINI = """
collection: mini
networks:
  tiny: {kind: random, n_vars: 60, max_indegree: 3, arity_range: [2, 3], seed: 42}
datasets:
  tiny:
    kind: sampled
    network: tiny
    splits:
      train: {n_samples: 300, seed: 7}
"""


def test_random_recipe_materialises_network_and_data(tmp_path, root, monkeypatch):
    monkeypatch.setenv("BNSL_DATASETS", str(_mini_catalog(tmp_path, MINI)))
    expected_net = random_network(60, 3, (2, 3), 1.0, np.random.default_rng(42))
    expected = sample(expected_net, 300, np.random.default_rng(7))
    d = load_registered("tiny")
    np.testing.assert_array_equal(d.codes, expected.codes)
    net = load_network("tiny")
    assert net.dag == expected_net.dag
    assert all(np.array_equal(a, b) for a, b in zip(net.cpts, expected_net.cpts, strict=True))
    assert len(list((root / "generated" / "networks").glob("tiny-*.bif.gz"))) == 1
    # a damaged cache file is regenerated, not trusted
    (cached,) = (root / "generated" / "tiny").glob("train-*.parquet")
    cached.write_bytes(b"garbage")
    np.testing.assert_array_equal(load_registered("tiny").codes, expected.codes)
    # a changed recipe gets a new cache file
    (tmp_path / "cfg" / "mini.yaml").write_text(MINI.replace("seed: 7", "seed: 8"))
    other = load_registered("tiny")
    assert (other.codes != expected.codes).any()
    assert len(list((root / "generated" / "tiny").glob("train-*.parquet"))) == 2


# ------------------------------------------------------------------ bad YAML
BAD_YAML = [
    ("collection: x\nextra_field: 1\n", "extra_field"),
    ("collection: x\ndatasets:\n  a: {kind: sampled, network: n, splits: {train: "
     "{n_samples: 0, seed: 1}}}\nnetworks:\n  n: {kind: random, n_vars: 3, max_indegree: 1, "
     "seed: 0}\n", "datasets.a.sampled.splits.train.n_samples"),
    ("collection: x\nnetworks:\n  n: {kind: bif, path: a.bif, sha256: xyz}\n",
     "networks.n.bif.sha256"),
    ("collection: x\nnetworks:\n  n: {kind: bif, path: ../a.bif, sha256: " + "0" * 64 + "}\n",
     "networks.n.bif.path"),
    ("collection: x\nnetworks:\n  n: {kind: magic}\n", "networks.n"),
    ("collection: x\nnetworks:\n  n: {kind: random, n_vars: 3, max_indegree: 1, seed: 0, "
     "arity_range: [4, 2]}\n", "networks.n.random.arity_range"),
    ("collection: x\ndatasets:\n  a: {kind: sampled, network: nope, splits: {train: "
     "{n_samples: 5, seed: 1}}}\n", "datasets.a.network"),
    ("collection: x\nsources:\n  - url: https://example.org/static.csv\n", "sources.0.url"),
    ("collection: x\nnetworks:\n  n: {kind: random, n_vars: 3, max_indegree: 1, seed: yes}\n",
     "networks.n.random.seed"),  # YAML's yes: pydantic read it as seed 1
    ("collection: [unclosed\n", "line"),
    ("- just a list\n", "mapping"),
    # a key given twice in one file (the last one was taken, the first silently lost)
    ("collection: x\nnetworks:\n  n: {kind: random, n_vars: 3, max_indegree: 1, seed: 0}\n"
     "  n: {kind: random, n_vars: 9, max_indegree: 1, seed: 0}\n",
     "line 4: invalid YAML: duplicate key 'n' (first on line 3)"),
    ("collection: x\nnetworks:\n  n: {kind: random, n_vars: 3, max_indegree: 1, seed: 0, "
     "seed: 5}\n", "line 3: invalid YAML: duplicate key 'seed'"),
]


@pytest.mark.parametrize("text,field", BAD_YAML)
def test_bad_yaml_names_file_and_field(tmp_path, text, field):
    d = _mini_catalog(tmp_path, text)
    with pytest.raises(InvalidConfigError) as info:
        load_catalog(d)
    msg = str(info.value)
    assert str(d / "mini.yaml") in msg and field in msg


def test_duplicate_names_across_files(tmp_path):
    d = _mini_catalog(tmp_path, MINI)
    (d / "again.yaml").write_text(MINI.replace("collection: mini", "collection: again"))
    with pytest.raises(InvalidConfigError, match=r"mini\.yaml: field 'networks\.tiny': already"):
        load_catalog(d)


def test_every_shipped_file_is_valid_yaml_with_known_keys():
    files = [f for f in catalog_dir().iterdir() if f.name.endswith(".yaml")]
    assert len(files) == 3
    for f in files:
        raw = yaml.safe_load(f.read_text())
        assert set(raw) <= {"collection", "description", "citation", "sources", "networks",
                            "datasets"}
    load_catalog(catalog_dir())


# ------------------------------------------------------------------ CLI
def test_cli_list_fetch_and_mismatch(shared_data, root, tmp_path):
    runner = CliRunner()
    res = runner.invoke(main, ["data", "list"])
    assert res.exit_code == 0
    names = {ln.split()[0] for ln in res.output.splitlines()[1:]}
    assert {"nltcs", "r0", "r14", "alarm", "munin-s5000"} <= names
    res = runner.invoke(main, ["data", "fetch", "plants/valid", "--mirror", str(shared_data)])
    assert res.exit_code == 0, res.output
    assert (root / "twenty" / "plants" / "valid.csv.gz").exists()
    mirror = _corrupt_mirror(shared_data, tmp_path)
    res = runner.invoke(main, ["data", "fetch", "nltcs", "--mirror", str(mirror)])
    assert res.exit_code == 2
    assert "SHA-256 mismatch" in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not (root / "twenty" / "nltcs" / "test.csv.gz").exists()
    assert [p.name for p in (root / "twenty" / "nltcs").iterdir()] in (
        ["train.csv.gz", "valid.csv.gz"], ["valid.csv.gz", "train.csv.gz"])


def test_cli_sample(tmp_path, root):
    runner = CliRunner()
    bif = bundled_path("bif/sachs.bif.gz")
    outs = []
    for name in ("a.csv", "b.csv"):
        res = runner.invoke(main, ["data", "sample", str(bif), "-n", "700", "--seed", "3",
                                   "-o", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    d = read_data(tmp_path / "a.csv")
    net = read_bif(bif)
    ref = sample(net, 700, np.random.default_rng(3))
    assert d.names == net.names and d.n_samples == 700
    for j in range(net.n_vars):  # labels map back to the sampled codes
        labels = np.array(net.states[j])[ref.codes[:, j]]
        assert (np.array(d.states[j])[d.codes[:, j]] == labels).all()
    res = runner.invoke(main, ["data", "sample", "cancer", "-n", "5", "--codes",
                               "-o", str(tmp_path / "c.csv")])
    assert res.exit_code == 0 and (tmp_path / "c.csv").read_text().count("\n") == 6
    res = runner.invoke(main, ["data", "sample", str(tmp_path / "none.bif"), "-n", "5",
                               "-o", str(tmp_path / "d.csv")])
    assert res.exit_code == 2 and not (tmp_path / "d.csv").exists()
    # a misspelt file is named as a file, as by infer (was "no registered network")
    assert f"{tmp_path / 'none.bif'}: no such file" in res.output


@pytest.fixture()
def http_dir(tmp_path):
    """A folder served over HTTP on the loopback interface (offline)."""
    import functools
    import http.server
    import threading

    folder = tmp_path / "served"
    folder.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_download_sources_in_order_with_checksum(tmp_path, root, monkeypatch, http_dir):
    """The download path, offline: a loopback HTTP server (through pooch) and file://
    URLs; a failing source falls through to the next."""
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    src, base = http_dir
    content = b"0,1\n1,1\n0,0\n"
    (src / "toy.ts.data").write_bytes(content)
    sha = hashlib.sha256(content).hexdigest()
    body = f"""
collection: dl
sources:
  - url: "{base}/missing/{{name}}.{{split}}.data"
  - url: "file://{tmp_path}/missing/{{name}}.{{split}}.data"
  - url: "{base}/{{name}}.{{split}}.data"
    split_names: {{train: ts}}
datasets:
  toy:
    kind: files
    n_vars: 2
    arity: 3
    splits:
      train: {{path: toy/train.csv.gz, sha256: {sha}}}
      test: {{path: toy/test.csv.gz, sha256: "{"0" * 64}"}}
"""
    monkeypatch.setenv("BNSL_DATASETS", str(_mini_catalog(tmp_path, body)))
    d = load_registered("toy")
    np.testing.assert_array_equal(d.codes, [[0, 1], [1, 1], [0, 0]])
    assert d.arities.tolist() == [3, 3]  # the declared arity, not max + 1
    assert gzip.decompress((root / "toy" / "train.csv.gz").read_bytes()) == content
    with pytest.raises(DataError, match="download failed"):
        fetch("toy/test")
    (src / "toy.test.data").write_bytes(content)
    with pytest.raises(DataError, match="SHA-256 mismatch"):
        fetch("toy/test")
    assert not (root / "toy" / "test.csv.gz").exists()


def test_shipped_urls_follow_the_documented_sources():
    from bnsl_dist.datasets.catalog import _urls

    e = load_catalog().datasets["nltcs"]
    assert _urls("nltcs", "train", e.spec.splits["train"], e.sources) == [
        "https://raw.githubusercontent.com/nicoladimauro/dcsn/"
        "dd0f7a43f5fededeeaf37905f48f918a25b8c2c7/data/generative/nltcs.ts.data.gz",
        "https://raw.githubusercontent.com/UCLA-StarAI/Density-Estimation-Datasets/"
        "37d53c1a8ba488d0a39e8c64bd3387577080b143/datasets/nltcs/nltcs.train.data"]
    n = load_catalog().networks["munin"]
    assert _urls("munin", None, n.spec, n.sources) == [
        "https://raw.githubusercontent.com/pgmpy/pgmpy/94105f10d4177e4420e2fa6766d819c19aa6b66e"
        "/pgmpy/utils/example_models/munin.bif.gz"]


def test_verified_files_are_not_rehashed_until_they_change(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from bnsl_dist.datasets import catalog

    f = tmp_path / "d.csv"
    f.write_bytes(b"a,b\n0,1\n")
    sha = hashlib.sha256(b"a,b\n0,1\n").hexdigest()
    assert catalog._sha_ok(f, sha) and not catalog._sha_ok(f, "0" * 64)
    reads = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    assert catalog._sha_ok(f, sha) and reads == []  # verified before: not read again
    f.write_bytes(b"a,b\n1,1\n")  # same size, new content and mtime
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert not catalog._sha_ok(f, sha) and reads == [f]


def test_data_list_gives_sampled_sets_their_networks_variables():
    """`data list` left n_vars blank for a set sampled from a network; it is the number
    of the network's variables (read from the bundled BIF files here)."""
    import json

    from click.testing import CliRunner

    from bnsl_dist.cli import main
    from bnsl_dist.data.registry import bundled_path
    from bnsl_dist.model.bif import read_bif

    res = CliRunner().invoke(main, ["data", "list", "--json"])
    assert res.exit_code == 0, res.output
    rows = {r["name"]: r for r in json.loads(res.output)}
    checked = 0
    for name, r in rows.items():
        net = r["kind"].removeprefix("sampled from ")
        if r["type"] == "dataset" and net != r["kind"]:
            try:
                path = bundled_path(f"bif/{net}.bif.gz")
            except Exception:  # noqa: BLE001 - a network not bundled: not checked here
                continue
            assert r["n_vars"] == read_bif(path).n_vars, name
            checked += 1
    assert checked >= 5
