"""The append-only journal of a live experiment: SQLite in WAL mode, one row per event.

A journal holds the experiment's configuration and seed (table ``meta``) and every
:class:`~armlab.orchestrator.asktell.Event` in the order it was applied (table ``events``).
:meth:`Journal.append` returns only after the row is committed with ``synchronous=FULL``:
in WAL mode that fsyncs the write-ahead log on every commit, so an event that was
acknowledged survives a crash of the process or of the machine.  (``NORMAL`` would only
survive a process crash.)

:class:`GroupCommit` is the asynchronous way to write: events recorded on the event loop
are committed by a worker thread in batches (one fsync per batch), and a caller awaits
:meth:`GroupCommit.durable` before it acknowledges anything.  The experiment in memory may
run ahead of the disk by the batch being written, never an acknowledgement: if a write
fails, the writer raises and the process must stop; a restart replays the durable prefix.

The schema itself guards the invariants: one dispatch per trial, at most one outcome
(result, failure or abandon) per trial, one late report per trial, one trial per
idempotency key.  The database is opened in exclusive locking mode, so a second process
cannot write to a journal that is in use; the operating system drops the lock when the
owner dies, even by ``kill -9``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import anyio

from armlab._version import __version__
from armlab.errors import ArmlabError
from armlab.log import get_logger
from armlab.orchestrator.live_types import Event

__all__ = ["FORMAT_VERSION", "GroupCommit", "Journal", "JournalError"]

log = get_logger(__name__)

#: Version of the journal's schema.  1: one bandit; 2: every event names its bandit.
FORMAT_VERSION = 2

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('dispatch', 'result', 'failed', 'abandoned', 'late')),
    trial INTEGER NOT NULL CHECK (trial >= 0),
    arm INTEGER NOT NULL CHECK (arm >= 0),
    bandit INTEGER NOT NULL DEFAULT 0 CHECK (bandit >= 0),
    reward REAL,
    reason TEXT NOT NULL DEFAULT '',
    key TEXT,
    at REAL NOT NULL,
    CHECK ((kind IN ('result', 'late')) = (reward IS NOT NULL))
);
CREATE UNIQUE INDEX one_dispatch_per_trial ON events (trial) WHERE kind = 'dispatch';
CREATE UNIQUE INDEX one_outcome_per_trial ON events (trial) WHERE kind IN ('result', 'failed', 'abandoned');
CREATE UNIQUE INDEX one_late_report_per_trial ON events (trial) WHERE kind = 'late';
CREATE UNIQUE INDEX one_trial_per_key ON events (key) WHERE key IS NOT NULL;
"""


class JournalError(ArmlabError):
    """A journal cannot be created, opened or written (the message says which file and why)."""


