"""The dataset catalog: names in ``registry/*.yaml`` (package data) -> files and recipes.

Each YAML file is a collection with optional download ``sources``, ``networks`` and
``datasets``:

* a **files** dataset lists, per split, its path in the mirror layout (e.g.
  ``twenty/nltcs/train.csv.gz``) and the SHA-256 of the uncompressed content;
* a **bif** network is a file like the above; a **random** network is a recipe for
  :func:`~bnsl_dist.model.generate.random_network` (parameters and seed);
* a **sampled** dataset names a network and, per split, ``n_samples`` and ``seed``.

Networks and datasets are two name spaces (``r0`` is both the random network and the
data sampled from it). The YAML files ship inside the package and are read through
:mod:`importlib.resources` (``$BNSL_DATASETS`` names another folder). Files live under
a data root: ``$BNSL_DATA``, by default the user cache folder. :func:`fetch` downloads
a file with pooch (or copies it from a local mirror with the same layout,
``$BNSL_MIRROR`` by default), checks its SHA-256 and writes it atomically;
:func:`load_registered` materialises recipes deterministically and caches the generated
data under ``<root>/generated/`` as Parquet, keyed by a hash of the recipe. The staged
benchmark data (``shared/data``) is found only through :func:`shared_data_dir`: an
argument or ``$BNSL_SHARED_DATA``, never a path relative to the checkout.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np

from bnsl_dist._io import atomic_write_bytes, open_text
from bnsl_dist._json import json_digest
from bnsl_dist.data.dataset import CategoricalData
from bnsl_dist.data.io import read_data, read_dataset
from bnsl_dist.data.registry import bundled_path
from bnsl_dist.datasets.schema import (
    BifNetwork,
    Catalog,
    Entry,
    FilesDataset,
    Located,
    SampledDataset,
    Source,
    catalog_dir,
    load_catalog,
)
from bnsl_dist.exceptions import DataError
from bnsl_dist.model.bif import read_bif, write_bif
from bnsl_dist.model.generate import random_network
from bnsl_dist.model.network import BayesianNetwork
from bnsl_dist.model.sampling import sample

__all__ = ["Catalog", "SampledDataset", "load_catalog", "catalog_dir", "data_root", "fetch",
           "load_registered", "load_network", "shared_data_dir", "RECIPE_VERSION"]

#: Bumped whenever the generator or the sampler changes what a seed produces.
RECIPE_VERSION = 1


# ---------------------------------------------------------------------------- files
def data_root() -> Path:
    """``$BNSL_DATA``, or the user cache folder of bnsl_dist."""
    env = os.environ.get("BNSL_DATA")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("bnsl_dist"))


def shared_data_dir(path: str | os.PathLike[str] | None = None) -> Path | None:
    """The staged benchmark data (``shared/data``): ``path``, else ``$BNSL_SHARED_DATA``,
    else ``$BNSL_MIRROR`` (same layout); ``None`` when none is set or it is no folder.

    Never guessed from the location of the package or of a checkout.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> shared_data_dir(d).is_dir(), shared_data_dir(d + "/missing")
    (True, None)
    """
    cand = path if path is not None else (os.environ.get("BNSL_SHARED_DATA")
                                          or os.environ.get("BNSL_MIRROR"))
    return Path(cand) if cand and Path(cand).is_dir() else None


def _mirror(mirror: str | os.PathLike[str] | None) -> Path | None:
    m = mirror if mirror is not None else os.environ.get("BNSL_MIRROR")
    return Path(m) if m else None


def _uncompressed(raw: bytes) -> bytes:
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


#: files already verified in this process: (path, size, mtime_ns, sha256)
_VERIFIED: set[tuple[str, int, int, str]] = set()


def _sha_ok(path: Path, sha: str) -> bool:
    """Whether the (uncompressed) content of ``path`` has this SHA-256; a file verified
    before in this process is not read again while its size and mtime are unchanged."""
    try:
        st = path.stat()
        stamp = (str(path.resolve()), st.st_size, st.st_mtime_ns, sha)
        if stamp in _VERIFIED:
            return True
        ok = hashlib.sha256(_uncompressed(path.read_bytes())).hexdigest() == sha
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    if ok:
        _VERIFIED.add(stamp)
    return ok


def _urls(name: str, split: str | None, spec: Located, sources: tuple[Source, ...]) -> list[str]:
    if spec.url:
        return [spec.url]
    out = []
    for s in sources:
        sp = s.split_names.get(split, split) if split is not None else ""
        out.append(s.url.format(name=name, split=sp, file=Path(spec.path).name))
    return out


def _download(urls: list[str], what: str) -> tuple[bytes, str]:
    """The bytes of the first URL that answers, and that URL: ``http(s)://`` and
    ``ftp://`` through pooch's downloaders, ``file://`` read directly."""
    import pooch

    errors = []
    for url in urls:
        scheme = urllib.parse.urlsplit(url).scheme
        try:
            if scheme == "file":
                return Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path)
                            ).read_bytes(), url
            if scheme in ("http", "https"):
                download = pooch.HTTPDownloader(progressbar=False, timeout=120)
            elif scheme == "ftp":
                download = pooch.FTPDownloader(progressbar=False, timeout=120)
            else:
                raise ValueError(f"unsupported URL scheme {scheme!r}")
            buf = io.BytesIO()
            download(url, buf, None)
            return buf.getvalue(), url
        except (OSError, ValueError) as exc:  # requests' errors are OSErrors
            errors.append(f"{url}: {exc}")
    if not errors:
        raise DataError(f"{what}: no download source registered")
    raise DataError(f"{what}: download failed: " + "; ".join(errors))


