"""Repairing journals: salvaging a damaged one, migrating an older format."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from armlab.log import get_logger
from armlab.orchestrator.journal import _COLUMNS, _SCHEMA, FORMAT_VERSION, Journal
from armlab.orchestrator.journal_integrity import JournalCorrupted, JournalError, genesis, link
from armlab.orchestrator.live_types import Event

__all__ = ["migrate_from_1", "salvage"]

log = get_logger(__name__)


def salvage(source: str | Path, target: str | Path) -> int:
    """Copy the verified prefix of the (damaged) journal ``source`` into a new journal
    ``target``; return how many events were kept.  ``source`` is only read."""
    source = Path(source)
    db = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        meta = {key: json.loads(value) for key, value in db.execute("SELECT key, value FROM meta")}
    except sqlite3.DatabaseError as exc:
        db.close()
        raise JournalError(f"{str(source)!r}: its meta data cannot be read ({exc}); nothing to salvage") from None
    reader = Journal(source, db)
    kept: list[Event] = []
    try:
        for event in reader.events():
            kept.append(event)
    except JournalCorrupted:
        pass
    finally:
        db.close()
    created = {k: v for k, v in meta.items() if k not in ("format", "armlab_version", "created_at", "state")}
    with Journal.create(target, {**created, "salvaged_from": str(source)}) as journal:
        journal.append_many(kept)
    return len(kept)


def migrate_from_1(db: sqlite3.Connection, path: Path) -> None:
    """Format 1 had one bandit and no chain: rebuild the events table in one transaction."""
    old = db.execute("SELECT kind, trial, arm, reward, reason, key, at FROM events ORDER BY seq").fetchall()
    with db:
        db.execute("BEGIN IMMEDIATE")
        db.execute("DROP TABLE events")
        for statement in _SCHEMA.split(";")[1:]:
            db.execute(statement)
        db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (json.dumps(FORMAT_VERSION),))
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('state', '\"closed\"')")
        chain = genesis(dict(db.execute("SELECT key, value FROM meta").fetchall()))
        for seq, (kind, trial, arm, reward, reason, key, at) in enumerate(old, start=1):
            chain = link(chain, seq, Event(kind, trial, arm, 0, reward=reward, reason=reason, key=key, at=at))
            db.execute(f"INSERT INTO events ({_COLUMNS}) VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?)",
                       (seq, kind, trial, arm, reward, reason, key, at, chain))
    log.info("journal_migrated", path=str(path), from_format=1, to_format=FORMAT_VERSION, events=len(old))


