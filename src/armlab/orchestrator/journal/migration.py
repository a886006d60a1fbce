"""Migrating a journal of an older format to the current one, when it is opened."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from armlab.log import get_logger
from armlab.orchestrator.journal.integrity import genesis, link
from armlab.orchestrator.journal.schema import COLUMNS, FORMAT_VERSION, SCHEMA, Event

__all__ = ["migrate_from_1"]

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
            chain = link(chain, seq, Event(kind, trial, arm, 0, reward=reward, reason=reason, key=key, at=at))
            db.execute(f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                       (seq, kind, trial, arm, reward, reason, key, at, chain))
    log.info("journal_migrated", path=str(path), from_format=1, to_format=FORMAT_VERSION, events=len(old))
