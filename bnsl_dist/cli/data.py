"""`bnsl-dist data`: list, fetch and sample registered data sets and networks."""

from __future__ import annotations

from typing import Any

import click

from bnsl_dist.cli._checks import check_output_dir, check_output_file
from bnsl_dist.cli._common import echo_json

__all__ = ["data_group"]


@click.group("data")
def data_group() -> None:
    """The dataset registry (bnsl_dist/datasets/registry/*.yaml) and network sampling."""


@data_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_cmd(as_json: bool) -> None:
    """List registered datasets and networks."""
    from bnsl_dist.datasets.catalog import load_catalog

    cat = load_catalog()
    rows: list[dict[str, Any]] = []
    for name, e in sorted(cat.datasets.items()):
        spec = e.spec
        what = f"files ({e.config.stem})" if spec.kind == "files" else f"sampled from {spec.network}"
        # a sampled set has its network's variables
        n_vars = (getattr(spec, "n_vars", None) if spec.kind == "files"
                  else cat.networks[spec.network].spec.n_vars)
        rows.append({"name": name, "type": "dataset", "kind": what,
                     "splits": list(spec.splits), "n_vars": n_vars})
    for name, e in sorted(cat.networks.items()):
        spec = e.spec
        rows.append({"name": name, "type": "network", "kind": spec.kind, "splits": [],
                     "n_vars": spec.n_vars})
    if as_json:
        echo_json(rows)
        return
    click.echo(f"{'name':<16} {'type':<8} {'n_vars':>7}  {'kind':<28} splits")
    for r in rows:
        nv = "" if r["n_vars"] is None else str(r["n_vars"])
        click.echo(f"{r['name']:<16} {r['type']:<8} {nv:>7}  {r['kind']:<28} "
                   f"{','.join(r['splits'])}")


@data_group.command("fetch")
@click.argument("name")
@click.option("--mirror", type=click.Path(file_okay=False, exists=True),
              help="Local folder with the mirror layout (e.g. shared/data) to copy from.")
@click.option("--root", type=click.Path(file_okay=False),
              help="Data root (default: $BNSL_DATA or the user cache folder).")
def fetch_cmd(name: str, mirror: str | None, root: str | None) -> None:
    """Fetch (and verify) or materialise NAME (a dataset, NAME/SPLIT, or a network)."""
    from bnsl_dist.datasets.catalog import data_root, fetch

    check_output_dir(root or data_root(), "--root" if root else "the data root ($BNSL_DATA)")
    for p in fetch(name, mirror, root=root):
        click.echo(str(p))


@data_group.command("sample")
@click.argument("network")
@click.option("-n", "--n-samples", "n_samples", type=click.IntRange(min=1), required=True,
              help="Number of rows.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False), required=True,
              help="CSV file to write (.gz compresses); written atomically.")
@click.option("--codes", "codes", is_flag=True,
              help="Write integer state codes instead of state labels.")
def sample_cmd(network: str, n_samples: int, seed: int, output: str, codes: bool) -> None:
    """Forward-sample N rows from NETWORK (a BIF file, or a registered network name)."""
    import numpy as np

    from bnsl_dist.cli._inputs import load_network_arg
    from bnsl_dist.data.io import write_csv
    from bnsl_dist.model.sampling import sample

    check_output_file(output, "--output")
    net = load_network_arg(network)  # a misspelt file is named as one
    data = sample(net, n_samples, np.random.default_rng(seed))
    write_csv(data, output, labels=not codes)
    click.echo(f"{output}: {data.n_samples} rows x {data.n_vars} variables")
