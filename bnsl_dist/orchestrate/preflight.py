"""Check a running cluster's workers before any work: each must import this package,
at the client's version, on the same Python and Dask.

A worker that cannot import ``bnsl_dist`` would fail every task with a pickling error,
and one at another version could compute other results under the same cell keys;
:func:`check_workers` says so in one line instead, before any cell runs. The probe is
evaluated on each worker from builtins alone (no function of this package is shipped:
unpickling one is what fails on such a worker).
"""

from __future__ import annotations

import platform
from typing import Any

from distributed import Client

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["check_workers", "setup_of_this_process"]

#: Evaluated on each worker with :func:`eval` (a builtin: nothing to unpickle there).
_PROBE = ("(lambda m, d, p: (m.__version__, d.__version__, '.'.join(p.python_version_tuple()"
          "[:2])))(__import__('bnsl_dist'), __import__('distributed'), "
          "__import__('platform'))")


def setup_of_this_process() -> tuple[str, str, str]:
    """(bnsl_dist version, distributed version, Python major.minor) here."""
    import distributed

    import bnsl_dist

    return (bnsl_dist.__version__, distributed.__version__,
            ".".join(platform.python_version_tuple()[:2]))


def check_workers(client: Client, where: str = "the cluster") -> None:
    """Raise one :class:`InvalidConfigError` line naming the first worker of ``client``
    that cannot import the package or runs another version of it, of distributed or
    of Python than this process.

    Raises
    ------
    InvalidConfigError
    """
    ours = setup_of_this_process()
    found: dict[str, Any] = client.run(eval, _PROBE, on_error="return")
    what = ("bnsl_dist", "distributed", "Python")
    for worker, got in sorted(found.items()):
        if isinstance(got, BaseException):
            raise InvalidConfigError(
                f"worker {worker} of {where} cannot import the package "
                f"({type(got).__name__}: {got}); install bnsl_dist {ours[0]} there")
        for name, mine, theirs in zip(what, ours, tuple(got), strict=True):
            if mine != theirs:
                raise InvalidConfigError(
                    f"worker {worker} of {where} runs {name} {theirs}, this client "
                    f"{mine}: install the same versions on both")
