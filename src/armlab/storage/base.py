"""The storage protocol of ``armlab server``: experiments, their client tokens, their journals.

A storage holds a *catalog* (each experiment's name, configuration text, creation time,
whether an operator stopped it, a cached summary for listings, and the SHA-256 hashes of its
client tokens, never a token) and one *journal* per experiment, the same journal that
``armlab serve --journal FILE`` writes, so every guarantee of one journal (journaled before
acknowledged, the integrity chain, exact replay, the behaviour on a full disk or a damaged
or deleted file) holds for each experiment.

The SQLite backend (:mod:`armlab.storage.sqlite`) implements it with files; the PostgreSQL
backend (:mod:`armlab.storage.postgres`) implements the same methods with tables, and
returns journals with the :class:`~armlab.orchestrator.journal.store.Journal` interface
(``meta``, ``events()``, ``append_many()``, ``backup()``, ``close()``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from armlab.errors import ArmlabError
from armlab.orchestrator.journal.store import Journal

__all__ = [
    "NAME_RULE", "ExperimentExists", "ExperimentRecord", "Storage", "StorageUnavailable", "UnknownExperiment",
    "check_name",
]

#: Experiment names: 1-64 characters of letters, digits, ``.``, ``_`` and ``-``, not
#: starting with ``.`` or ``-`` (a name is a URL segment and part of file names).
NAME_RULE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")


class ExperimentExists(ArmlabError):
    """An experiment of that name is in the storage already."""


class UnknownExperiment(ArmlabError, LookupError):
    """No experiment of that name is in the storage."""


class StorageUnavailable(ArmlabError):
    """The storage's database cannot be reached now (it restarts, the connection was cut):
    nothing was changed; try again shortly (the server answers 503 with Retry-After)."""


def check_name(name: str) -> str:
    """``name`` if it is a valid experiment name; else a ValueError saying the rule."""
    if not isinstance(name, str) or not NAME_RULE.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid experiment name: use 1-64 characters of letters, digits, '.', '_' "
            "and '-', not starting with '.' or '-'"
        )
    return name


@dataclass(frozen=True)
class ExperimentRecord:
    """One experiment's catalog entry (what is known without opening its journal)."""

    name: str
    config: str  # the configuration as it was given: TOML text, or JSON text of an object
    created: float  # seconds since the epoch
    stopped: bool  # an operator stopped it: no more dispatches
    summary: Mapping[str, Any] | None  # the last summary saved (state, trials, recommendation), if any
    last_activity: float | None


class Storage(Protocol):
    """A catalog of experiments and their journals (see the module's docstring)."""

    url: str

    def create_experiment(self, name: str, config: str, meta: Mapping[str, Any]) -> ExperimentRecord:
        """Add ``name`` with its configuration text and a new, empty journal holding ``meta``;
        raise :class:`ExperimentExists` if the name is taken."""

    def list_experiments(self) -> list[ExperimentRecord]:
        """Every experiment, sorted by name."""

    def get_experiment(self, name: str) -> ExperimentRecord:
        """The catalog entry of ``name``; raise :class:`UnknownExperiment`."""

    def delete_experiment(self, name: str) -> None:
        """Remove ``name``, its tokens and its journal; the name can be used again.  A storage
        shared by several processes raises :class:`~armlab.orchestrator.journal.postgres_schema.JournalInUse`
        (changing nothing) while another process holds the journal."""

    def set_stopped(self, name: str) -> None:
        """Record that an operator stopped ``name`` (kept across restarts)."""

    def save_summary(self, name: str, summary: Mapping[str, Any], last_activity: float | None) -> None:
        """Keep ``summary`` for listings of ``name`` while its journal is not open."""

    def add_token(self, name: str, token_id: str, token_hash: str) -> None:
        """Store the hash of a new client token of ``name``."""

    def revoke_token(self, name: str, token_id: str) -> bool:
        """Remove a client token of ``name``; False if ``name`` has no such token."""

    def token_hashes(self) -> dict[str, tuple[str, str]]:
        """``{token hash: (token id, experiment name)}`` of every client token."""

    def open_journal(self, name: str) -> Journal:
        """Open the journal of ``name`` exclusively, for replay and appends."""

    def owners(self) -> dict[str, str]:
        """``{experiment: URL}`` of the experiments another server process may own now (an
        SQLite storage is served by one process: none)."""

    def journal_path(self, name: str) -> str:
        """Where the journal of ``name`` is, for ``armlab journal`` and messages (a file path,
        or the database URL and the journal's name)."""

    def close(self) -> None:
        """Release the catalog."""
