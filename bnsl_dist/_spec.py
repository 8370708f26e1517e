"""The base of every spec model (YAML, library and CLI share them) and its error format.

A spec is a frozen pydantic model that rejects unknown keys and booleans where a field
takes none (:class:`NoBoolModel`). :func:`make` validates keyword arguments into one and
turns a validation error into one :class:`~bnsl_dist.exceptions.InvalidConfigError`
naming each field; :func:`load_yaml_model` reads a YAML file into one, each error
naming the file, the field path and the line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from bnsl_dist.exceptions import BNSLError, InvalidConfigError

__all__ = ["Spec", "NoBoolModel", "ConfigModel", "distinct", "make", "field_path", "error_lines", "misplaced_bool",
           "UniqueKeyLoader", "format_validation_error", "load_yaml_model"]


def _admits_bool(tp: Any) -> bool:
    if tp is bool or tp is Any or tp is object:
        return True
    args = get_args(tp)
    if get_origin(tp) is Annotated:
        return _admits_bool(args[0])
    if get_origin(tp) is Literal:
        return any(isinstance(a, bool) for a in args)
    return any(_admits_bool(a) for a in args if a is not Ellipsis)


def misplaced_bool(value: Any, annotation: Any) -> bool:
    """``value`` is a boolean (or a list holding one) for a type that admits none.
    Pydantic's lax mode reads ``True`` as the integer 1 and the float 1.0, so a YAML
    ``workers: true`` (or ``yes``, ``on``) was a worker count of 1."""
    has = isinstance(value, bool) or (isinstance(value, list | tuple)
                                      and any(isinstance(x, bool) for x in value))
    return has and not _admits_bool(annotation)


class NoBoolModel(BaseModel):
    """A pydantic model whose numeric fields refuse booleans (see :func:`misplaced_bool`)."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool(cls, v: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and misplaced_bool(v, field.annotation):
            raise ValueError(f"got the boolean {json.dumps(v)} where this field takes none "
                             "(YAML reads true/false, yes/no, on/off as booleans)")
        return v


class Spec(NoBoolModel):
    """Frozen, unknown keys rejected; ``inf`` survives a JSON round trip (as the string
    "Infinity")."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    def json_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (what its JSON text parses to)."""
        out: dict[str, Any] = json.loads(self.model_dump_json())
        return out


class ConfigModel(NoBoolModel):
    """A section of a YAML file (grid, cluster): frozen, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def distinct(v: tuple[Any, ...], what: str) -> tuple[Any, ...]:
    """``v`` when it is non-empty and without duplicates (``what``: its plural name)."""
    if not v:
        raise ValueError(f"at least one of the {what} is required")
    if len(set(v)) != len(v):
        raise ValueError(f"duplicate {what} in {list(v)}")
    return v


S = TypeVar("S", bound=BaseModel)


def field_path(loc: Sequence[Any]) -> str:
    """``algorithms[2].params`` from a pydantic error location."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and ("[" in part or part.startswith("function-")):
            continue  # union member tags such as "function-after[...]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def error_lines(exc: ValidationError, prefix: str = "",
                names: Mapping[str, str] | None = None) -> list[str]:
    """One ``field: message`` per problem (``prefix`` prepended to each field; ``names``
    renames a top-level field, ``""`` the model itself: a command line's options)."""
    out = []
    for err in exc.errors():
        loc = (*([prefix] if prefix else []), *err.get("loc", ()))
        head = str(loc[0]) if loc else ""
        if names and head in names:
            loc = (names[head], *loc[1:])
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        out.append(f"{field_path(loc)}: {msg}")
    return out


def make(model: type[S], obj: Mapping[str, Any] | None = None, *, prefix: str = "",
         names: Mapping[str, str] | None = None, **kwargs: Any) -> S:
    """``model`` validated from ``obj`` and/or keywords (errors named as in
    :func:`error_lines`).

    Raises
    ------
    InvalidConfigError
        Naming every bad or unknown field.
    """
    try:
        return model.model_validate({**(obj or {}), **kwargs})
    except ValidationError as exc:
        raise InvalidConfigError("; ".join(error_lines(exc, prefix, names))) from None


class UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader (grid, cluster and catalog YAML) that rejects a key given twice in one
    mapping (YAML 1.2 requires unique keys; PyYAML would keep the last silently). Keys
    beside a ``<<`` merge may override the merged ones, as YAML's merge-key convention
    says."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: the base class says so
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {first + 1})",
                    key_node.start_mark)
            seen[key] = key_node.start_mark.line
        mapping: dict[Any, Any] = super().construct_mapping(node, deep)
        return mapping


# ---------------------------------------------------------------------------- YAML files
def _yaml_nodes(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None


def _line_of(node: yaml.Node | None, loc: Sequence[Any]) -> int | None:
    """1-based line of the YAML node at a pydantic error location (best effort)."""
    line = None if node is None else node.start_mark.line + 1
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for knode, vnode in node.value:
                if getattr(knode, "value", None) == part:
                    node, line = vnode, knode.start_mark.line + 1
                    break
            else:
                continue  # a pydantic-internal location step (union member, validator)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                break
    return line


def format_validation_error(exc: ValidationError, source: str,
                            root: yaml.Node | None = None) -> str:
    """One line per problem: ``FILE, line L: field.path: message`` (a list reported too
    short only because its items failed is left out: the items' errors say why)."""
    lines = []
    errors = exc.errors()
    for err in errors:
        loc = err.get("loc", ())
        if err.get("type") == "too_short" and any(
                len(e["loc"]) > len(loc) and tuple(e["loc"][:len(loc)]) == tuple(loc)
                for e in errors):
            continue
        line = _line_of(root, loc)
        where = f"{source}, line {line}" if line is not None else source
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        lines.append(f"{where}: {field_path(loc)}: {msg}")
    return "; ".join(lines)


def load_yaml_model(path: str | os.PathLike[str], model: type[S]) -> S:
    """Read a YAML file and validate it as ``model``.

    Raises
    ------
    InvalidConfigError
        The file is missing, is not YAML, or does not validate; the message names the
        file, the field path and the line where known.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InvalidConfigError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidConfigError(f"{p}: cannot read: {exc}") from None
    try:
        obj = yaml.load(text, Loader=UniqueKeyLoader)  # a SafeLoader: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{p}, line {mark.line + 1}" if mark is not None else str(p)
        problem = getattr(exc, "problem", None) or str(exc)
        raise InvalidConfigError(f"{where}: not valid YAML: {problem}") from None
    if not isinstance(obj, Mapping):
        raise InvalidConfigError(f"{p}: expected a mapping at the top level, got "
                                 f"{type(obj).__name__}")
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        raise InvalidConfigError(format_validation_error(exc, str(p), _yaml_nodes(text))) \
            from None
    except BNSLError as exc:  # a registry that could not be read (dataset catalog)
        raise InvalidConfigError(f"{p}: {exc}") from None
