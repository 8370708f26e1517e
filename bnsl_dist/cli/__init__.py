"""The `bnsl-dist` command line. Each command parses, loads config and calls one library
function; errors are one line on stderr with exit code 2."""

from __future__ import annotations

import click

from bnsl_dist import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bnsl-dist")
def main() -> None:
    """Bayesian-network structure learning over categorical data, on Dask."""


def _register() -> None:
    from bnsl_dist.cli.score import score_cmd

    main.add_command(score_cmd)
    # Further commands register below as they land (one module each).
    from bnsl_dist.cli.cache import cache_group
    main.add_command(cache_group)
    from bnsl_dist.cli.grid import grid_group
    main.add_command(grid_group)
    from bnsl_dist.cli.tables import tables_cmd
    main.add_command(tables_cmd)
    from bnsl_dist.cli.data import data_group
    main.add_command(data_group)
    from bnsl_dist.cli.impute import impute_cmd
    main.add_command(impute_cmd)
    from bnsl_dist.cli.infer import infer_cmd, loglik_cmd
    main.add_command(infer_cmd); main.add_command(loglik_cmd)  # noqa: E702
    from bnsl_dist.cli.learn import learn_cmd
    main.add_command(learn_cmd)
    from bnsl_dist.cli.cluster import cluster_group; main.add_command(cluster_group)  # noqa: E702,I001


_register()

__all__ = ["main"]
