"""The journal of a live experiment in PostgreSQL: the SQLite journal's API and guarantees.

Many experiments share one database (tables of :mod:`.postgres_schema`, keyed by the
journal's id); a journal is named, e.g. after its experiment.  What holds as in SQLite
(:mod:`.store`), with the same code where it can be shared (:mod:`.chained`):

* **Committed before acknowledged.**  :meth:`PostgresJournal.append_many` returns once its
  one transaction is committed with ``synchronous_commit = on`` (the write-ahead log
  flushed to disk on the server).
* **The integrity chain and exact replay.**  Rows hold the values the chain hashed
  (:mod:`.values`: ``-0.0`` stored as ``0.0``, a lone surrogate or a NUL character as its
  escape; doubles kept to the bit), and :meth:`~.chained.ChainedJournal.events` verifies
  every one.  :meth:`PostgresJournal.backup` writes an SQLite journal file of the same meta
  data and events, whose chain ends at the same value.
* **One writer.**  Opening a journal takes a session-level advisory lock on its id
  (``pg_try_advisory_lock``) on the journal's own connection, and raises the journal's
  ``generation``.  A second process cannot open a journal while the first
  holds it (:class:`JournalInUse`, naming the URL the holder's server advertises, which
  ``open`` records beside the generation).  The lock is lost only with that connection (the
  process died, the connection was cut, the server restarted); another process may then take
  the journal over.  A writer whose machine vanished without closing its socket is dropped by
  the server within :data:`~.postgres_schema.DEAD_PEER_BOUND` seconds (TCP keepalives set on
  the server's end of the journal's connection), which frees the lock.  Each
  commit checks, in its transaction, that the generation is still the one this writer
  set, so a writer that lost ownership cannot commit, whichever connection the commit goes
  through: the journal's own, the process's connection for commits of many journals
  together (:meth:`PostgresJournal.append_together`, which the group commit uses), or a
  connection pooler's that would not keep a session's lock.

When the database cannot be reached (the server restarts, the connection is cut),
writing and reading raise :class:`JournalUnavailable`: nothing is acknowledged that was not
committed.  The journal object is then done (its connection and lock are gone): open the
journal again once the database answers, which replays it to the same state.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from armlab.log import get_logger
from armlab.orchestrator.journal.chained import COLUMN_NAMES, ChainedJournal, initial_meta
from armlab.orchestrator.journal.integrity import JournalCorrupted, JournalError, genesis
from armlab.orchestrator.journal.postgres_schema import (
    LOCK_CLASS, SERVER_KEEPALIVES, JournalInUse, JournalUnavailable, connect, events_column_types, require_current,
    shown,
)
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal

__all__ = ["JournalInUse", "JournalUnavailable", "PostgresJournal"]

log = get_logger(__name__)

_SELECT = f"SELECT {', '.join(COLUMN_NAMES)} FROM armlab_events WHERE journal = %b ORDER BY seq"

#: A commit in one statement (one round trip, its own transaction on the autocommit connection):
#: the generation fence moves the journal's event count from this writer's last commit to the
#: batch's end, and the batch's rows (one array per column, binary) are inserted only through
#: the fence's row, so a writer that lost the journal inserts nothing.  Five round trips
#: (BEGIN, the fence, COPY in and out, COMMIT) cost twice its CPU and latency per small batch,
#: and with a writer thread per experiment every round trip is a hand-over of the interpreter.
_APPEND = (
    "WITH fence AS (UPDATE armlab_journals SET events = %b WHERE id = %b AND generation = %b AND events = %b "
    f"RETURNING id) INSERT INTO armlab_events (journal, {', '.join(COLUMN_NAMES)}) SELECT fence.id, batch.* "
    f"FROM fence, unnest({', '.join(f'%b::{events_column_types()[c]}[]' for c in COLUMN_NAMES)}) AS batch"
)


class PostgresJournal(ChainedJournal):
    """A journal in a PostgreSQL database.  Use :meth:`create` or :meth:`open`; close it when done.

    Every use of the connection holds a lock, so the group-commit writer thread and a
    shutdown never use it at the same time.
    """

    def __init__(self, url: str, name: str, db: Any, journal_id: int, generation: int) -> None:
        self.url, self.name = url, name
        self._db, self._id, self._generation = db, journal_id, generation
        self._closed = False
        self._lock = threading.Lock()
        self._lost: str | None = None  # why the journal can no longer be used
        self._seq, self._chain = self._tail()

    def __repr__(self) -> str:
        return f"PostgresJournal({shown(self.url)!r}, {self.name!r}, events={self._seq})"

    # -- creating and opening ------------------------------------------------------------
    @classmethod
    def create(cls, url: str, name: str, meta: Mapping[str, Any]) -> PostgresJournal:
        """Start the new journal ``name`` holding ``meta`` (JSON values) and open it.

        Of two processes creating the same journal at once exactly one succeeds: the other
        gets a :class:`JournalError` saying it exists.
        """
        from psycopg import errors

        rows = [*((key, json.dumps(value)) for key, value in initial_meta(meta).items()), ("state", '"closed"')]
        with connect(url) as db:
            require_current(db, url)
            try:
                with db.transaction():
                    journal_id = db.execute("INSERT INTO armlab_journals (name) VALUES (%s) RETURNING id",
                                            (name,)).fetchone()[0]
                    db.cursor().executemany("INSERT INTO armlab_journal_meta (journal, key, value) VALUES (%s, %s, %s)",
                                            [(journal_id, key, value) for key, value in rows])
            except errors.UniqueViolation:
                raise JournalError(f"cannot create journal {name!r} in {shown(url)}: it already exists; resume it "
                                   "or pick another name") from None
        log.info("journal_created", url=shown(url), name=name)
        return cls.open(url, name)

    @classmethod
    def open(cls, url: str, name: str, owner: str | None = None) -> PostgresJournal:
        """Open the journal ``name`` for replay and appends, as its only writer; ``owner``
        (the URL this process's server advertises) is recorded for the processes that
        :class:`JournalInUse` turns away meanwhile."""
        import psycopg

        db = connect(url)
        try:
            require_current(db, url)
            row = db.execute("SELECT id FROM armlab_journals WHERE name = %s", (name,)).fetchone()
            if row is None:
                raise JournalError(f"journal {name!r} does not exist in {shown(url)}")
            journal_id = row[0]
            if not db.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_CLASS, journal_id)).fetchone()[0]:
                holder = db.execute("SELECT owner FROM armlab_journals WHERE id = %s", (journal_id,)).fetchone()[0]
                raise JournalInUse(f"journal {name!r} in {shown(url)} is in use by another process"
                                   + (f" ({holder})" if holder else ""), holder)
            db.execute("SET synchronous_commit = on")  # a commit returns once it is on the server's disk
            db.execute(SERVER_KEEPALIVES)  # a vanished writer loses the lock within DEAD_PEER_BOUND
            with db.transaction():
                generation = db.execute("UPDATE armlab_journals SET generation = generation + 1, owner = %s "
                                        "WHERE id = %s RETURNING generation", (owner, journal_id)).fetchone()[0]
                db.execute("UPDATE armlab_journal_meta SET value = '\"open\"' WHERE journal = %s AND key = 'state'",
                           (journal_id,))
            journal = cls(url, name, db, journal_id, generation)
            _joint.opened(url)
            return journal
        except psycopg.Error as exc:
            db.close()
            raise JournalUnavailable(f"cannot open journal {name!r} in {shown(url)}: {str(exc).strip()}") from None
        except BaseException:
            db.close()
            raise

    # -- reading -------------------------------------------------------------------------
    @property
    def meta(self) -> dict[str, Any]:
        """The experiment description stored at creation (config, seed, versions)."""
        return {key: json.loads(value) for key, value in self._meta_rows()}

    def _meta_rows(self) -> list[tuple[str, str]]:
        with self._using("read"):
            return self._db.execute("SELECT key, value FROM armlab_journal_meta WHERE journal = %s",
                                    (self._id,)).fetchall()

    def _rows(self) -> Iterator[Sequence[Any]]:
        with self._using("read"):
            rows = self._db.cursor(binary=True).execute(_SELECT, (self._id,)).fetchall()
        yield from rows

    def _genesis(self) -> str:
        return genesis(dict(self._meta_rows()))

    def _damaged(self, what: str, good: int) -> JournalCorrupted:
        return JournalCorrupted(
            f"journal {self.name!r} in {shown(self.url)} {what}; {good} event(s) verify: restore the database from "
            "its backup", good,
        )

    def _tail(self) -> tuple[int, str]:
        with self._using("read"):
            row = self._db.execute("SELECT seq, chain FROM armlab_events WHERE journal = %s ORDER BY seq DESC "
                                   "LIMIT 1", (self._id,)).fetchone()
        return (0, self._genesis()) if row is None else (row[0], row[1])

    # -- writing -------------------------------------------------------------------------
    def append_many(self, events: Sequence[Event]) -> None:
        """Write ``events`` in one transaction (all or none); returns once they are committed.

        Raises :class:`JournalUnavailable` when the database cannot be reached (then nothing
        of this call is acknowledged, and the journal is done: open it again), and
        :class:`JournalError` when another process took the journal over or a row breaks a
        rule of the schema (one dispatch per trial...).
        """
        seq, chain, rows = self.chained(events)
        if not rows:
            return
        with self._using("write"):
            written = self._db.execute(_APPEND, self._append_parameters(seq, rows)).rowcount
            if error := self._written(seq, chain, rows, written):
                raise error

    @property
    def together(self) -> str:
        """Journals of one database commit together (:meth:`append_together`)."""
        return self.url

    @classmethod
    def append_together(cls, batches: Sequence[tuple[ChainedJournal, Sequence[Event]]]) -> list[Exception | None]:
        """Commit the batches of several journals of one database in one transaction, on this
        process's connection for commits written together (:class:`_JointConnections`): each
        batch through its own journal's generation fence, so a journal another process took
        over writes nothing and fails alone.  Should the transaction fail (the database went
        away, a row broke a rule of the schema), each batch is written again alone, which
        says what failed, journal by journal: nothing of the failed transaction was written.
        """
        import psycopg

        journals = [journal for journal, _ in batches]
        if len(batches) < 2 or not all(isinstance(j, PostgresJournal) and j._lost is None for j in journals):
            return super().append_together(batches)
        prepared = [(journal, *journal.chained(events)) for journal, events in batches]
        with contextlib.ExitStack() as held:
            for journal in journals:
                held.enter_context(journal._lock)
            try:
                counts = _joint.write(journals[0].url, [journal._append_parameters(seq, rows)
                                                          for journal, seq, _, rows in prepared])
            except (psycopg.Error, JournalError):
                counts = None
            if counts is not None:
                return [journal._written(seq, chain, rows, count)
                        for (journal, seq, chain, rows), count in zip(prepared, counts, strict=True)]
        return super().append_together(batches)

    def _append_parameters(self, seq: int, rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
        """:data:`_APPEND`'s parameters: the fence, and the rows as one array per column."""
        return (seq, self._id, self._generation, self._seq, *map(list, zip(*rows)))

    def _written(self, seq: int, chain: str, rows: list[tuple[Any, ...]], count: int) -> JournalError | None:
        """After :data:`_APPEND` inserted ``count`` rows: move to ``seq`` and ``chain``, or, if
        the fence held (nothing written), the error of a journal another process took over."""
        if count != len(rows):
            self._lost = "another process opened it and writes it now"
            return JournalError(f"journal {self.name!r} in {shown(self.url)}: {self._lost}; nothing more is "
                                "written by this process")
        self._seq, self._chain = seq, chain
        return None

    def _using(self, what: str) -> _Use:
        return _Use(self, what)

    # -- closing and copying -------------------------------------------------------------
    def close(self) -> None:
        """Mark the journal closed, release the lock and end the connection.

        The lock is released by its own statement: the end of a connection releases it only
        once the server's backend has gone, a moment later, and an open right after the
        close (a server reopening an experiment, a test) would find it still held."""
        import psycopg

        try:
            if self._lost is None:
                with self._lock, self._db.transaction():
                    self._db.execute("UPDATE armlab_journal_meta SET value = '\"closed\"' WHERE journal = %s AND "
                                     "key = 'state' AND (SELECT generation FROM armlab_journals WHERE id = %s) = %s",
                                     (self._id, self._id, self._generation))
                    self._db.execute("UPDATE armlab_journals SET owner = NULL WHERE id = %s AND generation = %s",
                                     (self._id, self._generation))
                with self._lock:
                    self._db.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_CLASS, self._id))
        except psycopg.Error:
            pass  # the database is away: the next open marks it open again anyway
        finally:
            with self._lock:
                self._db.close()
                first, self._closed = not self._closed, True
            if first:
                _joint.closed(self.url)

    def backup(self, target: str | Path) -> Path:
        """Copy this journal into the new SQLite journal file ``target`` (same meta data,
        events and chain), which ``armlab journal verify`` and ``armlab resume`` read."""
        meta = {key: value for key, value in self.meta.items() if key != "state"}
        events = list(self.events())
        with Journal.create(target, meta) as copy:
            copy.append_many(events)
            if copy.position != self.position:
                raise JournalError(f"backup {str(target)!r} of journal {self.name!r} does not end on the same chain "
                                   "value; it is incomplete: remove it and try again")
        return Path(target)


