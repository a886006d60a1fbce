"""Repairing a journal: salvaging the verified prefix of a damaged one into a new one."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from armlab.orchestrator.journal.integrity import JournalCorrupted, JournalError
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal

__all__ = ["salvage", "salvage_into"]


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
    try:
        return salvage_into(target, meta, Journal(source, db).events(), str(source))
    finally:
        db.close()


def salvage_into(target: str | Path, meta: dict[str, Any], events: Iterator[Event], source: str) -> int:
    """Write the events of ``events`` up to the first that does not verify into the new
    journal ``target`` (with the experiment's ``meta``); return how many were kept."""
    kept: list[Event] = []
    try:
        for event in events:
            kept.append(event)
    except JournalCorrupted:
        pass
    created = {k: v for k, v in meta.items() if k not in ("format", "armlab_version", "created_at", "state")}
    with Journal.create(target, {**created, "salvaged_from": source}) as journal:
        journal.append_many(kept)
    return len(kept)
