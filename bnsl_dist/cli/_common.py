"""Shared CLI plumbing: one-line errors with exit code 2, JSON output, data loading."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from bnsl_dist.exceptions import BNSLError

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["handle_errors", "echo_json", "EXIT_USAGE"]

EXIT_USAGE = 2


def handle_errors(fn: F) -> F:
    """Turn project errors into one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BNSLError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_USAGE)
        except FileNotFoundError as exc:
            click.echo(f"error: {exc.filename}: no such file", err=True)
            sys.exit(EXIT_USAGE)

    return wrapper  # type: ignore[return-value]


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=1, sort_keys=False))
