"""armlab's tables in a PostgreSQL database: created, versioned and upgraded by armlab.

One database holds the journals of many experiments, in three tables keyed by the journal's
id (``armlab_journals.id``, the first column of every key, so each table is indexed on it):

* ``armlab_journals``: one row per journal: its ``name``, the ``generation`` of its current
  writer (raised by each process that opens it, see :mod:`.postgres`), its event count, and
  the ``owner``: the URL the current writer's server advertises (``--advertise-url``; null
  when the writer gave none or closed the journal);
* ``armlab_journal_meta``: the SQLite journal's ``meta`` table, per journal;
* ``armlab_events``: the SQLite journal's ``events`` table, per journal.  Its columns,
  checks and unique indexes are those of :data:`~.schema.SCHEMA` (the single source), with
  SQLite's types given their PostgreSQL names: a column added there is added here.

The catalog of ``armlab server --storage postgresql://...`` (:mod:`armlab.storage.postgres`)
adds two tables: ``armlab_experiments`` (name, journal name, configuration text, created,
stopped, cached summary, last activity) and ``armlab_tokens`` (client token hashes).

``armlab_schema_version`` records each applied migration; the database's version is the
highest, and a journal or catalog opens only on a database of the version this armlab writes
(:data:`DATABASE_VERSION`, the last migration's: the journal format
:data:`~.schema.FORMAT_VERSION` up to 3, then the catalog's 4, then the owner's URL 5).  :func:`upgrade` applies
the missing migrations in order, in one transaction, under a lock (two processes upgrading
at once take turns); it is idempotent.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from armlab._version import __version__
from armlab.extras import require
from armlab.orchestrator.journal.integrity import JournalError
from armlab.orchestrator.journal.schema import SCHEMA

__all__ = [
    "DATABASE_VERSION", "DEAD_PEER_BOUND", "LOCK_CLASS", "SERVER_KEEPALIVES", "MIGRATIONS", "JournalInUse", "JournalUnavailable", "connect",
    "database_version", "require_current", "shown", "upgrade",
]

#: The first key of armlab's advisory locks (ASCII "arml"); the second is a journal's id.
LOCK_CLASS = 0x61726D6C

_TABLES = """
CREATE TABLE IF NOT EXISTS armlab_journals (
    id INTEGER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    generation BIGINT NOT NULL DEFAULT 0,
    events BIGINT NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS armlab_journal_meta (
    journal INTEGER NOT NULL REFERENCES armlab_journals (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (journal, key)
)
"""

_CATALOG = """
CREATE TABLE IF NOT EXISTS armlab_experiments (
    name TEXT PRIMARY KEY,
    journal TEXT NOT NULL UNIQUE,
    config TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    stopped BOOLEAN NOT NULL DEFAULT FALSE,
    summary TEXT,
    last_activity DOUBLE PRECISION
);
CREATE TABLE IF NOT EXISTS armlab_tokens (
    token_id TEXT PRIMARY KEY,
    experiment TEXT NOT NULL REFERENCES armlab_experiments (name) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE
);
CREATE INDEX IF NOT EXISTS armlab_tokens_experiment ON armlab_tokens (experiment)
"""

_VERSIONS = """
CREATE TABLE IF NOT EXISTS armlab_schema_version (
    version INTEGER PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL,
    armlab_version TEXT NOT NULL
)
"""


class JournalUnavailable(JournalError):
    """The database cannot be reached now: nothing was acknowledged; open the journal (or the
    storage) again once it answers (a service answers 503 with Retry-After meanwhile)."""


class JournalInUse(JournalError):
    """Another process holds the journal (its advisory lock); ``owner`` is the URL that
    process's server advertises, or None when it gave none (a tool such as ``armlab journal``)."""

    def __init__(self, message: str, owner: str | None) -> None:
        super().__init__(message)
        self.owner = owner


def _statements(schema: str) -> list[str]:
    return [s.strip() for s in schema.split(";") if s.strip()]


def _postgres_types(definition: str) -> str:
    """A SQLite column definition with PostgreSQL's types: 64-bit integers and doubles."""
    definition = re.sub(r"\bINTEGER PRIMARY KEY\b", "BIGINT NOT NULL", definition)
    definition = re.sub(r"\bINTEGER\b", "BIGINT", definition)
    return re.sub(r"\bREAL\b", "DOUBLE PRECISION", definition)


def events_columns() -> list[str]:
    """The column definitions of :data:`~.schema.SCHEMA`'s ``events`` table (no table checks)."""
    table = next(s for s in _statements(SCHEMA) if s.startswith("CREATE TABLE events"))
    body = table[table.index("(") + 1 : table.rindex(")")]
    lines = [line.strip().rstrip(",") for line in body.splitlines() if line.strip()]
    return [_postgres_types(line) for line in lines]


def events_column_types() -> dict[str, str]:
    """``{column: PostgreSQL type}`` of the event columns of :func:`events_columns`."""
    return {definition.split()[0]: re.match(r"\w+ (DOUBLE PRECISION|\w+)", definition).group(1)  # type: ignore[union-attr]
            for definition in events_columns() if not definition.startswith("CHECK")}


def events_ddl() -> list[str]:
    """``armlab_events`` and its unique indexes, from :data:`~.schema.SCHEMA`, keyed by journal."""
    columns = events_columns()
    table = ("CREATE TABLE IF NOT EXISTS armlab_events (\n"
             "    journal INTEGER NOT NULL REFERENCES armlab_journals (id) ON DELETE CASCADE,\n    "
             + ",\n    ".join(columns) + ",\n    PRIMARY KEY (journal, seq)\n)")
    added = [f"ALTER TABLE armlab_events ADD COLUMN IF NOT EXISTS {c}" for c in columns if not c.startswith("CHECK")]
    indexes = [
        re.sub(r"CREATE UNIQUE INDEX (\w+) ON events \(", r"CREATE UNIQUE INDEX IF NOT EXISTS armlab_\1 ON armlab_events (journal, ", s)
        for s in _statements(SCHEMA) if s.startswith("CREATE UNIQUE INDEX")
    ]
    return [table, *added, *indexes]


def _tables_of_the_schema(db: Any) -> None:
    """Create armlab's tables, or add the columns and indexes :data:`~.schema.SCHEMA` gained
    (a new nullable column, a new index): safe to run again."""
    for statement in [*_statements(_TABLES), *events_ddl()]:
        db.execute(statement)


def _catalog(db: Any) -> None:
    """Create the catalog of ``armlab server``'s experiments and their client tokens."""
    for statement in _statements(_CATALOG):
        db.execute(statement)


def _owner(db: Any) -> None:
    """Record, beside a journal's writer generation, the URL its server advertises."""
    db.execute("ALTER TABLE armlab_journals ADD COLUMN IF NOT EXISTS owner TEXT")


#: The migrations, by the version they bring the database to, applied in order.  Versions 2
#: and 3 are the journal formats 2 (the first PostgreSQL holds) and 3 (the decision log's
#: nullable columns); 4 adds the server's catalog, 5 the owner's URL.  A later journal format whose change
#: schema.py describes (a new nullable column, a new index) adds ``(N, _tables_of_the_schema)``
#: with the next number; one that rewrites data adds its own step.
MIGRATIONS: tuple[tuple[int, Callable[[Any], None]], ...] = (
    (2, _tables_of_the_schema), (3, _tables_of_the_schema), (4, _catalog), (5, _owner),
)

#: The version of armlab's tables this armlab reads and writes: the last migration's.
DATABASE_VERSION = MIGRATIONS[-1][0]


def shown(url: str) -> str:
    """``url`` with its password (if any) hidden, for messages and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


#: TCP keepalives on every connection, both ends: a peer that vanished without closing its
#: socket (a lost machine, a cut cable) is noticed after at most idle + interval * count =
#: 11 seconds, and ``tcp_user_timeout`` bounds the same way a send that is never acknowledged.
#: On the server's end this ends a dead owner's session, which frees its journals' advisory
#: locks: the bound on a takeover after a lost machine (:meth:`.postgres.PostgresJournal.open`).
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 5, 2, 3
DEAD_PEER_BOUND = KEEPALIVE_IDLE + KEEPALIVE_INTERVAL * KEEPALIVE_COUNT  # seconds
SERVER_KEEPALIVES = (
    f"SET tcp_keepalives_idle = {KEEPALIVE_IDLE}; SET tcp_keepalives_interval = {KEEPALIVE_INTERVAL}; "
    f"SET tcp_keepalives_count = {KEEPALIVE_COUNT}; SET tcp_user_timeout = {DEAD_PEER_BOUND * 1000}"
)


def connect(url: str, timeout: float = 10.0) -> Any:
    """An autocommit connection to ``url`` (transactions are explicit) with TCP keepalives on
    this end (:data:`DEAD_PEER_BOUND`), or a :class:`JournalError`."""
    psycopg = require("psycopg", "postgres", "PostgreSQL storage")
    if not url.startswith(("postgresql://", "postgres://")):
        raise JournalError(f"{shown(url)!r} is not a PostgreSQL URL: give postgresql://USER@HOST:PORT/DATABASE")
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=max(1, round(timeout)), keepalives=1,
                               keepalives_idle=KEEPALIVE_IDLE, keepalives_interval=KEEPALIVE_INTERVAL,
                               keepalives_count=KEEPALIVE_COUNT, tcp_user_timeout=DEAD_PEER_BOUND * 1000)
    except psycopg.Error as exc:
        raise JournalUnavailable(f"cannot connect to {shown(url)}: {str(exc).strip()}") from None


def database_version(db: Any) -> int | None:
    """The version of armlab's tables in ``db`` (None: it holds none)."""
    if db.execute("SELECT to_regclass('armlab_schema_version')").fetchone()[0] is None:
        return None
    return db.execute("SELECT max(version) FROM armlab_schema_version").fetchone()[0]


def require_current(db: Any, url: str) -> None:
    """Raise unless ``db`` holds armlab's tables at the version this armlab writes."""
    version = database_version(db)
    if version is None:
        raise JournalError(f"{shown(url)} holds no armlab tables: run armlab storage init {shown(url)}")
    if version < DATABASE_VERSION:
        raise JournalError(f"{shown(url)} holds armlab's tables of format {version}; this armlab writes format "
                           f"{DATABASE_VERSION}: run armlab storage upgrade {shown(url)}")
    if version > DATABASE_VERSION:
        raise JournalError(f"{shown(url)} holds armlab's tables of format {version}, newer than this armlab's "
                           f"{DATABASE_VERSION}: use the armlab that upgraded it")


def upgrade(url: str) -> tuple[int | None, int]:
    """Create or upgrade armlab's tables in the database at ``url``; return (before, after)."""
    with connect(url) as db, db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS,))  # one upgrade at a time
        before = database_version(db)
        if before is not None and before > DATABASE_VERSION:
            require_current(db, url)  # raises: a newer armlab's tables are never touched
        db.execute(_VERSIONS)
        for version, migrate in MIGRATIONS:
            if before is None or version > before:
                migrate(db)
                db.execute("INSERT INTO armlab_schema_version (version, applied_at, armlab_version) "
                           "VALUES (%s, %s, %s)", (version, time.time(), __version__))
        return before, database_version(db)
