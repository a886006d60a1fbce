"""Repairing a journal: salvaging the verified prefix of a damaged one into a new one."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from armlab.orchestrator.journal.integrity import JournalCorrupted, JournalError
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal

__all__ = ["salvage"]


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
