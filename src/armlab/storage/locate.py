"""Where one experiment's journal is: a journal file, or a storage URL and an experiment name.

The commands that read a finished or stopped experiment (``armlab journal``, ``armlab
export``, ``armlab evaluate``, ``armlab storage copy``) take either form; this is the one
place that tells them apart (:func:`locate`).  A journal file and an experiment of an SQLite
storage are files; an experiment of a PostgreSQL storage is rows of its database; both are
read through their journal object (:func:`opened_journal`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armlab.errors import ConfigError

__all__ = ["Located", "locate", "opened_journal"]


@dataclass(frozen=True)
class Located:
    """A journal: its file (None for one in a database) and how messages name it."""

    shown: str
    file: Path | None
    storage_url: str | None = None
    experiment: str | None = None


def locate(location: str | Path, experiment: str | None) -> Located:
    """The journal ``location`` names: the file itself, or, for a storage URL (``sqlite:///PATH``,
    ``postgresql://...``), the journal of ``experiment`` in that storage."""
    text = str(location)
    if "://" not in text:
        if experiment is not None:
            raise ConfigError(f"--experiment names an experiment of a storage URL (sqlite:///PATH or "
                              f"postgresql://...); {text!r} is a journal file holding one experiment: drop --experiment")
        return Located(text, Path(text))
    if experiment is None:
        raise ConfigError(f"{text!r} is a storage URL holding many experiments: name one with --experiment NAME")
    from armlab.storage.url import is_postgresql, open_storage

    storage = open_storage(text)
    try:
        shown = storage.journal_path(experiment)  # UnknownExperiment names the fix
    finally:
        storage.close()
    if is_postgresql(text):
        return Located(shown, None, text, experiment)
    return Located(shown, Path(shown))


@contextmanager
def opened_journal(located: Located) -> Iterator[Any]:
    """The journal ``located`` names, opened exclusively (a journal in use is refused), closed
    on the way out: a :class:`~armlab.orchestrator.journal.store.Journal` or a
    :class:`~armlab.orchestrator.journal.postgres.PostgresJournal`."""
    if located.file is not None:
        from armlab.orchestrator.journal.store import Journal

        with Journal.open(located.file) as journal:
            yield journal
        return
    from armlab.storage.url import open_storage

    assert located.storage_url is not None and located.experiment is not None
    storage = open_storage(located.storage_url)
    try:
        journal = storage.open_journal(located.experiment)
    finally:
        storage.close()
    with journal:
        yield journal
