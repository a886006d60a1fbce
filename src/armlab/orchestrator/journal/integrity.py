"""Integrity checks of a journal: the event chain, the write-ahead log, the tail marker.

* **The chain.**  Every event row carries ``chain = sha256(previous chain, event)``,
  starting from a hash of the meta data written at creation (:func:`genesis`), so a
  changed, removed or reordered event is found when the events are read.
* **The write-ahead log.**  SQLite reads ``NAME-wal`` up to its first frame whose checksum
  fails and silently ignores the rest; :func:`refuse_a_damaged_log` finds committed
  transactions past that point.
* **The tail marker.**  ``NAME-tail`` holds the number and chain value of the last
  committed event, rewritten (not fsynced) after each commit.  It is never ahead of what is
  durable, so a journal that holds fewer events than its marker lost its tail (a cut or
  lost write-ahead log) and is refused.  A journal copied without its marker is not checked
  this way; ``armlab journal backup`` makes a complete copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

from armlab.errors import ArmlabError
from armlab.orchestrator.journal.schema import Event

__all__ = [
    "CHAIN_FORMAT", "JournalCorrupted", "JournalError", "TailMarker", "genesis", "link", "links_of_a_signed_zero",
    "refuse_a_damaged_log", "refuse_linked_files",
]


class JournalError(ArmlabError):
    """A journal cannot be created, opened or written (the message says which file and why)."""


class JournalCorrupted(JournalError):
    """A journal's content does not verify; ``good`` is the number of events that do."""

    def __init__(self, message: str, good: int) -> None:
        super().__init__(message)
        self.good = good


def link(previous: str, seq: int, event: Event) -> str:
    """The chain value of event number ``seq`` after ``previous`` (floats written exactly).

    ``event`` must hold its values as the journal stores them (:func:`.values.as_stored`).
    """
    return _link(previous, seq, event, event.reward, event.at)


def links_of_a_signed_zero(previous: str, seq: int, event: Event) -> list[str]:
    """The other chain values ``event`` may carry in a journal of armlab 0.1.0.

    That version hashed a reward or time of ``-0.0`` with its sign, while SQLite stored
    ``0.0``: such an event was written intact but does not match :func:`link`.  These
    are the values it was hashed to, for each of its zero fields that may have been ``-0.0``
    (none when it has no zero), so the journal stays readable without being rewritten.
    """
    rewards = [event.reward, -0.0] if event.reward == 0.0 else [event.reward]
    ats = [event.at, -0.0] if event.at == 0.0 else [event.at]
    return [_link(previous, seq, event, reward, at) for reward in rewards for at in ats][1:]


def _link(previous: str, seq: int, event: Event, reward: float | None, at: float) -> str:
    fields = [seq, event.kind, event.trial, event.arm, event.bandit, None if reward is None else float(reward).hex(),
              event.reason, event.key, float(at).hex()]
    logged = [None if event.propensity is None else float(event.propensity).hex(), event.propensity_draws,
              event.unit, event.metrics]
    if any(value is not None for value in logged):  # format 3's fields; an event without them hashes as in format 2
        fields += logged
    text = previous + _compact(fields)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


#: ``json.dumps(value, separators=(",", ":"))``, the same text, with its encoder made once
#: (``json.dumps`` builds a new one for every call with non-default separators: half the
#: cost of hashing an event).
_compact = json.JSONEncoder(separators=(",", ":")).encode


#: Meta key of a migrated journal: the format its chain was started under (see :func:`genesis`).
CHAIN_FORMAT = "chain_format"


def genesis(meta: Mapping[str, str]) -> str:
    """The chain's start: a hash of the meta data written at creation (state excluded).

    A journal migrated in place (format 2 to 3) keeps its chain: its meta holds the format
    it was created with under :data:`CHAIN_FORMAT`, which is hashed as ``format``.
    """
    fixed = {k: v for k, v in meta.items() if k not in ("state", CHAIN_FORMAT)}
    if CHAIN_FORMAT in meta:
        fixed["format"] = meta[CHAIN_FORMAT]
    return _genesis(sorted(fixed.items()))


