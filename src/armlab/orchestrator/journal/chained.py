"""What every journal store shares: rows built from events, the chain checked on every read.

A journal store (SQLite in :mod:`.store`, PostgreSQL in :mod:`.postgres`) keeps meta data
and an ordered list of event rows, each carrying its integrity chain value.  The stores
differ in how rows are written and read; this module holds what must be identical between
them, so a journal copied from one to the other verifies unchanged:

* the meta data written at creation (:func:`initial_meta`);
* an event's row: the columns of :data:`~.schema.COLUMNS` (:func:`~.schema.row_of`,
  :func:`~.schema.event_of`), so a column added to the schema is added in one place;
* the values written (:func:`~.values.as_stored`) and their chain (:meth:`ChainedJournal.chained`);
* replay (:meth:`ChainedJournal.events`): every row verified against the chain.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from armlab._version import __version__
from armlab.orchestrator.journal.integrity import JournalCorrupted, link, links_of_a_signed_zero
from armlab.orchestrator.journal.schema import COLUMNS, FORMAT_VERSION, Event, event_of, row_of
from armlab.orchestrator.journal.values import as_stored

__all__ = ["COLUMN_NAMES", "ChainedJournal", "initial_meta"]

#: The ``events`` columns in order (:data:`~.schema.COLUMNS` as names).
COLUMN_NAMES: tuple[str, ...] = tuple(name.strip() for name in COLUMNS.split(","))


def initial_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The meta data of a new journal: its format, armlab's version and the time, then ``meta``
    (whose keys win, so a copy keeps the original's and its chain still starts the same)."""
    return {"format": FORMAT_VERSION, "armlab_version": __version__, "created_at": time.time(), **meta}


class ChainedJournal:
    """The replay and append logic of a journal; a store supplies the reads and the writes.

    A store sets ``self._seq`` and ``self._chain`` (its last event's number and chain value,
    ``0`` and the genesis when empty) and implements :meth:`_rows`, :meth:`_genesis`,
    :meth:`_damaged`, :meth:`append_many` and :meth:`close`.
    """

    _seq: int
    _chain: str

    # -- reading -------------------------------------------------------------------------
    def events(self) -> Iterator[Event]:
        """Every event in the order it was applied, each verified against the integrity chain.

        Raises :class:`JournalCorrupted` at the first event that does not verify (or that
        the store cannot read), naming the last good one; the events before it are yielded.
        """
        chain, expected = self._genesis(), 1
        last = "the journal's start"
        for row in self._rows():
            seq, event, stored = event_of(row)
            if seq != expected:
                raise self._damaged(f"is missing event {expected} (the next stored is {seq}); the last good "
                                    f"event is {last}", expected - 1)
            previous, chain = chain, link(chain, seq, event)
            if chain != stored and stored in links_of_a_signed_zero(previous, seq, event):
                chain = stored  # a -0.0 hashed by armlab 0.1.0, stored as 0.0: written intact
            if chain != stored:
                raise self._damaged(f"event {seq} ({event.kind} of trial {event.trial}) was changed after it was "
                                    f"written; the last good event is {last}", seq - 1)
            last = f"{seq} ({event.kind} of trial {event.trial})"
            expected += 1
            yield event

    def _rows(self) -> Iterator[Sequence[Any]]:
        """The stored event rows in order of ``seq`` (columns as :data:`COLUMN_NAMES`)."""
        raise NotImplementedError

    def _genesis(self) -> str:
        """The chain's start, from the stored meta data."""
        raise NotImplementedError

    def _damaged(self, what: str, good: int) -> JournalCorrupted:
        """The error for a journal that ``what`` (``good`` events verify), with its remedy."""
        raise NotImplementedError

    @property
    def position(self) -> tuple[int, str]:
        """The number and chain value of the last event committed (0 and the genesis when none)."""
        return self._seq, self._chain

    # -- writing -------------------------------------------------------------------------
    def append(self, event: Event) -> None:
        """Write ``event`` and commit; returns only once it is durable."""
        self.append_many([event])

    __call__ = append  # a journal is the experiment's recorder

    def append_many(self, events: Sequence[Event]) -> None:
        """Write ``events`` in one transaction (all or none); returns once they are durable."""
        raise NotImplementedError

    #: Journals with the same key (not None) may be committed together, in one transaction
    #: (:meth:`append_together`): those of one PostgreSQL database.  None: each alone.
    together: Hashable | None = None

    @classmethod
    def append_together(cls, batches: Sequence[tuple[ChainedJournal, Sequence[Event]]]) -> list[Exception | None]:
        """Write each journal's events (journals of one :attr:`together` key) as
        :meth:`append_many` would, each all or none; per journal, what it raised (None: its
        events are durable).  Here: one by one."""
        return [_raised(journal.append_many, events) for journal, events in batches]

    def chained(self, events: Sequence[Event]) -> tuple[int, str, list[tuple[Any, ...]]]:
        """The rows of ``events`` appended after the last one written (values as stored, each
        with its chain value), and the number and chain value of the last of them."""
        seq, chain, rows = self._seq, self._chain, []
        for event in map(as_stored, events):
            seq += 1
            chain = link(chain, seq, event)
            rows.append(row_of(seq, event, chain))
        return seq, chain, rows

    # -- closing -------------------------------------------------------------------------
    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _raised(call: Callable[[Sequence[Event]], None], events: Sequence[Event]) -> Exception | None:
    """What ``call(events)`` raised (None: nothing)."""
    try:
        call(events)
    except Exception as exc:
        return exc
    return None
