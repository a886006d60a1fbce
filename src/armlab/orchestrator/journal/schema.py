"""What a journal stores: its record type (:class:`Event`), its SQLite schema and format version.

The journal owns this vocabulary; the live experiment writes and replays these records, so
the live driver depends on the journal and never the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COLUMNS", "FORMAT_VERSION", "SCHEMA", "Event", "EventKind"]

EventKind = Literal["dispatch", "result", "failed", "abandoned", "late", "stopped", "retired"]


@dataclass(frozen=True)
class Event:
    """One change of an experiment, as journaled.  ``at`` is wall-clock time (Unix seconds);
    ``bandit`` is the trial's bandit (0 in one-bandit experiments)."""

    kind: EventKind
    trial: int
    arm: int
    bandit: int = 0
    reward: float | None = None
    reason: str = ""
    key: str | None = None
    at: float = 0.0


#: Version of the journal's schema.  1: one bandit, no chain; 2: events name their bandit and
#: carry the integrity chain (a format-1 journal is migrated when opened).
FORMAT_VERSION = 2

#: The tables of a new journal, statements separated by ``;`` (the first creates ``meta``).
SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('dispatch', 'result', 'failed', 'abandoned', 'late', 'stopped', 'retired')),
    trial INTEGER NOT NULL CHECK (trial >= 0),
    arm INTEGER NOT NULL CHECK (arm >= 0),
    bandit INTEGER NOT NULL DEFAULT 0 CHECK (bandit >= 0),
    reward REAL,
    reason TEXT NOT NULL DEFAULT '',
    key TEXT,
    at REAL NOT NULL,
    chain TEXT NOT NULL,
    CHECK ((kind IN ('result', 'late')) = (reward IS NOT NULL))
);
CREATE UNIQUE INDEX one_dispatch_per_trial ON events (trial) WHERE kind = 'dispatch';
CREATE UNIQUE INDEX one_outcome_per_trial ON events (trial) WHERE kind IN ('result', 'failed', 'abandoned');
CREATE UNIQUE INDEX one_late_report_per_trial ON events (trial) WHERE kind = 'late';
CREATE UNIQUE INDEX one_trial_per_key ON events (key) WHERE key IS NOT NULL
"""

#: The columns of an ``events`` row, in the order they are written and read.
COLUMNS = "seq, kind, trial, arm, bandit, reward, reason, key, at, chain"