class _JointConnections:
    """This process's connections for commits written together: one per database while a
    journal of it is open here (made on the first joint commit, again after a failure, and
    closed with the last journal), keyed by process too, so that a forked child never writes
    through its parent's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # one joint commit at a time on a connection
        self._journals: dict[tuple[int, str], int] = {}
        self._connections: dict[tuple[int, str], Any] = {}

    def opened(self, url: str) -> None:
        """A journal of ``url`` was opened in this process."""
        with self._lock:
            key = (os.getpid(), url)
            self._journals[key] = self._journals.get(key, 0) + 1

    def closed(self, url: str) -> None:
        """A journal of ``url`` was closed; with the last one, the connection is closed too."""
        with self._lock:
            key = (os.getpid(), url)
            left = self._journals.get(key, 1) - 1
            if left > 0:
                self._journals[key] = left
                return
            self._journals.pop(key, None)
            if (db := self._connections.pop(key, None)) is not None:
                db.close()

    def write(self, url: str, parameters: list[tuple[Any, ...]]) -> list[int]:
        """Run :data:`_APPEND` with each of ``parameters`` in one transaction (pipelined: one
        round trip) on the connection to ``url``; the rows each inserted."""
        import psycopg

        with self._lock:
            key = (os.getpid(), url)
            db = self._connections.get(key)
            if db is None:
                db = connect(url)
                db.execute("SET synchronous_commit = on")
                self._connections[key] = db
            try:
                with db.transaction(), db.pipeline():
                    cursors = [db.execute(_APPEND, one) for one in parameters]
                return [cursor.rowcount for cursor in cursors]
            except psycopg.Error:
                del self._connections[key]
                db.close()
                raise


_joint = _JointConnections()


class _Use:
    """The connection, used under the journal's lock: a lost database raises :class:`JournalUnavailable`."""

    def __init__(self, journal: PostgresJournal, what: str) -> None:
        self.journal, self.what = journal, what

    def __enter__(self) -> None:
        journal = self.journal
        journal._lock.acquire()
        if journal._lost is not None:
            journal._lock.release()
            raise JournalError(f"journal {journal.name!r} in {shown(journal.url)} can no longer be used: "
                               f"{journal._lost}; open it again")

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        import psycopg

        journal = self.journal
        journal._lock.release()
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            journal._lost = f"its database connection was lost ({str(exc).strip()})"
            raise JournalUnavailable(
                f"journal {journal.name!r} in {shown(journal.url)}: cannot {self.what}: the database cannot be reached "
                f"({str(exc).strip()}); nothing was acknowledged: open the journal again once it answers"
            ) from None
        if isinstance(exc, psycopg.Error):
            raise JournalError(f"journal {journal.name!r} in {shown(journal.url)}: cannot {self.what}: "
                               f"{str(exc).strip()}") from None
