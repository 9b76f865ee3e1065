"""One way to say what is wrong with a validated config, spec or set of flags: one line."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from collections.abc import Callable
from typing import Any

# An unknown key: in a model that forbids extras, and in a dataclass's arguments.
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")


def validation_problems(
    exc: Any, where: Callable[[list[str]], str] | None = None, model: type | None = None
) -> str:
    """'field.path: message; other.field: message' for a pydantic ValidationError, on one line.

    `where(loc)` names a field's location (e.g. its CLI flag); default: the dotted path, or
    '<root>' for the whole document. Pydantic's "Value error, " prefix is dropped. `model`: the
    validated class; an unknown key then names the closest field of its level, if one is close
    ("languagez: Extra inputs are not permitted (did you mean 'languages'?)")."""
    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err["loc"] if x != "function-after"]
        name = where(loc) if where else ".".join(loc) or "<root>"
        msg = err["msg"].removeprefix("Value error, ")
        if model is not None and err.get("type") in _UNKNOWN and loc:
            near = difflib.get_close_matches(loc[-1], _fields_at(model, loc[:-1]), n=1, cutoff=0.7)
            if near:
                msg += f" (did you mean {near[0]!r}?)"
        parts.append(f"{name}: {msg}")
    return "; ".join(parts)


def _fields_at(model: type, path: list[str]) -> list[str]:
    """Field names (and aliases) of the model found at `path` below `model` (a mapping's keys and
    a list's indexes are passed through to their values' model); [] where there is none."""
    current: type | None = model
    for part in path:
        fields = _fields(current)
        if not fields:
            return []
        if part not in fields:
            continue  # a mapping's key or a list's index: its value's model is already current
        current = _model_in(fields[part])
        if current is None:
            return []
    return sorted(_fields(current))


def _fields(cls: Any) -> dict[str, Any]:
    """{name or alias: annotation} of a pydantic model or dataclass, or of a plain dataclass."""
    found = getattr(cls, "__pydantic_fields__", None)
    if found is not None:
        out = {name: f.annotation for name, f in found.items()}
        return out | {f.alias: f.annotation for f in found.values() if f.alias}
    if dataclasses.is_dataclass(cls):
        return {f.name: f.type for f in dataclasses.fields(cls)}
    return {}


def _model_in(annotation: Any) -> type | None:
    """The first model or dataclass in an annotation (list[X], dict[str, X], X | None...)."""
    if isinstance(annotation, type) and _fields(annotation):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
