"""`bnsl-dist cluster start | stop`: a long-lived local Dask cluster that later commands
reuse with ``--scheduler-file DIR/scheduler.json`` (no cluster start, warm workers)."""

from __future__ import annotations

import click

from bnsl_dist.cli._common import echo_json

__all__ = ["cluster_group"]

DEFAULT_DIR = "~/.bnsl-dist"


@click.group("cluster")
def cluster_group() -> None:
    """A Dask cluster running in the background, reused by learn, cache build, grid run."""


@cluster_group.command("start")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Single-threaded worker processes [one per core].")
@click.option("--dir", "folder", default=DEFAULT_DIR, show_default=True,
              type=click.Path(file_okay=False),
              help="Where scheduler.json, cluster.json, logs and TLS files go.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (another than loopback turns TLS on).")
@click.option("--tls/--no-tls", default=None,
              help="Encrypt and authenticate with a throwaway certificate written to "
                   "DIR/tls [on unless --host is a loopback address].")
@click.option("--dashboard-address", default="127.0.0.1:0", show_default=True,
              help="Where the dashboard listens (localhost only unless asked).")
@click.option("--timeout", type=float, default=120.0, show_default=True,
              help="Seconds to wait for the scheduler and every worker.")
def start_cmd(workers: int | None, folder: str, host: str, tls: bool | None,
              dashboard_address: str, timeout: float) -> None:
    """Start a scheduler and workers in the background; print how to use them."""
    from bnsl_dist.orchestrate.cluster import start_cluster

    info = start_cluster(folder, workers=workers, host=host, tls=tls,
                         dashboard_address=dashboard_address, timeout=timeout)
    tls_opt = f" --tls-dir {info['tls_dir']}" if info["tls_dir"] else ""
    echo_json({**info, "use": f"--scheduler-file {info['scheduler_file']}{tls_opt}",
               "stop": f"bnsl-dist cluster stop --dir {folder}"})


@cluster_group.command("stop")
@click.option("--dir", "folder", default=DEFAULT_DIR, show_default=True,
              type=click.Path(file_okay=False))
def stop_cmd(folder: str) -> None:
    """Stop the cluster started from DIR."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate.cluster import stop_cluster

    if not stop_cluster(folder):
        raise InvalidConfigError(f"no cluster was started from {folder}")
    click.echo(f"stopped the cluster of {folder}")
