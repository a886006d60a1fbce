"""The PostgreSQL storage: the catalog in tables, each experiment's journal a PostgresJournal.

``postgresql://USER@HOST:PORT/DATABASE`` keeps the catalog (names, configurations, created
times, stopped flags, cached summaries, token hashes) in ``armlab_experiments`` and
``armlab_tokens``, and each experiment's events in the journal tables of
:mod:`armlab.orchestrator.journal.postgres`, under a journal named
``<experiment>-<random>`` (so a re-created experiment of a reused name never meets the
events of the deleted one, as in the SQLite storage).  The tables are created by
``armlab storage init URL`` (:mod:`armlab.orchestrator.journal.postgres_schema`).

The catalog uses one connection per process, under a lock, opened again on the next call
after the database went away: catalog calls are few (a listing, an experiment's first
use, a token issued) and short, so one connection serves a process; each open journal holds
a connection of its own, because its advisory lock (the journal's one writer) lives on it.
While the database cannot be reached every call raises :class:`StorageUnavailable`, which
changed nothing.

Several server processes may share the storage: each experiment is owned by the process
whose journal holds its lock, and each journal records the URL its owner's server advertises
(``advertise_url``), which :meth:`PostgresStorage.owners` reads for the others.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from armlab.errors import ConfigError
from armlab.orchestrator.journal.integrity import JournalError
from armlab.orchestrator.journal.postgres import PostgresJournal
from armlab.orchestrator.journal.postgres_schema import (
    LOCK_CLASS, JournalInUse, JournalUnavailable, connect, require_current, shown,
)
from armlab.storage.base import ExperimentExists, ExperimentRecord, StorageUnavailable, UnknownExperiment

__all__ = ["PostgresStorage"]

_COLUMNS = "name, config, created, stopped, summary, last_activity"
_CONNECT_TIMEOUT = 3.0  # seconds: a request waits at most this long for a database that is away


class PostgresStorage:
    """A catalog in armlab's tables of one PostgreSQL database; journals beside it."""

    def __init__(self, url: str, advertise_url: str | None = None) -> None:
        self.url = url
        self.advertise_url = advertise_url  # recorded as the owner of each journal this process opens
        self._db: Any = None
        self._lock = threading.Lock()

    @classmethod
    def open(cls, url: str, advertise_url: str | None = None) -> PostgresStorage:
        """Connect to ``url`` and check that it holds armlab's tables of this version."""
        storage = cls(url, advertise_url)
        try:
            with storage._connection():
                pass
        except (StorageUnavailable, JournalError) as exc:
            raise ConfigError(f"cannot open the storage {shown(url)}: {exc}") from None
        return storage

    def __repr__(self) -> str:
        return f"PostgresStorage({shown(self.url)!r})"

    # -- experiments ---------------------------------------------------------------------
    def create_experiment(self, name: str, config: str, meta: Mapping[str, Any]) -> ExperimentRecord:
        from psycopg import errors

        if self._row(name) is not None:
            raise ExperimentExists(f"experiment {name} exists")
        journal = f"{name}-{secrets.token_hex(6)}"
        try:
            PostgresJournal.create(self.url, journal, meta).close()
        except JournalUnavailable as exc:
            raise StorageUnavailable(str(exc)) from None
        created = time.time()
        try:
            with self._connection() as db:
                db.execute("INSERT INTO armlab_experiments (name, journal, config, created) VALUES (%s, %s, %s, %s)",
                           (name, journal, config, created))
        except errors.UniqueViolation:  # created meanwhile by another request or process
            self._drop_journal(journal)
            raise ExperimentExists(f"experiment {name} exists") from None
        return ExperimentRecord(name, config, created, False, None, None)

    def list_experiments(self) -> list[ExperimentRecord]:
        with self._connection() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM armlab_experiments ORDER BY name").fetchall()
        return [_record(row) for row in rows]

    def get_experiment(self, name: str) -> ExperimentRecord:
        row = self._row(name)
        if row is None:
            raise UnknownExperiment(f"no experiment named {name!r}")
        return _record(row)

    def delete_experiment(self, name: str) -> None:
        """Remove ``name`` and its journal, unless a process holds the journal: then raise
        :class:`JournalInUse` naming that process (its server deletes it), having changed nothing.

        The journal's lock is taken for the transaction that deletes it, so no process can
        open the journal between the check and the delete, and none deletes a journal that
        another process writes."""
        with self._connection() as db, db.transaction():
            row = db.execute("SELECT j.id, j.name, j.owner FROM armlab_experiments e JOIN armlab_journals j "
                             "ON j.name = e.journal WHERE e.name = %s FOR UPDATE OF e", (name,)).fetchone()
            if row is None:
                raise UnknownExperiment(f"no experiment named {name!r} in {shown(self.url)}")
            journal_id, journal, owner = row
            if not db.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", (LOCK_CLASS, journal_id)).fetchone()[0]:
                raise JournalInUse(f"experiment {name!r} is in use by another process"
                                   + (f" ({owner})" if owner else ""), owner)
            db.execute("DELETE FROM armlab_experiments WHERE name = %s", (name,))
            db.execute("DELETE FROM armlab_journals WHERE name = %s", (journal,))  # its events and meta go too

    def set_stopped(self, name: str) -> None:
        self._update(name, "UPDATE armlab_experiments SET stopped = TRUE WHERE name = %s", (name,))

    def save_summary(self, name: str, summary: Mapping[str, Any], last_activity: float | None) -> None:
        self._update(name, "UPDATE armlab_experiments SET summary = %s, last_activity = %s WHERE name = %s",
                     (json.dumps(summary), last_activity, name))

    # -- tokens --------------------------------------------------------------------------
    def add_token(self, name: str, token_id: str, token_hash: str) -> None:
        self._update(name, "INSERT INTO armlab_tokens (token_id, experiment, hash) VALUES (%s, %s, %s)",
                     (token_id, name, token_hash))

    def revoke_token(self, name: str, token_id: str) -> bool:
        with self._connection() as db:
            cursor = db.execute("DELETE FROM armlab_tokens WHERE token_id = %s AND experiment = %s", (token_id, name))
        return cursor.rowcount > 0

    def token_hashes(self) -> dict[str, tuple[str, str]]:
        with self._connection() as db:
            rows = db.execute("SELECT hash, token_id, experiment FROM armlab_tokens").fetchall()
        return {digest: (token_id, name) for digest, token_id, name in rows}

    # -- journals ------------------------------------------------------------------------
    def open_journal(self, name: str) -> PostgresJournal:
        return PostgresJournal.open(self.url, self._journal_name(name), self.advertise_url)

    def owners(self) -> dict[str, str]:
        """``{experiment: the advertised URL of the process that owns it}``, for the experiments
        some process holds now (its journal's advisory lock is granted; a writer that died
        without closing left its URL behind, but not its lock)."""
        with self._connection() as db:
            rows = db.execute(
                "SELECT e.name, j.owner FROM armlab_experiments e JOIN armlab_journals j ON j.name = e.journal "
                "JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = j.id "
                "AND l.objsubid = 2 WHERE j.owner IS NOT NULL", (LOCK_CLASS,)).fetchall()
        return dict(rows)

    def journal_path(self, name: str) -> str:
        return f"{shown(self.url)} journal {self._journal_name(name)}"

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # -- helpers -------------------------------------------------------------------------
    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """The catalog's connection (opened now if needed), used under the lock; a lost
        database closes it and raises :class:`StorageUnavailable`."""
        import psycopg

        with self._lock:
            try:
                if self._db is None:
                    db = connect(self.url, _CONNECT_TIMEOUT)
                    try:
                        require_current(db, self.url)
                    except BaseException:
                        db.close()
                        raise
                    self._db = db
                yield self._db
            except JournalUnavailable as exc:
                raise StorageUnavailable(str(exc)) from None
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if self._db is not None:
                    self._db.close()
                    self._db = None
                raise StorageUnavailable(f"the storage {shown(self.url)} cannot be reached: "
                                         f"{str(exc).strip()}") from None

    def _row(self, name: str) -> tuple[Any, ...] | None:
        with self._connection() as db:
            return db.execute(f"SELECT {_COLUMNS} FROM armlab_experiments WHERE name = %s", (name,)).fetchone()

    def _journal_name(self, name: str) -> str:
        with self._connection() as db:
            row = db.execute("SELECT journal FROM armlab_experiments WHERE name = %s", (name,)).fetchone()
        if row is None:
            raise UnknownExperiment(f"no experiment named {name!r} in {shown(self.url)}")
        return row[0]

    def _drop_journal(self, journal: str) -> None:
        with self._connection() as db:
            db.execute("DELETE FROM armlab_journals WHERE name = %s", (journal,))

    def _update(self, name: str, statement: str, values: tuple[Any, ...]) -> None:
        with self._connection() as db, db.transaction():
            if db.execute("SELECT 1 FROM armlab_experiments WHERE name = %s FOR UPDATE", (name,)).fetchone() is None:
                raise UnknownExperiment(f"no experiment named {name!r}")
            db.execute(statement, values)


def _record(row: tuple[Any, ...]) -> ExperimentRecord:
    name, config, created, stopped, summary, last_activity = row
    return ExperimentRecord(name, config, created, bool(stopped), json.loads(summary) if summary else None,
                            last_activity)
