"""The SQLite storage: a catalog file, and one journal file per experiment beside it.

``sqlite:///PATH`` keeps the catalog (names, configurations, created times, stopped flags,
cached summaries, token hashes) in ``PATH`` and each experiment's journal in
``PATH-experiments/<name>-<random>.sqlite``.  One journal file per experiment, rather than
all events in one file, because:

* each journal *is* the journal ``armlab serve`` writes, so every guarantee of one journal
  holds per experiment unchanged (group commit, integrity chain, exclusive open, the
  disk-full and damaged-file behaviour), and ``armlab journal verify|backup|salvage`` work on
  it as on any journal;
* SQLite allows one writer per file: in one file, every experiment's commit would wait for
  every other's, while separate files commit (and fsync) independently;
* a damaged journal damages one experiment, never the catalog or the others; deleting an
  experiment deletes its file.

The random part of a journal's file name keeps a re-created experiment of a reused name from
ever meeting the files of the deleted one.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from armlab.errors import ConfigError
from armlab.orchestrator.journal.store import Journal, JournalError
from armlab.storage.base import ExperimentExists, ExperimentRecord, UnknownExperiment

__all__ = ["SqliteStorage"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS experiments (
    name TEXT PRIMARY KEY,
    journal TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,
    created REAL NOT NULL,
    stopped INTEGER NOT NULL DEFAULT 0,
    summary TEXT,
    last_activity REAL
);
CREATE TABLE IF NOT EXISTS tokens (
    token_id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL REFERENCES experiments (name) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE
)
"""
_COLUMNS = "name, config, created, stopped, summary, last_activity"


class SqliteStorage:
    """A catalog in one SQLite file; journals in the folder ``<catalog>-experiments``."""

    def __init__(self, url: str, path: Path, db: sqlite3.Connection) -> None:
        self.url = url
        self.path = path
        self.folder = path.with_name(path.name + "-experiments")
        self._db = db
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str, path: Path) -> SqliteStorage:
        """Open the catalog at ``path``, creating it (and its journal folder) if new."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = FULL")
            db.execute("PRAGMA foreign_keys = ON")
            db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise ConfigError(f"cannot open the storage {url!r} (catalog {str(path)!r}): {exc}") from None
        storage = cls(url, path, db)
        storage.folder.mkdir(exist_ok=True)
        return storage

    def __repr__(self) -> str:
        return f"SqliteStorage({self.url!r})"

    # -- experiments ---------------------------------------------------------------------
    def create_experiment(self, name: str, config: str, meta: Mapping[str, Any]) -> ExperimentRecord:
        if self._row(name) is not None:
            raise ExperimentExists(f"experiment {name} exists")
        file_name = f"{name}-{secrets.token_hex(6)}.sqlite"
        Journal.create(self.folder / file_name, meta).close()
        created = time.time()
        try:
            with self._lock, self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("INSERT INTO experiments (name, journal, config, created) VALUES (?, ?, ?, ?)",
                                 (name, file_name, config, created))
        except sqlite3.IntegrityError:  # created meanwhile by another request
            _remove_journal(self.folder / file_name)
            raise ExperimentExists(f"experiment {name} exists") from None
        return ExperimentRecord(name, config, created, False, None, None)

    def list_experiments(self) -> list[ExperimentRecord]:
        with self._lock:
            rows = self._db.execute(f"SELECT {_COLUMNS} FROM experiments ORDER BY name").fetchall()
        return [_record(row) for row in rows]

    def get_experiment(self, name: str) -> ExperimentRecord:
        row = self._row(name)
        if row is None:
            raise UnknownExperiment(f"no experiment named {name!r}")
        return _record(row)

    def delete_experiment(self, name: str) -> None:
        journal = self._journal_file(name)
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("DELETE FROM experiments WHERE name = ?", (name,))
        _remove_journal(journal)

    def set_stopped(self, name: str) -> None:
        self._update(name, "UPDATE experiments SET stopped = 1 WHERE name = ?", (name,))

    def save_summary(self, name: str, summary: Mapping[str, Any], last_activity: float | None) -> None:
        self._update(name, "UPDATE experiments SET summary = ?, last_activity = ? WHERE name = ?",
                     (json.dumps(summary), last_activity, name))

    # -- tokens --------------------------------------------------------------------------
    def add_token(self, name: str, token_id: str, token_hash: str) -> None:
        self._update(name, "INSERT INTO tokens (token_id, experiment, hash) VALUES (?, ?, ?)",
                     (token_id, name, token_hash))

    def revoke_token(self, name: str, token_id: str) -> bool:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            cursor = self._db.execute("DELETE FROM tokens WHERE token_id = ? AND experiment = ?", (token_id, name))
        return cursor.rowcount > 0

    def token_hashes(self) -> dict[str, tuple[str, str]]:
        with self._lock:
            rows = self._db.execute("SELECT hash, token_id, experiment FROM tokens").fetchall()
        return {digest: (token_id, name) for digest, token_id, name in rows}

    # -- journals ------------------------------------------------------------------------
    def open_journal(self, name: str) -> Journal:
        return Journal.open(self._journal_file(name))

    def owners(self) -> dict[str, str]:
        return {}  # one process serves an SQLite storage

    def journal_path(self, name: str) -> str:
        return str(self._journal_file(name))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- helpers -------------------------------------------------------------------------
    def _row(self, name: str) -> tuple[Any, ...] | None:
        with self._lock:
            return self._db.execute(f"SELECT {_COLUMNS} FROM experiments WHERE name = ?", (name,)).fetchone()

    def _journal_file(self, name: str) -> Path:
        with self._lock:
            row = self._db.execute("SELECT journal FROM experiments WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise UnknownExperiment(f"no experiment named {name!r} in {self.url}")
        return self.folder / row[0]

    def _update(self, name: str, statement: str, values: tuple[Any, ...]) -> None:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            if self._db.execute("SELECT 1 FROM experiments WHERE name = ?", (name,)).fetchone() is None:
                raise UnknownExperiment(f"no experiment named {name!r}")
            self._db.execute(statement, values)


def _record(row: tuple[Any, ...]) -> ExperimentRecord:
    name, config, created, stopped, summary, last_activity = row
    return ExperimentRecord(name, config, created, bool(stopped), json.loads(summary) if summary else None,
                            last_activity)


def _remove_journal(path: Path) -> None:
    """Delete a journal's files (the main file, its write-ahead log, shared memory, tail marker)."""
    for part in (path, *(Path(f"{path}-{suffix}") for suffix in ("wal", "shm", "tail"))):
        try:
            part.unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise JournalError(f"cannot delete {str(part)!r}: {exc.strerror or exc}") from None