def _fetch_file(name: str, split: str | None, spec: Located, sources: tuple[Source, ...],
                root: Path, mirror: Path | None, local: Path | None = None) -> Path:
    """Ensure ``root/spec.path`` holds the verified file; return its path.

    The content comes from ``local`` (a file shipped with the package), else the mirror,
    else the registered URLs.
    """
    target = root / spec.path
    if target.exists() and _sha_ok(target, spec.sha256):
        return target
    what = name if split is None else f"{name}/{split}"
    if local is not None:
        raw, origin = local.read_bytes(), str(local)
    elif mirror is not None:
        src = mirror / spec.path
        try:
            raw, origin = src.read_bytes(), str(src)
        except OSError:
            raise DataError(f"{what}: not in the mirror", path=str(src)) from None
    else:
        raw, origin = _download(_urls(name, split, spec, sources), what)
    try:
        content = _uncompressed(raw)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DataError(f"{what}: corrupt gzip data: {exc}", path=origin) from None
    got = hashlib.sha256(content).hexdigest()
    if got != spec.sha256:
        raise DataError(f"{what}: SHA-256 mismatch (expected {spec.sha256}, got {got}); "
                        "nothing written", path=origin)
    atomic_write_bytes(target, content)  # gzip-compressed again when the name ends in .gz
    return target


def _bundled_copy(name: str, spec: BifNetwork) -> Path | None:
    try:
        p = bundled_path(f"bif/{name}.bif.gz")
    except DataError:
        return None
    return p if _sha_ok(p, spec.sha256) else None


# ---------------------------------------------------------------------------- recipes
def _network_key(entry: Entry) -> dict[str, Any]:
    return {"version": RECIPE_VERSION, **entry.spec.model_dump(exclude={"title", "url"})}


