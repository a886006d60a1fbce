"""Output paths of the commands, checked before any work is done.

A run that could not write its results would fail only at its end, after the work (and
the results) are lost; so every directory or file a command writes to is created (with its
parents) and probed first, and a path that cannot be written stops the command at once
with one line naming the option (exit code 2).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TextIO

from armlab.cli.errors import UserError

__all__ = ["open_for_append", "writable_dir", "writable_file"]


def writable_dir(path: str | Path, option: str) -> Path:
    """Create directory ``path`` (and its parents) if needed and check that a file can be
    created in it; ``option`` names the option that gave it, for the message."""
    path = Path(path)
    reason = _unwritable(path)
    if reason:
        raise UserError(f"{option} {path}: cannot create this directory or write in it ({reason}); "
                        "choose another directory")
    return path


def writable_file(path: str | Path, option: str) -> Path:
    """Check that file ``path`` can be written: its directory is created if needed and
    probed, and the path must not be a directory.  The file itself is not created."""
    path = Path(path)
    if path.is_dir():
        raise UserError(f"{option} {path}: this is a directory; give a file name")
    reason = _unwritable(path.parent)
    if reason:
        raise UserError(f"{option} {path}: cannot create its directory or write in it ({reason}); "
                        "choose another place")
    return path


def _unwritable(directory: Path) -> str | None:
    """Why no file can be created in ``directory`` (created first if missing), or ``None``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def open_for_append(path: str | Path, option: str) -> TextIO:
    """Open file ``path`` for appending text, creating it and its directory if needed."""
    writable_file(path, option)
    try:
        return open(path, "a", encoding="utf-8")  # the caller closes it
    except OSError as exc:
        raise UserError(f"{option} {path}: cannot open this file for writing ({exc.strerror or exc})") from None
