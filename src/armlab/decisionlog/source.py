"""Where a decision log is read from: a journal file, or an experiment of ``armlab server``'s
storage (a storage URL and ``--experiment NAME``, :mod:`armlab.storage.locate`).

A reader returns a :class:`LoggedRun`: the experiment's stored meta data and every verified
event in the order it was applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armlab.errors import ArmlabError
from armlab.orchestrator.journal.schema import Event
from armlab.storage.locate import locate, opened_journal

__all__ = ["LogNotFound", "LoggedRun", "read_run"]


class LogNotFound(ArmlabError):
    """A log location names nothing armlab can read (the message says what to give)."""


@dataclass(frozen=True)
class LoggedRun:
    """One experiment's meta data (config, seed, policy label) and its events."""

    meta: dict[str, Any]
    events: list[Event]


def read_run(location: str | Path, experiment: str | None = None) -> LoggedRun:
    """The run logged at ``location``: a journal file, or a storage URL with ``experiment``."""
    located = locate(location, experiment)
    if located.file is not None and not located.file.is_file():
        raise LogNotFound(f"log {located.shown!r} does not exist: give a journal file (armlab run/serve --journal)")
    with opened_journal(located) as journal:  # verifies the integrity chain while reading
        return LoggedRun(journal.meta, list(journal.events()))
