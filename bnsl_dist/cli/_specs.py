"""Command-line options of the spec models, in one place.

Each option maps onto a field of :class:`~bnsl_dist.cache.spec.CacheSpec`,
:class:`~bnsl_dist.search.qds.ScreeningSpec`, :class:`~bnsl_dist.search.spec.SearchSpec`
or its :class:`~bnsl_dist.search.spec.BudgetSpec` (``--checkpoints`` holds both kinds of
checkpoints); its help is the field's description and its default the model's (resolved
into the spec, not repeated here), and the model validates the values while the command
line is read — before any data are read or a cluster starts. The rules that fill a spec
from what was given are the spec layer's: the iteration budget's cache
(:func:`~bnsl_dist.cache.spec.with_iteration_budget`), the default search budget and
checkpoints (:meth:`~bnsl_dist.search.spec.BudgetSpec.with_default_checkpoints`).
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Literal, TypeVar

import annotated_types
import click
from pydantic import BaseModel

from bnsl_dist._spec import make
from bnsl_dist.cache.spec import CacheSpec, with_iteration_budget
from bnsl_dist.search.base import DEFAULT_ALGORITHM
from bnsl_dist.search.qds import ScreeningSpec
from bnsl_dist.search.spec import DEFAULT_SEARCH_SECONDS, BudgetSpec, SearchSpec
from bnsl_dist.sem.spec import ImputeTask

__all__ = ["cache_options", "cache_options_with", "screening_options", "cache_spec",
           "cache_spec_with", "screening_spec", "parse_param", "search_options",
           "budget_options", "search_spec", "impute_options", "impute_task", "OPTION_FIELDS"]

F = TypeVar("F", bound=Callable[..., Any])

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
             helps: dict[str, str] | None = None,
             renamed: dict[str, str] | None = None) -> Callable[[F], F]:
    """One ``--option`` per field of ``model`` (default None: the model's applies),
    passed to the command as ``{prefix}{field}``; ``helps`` replaces the help of fields
    whose default the command sets itself, ``renamed`` the flag of fields the command
    spells otherwise."""
    def deco(fn: F) -> F:
        for name, info in reversed(list(model.model_fields.items())):
            if name in skip:
                continue
            flag = (renamed or {}).get(name) or _flag(name)
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


def cache_options_with(renamed: dict[str, str] | None = None,
                       **helps: str) -> Callable[[F], F]:
    """One ``--option`` per CacheSpec field, with the help of the fields in ``helps``
    replaced: a command whose defaults for them are not CacheSpec's says its own
    (``renamed``: flags the command spells otherwise, e.g. ``cache build --method``)."""
    return _options(CacheSpec, "cache_", ("path",), helps, renamed)


cache_options = cache_options_with()
screening_options = _options(ScreeningSpec, "screen_", ())


def cache_spec(kwargs: dict[str, Any], **fixed: Any) -> CacheSpec:
    """The CacheSpec of the command line (options popped from ``kwargs``; ``fixed``:
    fields the command sets itself)."""
    return cache_spec_with(kwargs, fixed=fixed)


def cache_spec_with(kwargs: dict[str, Any], *, budget: Any = None,
                    renamed: dict[str, str] | None = None,
                    fixed: dict[str, Any] | None = None) -> CacheSpec:
    """:func:`cache_spec`; with the search's ``budget``, an iteration budget's cache rule
    applied (:func:`~bnsl_dist.cache.spec.with_iteration_budget`); errors name the flags
    of ``renamed`` (a command's own spellings)."""
    given = {**_collect(CacheSpec, "cache_", kwargs), **(fixed or {})}
    if budget is not None:
        given = with_iteration_budget(given, [budget])
    return make(CacheSpec, given, names={**_flags(CacheSpec), **(renamed or {})})


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


#: How the search's and the budget's fields are spelled on the command line: (flags,
#: the command's parameter, whether repeatable, metavar, default). Every other field of
#: a spec model is ``--field-name``.
_SEARCH_FLAGS: dict[str, tuple[tuple[str, ...], str, bool, str | None, Any]] = {
    "algorithm": (("--algorithm", "-a"), "algorithm", False, None, DEFAULT_ALGORITHM),
    "k": (("-k",), "k", False, None, None),
    "params": (("--param",), "params", True, "KEY=VALUE", None),
}
_BUDGET_FLAGS: dict[str, tuple[tuple[str, ...], str, bool, str | None, Any]] = {
    "seconds": (("--seconds",), "seconds", False, None, None),
    "iterations": (("--iterations",), "iterations", False, None, None),
    "checkpoints": (("--checkpoints",), "checkpoints", False, "B1,B2,...", None),
}
#: ``impute``'s spellings of :class:`~bnsl_dist.sem.spec.ImputeTask` (defaults: the model's).
_IMPUTE_FLAGS: dict[str, tuple[tuple[str, ...], str, bool, str | None, Any]] = {
    name: (flags, name, False, metavar, ImputeTask.model_fields[name].default)
    for name, flags, metavar in (
        ("k", ("-k", "--k"), None), ("max_iterations", ("--max-iterations",), None),
        ("time_limit", ("--time-limit",), "SECONDS"), ("e_step", ("--e-step",), None),
        ("imputation", ("--imputation",), None),
        ("accumulate", ("--accumulate/--no-accumulate",), None),
        ("search_seconds", ("--search-seconds",), None),
        ("search_iterations", ("--search-iterations",), None),
        ("batch_size", ("--batch-size",), None))}
#: Each spec model's fields and the command parameter that holds each (the budget's two
#: kinds of checkpoints share ``--checkpoints``), for the test that every field has its
#: option (tests/test_cli_specs.py).
OPTION_FIELDS: dict[type[BaseModel], dict[str, str]] = {
    SearchSpec: {**{f: v[1] for f, v in _SEARCH_FLAGS.items()}, "budget": "(budget options)"},
    BudgetSpec: {**{f: v[1] for f, v in _BUDGET_FLAGS.items()},
                 "iteration_checkpoints": "checkpoints"},
    CacheSpec: {f: "cache_" + f for f in CacheSpec.model_fields if f != "path"},
    ScreeningSpec: {f: "screen_" + f for f in ScreeningSpec.model_fields},
    ImputeTask: {f: v[1] for f, v in _IMPUTE_FLAGS.items()},
}


def _bounded_type(annotation: Any) -> Any:
    """:func:`_click_type`, with a field's lower bound (``Gt``/``Ge``) as click's range,
    so that ``--seconds 0`` or ``-k 0`` is refused while the command line is parsed, in
    click's words; a tuple is text (``--checkpoints 1,10,60``), split by the command."""
    if typing.get_origin(annotation) is tuple:
        return click.STRING
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) is not Annotated and len(args) == 1:
        return _bounded_type(args[0])  # X | None
    if typing.get_origin(annotation) is not Annotated:
        return _click_type(annotation)
    base, *meta = typing.get_args(annotation)
    # Field(gt=0) inside Annotated carries its bounds in its own metadata
    bounds = [m for x in meta for m in [x, *getattr(x, "metadata", ())]
              if isinstance(m, annotated_types.Gt | annotated_types.Ge)]
    if not bounds or base not in (int, float):
        return _click_type(annotation)
    b = bounds[0]
    open_ = isinstance(b, annotated_types.Gt)
    low = b.gt if isinstance(b, annotated_types.Gt) else b.ge
    assert isinstance(low, int | float)
    if base is int:
        return click.IntRange(min=int(low) + open_)
    return click.FloatRange(min=low, min_open=open_)


def _spelled(model: type[BaseModel],
             table: dict[str, tuple[tuple[str, ...], str, bool, str | None, Any]]
             ) -> Callable[[F], F]:
    def deco(fn: F) -> F:
        for name, (flags, dest, multiple, metavar, default) in reversed(table.items()):
            info = model.model_fields[name]
            more: dict[str, Any] = {"multiple": True} if multiple else {
                "default": default, "show_default": default is not None}
            if not multiple and "/" not in flags[0]:  # "--x/--no-x": click's boolean flag
                # a constrained field's bounds: in its annotation (``X | None``) or, for
                # a plain ``X`` with a ``Field`` default, in the field's metadata
                more["type"] = _bounded_type(Annotated[(info.annotation, *info.metadata)]
                                             if info.metadata else info.annotation)
            fn = click.option(*flags, dest, metavar=metavar, help=info.description,
                              **more)(fn)
        return fn
    return deco


#: ``--algorithm/-a`` (default: the registry's :data:`~bnsl_dist.search.base.DEFAULT_ALGORITHM`),
#: ``-k``, ``--param KEY=VALUE`` (repeatable).
search_options = _spelled(SearchSpec, _SEARCH_FLAGS)
#: ``--seconds``, ``--iterations``, ``--checkpoints B1,B2,...``.
budget_options = _spelled(BudgetSpec, _BUDGET_FLAGS)


#: ``impute``'s options of :class:`~bnsl_dist.sem.spec.ImputeTask`: ``-k``,
#: ``--max-iterations``, ``--time-limit``, ``--e-step``, ``--imputation``,
#: ``--accumulate/--no-accumulate``, ``--search-seconds``, ``--search-iterations``,
#: ``--batch-size``.
impute_options = _spelled(ImputeTask, _IMPUTE_FLAGS)


def impute_task(kwargs: dict[str, Any]) -> ImputeTask:
    """The ImputeTask of the command line (:data:`impute_options`, popped from
    ``kwargs``); errors name the flags."""
    given = {name: kwargs.pop(dest) for name, (_, dest, *_) in _IMPUTE_FLAGS.items()}
    return make(ImputeTask, given, names={name: flags[0].split("/")[0] for name, (flags, *_)
                                          in _IMPUTE_FLAGS.items()})


def _checkpoints(text: str, seconds: float | None, iterations: int | None
                 ) -> dict[str, list[Any]]:
    """``--checkpoints``: positive numbers below the budget, the budget last; in
    iterations (whole numbers) for an iteration budget alone."""
    import math

    from bnsl_dist._io import is_plain_float
    from bnsl_dist.exceptions import InvalidConfigError

    toks = [x.strip() for x in text.split(",") if x.strip()]
    bad = next((t for t in toks if not is_plain_float(t) or not 0 < float(t) < math.inf), None)
    if bad is not None:
        raise InvalidConfigError(f"--checkpoints {text!r}: {bad!r} is not a positive number")
    cps = sorted({float(t) for t in toks})
    if seconds is not None:
        return {"checkpoints": [c for c in cps if c < seconds] + [seconds]}
    assert iterations is not None
    frac = next((t for t in toks if not float(t).is_integer()), None)
    if frac is not None:  # was truncated: 2.5 reported as 2
        raise InvalidConfigError(f"--checkpoints {text!r}: {frac!r} is not a whole number "
                                 "of iterations")
    return {"iteration_checkpoints": [int(c) for c in cps if c < iterations] + [iterations]}


def search_spec(params: Sequence[str], *, algorithm: str, k: int | None,
                seconds: float | None, iterations: int | None, checkpoints: str | None,
                **_: Any) -> SearchSpec:
    """The SearchSpec of the command line (:data:`search_options`,
    :data:`budget_options`): neither seconds nor iterations is
    :data:`~bnsl_dist.search.spec.DEFAULT_SEARCH_SECONDS`; without ``--checkpoints``, the
    default checkpoints (:meth:`~bnsl_dist.search.spec.BudgetSpec.with_default_checkpoints`)."""
    if seconds is None and iterations is None:
        seconds = DEFAULT_SEARCH_SECONDS
    budget: dict[str, Any] = make(BudgetSpec, seconds=seconds, iterations=iterations,
                                  names=_flags(BudgetSpec)).model_dump()
    if checkpoints is None:
        budget = BudgetSpec.with_default_checkpoints(seconds, iterations).model_dump()
    else:
        budget.update(_checkpoints(checkpoints, seconds, iterations))
    return make(SearchSpec, algorithm=algorithm, k=k,
                params=dict(parse_param(p) for p in params), budget=budget,
                names={"algorithm": "--algorithm", "params": "--param", "k": "-k",
                       "": "-k"})  # the model's own check is k's (registry_check)
