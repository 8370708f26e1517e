"""Shared CLI plumbing: one-line errors with exit code 2, JSON output, cluster options."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import time
from collections.abc import Callable
from typing import Any, TypeVar, overload

import click

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["STDOUT", "echo_json", "write_result", "pop_cluster_kwargs", "CLUSTER_KEYS", "cluster_options", "cluster_kwargs",
           "FiniteRange", "StopTime", "stop_time"]


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


_DURATION = re.compile(r"(?:(?P<d>\d+(?:\.\d+)?)d)?\s*(?:(?P<h>\d+(?:\.\d+)?)h)?\s*"
                       r"(?:(?P<m>\d+(?:\.\d+)?)m(?:in)?)?\s*(?:(?P<s>\d+(?:\.\d+)?)s)?")
_CLOCK = re.compile(r"(?P<H>\d{1,2}):(?P<M>\d{2})(?::(?P<S>\d{2}))?")


def stop_time(text: str, now: float | None = None) -> float:
    """The ``time.time()`` that TEXT names: a duration from ``now`` (``2h30m``, ``90min``,
    ``45s``, ``1d``; units d, h, m or min, s), a clock time, local, today or, once past,
    tomorrow (``02:10``, ``23:45:30``), or a date and time in ISO 8601 (``2026-11-28T02:10``;
    local unless it carries an offset), which must be to come.

    Examples
    --------
    >>> stop_time("2h30m", now=1000.0)
    10000.0
    >>> stop_time("90min", now=0.0) == stop_time("1.5h", now=0.0) == 5400.0
    True
    >>> stop_time("soon")
    Traceback (most recent call last):
    ...
    ValueError: 'soon': give a duration (2h30m, 90min, 45s), a clock time (02:10) or a date and time (2026-11-28T02:10)
    """
    t0 = time.time() if now is None else now
    s = text.strip()
    m = _DURATION.fullmatch(s)
    if m and s and any(m.groupdict().values()):
        secs = sum(float(v) * f for v, f in zip(
            m.group("d", "h", "m", "s"), (86400, 3600, 60, 1), strict=True) if v)
        if not secs > 0:
            raise ValueError(f"{text!r}: a duration must be positive")
        return t0 + secs
    base = dt.datetime.fromtimestamp(t0).astimezone()
    if c := _CLOCK.fullmatch(s):
        try:
            at = base.replace(hour=int(c["H"]), minute=int(c["M"]), second=int(c["S"] or 0),
                              microsecond=0)
        except ValueError as exc:
            raise ValueError(f"{text!r}: {exc}") from None
        if at <= base:
            at += dt.timedelta(days=1)
        return at.timestamp()
    try:
        at = dt.datetime.fromisoformat(s)
    except ValueError:
        raise ValueError(f"{text!r}: give a duration (2h30m, 90min, 45s), a clock time "
                         f"(02:10) or a date and time (2026-11-28T02:10)") from None
    if at.tzinfo is None:
        at = at.astimezone()  # local time
    if at <= base:
        raise ValueError(f"{text!r} is past (now {base.isoformat(timespec='seconds')})")
    return at.timestamp()


class StopTime(click.ParamType):  # type: ignore[type-arg]  # generic from click 8.2 (floor 8.1)
    """A ``--stop-at`` value (:func:`stop_time`), made a ``time.time()`` when parsed."""

    name = "WHEN"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        if isinstance(value, float):
            return value
        try:
            return stop_time(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=1, sort_keys=False))


#: ``-o -``: the result on stdout.
STDOUT = "-"


def write_result(output: str, obj: Any) -> str:
    """Write ``obj`` as JSON to the file ``output`` (atomically) or, for ``-``, on stdout
    (everything else a command says goes to stderr); returns where, for the summary."""
    text = json.dumps(obj, indent=1) + "\n"
    if output == STDOUT:
        click.echo(text, nl=False)
        return "stdout"
    from bnsl_dist._io import atomic_write_text

    atomic_write_text(output, text)
    return output


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


@overload
def cluster_options(fn: F, *, workers_help: str | None = None) -> F: ...


@overload
def cluster_options(fn: None = None, *, workers_help: str | None = None
                    ) -> Callable[[F], F]: ...


def cluster_options(fn: F | None = None, *, workers_help: str | None = None
                    ) -> F | Callable[[F], F]:
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


#: The keyword arguments :func:`cluster_options` adds to a command.
CLUSTER_KEYS = ("workers", "scheduler", "scheduler_file", "connect_timeout", "tls_dir")


def pop_cluster_kwargs(options: dict[str, Any], serial: bool = False) -> dict[str, Any]:
    """Pop the :func:`cluster_options` from a command's keyword arguments and return
    :func:`cluster_kwargs` of them; ``--serial`` excludes choosing a cluster."""
    from bnsl_dist.exceptions import InvalidConfigError

    conn = cluster_kwargs(**{k: options.pop(k) for k in CLUSTER_KEYS}, serial=serial)
    if serial and any(conn[k] is not None for k in ("workers", "scheduler", "scheduler_file")):
        raise InvalidConfigError("--serial excludes --workers, --scheduler and "
                                 "--scheduler-file")
    return conn


def cluster_kwargs(workers: int | None = None, scheduler: str | None = None,
                   scheduler_file: str | None = None, connect_timeout: float | None = None,
                   tls_dir: str | None = None, serial: bool = False) -> dict[str, Any]:
    """The options of :func:`cluster_options` (counts already range-checked by click),
    checked (at most one cluster, a well-formed address) before anything starts. Dask's
    log records go to their file unless ``serial`` (``--serial`` imports no Dask: its
    import and logging set-up: 0.4 of the 2.4 CPU s of a small serial learn)."""
    from bnsl_dist.exceptions import InvalidConfigError
    from bnsl_dist.orchestrate._timeout import connect_timeout as _timeout

    if sum(x is not None for x in (workers, scheduler, scheduler_file)) > 1:
        raise InvalidConfigError("give at most one of --workers, --scheduler, "
                                 "--scheduler-file")
    from bnsl_dist.cli import _logging

    if not serial:
        _logging.ensure()  # dask's records to a file, not the terminal
    if scheduler is not None:
        from bnsl_dist.cli._checks import check_scheduler_address
        from bnsl_dist.orchestrate.cluster import validate_address

        check_scheduler_address(scheduler, "--scheduler")
        validate_address(scheduler)
    return {"workers": workers, "scheduler": scheduler, "scheduler_file": scheduler_file,
            "timeout": _timeout(connect_timeout), "tls_dir": tls_dir}
