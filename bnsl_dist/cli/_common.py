"""Shared CLI plumbing: one-line errors with exit code 2, JSON output, cluster options."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["echo_json", "pop_cluster_kwargs", "CLUSTER_KEYS", "cluster_options", "cluster_kwargs",
           "FiniteRange"]


class FiniteRange(click.FloatRange):
    """``click.FloatRange`` that also refuses nan and inf (FloatRange lets both through:
    nan compares false with every bound) and a value whose product with ``scale``
    overflows (a size in GiB or MB made bytes). ``message`` words the refusal
    (``{value}``, ``{opt}``)."""

    def __init__(self, *args: Any, scale: float = 1.0,
                 message: str = "{value} is not a finite number", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scale = scale
        self.message = message

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        rv = super().convert(value, param, ctx)
        if not math.isfinite(rv * self.scale):
            opt = param.opts[0] if param is not None and param.opts else "value"
            self.fail(self.message.format(value=rv, opt=opt), param, ctx)
        return rv


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=1, sort_keys=False))


_CLUSTER_OPTIONS = [
    click.option("--workers", type=click.IntRange(min=1), default=None,
                 help="Worker processes of a local cluster [one per core]."),
    click.option("--scheduler", default=None, metavar="ADDRESS",
                 help="Use a running Dask scheduler (tcp://HOST:PORT or tls://...)."),
    click.option("--scheduler-file", "scheduler_file", default=None,
                 type=click.Path(dir_okay=False),
                 help="Use the running cluster of this scheduler file (as written by "
                      "`bnsl-dist cluster start`)."),
    click.option("--connect-timeout", "connect_timeout", type=float, default=None,
                 metavar="SECONDS",
                 help="Seconds to reach a running scheduler and to see a worker "
                      "[$BNSL_CONNECT_TIMEOUT or 10]."),
    click.option("--tls-dir", "tls_dir", default=None, type=click.Path(file_okay=False),
                 help="TLS certificates (ca.pem, cert.pem, key.pem) for a tls:// scheduler "
                      "[dask's distributed.comm.tls configuration]."),
]


def cluster_options(fn: F | None = None, *, workers_help: str | None = None) -> Any:
    """Add the cluster-connection options (``--workers``, ``--scheduler``,
    ``--scheduler-file``, ``--connect-timeout``, ``--tls-dir``); the command receives them
    as keyword arguments and passes :func:`cluster_kwargs` of them to
    :func:`bnsl_dist.orchestrate.cluster.connect`. ``@cluster_options(workers_help=...)``
    words ``--workers`` for a command that runs serially without a cluster option."""
    opts = list(_CLUSTER_OPTIONS)
    if workers_help is not None:
        opts[0] = click.option("--workers", type=click.IntRange(min=1), default=None,
                               help=workers_help)

    def deco(f: F) -> F:
        for opt in reversed(opts):
            f = opt(f)
        return f
    return deco if fn is None else deco(fn)


def _quiet_lost_connections() -> None:
    """A lost scheduler makes tornado log the client's broken callbacks with tracebacks;
    the command says what happened in one line (``--debug`` keeps them). Called once
    distributed is imported: importing it sets its own logging levels."""
    import logging

    import distributed  # noqa: F401 - its logging set-up first, ours after

    ctx = click.get_current_context(silent=True)
    if ctx is None or not ctx.find_root().params.get("debug"):
        logging.getLogger("tornado.application").setLevel(logging.CRITICAL)
        # "Batched Comm Closed" is logged at INFO with the CommClosedError's traceback
        logging.getLogger("distributed.batched").setLevel(logging.WARNING)


#: The keyword arguments :func:`cluster_options` adds to a command.
CLUSTER_KEYS = ("workers", "scheduler", "scheduler_file", "connect_timeout", "tls_dir")


def pop_cluster_kwargs(options: dict[str, Any], serial: bool = False) -> dict[str, Any]:
    """Pop the :func:`cluster_options` from a command's keyword arguments and return
    :func:`cluster_kwargs` of them; ``--serial`` excludes choosing a cluster."""
    from bnsl_dist.exceptions import InvalidConfigError

    conn = cluster_kwargs(**{k: options.pop(k) for k in CLUSTER_KEYS})
    if serial and any(conn[k] is not None for k in ("workers", "scheduler", "scheduler_file")):
        raise InvalidConfigError("--serial excludes --workers, --scheduler and "
                                 "--scheduler-file")
    return conn


def cluster_kwargs(workers: int | None = None, scheduler: str | None = None,
                   scheduler_file: str | None = None, connect_timeout: float | None = None,
                   tls_dir: str | None = None) -> dict[str, Any]:
    """The options of :func:`cluster_options` (counts already range-checked by click),
    checked (at most one cluster, a well-formed address) before anything starts."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate.cluster import connect_timeout as _timeout
    from bnsl_dist.orchestrate.cluster import validate_address

    if sum(x is not None for x in (workers, scheduler, scheduler_file)) > 1:
        raise InvalidConfigError("give at most one of --workers, --scheduler, "
                                 "--scheduler-file")
    _quiet_lost_connections()
    if scheduler is not None:
        from bnsl_dist.cli._checks import check_scheduler_address

        check_scheduler_address(scheduler, "--scheduler")
        validate_address(scheduler)
    return {"workers": workers, "scheduler": scheduler, "scheduler_file": scheduler_file,
            "timeout": _timeout(connect_timeout), "tls_dir": tls_dir}
