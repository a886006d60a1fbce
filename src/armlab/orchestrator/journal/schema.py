"""What a journal stores: its record type (:class:`Event`), its SQLite schema and format version.

The journal owns this vocabulary; the live experiment writes and replays these records, so
the live driver depends on the journal and never the other way round.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["COLUMNS", "FORMAT_VERSION", "LOG_COLUMNS", "SCHEMA", "Event", "EventKind", "event_of",
           "insert_events", "readable_columns", "row_of"]

EventKind = Literal["dispatch", "result", "failed", "abandoned", "late", "stopped", "retired"]


@dataclass(frozen=True)
class Event:
    """One change of an experiment, as journaled.  ``at`` is wall-clock time (Unix seconds);
    ``bandit`` is the trial's bandit (0 in one-bandit experiments).

    The decision log's fields (format 3) are ``None`` where unknown or not applicable:
    ``propensity`` is the probability with which a dispatch's arm was chosen, exact unless
    ``propensity_draws`` says how many draws of the policy's keyed randomness estimated it;
    ``unit`` is the unit a dispatch was asked for, ``metrics`` a result's named metrics as
    JSON text (stored and hashed as that text).
    """

    kind: EventKind
    trial: int
    arm: int
    bandit: int = 0
    reward: float | None = None
    reason: str = ""
    key: str | None = None
    at: float = 0.0
    propensity: float | None = None
    propensity_draws: int | None = None
    unit: str | None = None
    metrics: str | None = None


#: Version of the journal's schema.  1: one bandit, no chain; 2: events name their bandit and
#: carry the integrity chain (a format-1 journal is migrated when opened); 3: the decision
#: log's nullable columns (:data:`LOG_COLUMNS`; a format-2 journal gains them, all NULL, when opened).
FORMAT_VERSION = 3

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
    propensity REAL CHECK (propensity IS NULL OR (propensity > 0 AND propensity <= 1)),
    propensity_draws INTEGER CHECK (propensity_draws IS NULL OR propensity_draws > 0),
    unit TEXT,
    metrics TEXT,
    CHECK ((kind IN ('result', 'late')) = (reward IS NOT NULL))
);
CREATE UNIQUE INDEX one_dispatch_per_trial ON events (trial) WHERE kind = 'dispatch';
CREATE UNIQUE INDEX one_outcome_per_trial ON events (trial) WHERE kind IN ('result', 'failed', 'abandoned');
CREATE UNIQUE INDEX one_late_report_per_trial ON events (trial) WHERE kind = 'late';
CREATE UNIQUE INDEX one_trial_per_key ON events (key) WHERE key IS NOT NULL
"""

#: The columns format 3 added, with their SQL types (all nullable: NULL is unknown).
LOG_COLUMNS = (("propensity", "REAL"), ("propensity_draws", "INTEGER"), ("unit", "TEXT"), ("metrics", "TEXT"))

_FORMAT_2_COLUMNS = "seq, kind, trial, arm, bandit, reward, reason, key, at, chain"

#: The columns of an ``events`` row, in the order they are written and read.
COLUMNS = ", ".join([_FORMAT_2_COLUMNS, *(name for name, _ in LOG_COLUMNS)])

_ROW = f"({', '.join('?' * len(COLUMNS.split(',')))})"


@functools.cache
def insert_events(count: int) -> str:
    """The statement that writes ``count`` :func:`row_of` rows, their values one row after the other."""
    return f"INSERT INTO events ({COLUMNS}) VALUES " + ", ".join([_ROW] * count)


def readable_columns(db: sqlite3.Connection) -> str:
    """:data:`COLUMNS` as a ``SELECT`` list for the events table of ``db``: ``NULL`` for the
    format-3 columns of a format-2 table that was not migrated (a journal only read, e.g.
    salvaged)."""
    present = {row[1] for row in db.execute("PRAGMA table_info(events)")}
    return ", ".join([_FORMAT_2_COLUMNS, *(name if name in present else "NULL" for name, _ in LOG_COLUMNS)])


def row_of(seq: int, e: Event, chain: str) -> tuple[Any, ...]:
    """The ``events`` row of event number ``seq`` (:data:`COLUMNS` order)."""
    return (seq, e.kind, e.trial, e.arm, e.bandit, e.reward, e.reason, e.key, e.at, chain,
            e.propensity, e.propensity_draws, e.unit, e.metrics)


def event_of(row: Sequence[Any]) -> tuple[int, Event, str]:
    """``(seq, event, chain)`` of a row read with :data:`COLUMNS`."""
    seq, kind, trial, arm, bandit, reward, reason, key, at, chain, propensity, draws, unit, metrics = row
    return seq, Event(kind, trial, arm, bandit, reward=reward, reason=reason, key=key, at=at,
                      propensity=propensity, propensity_draws=draws, unit=unit, metrics=metrics), chain