class Journal:
    """An open journal file.  Use :meth:`create` or :meth:`open`, and close it when done."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r})"

    @classmethod
    def create(cls, path: str | Path, meta: Mapping[str, Any]) -> Journal:
        """Start a new journal at ``path`` (which must not exist) holding ``meta`` (JSON values)."""
        path = Path(path)
        if path.exists():
            raise JournalError(f"journal {str(path)!r} already exists; resume it or pick another file")
        journal = cls(path, _connect(path))
        rows = {"format": FORMAT_VERSION, "armlab_version": __version__, "created_at": time.time(), **meta}
        with journal._db:  # one transaction: a journal is either complete or absent
            journal._db.execute("BEGIN")
            for statement in filter(str.strip, _SCHEMA.split(";")):
                journal._db.execute(statement)
            journal._db.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [(key, json.dumps(value)) for key, value in rows.items()],
            )
        log.info("journal_created", path=str(path))
        return journal

    @classmethod
    def open(cls, path: str | Path) -> Journal:
        """Open an existing journal for replay and further appends."""
        path = Path(path)
        if not path.is_file():
            raise JournalError(f"journal {str(path)!r} does not exist")
        journal = cls(path, _connect(path))
        try:
            version = journal.meta.get("format")
        except sqlite3.DatabaseError as exc:
            journal.close()
            raise JournalError(f"{str(path)!r} is not an armlab journal: {exc}") from None
        if version == 1:
            journal._migrate_from_1()
        elif version != FORMAT_VERSION:
            journal.close()
            raise JournalError(
                f"journal {str(path)!r} has format {version!r}; this armlab reads formats 1 and {FORMAT_VERSION} "
                "(a newer armlab wrote it: resume it with that version)"
            )
        return journal

    def _migrate_from_1(self) -> None:
        """Format 1 had one bandit: its events get bandit 0, in one transaction."""
        with self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ALTER TABLE events ADD COLUMN bandit INTEGER NOT NULL DEFAULT 0 CHECK (bandit >= 0)")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (json.dumps(FORMAT_VERSION),))
        log.info("journal_migrated", path=str(self.path), from_format=1, to_format=FORMAT_VERSION)

    @property
    def meta(self) -> dict[str, Any]:
        """The experiment description stored at creation (config, seed, versions)."""
        rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return {key: json.loads(value) for key, value in rows}

    def append(self, event: Event) -> None:
        """Write ``event`` and commit; returns only once it is durable."""
        self.append_many([event])

    def append_many(self, events: Sequence[Event]) -> None:
        """Write ``events`` in one transaction (all or none); returns once they are durable."""
        rows = [(e.kind, e.trial, e.arm, e.bandit, e.reward, e.reason, e.key, e.at) for e in events]
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany(
                    "INSERT INTO events (kind, trial, arm, bandit, reward, reason, key, at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            raise JournalError(f"journal {str(self.path)!r}: cannot write {len(rows)} event(s): {exc}") from exc

    __call__ = append  # a journal is the experiment's recorder

    def events(self) -> Iterator[Event]:
        """Every event in the order it was applied."""
        cursor = self._db.execute("SELECT kind, trial, arm, bandit, reward, reason, key, at FROM events ORDER BY seq")
        for kind, trial, arm, bandit, reward, reason, key, at in cursor:
            yield Event(kind, trial, arm, bandit, reward=reward, reason=reason, key=key, at=at)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class GroupCommit:
    """Batch the events recorded on the event loop into one commit per batch.

    Use :meth:`record` as the experiment's recorder, run :meth:`run` in a task group, and
    ``await durable()`` before acknowledging: it returns once everything recorded so far
    is on disk.  Events stay in the buffer until their batch is committed; after :meth:`run`
    has ended (cancelled), :meth:`flush` writes what is left.  Only one thread at a time
    touches the database: the worker thread while a batch is written, else the caller.
    """

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.recorded = 0
        self.written = 0
        self.batches = 0
        self._buffer: list[Event] = []
        self._work = anyio.Event()
        self._progress = anyio.Event()
        self._failure: BaseException | None = None

    def __repr__(self) -> str:
        return f"GroupCommit(recorded={self.recorded}, written={self.written}, batches={self.batches})"

    def record(self, event: Event) -> None:
        if self._failure is not None:
            raise JournalError(f"the journal can no longer be written: {self._failure}")
        self._buffer.append(event)
        self.recorded += 1
        self._work.set()

    async def durable(self) -> None:
        """Wait until every event recorded before this call is committed."""
        target = self.recorded
        while self.written < target:
            if self._failure is not None:
                raise JournalError(f"the journal write failed: {self._failure}")
            await self._progress.wait()

    async def run(self) -> None:
        """Write batches until cancelled; a failed write is re-raised (stop the process).

        A batch being written when the task is cancelled is finished first (the worker
        thread is not abandoned), so no batch is ever half-known.
        """
        while True:
            await self._work.wait()
            self._work = anyio.Event()
            try:
                await anyio.to_thread.run_sync(self._write, len(self._buffer))
            except JournalError as exc:
                self._failure = exc
                raise
            finally:
                self._progress.set()
                self._progress = anyio.Event()

    def flush(self) -> None:
        """Write whatever is still buffered (call once :meth:`run` has ended)."""
        if self._buffer and self._failure is None:
            self._write(len(self._buffer))

    def _write(self, n: int) -> None:
        self.journal.append_many(self._buffer[:n])
        del self._buffer[:n]  # records appended meanwhile stay (list operations are atomic)
        self.written += n
        self.batches += 1


def _connect(path: Path) -> sqlite3.Connection:
    """Autocommit connection (each INSERT is its own durable transaction), WAL, exclusive."""
    try:
        db = sqlite3.connect(path, timeout=0.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise JournalError(f"cannot open journal {str(path)!r}: {exc}") from None
    try:
        db.execute("PRAGMA locking_mode = EXCLUSIVE")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        db.execute("PRAGMA synchronous = FULL")
        db.execute("BEGIN EXCLUSIVE")  # take the lock now, not at the first append
        db.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        db.close()
        if "locked" in str(exc):
            raise JournalError(f"journal {str(path)!r} is in use by another process") from None
        raise JournalError(f"cannot open journal {str(path)!r}: {exc}") from None
    if mode != "wal":
        db.close()
        raise JournalError(f"journal {str(path)!r}: the file system does not support SQLite's WAL mode")
    return db
