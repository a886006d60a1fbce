"""Config validation errors as people read them: one line per problem, ``field.path: message``.

pydantic reports locations as tuples and unknown fields without alternatives; these helpers
turn them into the paths armlab uses everywhere (``policies[0].plugin``), add "did you mean"
suggestions, and explain TOML's most common trap (a key written below a ``[table]`` header
belongs to that table).
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

__all__ = ["field_path", "format_validation_error", "misplaced", "suggest"]


def suggest(name: str, known: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the known name closest to a misspelled ``name``, or ``""``."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


#: A message that starts with the field path it is about (``feedback.delay: ...``).
_PATH_PREFIX = re.compile(r"^[A-Za-z_][\w.\[\]]*: ")
#: The location parts pydantic adds for the members of a union (``float``, ``list[float]``).
_UNION_MEMBER = re.compile(r"^(float|int|str|bool|none|bytes)$|\[")


def field_path(loc: Sequence[str | int], prefix: str = "") -> str:
    """``policies[0].plugin`` from a location ``("policies", 0, "plugin")`` (list positions
    in brackets, as in the messages of :mod:`armlab.plan`; union members left out)."""
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "__root__" and not _UNION_MEMBER.search(part):
            path = f"{path}.{part}" if path else str(part)
    return path


def format_validation_error(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> list[str]:
    """One line per problem: ``field.path: message`` (pydantic's wording, our field paths).

    With ``model`` (the model that was validated), an unknown field is followed by the
    closest field name the model has at that place.  A model-level check whose message
    already starts with the path it is about (``sweep.parameter: ...``) keeps it as is.
    The messages of a value that fits no member of a union share one line.
    """
    messages: dict[str, list[str]] = {}  # path -> its messages, in pydantic's order
    for err in exc.errors():
        message = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            known = _fields_at(model, err["loc"][:-1]) if model is not None else []
            message = "unknown field; remove it or check its spelling" + suggest(str(err["loc"][-1]), known)
        elif err["type"] == "missing":
            message = "required field is missing"
        if not err["loc"] and _PATH_PREFIX.match(message):
            where, _, message = message.partition(": ")
            where = f"{prefix}.{where}" if prefix else where
        else:
            where = field_path(err["loc"], prefix) or "(top level)"
        messages.setdefault(where, []).append(message)
    return [f"{where}: {' or '.join(dict.fromkeys(found))}" for where, found in messages.items()]


def _fields_at(model: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (``[]`` if none)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int):
            continue
        info = current.model_fields.get(part) if current is not None else None
        current = _model_in(info.annotation) if info is not None else None
    return list(current.model_fields) if current is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside an annotation (``X``, ``X | None``, ``list[X]``), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is not None:
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


#: Top-level keys that are tables or arrays of tables; a key written after such a table's
#: header belongs to that table in TOML.
_TABLES = ("problem", "source", "feedback", "metrics", "allocator", "sweep", "policies", "bandits")


def misplaced(data: dict[str, Any], key: str) -> str:
    """Where TOML put a top-level ``key`` that is missing: a key written below a ``[table]``
    header belongs to that table, so ``policies = [...]`` after ``[source]`` is no list."""
    for table in _TABLES:
        value = data.get(table)
        entries = value if isinstance(value, list) else [value]
        for index, entry in enumerate(entries):
            if isinstance(entry, dict) and key in entry:
                at = f"[{table}]" if not isinstance(value, list) else f"{table}[{index}]"
                return (
                    f"; `{key} = ...` sits inside {at} (in TOML a key written below a [table] header "
                    f"belongs to that table): move it above the first [table] header"
                )
    return ""
