"""One way to say what is wrong with a validated config, spec or set of flags: one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def validation_problems(exc: Any, where: Callable[[list[str]], str] | None = None) -> str:
    """'field.path: message; other.field: message' for a pydantic ValidationError, on one line.

    `where(loc)` names a field's location (e.g. its CLI flag); default: the dotted path, or
    '<root>' for the whole document. Pydantic's "Value error, " prefix is dropped."""
    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err["loc"] if x != "function-after"]
        name = where(loc) if where else ".".join(loc) or "<root>"
        parts.append(f"{name}: {err['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)
