"""Command-line options of the spec models, in one place.

Each option maps one-to-one onto a field of :class:`~bnsl_dist.cache.spec.CacheSpec`,
:class:`~bnsl_dist.search.qds.ScreeningSpec`, or the search budget; its default is
the model's (resolved into the spec, not repeated here), and the model validates the
values while the command line is read — before any data are read or a cluster starts.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal

import click
from pydantic import BaseModel

from bnsl_dist._spec import make
from bnsl_dist.cache.spec import CacheSpec
from bnsl_dist.search.qds import ScreeningSpec

__all__ = ["cache_options", "cache_options_with", "screening_options", "cache_spec", "screening_spec",
           "parse_param"]

F = Callable[..., Any]

#: Option names that differ from ``--field-name``.
_RENAMED = {"method": "--cache-method"}


def _click_type(annotation: Any) -> Any:
    """bool, int, float or str of an annotation (``X | None``, ``Annotated[X, ...]``), or
    a choice for a Literal; the model checks the constraints."""
    if annotation is bool:
        return click.BOOL
    if typing.get_origin(annotation) is Literal:
        return click.Choice([str(v) for v in typing.get_args(annotation)])
    if typing.get_origin(annotation) is Annotated:
        return _click_type(typing.get_args(annotation)[0])
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args:
        return _click_type(args[0])
    return annotation if annotation in (int, float, str) else str


def _flag(name: str) -> str:
    return _RENAMED.get(name, "--" + name.replace("_", "-"))


def _flags(model: type[BaseModel], **more: str) -> dict[str, str]:
    """Each field's option, for errors that name what the user typed (``--ess``, not
    ``ess``); ``more``: other names (``""``: the model's own checks)."""
    return {**{name: _flag(name) for name in model.model_fields}, **more}


def _options(model: type[BaseModel], prefix: str, skip: tuple[str, ...],
             helps: dict[str, str] | None = None) -> Callable[[F], F]:
    """One ``--option`` per field of ``model`` (default None: the model's applies),
    passed to the command as ``{prefix}{field}``; ``helps`` replaces the help of fields
    whose default the command sets itself."""
    def deco(fn: F) -> F:
        for name, info in reversed(list(model.model_fields.items())):
            if name in skip:
                continue
            flag = _flag(name)
            default = "" if info.default is None else f" [{info.default}]"
            text = (helps or {}).get(name, f"{info.description}{default}")
            fn = click.option(flag, prefix + name, type=_click_type(info.annotation),
                              default=None, help=text)(fn)
        return fn
    return deco


def _collect(model: type[BaseModel], prefix: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Pop the options of ``model`` from the command's keyword arguments (given ones)."""
    out = {}
    for name in model.model_fields:
        val = kwargs.pop(prefix + name, None)
        if val is not None:
            out[name] = val
    return out


def cache_options_with(**helps: str) -> Callable[[F], F]:
    """One ``--option`` per CacheSpec field, with the help of the fields in ``helps``
    replaced: a command whose defaults for them are not CacheSpec's says its own."""
    return _options(CacheSpec, "cache_", ("path",), helps)


cache_options = cache_options_with()
screening_options = _options(ScreeningSpec, "screen_", ())


def cache_spec(kwargs: dict[str, Any], **fixed: Any) -> CacheSpec:
    """The CacheSpec of the command line (options popped from ``kwargs``)."""
    return make(CacheSpec, {**_collect(CacheSpec, "cache_", kwargs), **fixed},
                names=_flags(CacheSpec))


def screening_spec(kwargs: dict[str, Any]) -> ScreeningSpec | None:
    """A ScreeningSpec when ``--epsilon`` or ``--root-fraction`` is given, else None."""
    given = _collect(ScreeningSpec, "screen_", kwargs)
    return make(ScreeningSpec, given,
                names=_flags(ScreeningSpec, **{"": "--epsilon/--root-fraction"})) \
        if given else None


def parse_param(text: str) -> tuple[str, Any]:
    """``key=value``; the value is read as YAML (numbers, booleans, lists, strings)."""
    import yaml

    from bnsl_dist.exceptions import InvalidConfigError

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise InvalidConfigError(f"--param {text!r}: expected key=value")
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        value = raw
    return key.strip(), value
