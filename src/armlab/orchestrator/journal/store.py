"""The append-only journal of a live experiment: SQLite in WAL mode, one row per event.

A journal holds the experiment's configuration and seed (table ``meta``) and every
:class:`~armlab.orchestrator.journal.schema.Event` in the order it was applied (table ``events``).
:meth:`Journal.append_many` returns only after its rows are committed with
``synchronous=FULL``: in WAL mode that fsyncs the write-ahead log on every commit, so an
event that was acknowledged survives a crash of the process or of the machine.

A journal is ``NAME`` and, while it is in use or after a crash, ``NAME-wal`` (the
write-ahead log, which holds the newest events until SQLite copies them into ``NAME``), with
a small marker ``NAME-tail`` (the last committed event).  Copy all of them, or use
``armlab journal backup`` (SQLite's backup API, one file) on a journal no process is using.
At a clean close the log is copied into the main file and removed; SQLite also copies it
whenever it passes 1000 pages.

What is checked, and when:

* **Integrity chain.**  Every event row carries ``chain = sha256(previous chain, event)``,
  starting from a hash of the journal's meta data, and rows are numbered 1, 2, 3...
  Reading the events (replay) recomputes the chain: a changed, removed or reordered event,
  or changed meta data, raises :class:`JournalCorrupted` naming the last good event.
* **A lost, cut or damaged write-ahead log.**  ``meta.state`` is ``open`` while a process
  uses the journal and ``closed`` after a clean close; a journal that was not closed cleanly
  and has neither its ``-wal`` file nor its marker was copied or moved without them, and is
  refused.  A damaged log
  frame that hides later commits, and a journal holding fewer events than its tail marker
  ``NAME-tail`` says were committed, are refused too (:mod:`.integrity`).
* **Damaged pages.**  SQLite's own errors while reading are reported the same way.
* **The file itself.**  Before each write the journal checks that its path still names
  the file it opened, so a journal deleted or replaced while in use stops the writer instead
  of acknowledging results written to an unlinked file.

* **Values as stored.**  Every event is hashed as SQLite returns it (:mod:`.values`:
  ``-0.0`` is stored as ``0.0``).  armlab 0.1.0 hashed a ``-0.0`` with its sign; such an
  event is accepted as it was written (the chain value it was given is recognised), so
  those journals verify, replay and salvage unchanged, and are never rewritten.
* **Links.**  A journal reached through a symbolic link is used where the link points
  (SQLite puts ``NAME-wal`` there, and ``NAME-tail`` goes beside it).  A link in the place
  of ``NAME-tail`` or of SQLite's files is refused, never written through.

``armlab journal salvage`` (:mod:`.repair`) copies the readable, verified prefix of a damaged journal into
a new one.  Creation is atomic (written under a new temporary name, then linked to its
name, which fails if that exists), so a crash while creating leaves no half-made journal,
and of two processes creating the same journal at once exactly one succeeds.  The schema guards the invariants: one dispatch
per trial, at most one outcome per trial, one late report per trial, one trial per
idempotency key.  The database is opened in exclusive locking mode, so a second process
cannot use a journal that is in use; the operating system drops the lock when the owner
dies, even by ``kill -9``.
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from armlab.log import get_logger
from armlab.orchestrator.journal.integrity import (
    JournalCorrupted,
    JournalError,
    TailMarker,
    genesis,
    refuse_a_damaged_log,
    refuse_linked_files,
)
from armlab.orchestrator.journal.chained import ChainedJournal, initial_meta
from armlab.orchestrator.journal.migration import migrate_from_1, migrate_from_2
from armlab.orchestrator.journal.schema import COLUMNS, FORMAT_VERSION, SCHEMA, Event, insert_events, readable_columns

__all__ = ["FORMAT_VERSION", "Journal", "JournalCorrupted", "JournalError"]

log = get_logger(__name__)

#: The most events one ``INSERT`` writes.  A batch of the live path (a few events) is one
#: statement, which SQLite commits as its own transaction: the commit thread lets go of the
#: interpreter lock once for it, where ``BEGIN``, a step per row and ``COMMIT`` let go of it and
#: took it back once each, every time a wake-up of the event loop's thread or of another
#: journal's commit thread (with 50 journals on one server, eight commit threads writing
#: batches of four events switched twice as often: 20 against 10 context switches per commit).
#: A larger batch is written by statements of this many rows in one transaction (a batch of
#: 1000 events: 8 against 11 us of CPU per event); the 64 statements stay in the connection's
#: statement cache (128).
ROWS_PER_STATEMENT = 64


class Journal(ChainedJournal):
    """An open journal file.  Use :meth:`create` or :meth:`open`, and close it when done.

    Every use of the connection holds a lock, so the group-commit writer thread and a
    shutdown never use it at the same time.
    """

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self._lock = threading.Lock()
        self._identity = _identity(path)
        self._seq, self._chain = self._tail()
        self.tail = TailMarker(path)

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r}, events={self._seq})"

    # -- creating and opening ------------------------------------------------------------
    @classmethod
    def create(cls, path: str | Path, meta: Mapping[str, Any]) -> Journal:
        """Start a new journal at ``path`` (which must not exist) holding ``meta`` (JSON values).

        The journal is written under a new temporary name and linked to ``path`` (which
        fails if ``path`` exists, atomically), so ``path`` is either a complete journal or
        absent, whatever happens meanwhile, and of two processes creating it at once exactly
        one succeeds: the other gets a :class:`JournalError` saying the journal exists.
        """
        path = Path(path)
        if path.exists() or path.is_symlink():  # a link is never followed to create a file elsewhere
            raise JournalError(_exists(path))
        rows = initial_meta(meta)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.creating")
        try:
            refuse_linked_files(path)
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))  # new, not a link
            db = sqlite3.connect(temporary, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode = WAL")
                with db:
                    db.execute("BEGIN")
                    for statement in SCHEMA.split(";"):
                        db.execute(statement)
                    db.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                                   [(key, json.dumps(value)) for key, value in rows.items()])
                    db.execute("INSERT INTO meta (key, value) VALUES ('state', '\"closed\"')")
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                db.close()  # the write-ahead log is folded in and removed
            _fsync(temporary)
            os.link(temporary, path)  # never replaces a file: the one atomic test that path is new
            TailMarker(path).remove()  # a stale marker of an earlier journal of that name
            _fsync(path.parent)
        except FileExistsError:
            raise JournalError(_exists(path, at_once=True)) from None
        except (OSError, sqlite3.Error) as exc:
            raise JournalError(f"cannot create journal {str(path)!r}: {exc}") from None
        finally:
            _remove_file(temporary)
        log.info("journal_created", path=str(path))
        return cls.open(path)

    @classmethod
    def open(cls, path: str | Path) -> Journal:
        """Open an existing journal for replay and further appends (format 1 is migrated)."""
        path = _resolved(path)
        if not path.is_file():
            raise JournalError(f"journal {str(path)!r} does not exist")
        refuse_linked_files(path)
        wal_present = Path(f"{path}-wal").exists()
        db = _connect(path)
        try:
            return cls._checked(path, db, wal_present)
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):  # e.g. its disk is still full after a stop on a full disk
                raise JournalError(f"cannot open journal {str(path)!r} for writing: {exc}; free space on its "
                                   "disk (or fix what the error names) and run the same command again") from None
            raise

    @classmethod
    def _checked(cls, path: Path, db: sqlite3.Connection, wal_present: bool) -> Journal:
        """The journal on the connection ``db``, once its files are known to be complete."""
        try:
            meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{str(path)!r} is not an armlab journal: {exc}") from None
        version = json.loads(meta.get("format", "null"))
        if version not in (1, 2, FORMAT_VERSION):
            raise JournalError(
                f"journal {str(path)!r} has format {version!r}; this armlab reads formats 1 to "
                f"{FORMAT_VERSION} (a newer armlab wrote it: resume it with that version)"
            )
        if meta.get("state") == '"open"' and not wal_present and TailMarker(path).read() is None:
            # (with its marker, the marker decides: SQLite may have folded the log in at a close
            # that could not mark the journal closed, e.g. on a full disk)
            raise JournalCorrupted(
                f"journal {str(path)!r} was not closed cleanly and its write-ahead log {str(path)!r}-wal is "
                "missing, so its newest events are lost (copy a journal with its -wal file, or use "
                "`armlab journal backup`); `armlab journal salvage` keeps what the main file holds",
                good=0,
            )
        if wal_present:
            refuse_a_damaged_log(db, path)
        if version == 1:
            migrate_from_1(db, path)
        elif version == 2:
            migrate_from_2(db, path)
        journal = cls(path, db)
        journal.tail.check(path, journal._seq, journal._chain_at)
        journal.tail.open()
        try:
            journal._set_state("open")
            with journal._lock:  # into the main file, so a copy of it alone is known to be incomplete
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except BaseException:
            journal.tail.close()
            raise
        return journal

    # -- reading -------------------------------------------------------------------------
    @property
    def meta(self) -> dict[str, Any]:
        """The experiment description stored at creation (config, seed, versions)."""
        with self._lock:
            rows = self._db.execute("SELECT key, value FROM meta").fetchall()
        return {key: json.loads(value) for key, value in rows}

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        """The stored rows in order; on a damaged file, row by row up to the first unreadable one."""
        with self._lock:
            try:
                columns = readable_columns(self._db)
                rows = self._db.execute(f"SELECT {columns} FROM events ORDER BY seq").fetchall()
            except sqlite3.DatabaseError:
                columns, rows = COLUMNS, None
        if rows is not None:
            yield from rows
            return
        seq = 0
        while True:
            seq += 1
            with self._lock:
                try:
                    row = self._db.execute(f"SELECT {columns} FROM events WHERE seq = ?", (seq,)).fetchone()
                except sqlite3.DatabaseError as exc:
                    raise self._damaged(f"cannot be read from event {seq} on ({exc}); the last good event "
                                        f"is {seq - 1}", seq - 1) from None
            if row is None:
                raise self._damaged(f"cannot be read after event {seq - 1}", seq - 1)
            yield row

    def _damaged(self, what: str, good: int) -> JournalCorrupted:
        return JournalCorrupted(
            f"journal {str(self.path)!r} {what}; `armlab journal salvage {self.path} NEW` copies the "
            f"{good} good event(s) to a new journal", good,
        )

    def _genesis(self) -> str:
        with self._lock:
            return genesis(dict(self._db.execute("SELECT key, value FROM meta").fetchall()))

    def _chain_at(self, seq: int) -> str | None:
        row = self._db.execute("SELECT chain FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else row[0]

    def _tail(self) -> tuple[int, str]:
        try:
            row = self._db.execute("SELECT seq, chain FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.DatabaseError:
            return 0, ""  # a damaged journal: events() says where, appends are refused by then
        return (0, self._genesis()) if row is None else (row[0], row[1])

    # -- writing -------------------------------------------------------------------------
    def append_many(self, events: Sequence[Event]) -> None:
        """Write ``events`` in one transaction (all or none); returns once they are durable."""
        with self._lock:
            self._check_identity()
            seq, chain, rows = self.chained(events)
            try:
                if len(rows) <= ROWS_PER_STATEMENT:
                    _insert(self._db, rows)  # one statement: a transaction of its own
                else:
                    with self._db:
                        self._db.execute("BEGIN IMMEDIATE")
                        for start in range(0, len(rows), ROWS_PER_STATEMENT):
                            _insert(self._db, rows[start:start + ROWS_PER_STATEMENT])
            except sqlite3.Error as exc:
                raise JournalError(f"journal {str(self.path)!r}: cannot write {len(rows)} event(s): {exc}") from exc
            self._seq, self._chain = seq, chain
            self.tail.write(seq, chain)

    def _check_identity(self) -> None:
        if _identity(self.path) != self._identity:
            raise JournalError(
                f"journal {str(self.path)!r} was deleted, moved or replaced while in use; nothing more is "
                "written: put the file back and resume it"
            )

    def _set_state(self, state: str) -> None:
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'state'", (json.dumps(state),))

    # -- closing and copying -------------------------------------------------------------
    def close(self) -> None:
        """Mark the journal closed, fold the write-ahead log into the main file, close."""
        try:
            if _identity(self.path) == self._identity:
                self._set_state("closed")
                with self._lock:
                    self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass  # a full disk or a damaged file: the log stays, and the next open replays it
        finally:
            with self._lock:
                self._db.close()
                self.tail.close()

    def backup(self, target: str | Path) -> Path:
        """Copy this journal into the new file ``target`` with SQLite's backup API (one file)."""
        target = Path(target)
        if target.exists():
            raise JournalError(f"backup target {str(target)!r} already exists; pick a new file")
        copy = sqlite3.connect(target)
        try:
            with self._lock:
                self._db.backup(copy)
            copy.execute("PRAGMA journal_mode = WAL")
            copy.execute("UPDATE meta SET value = '\"closed\"' WHERE key = 'state'")
            copy.commit()
        finally:
            copy.close()
        return target



def _insert(db: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write ``rows`` (:func:`~.schema.row_of` rows) by one statement."""
    if rows:
        db.execute(insert_events(len(rows)), [value for row in rows for value in row])


def _resolved(path: str | Path) -> Path:
    """``path``, or where it points if it is a symbolic link: SQLite writes ``NAME-wal`` beside
    the file a link points to, so every file of the journal is kept there."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _exists(path: Path, at_once: bool = False) -> str:
    why = "another process created it at the same moment" if at_once else "it already exists"
    return f"cannot create journal {str(path)!r}: {why}; resume it or pick another file"


def _remove_file(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _connect(path: Path) -> sqlite3.Connection:
    """Autocommit connection (each transaction durable), WAL, exclusive."""
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

