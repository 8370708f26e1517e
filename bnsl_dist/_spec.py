"""The base of every spec model (YAML, library and CLI share them) and its error format.

A spec is a frozen pydantic model that rejects unknown keys. :func:`make` validates
keyword arguments into one and turns a validation error into one
:class:`~bnsl_dist.exceptions.InvalidConfigError` naming each field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from bnsl_dist.exceptions import InvalidConfigError

__all__ = ["Spec", "make", "field_path", "error_lines"]


class Spec(BaseModel):
    """Frozen, unknown keys rejected; ``inf`` survives a JSON round trip (as the string
    "Infinity")."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="strings")

    def json_dict(self) -> dict[str, Any]:
        """The spec as plain JSON data (what its JSON text parses to)."""
        out: dict[str, Any] = json.loads(self.model_dump_json())
        return out


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


def error_lines(exc: ValidationError, prefix: str = "") -> list[str]:
    """One ``field: message`` per problem (``prefix`` prepended to each field)."""
    out = []
    for err in exc.errors():
        loc = (*([prefix] if prefix else []), *err.get("loc", ()))
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        out.append(f"{field_path(loc)}: {msg}")
    return out


def make(model: type[S], obj: Mapping[str, Any] | None = None, *, prefix: str = "",
         **kwargs: Any) -> S:
    """``model`` validated from ``obj`` and/or keywords.

    Raises
    ------
    InvalidConfigError
        Naming every bad or unknown field.
    """
    try:
        return model.model_validate({**(obj or {}), **kwargs})
    except ValidationError as exc:
        raise InvalidConfigError("; ".join(error_lines(exc, prefix))) from None
