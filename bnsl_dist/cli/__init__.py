"""The `bnsl-dist` command line. Each command parses, checks its arguments, loads config
and calls one library function.

Every failure a user can cause (a project error, an OS error such as a permission, a
full disk or an unreachable address, a bad option) is one line on stderr and exit code
2; ``bnsl-dist --debug COMMAND ...`` shows the traceback instead. Dask's own log
records go to a file, not the terminal (:mod:`bnsl_dist.cli._logging`).
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import click

from bnsl_dist import __version__
from bnsl_dist.exceptions import BNSLError

EXIT_USAGE = 2


def _one_line(text: str) -> str:
    return "; ".join(s.strip() for s in str(text).splitlines() if s.strip())


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, BNSLError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return _one_line(str(exc)) or type(exc).__name__


class _Main(click.Group):
    """A group whose errors are one line and exit code 2 (tracebacks with --debug)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (BNSLError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):  # `... | head`: click exits quietly
                raise
            if ctx.params.get("debug"):
                traceback.print_exc()
            else:
                click.echo(f"error: {_describe(exc)}", err=True)
            ctx.exit(EXIT_USAGE)

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        try:
            rv = super().main(*args, standalone_mode=False, **kwargs)  # type: ignore[call-overload]
        except click.ClickException as exc:
            where = getattr(exc, "ctx", None)
            prefix = f"{where.command_path}: " if where is not None else ""
            click.echo(f"error: {prefix}{_one_line(exc.format_message())}", err=True)
            sys.exit(EXIT_USAGE)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="bnsl-dist")
@click.option("--debug", is_flag=True, help="Show the traceback of an error.")
def main(debug: bool) -> None:
    """Bayesian-network structure learning over categorical data, on Dask."""
    from bnsl_dist.cli import _logging

    _logging.configure(debug)  # dask's logs: to a file (to stderr too with --debug)


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
    from bnsl_dist.cli.learn import algorithms_cmd, learn_cmd
    main.add_command(learn_cmd)
    main.add_command(algorithms_cmd)
    from bnsl_dist.cli.cluster import cluster_group; main.add_command(cluster_group)  # noqa: E702,I001


_register()

__all__ = ["main", "EXIT_USAGE"]
