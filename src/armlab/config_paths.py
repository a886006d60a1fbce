"""Paths and ``module:function`` references in plugin tables resolve against the config's directory.

A config names the files it uses (a ratings file, a program, a callback module) relative to
itself, so it runs the same from any working directory, in worker processes and when a
journal is resumed elsewhere.  :func:`armlab.plan.build_plan` validates every plugin table
with the config's :class:`PathBase` in pydantic's validation context (:func:`path_context`):
the directory of the config file, or the current directory for a config built in Python.
A path parameter of a plugin carries one of :data:`ConfigFile`, :data:`ConfigDir` or
:data:`ConfigPath` (``ratings: Annotated[str | None, ConfigFile] = None``), which turns a
relative path into an absolute one against it; an absolute path is kept as written.  Parameters validated without that context (a plugin built directly in
Python) keep their paths as written, relative to the working directory when used.

The resolution is lexical (``a/link/../b`` is ``a/b``), as a shell's ``cd`` is, so a config
reached through a symbolic link finds the files next to the link.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import AfterValidator, ValidationInfo

__all__ = [
    "ConfigDir",
    "ConfigFile",
    "ConfigPath",
    "PathBase",
    "import_path",
    "path_base",
    "path_context",
    "resolve_path",
]

_KEY = "armlab_path_base"


@dataclass(frozen=True)
class PathBase:
    """The directory relative paths resolve against, and whether it is a config file's."""

    directory: Path
    from_file: bool = True

    @classmethod
    def of_file(cls, path: str | Path) -> PathBase:
        """The base of the config file at ``path``: its directory, made absolute."""
        return cls(Path(os.path.abspath(Path(path).parent)))

    def __str__(self) -> str:
        where = "the config file's directory" if self.from_file else "the current directory (no config file)"
        return f"{where}, {self.directory}"


def path_context(base: PathBase) -> dict[str, Any]:
    """The validation context under which plugin parameters resolve paths against ``base``."""
    return {_KEY: base}


def path_base(info: ValidationInfo) -> PathBase | None:
    """The :class:`PathBase` of a validation, or ``None`` outside a config."""
    base = info.context.get(_KEY) if isinstance(info.context, dict) else None
    return base if isinstance(base, PathBase) else None


def resolve_path(value: str, base: PathBase, must_exist: Literal["file", "directory"] | None = None) -> str:
    """``value`` made absolute against ``base`` (an absolute path is returned as given).

    With ``must_exist``, a relative path that does not name an existing file (directory) is
    refused with a message naming the resolved path and the base directory; the field is
    named by the error's location.
    """
    if os.path.isabs(value):
        return value
    resolved = os.path.normpath(os.path.join(base.directory, value))
    exists = {"file": os.path.isfile, "directory": os.path.isdir, None: lambda _: True}[must_exist]
    if not exists(resolved):
        raise ValueError(f"{value!r} is {resolved}, which is not an existing {must_exist} "
                         f"(relative paths resolve against {base})")
    return resolved


def _resolved(must_exist: Literal["file", "directory"] | None) -> AfterValidator:
    def resolve(value: str | None, info: ValidationInfo) -> str | None:
        base = path_base(info)
        return value if base is None or value is None else resolve_path(value, base, must_exist)

    return AfterValidator(resolve)


#: Marks a plugin parameter naming an existing file: ``Annotated[str, ConfigFile]``.
ConfigFile = _resolved("file")
#: Marks a plugin parameter naming an existing directory: ``Annotated[str | None, ConfigDir]``.
ConfigDir = _resolved("directory")
#: Marks a plugin parameter naming a path that need not exist yet (a cache, an output).
ConfigPath = _resolved(None)


@contextmanager
def import_path(directory: Path | None) -> Iterator[None]:
    """Within this context ``directory`` comes first on ``sys.path``, so a module next to the
    config (and the modules it imports as it loads) is found before any other of its name.

    The entry is removed afterwards: armlab leaves the import path as it found it.
    """
    if directory is None:
        yield
        return
    importlib.invalidate_caches()  # a module written since the interpreter started is found
    sys.path.insert(0, str(directory))
    try:
        yield
    finally:
        sys.path.remove(str(directory))