def _write_parquet(data: CategoricalData, path: Path, meta: dict[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({name: data.codes[:, j] for j, name in enumerate(data.names)})
    info = {"arities": data.arities.tolist(), "states": data.states, "recipe": meta}
    table = table.replace_schema_metadata({b"bnsl_dist": json.dumps(info).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    atomic_write_bytes(path, buf.getvalue())


def _read_parquet(path: Path) -> CategoricalData | None:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
        info = json.loads(table.schema.metadata[b"bnsl_dist"])
        codes = np.column_stack([c.to_numpy() for c in table.columns])
        return CategoricalData.from_array(codes, arities=info["arities"],
                                          names=table.column_names, states=info["states"],
                                          source=str(path))
    except Exception:  # unreadable or foreign cache file: the caller regenerates it
        return None


def load_network(name: str, *, root: str | os.PathLike[str] | None = None,
                 mirror: str | os.PathLike[str] | None = None) -> BayesianNetwork:
    """The registered network ``name`` (fetched or generated, then cached)."""
    entry = load_catalog().network(name)
    return _network(entry, Path(root) if root is not None else data_root(), _mirror(mirror))


def _network(entry: Entry, root: Path, mirror: Path | None) -> BayesianNetwork:
    spec = entry.spec
    if isinstance(spec, BifNetwork):
        local = root / spec.path
        if not (local.exists() and _sha_ok(local, spec.sha256)):
            local = _bundled_copy(entry.name, spec) or _fetch_file(
                entry.name, None, spec, entry.sources, root, mirror)
        return read_bif(local)
    path = root / "generated" / "networks" / f"{entry.name}-{json_digest(_network_key(entry), 16)}.bif.gz"
    if path.exists():
        try:
            return read_bif(path)
        except DataError:
            pass  # a damaged cache file: generate again
    net = random_network(spec.n_vars, spec.max_indegree, tuple(spec.arity_range),
                         spec.concentration, np.random.default_rng(spec.seed),
                         spec.max_parent_configs)
    write_bif(net, path, name=entry.name)
    return net


def load_registered(name: str, split: str = "train", *,
                    root: str | os.PathLike[str] | None = None,
                    mirror: str | os.PathLike[str] | None = None) -> CategoricalData:
    """One split of a registered dataset, fetched or materialised as needed.

    Parameters
    ----------
    name : str
        A dataset name (``bnsl-dist data list``), e.g. ``"nltcs"``, ``"alarm-5000"``, ``"r0"``.
    split : str
        ``"train"`` (default), ``"valid"``, ``"test"``, as the dataset registers them.
    root : path, optional
        Data root (default :func:`data_root`).
    mirror : path, optional
        Local folder with the mirror layout to copy missing files from (default
        ``$BNSL_MIRROR``; otherwise they are downloaded).

    Returns
    -------
    CategoricalData
        Sampled data are identical for identical recipes, on any machine.

    Raises
    ------
    DataError
        Unknown name or split, download or checksum failure.
    """
    cat = load_catalog()
    entry = cat.dataset(name)
    spec = entry.spec
    if split not in spec.splits:
        raise DataError(f"dataset {name!r} has no split {split!r}; it has {sorted(spec.splits)}")
    r = Path(root) if root is not None else data_root()
    m = _mirror(mirror)
    if isinstance(spec, FilesDataset):
        if spec.arity is not None:
            path = _fetch_file(name, split, spec.splits[split], entry.sources, r, m)
            width = _width(path)
            if spec.n_vars is not None and width != spec.n_vars:
                raise DataError(f"{width} columns, but the registry says {spec.n_vars}",
                                path=str(path), line=1)
            return read_data(path, arities=[spec.arity] * width)
        paths = {s: _fetch_file(name, s, f, entry.sources, r, m) for s, f in spec.splits.items()}
        return read_dataset(name, paths)[split]
    net_entry = cat.network(spec.network)
    recipe = {"network": _network_key(net_entry), **spec.splits[split].model_dump()}
    path = r / "generated" / name / f"{split}-{json_digest(recipe, 16)}.parquet"
    if path.exists():
        cached = _read_parquet(path)
        if cached is not None:
            return cached
    net = _network(net_entry, r, m)
    s = spec.splits[split]
    data = sample(net, s.n_samples, np.random.default_rng(s.seed))
    _write_parquet(data, path, recipe)
    return CategoricalData(data.codes, data.arities, data.names, data.states, None, str(path))


def _width(path: Path) -> int:
    with open_text(path) as fh:
        first = fh.readline()
    return len(first.split(",")) if "," in first else len(first.split())


def fetch(name: str, mirror: str | os.PathLike[str] | None = None, *,
          root: str | os.PathLike[str] | None = None) -> list[Path]:
    """Make a registered dataset (all splits) or network available under the data root.

    Files are copied from ``mirror`` (same layout; default ``$BNSL_MIRROR``) or
    downloaded, their SHA-256 checked, and written atomically: on a mismatch nothing
    is written. Recipes (sampled data, random networks) are materialised. ``NAME/SPLIT``
    fetches one split. Datasets are looked up before networks.

    Returns
    -------
    list of Path
        The files now present (for recipes, the cached Parquet / BIF files).

    Raises
    ------
    DataError
        Unknown name, download failure, checksum mismatch.
    """
    cat = load_catalog()
    r = Path(root) if root is not None else data_root()
    m = _mirror(mirror)
    base, _, only = name.partition("/")
    if base in cat.datasets:
        entry = cat.datasets[base]
        splits = [only] if only else list(entry.spec.splits)
        for s in splits:
            if s not in entry.spec.splits:
                raise DataError(f"dataset {base!r} has no split {s!r}")
        if isinstance(entry.spec, FilesDataset):
            return [_fetch_file(base, s, entry.spec.splits[s], entry.sources, r, m)
                    for s in splits]
        out = []
        for s in splits:
            d = load_registered(base, s, root=r, mirror=m)
            out.append(Path(d.source) if d.source else r)
        return out
    if base in cat.networks and not only:
        entry = cat.networks[base]
        if isinstance(entry.spec, BifNetwork):
            return [_fetch_file(base, None, entry.spec, entry.sources, r, m,
                                _bundled_copy(base, entry.spec))]
        _network(entry, r, m)
        return sorted((r / "generated" / "networks").glob(
            f"{base}-{json_digest(_network_key(entry), 16)}.bif.gz"))
    raise DataError(f"no registered dataset or network {name!r}; run `bnsl-dist data list`")