def _genesis(fixed: list[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(fixed).encode()).hexdigest()[:32]




#: What armlab and SQLite create beside a journal ``NAME``: ``NAME-tail`` and SQLite's files.
SIDE_FILES = ("-tail", "-wal", "-shm", "-journal")


def refuse_linked_files(path: Path) -> None:
    """Raise when a file beside the journal ``path`` that armlab or SQLite would write is a
    symbolic link: writing through it would change whatever file it points to."""
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        if side.is_symlink():
            raise JournalError(_a_link(side))


def _a_link(path: Path) -> str:
    return (f"{str(path)!r} is a symbolic link; armlab does not write through a link beside a journal "
            "(it would change the file it points to): remove the link and run the same command again")


class TailMarker:
    """``NAME-tail``: the number and chain value of the journal's last committed event.

    It is opened with ``O_NOFOLLOW``: a link put in its place is refused, never written through.
    """

    def __init__(self, journal_path: Path) -> None:
        self.path = Path(f"{journal_path}-tail")
        self._fd: int | None = None

    def read(self) -> tuple[int, str] | None:
        """The marker's (number, chain), or None when there is no (readable) marker."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            return None
        try:
            seq, chain = os.read(fd, 128).decode("ascii").split()
            return int(seq), chain
        except (OSError, ValueError):
            return None
        finally:
            os.close(fd)

    def open(self) -> None:
        """Open (or create) the marker for writing; raise :class:`JournalError` if it is a link."""
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            except OSError as exc:
                if self.path.is_symlink():
                    raise JournalError(_a_link(self.path)) from None
                raise JournalError(f"cannot open the journal's marker {str(self.path)!r}: {exc}") from None

    def write(self, seq: int, chain: str) -> None:
        """Record the last committed event (after its commit; a page-cache write, no fsync)."""
        self.open()
        text = f"{seq} {chain}\n".encode("ascii").ljust(64)  # fixed width: one write, no truncate
        os.pwrite(self._fd, text, 0)  # type: ignore[arg-type]

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def check(self, path: Path, seq: int, chain_at: Callable[[int], str | None]) -> None:
        """Raise unless the journal (``seq`` events; ``chain_at(n)`` the chain of event n)
        holds the marker's event unchanged."""
        marked = self.read()
        if marked is None or marked[0] == 0:
            return
        n, chain = marked
        if seq < n:
            raise JournalCorrupted(
                f"journal {str(path)!r} holds {seq} events but committed {n}: events {seq + 1}..{n} are lost "
                f"(its write-ahead log {str(path)!r}-wal was cut, lost or replaced); the last good event is {seq}. "
                "Restore both files from a backup, or `armlab journal salvage` the readable part",
                good=seq,
            )
        if chain_at(n) != chain:
            raise JournalCorrupted(
                f"journal {str(path)!r}: event {n} differs from the one committed (its files were replaced or "
                "mixed with another journal's)", good=0,
            )


def refuse_a_damaged_log(db: sqlite3.Connection, path: Path) -> None:
    """Raise when the write-ahead log holds committed transactions SQLite had to skip.

    SQLite reads the log up to its first frame whose checksum fails and ignores the rest: a
    damaged frame silently drops every later commit.  After a crash the last frames may be
    torn (a transaction that was never acknowledged), so only a commit frame of the log's
    current generation (its salt values) that lies past the frames SQLite uses *and* is
    followed by further frames counts as lost.  A log cut exactly at a frame boundary looks
    like an earlier crash and cannot be told apart.
    """
    used = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()[1]  # frames SQLite accepted
    data = Path(f"{path}-wal").read_bytes()
    if used < 0 or len(data) < 32:
        return
    page_size, salts = int.from_bytes(data[8:12], "big"), data[16:24]
    size = 24 + page_size
    frames = (len(data) - 32) // size
    lost = [
        i for i in range(used, frames - 1)
        if data[32 + i * size + 8 : 32 + i * size + 16] == salts
        and int.from_bytes(data[32 + i * size + 4 : 32 + i * size + 8], "big") != 0  # a commit frame
    ]
    if lost:
        raise JournalCorrupted(
            f"journal {str(path)!r}: its write-ahead log {str(path)!r}-wal is damaged at frame {used + 1}, and "
            f"{len(lost)} committed transaction(s) after it cannot be read; resuming would drop acknowledged "
            "events.  Restore both files from a backup, or `armlab journal salvage` the readable part",
            good=0,
        )


