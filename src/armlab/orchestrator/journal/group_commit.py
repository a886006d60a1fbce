"""Batched, durable journal writes for a live experiment driven from an event loop.

This module holds the durability contract of the live path; it is enforced here and
stated nowhere else.  While a live run or the HTTP service is up, :class:`GroupCommit` is
the experiment's recorder: the experiment hands it each change's event *before* applying
the change (a refused event leaves the experiment unchanged), the event is **buffered, not
yet durable**, and the change is applied at once; a worker thread commits each batch in one
transaction (one fsync for many events).  The rules that keep a crash from losing or
inventing anything:

* **No change while a batch is being written.**  A driver awaits :meth:`GroupCommit.turn`
  before it changes the experiment (ask, tell, fail, abandon, retire); the changes made
  between two writes form the next batch, one transaction.  So every decision is made from
  events that are durable or that belong to its own transaction: if that transaction fails,
  the decision is lost with the events it was made from, and nothing else was built on them.
* **Nothing is acknowledged or shown before it is durable.**  A driver awaits
  :meth:`GroupCommit.durable` before it answers a request or reports state.
  :meth:`GroupCommit.change` is the one call that does turn -> change -> durable.
* **A failed write is final.**  The writer stops, every later change is refused, and the
  driver stops (``on_failure``); a restart replays the durable prefix.  The buffer is never
  written by anyone else afterwards.

Without a group commit (``armlab run`` with a plain :class:`~armlab.orchestrator.journal.store.Journal`
as recorder, or a replay) each event is committed by the recorder call itself, so it is
durable before it is applied.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio

from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal, JournalError

__all__ = ["GroupCommit", "change"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class GroupCommit:
    """Buffer the events recorded on the event loop and commit them batch by batch."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.recorded = 0
        self.written = 0
        self.batches = 0
        self.failure: JournalError | None = None
        self._buffer: list[Event] = []
        self._work = anyio.Event()
        self._progress = anyio.Event()
        self._writing: anyio.Event | None = None  # set while a batch is in the worker thread
        self._write_lock = threading.Lock()  # one writer at a time: the worker thread, or flush()

    def __repr__(self) -> str:
        return f"GroupCommit(recorded={self.recorded}, written={self.written}, batches={self.batches})"

    def record(self, event: Event) -> None:
        """The experiment's recorder: buffer ``event`` for the next batch."""
        self._raise_if_failed()
        if self._writing is not None:
            raise RuntimeError("the experiment changed while a batch was being written: await turn() first")
        self._buffer.append(event)
        self.recorded += 1
        self._work.set()

    async def turn(self) -> None:
        """Return when no batch is being written: changes made now join the next batch."""
        while self._writing is not None:
            await self._writing.wait()
        self._raise_if_failed()

    async def durable(self) -> None:
        """Return once every event recorded before this call is committed."""
        target = self.recorded
        while self.written < target:
            self._raise_if_failed()
            await self._progress.wait()

    async def change(self, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Turn -> change -> durable: wait for the turn, call ``apply(*args, **kwargs)`` (it
        changes the experiment), and return its answer once every change made is durable.
        A change that raises made no change: its error is raised at once."""
        await self.turn()
        answer = apply(*args, **kwargs)
        await self.durable()
        return answer

    def _raise_if_failed(self) -> None:
        if self.failure is not None:
            raise JournalError(f"the journal can no longer be written: {self.failure}")

    async def run(self, on_failure: Callable[[JournalError], None] | None = None) -> None:
        """Write batches until cancelled.  A failed write ends the writer for good: it is
        passed to ``on_failure`` if given (the service stops itself), else re-raised.

        A batch being written when the task is cancelled is finished first (the worker
        thread is not abandoned), so no batch is ever half-known.
        """
        while True:
            await self._work.wait()
            self._work = anyio.Event()
            self._writing = anyio.Event()
            try:
                await anyio.to_thread.run_sync(self._write_buffer)
            except JournalError as exc:
                self.failure = exc
                if on_failure is None:
                    raise
                on_failure(exc)
                return
            finally:
                self._writing.set()
                self._writing = None
                self._progress.set()
                self._progress = anyio.Event()

    def flush(self) -> None:
        """Write what is still buffered (once :meth:`run` has ended; never after a failure).

        Should a shutdown reach here while the worker thread still writes (an interpreter
        exit from elsewhere), it waits for that batch, so the journal keeps the order.
        """
        if self.failure is None:
            self._write_buffer()

    def _write_buffer(self) -> None:
        with self._write_lock:
            batch, self._buffer = self._buffer, []
            if batch:
                self.journal.append_many(batch)
                self.written += len(batch)
                self.batches += 1


async def change(writer: GroupCommit | None, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """:meth:`GroupCommit.change` through ``writer``, or ``apply`` directly when there is
    none (no journal, or a recorder that commits every event itself)."""
    if writer is None:
        return apply(*args, **kwargs)
    return await writer.change(apply, *args, **kwargs)
