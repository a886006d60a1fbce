"""Where a decision log is read from: a journal file today, a storage URL when the storage
of ``armlab server`` provides one (its reader registers in :data:`READERS` by URL scheme).

A reader returns a :class:`LoggedRun`: the experiment's stored meta data and every verified
event in the order it was applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armlab.errors import ArmlabError
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal

__all__ = ["READERS", "LogNotFound", "LoggedRun", "read_run"]


class LogNotFound(ArmlabError):
    """A log location names nothing armlab can read (the message says what to give)."""


@dataclass(frozen=True)
class LoggedRun:
    """One experiment's meta data (config, seed, policy label) and its events."""

    meta: dict[str, Any]
    events: list[Event]


def _read_journal(path: Path) -> LoggedRun:
    if not path.is_file():
        raise LogNotFound(f"log {str(path)!r} does not exist: give a journal file (armlab run/serve --journal)")
    with Journal.open(path) as journal:  # verifies the integrity chain while reading
        return LoggedRun(journal.meta, list(journal.events()))


#: Readers of storage URLs by scheme (``"postgresql"``, ...): ``reader(url, experiment)``.
READERS: dict[str, Callable[[str, str], LoggedRun]] = {}


def read_run(location: str | Path, experiment: str | None = None) -> LoggedRun:
    """The run logged at ``location``: a journal file, or a storage URL with ``experiment``."""
    text = str(location)
    scheme, sep, _ = text.partition("://")
    if not sep:
        if experiment is not None:
            raise LogNotFound(f"--experiment names an experiment of a storage URL; {text!r} is a journal file "
                              "holding one experiment: drop --experiment")
        return _read_journal(Path(text))
    reader = READERS.get(scheme)
    if reader is None:
        known = ", ".join(sorted(READERS)) or "none in this installation"
        raise LogNotFound(f"cannot read a log from {text!r}: no reader for storage URLs of scheme {scheme!r} "
                          f"(readers: {known}); give the experiment's journal file instead")
    if experiment is None:
        raise LogNotFound(f"{text!r} is a storage URL holding many experiments: name one with --experiment NAME")
    return reader(text, experiment)
