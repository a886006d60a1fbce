"""Migrating a journal of an older format to the current one, when it is opened."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from armlab.log import get_logger
from armlab.orchestrator.journal.integrity import CHAIN_FORMAT, genesis, link
from armlab.orchestrator.journal.schema import FORMAT_VERSION, LOG_COLUMNS, SCHEMA, Event, insert_events, row_of

__all__ = ["migrate_from_1", "migrate_from_2"]

log = get_logger(__name__)


def migrate_from_1(db: sqlite3.Connection, path: Path) -> None:
    """Format 1 had one bandit and no chain: rebuild the events table in one transaction."""
    old = db.execute("SELECT kind, trial, arm, reward, reason, key, at FROM events ORDER BY seq").fetchall()
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("DROP TABLE events")
        for statement in SCHEMA.split(";")[1:]:
            db.execute(statement)
        db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (json.dumps(FORMAT_VERSION),))
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('state', '\"closed\"')")
        chain = genesis(dict(db.execute("SELECT key, value FROM meta").fetchall()))
        for seq, (kind, trial, arm, reward, reason, key, at) in enumerate(old, start=1):
            event = Event(kind, trial, arm, 0, reward=reward, reason=reason, key=key, at=at)
            chain = link(chain, seq, event)
            db.execute(insert_events(1), row_of(seq, event, chain))
    log.info("journal_migrated", path=str(path), from_format=1, to_format=FORMAT_VERSION, events=len(old))


def migrate_from_2(db: sqlite3.Connection, path: Path) -> None:
    """Format 3 added the decision log's nullable columns: add them (NULL: unknown) in one
    transaction.  No row is rewritten: an event without those fields hashes as in format 2,
    and the meta keeps the chain's start (:data:`~.integrity.CHAIN_FORMAT`)."""
    created = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]
    with db:
        db.execute("BEGIN IMMEDIATE")
        for name, kind in LOG_COLUMNS:
            db.execute(f"ALTER TABLE events ADD COLUMN {name} {kind}")
        db.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (CHAIN_FORMAT, created))
        db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (json.dumps(FORMAT_VERSION),))
    log.info("journal_migrated", path=str(path), from_format=2, to_format=FORMAT_VERSION)
