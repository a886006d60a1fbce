"""Batched, durable journal writes for a live experiment driven from an event loop.

This module holds the durability contract of the live path; it is enforced here and
stated nowhere else.  While a live run or the HTTP service is up, :class:`GroupCommit` is
the experiment's recorder: the experiment hands it each change's event *before* applying
the change (a refused event leaves the experiment unchanged), the event is **buffered, not
yet durable**, and the change is applied at once.  A worker thread commits the buffer batch
after batch, each in one transaction (one fsync for many events), while the changes made
meanwhile build the next batch.  The rules that keep a crash or a failed write from losing
or inventing anything:

* **The journal is a prefix of the changes, in their order.**  Every event is recorded in
  the order the changes are made, one batch is written at a time, and each batch is what was
  recorded since the previous one was taken.  A change may be made from events still being
  written (batch N+1 is built while batch N is in the worker thread), but only from events
  recorded before it, so every prefix of the journal is a state the experiment went through,
  and a restart that replays any durable prefix rebuilds that state exactly.
* **Nothing is acknowledged or shown before it is durable.**  A driver awaits
  :meth:`GroupCommit.durable` before it answers a request or reports state; it returns once
  *every* event recorded before the call is committed, so an answer made from batch N's
  events in batch N+1 waits for both.  :meth:`GroupCommit.change` is the one call that does
  change -> durable.
* **A failed write is final.**  The failure is set before the batch's lock is let go, so no
  later batch is ever written (neither by the writer, which stops, nor by :meth:`flush`);
  every later change is refused, every waiter of :meth:`durable` whose events were not
  committed gets the error (those of the failed batch and of the one built meanwhile alike),
  and the driver stops (``on_failure``).  The experiment in memory then holds changes that
  are not in the journal: the driver serves nothing more from it, and a restart replays the
  durable prefix.

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
        self._buffer: list[Event] = []  # the next batch, built while the previous one is written
        self._work = anyio.Event()
        self._progress = anyio.Event()
        self._write_lock = threading.Lock()  # one writer at a time: the worker thread, or flush()

    def __repr__(self) -> str:
        return f"GroupCommit(recorded={self.recorded}, written={self.written}, batches={self.batches})"

    def record(self, event: Event) -> None:
        """The experiment's recorder: buffer ``event`` for the next batch."""
        self._raise_if_failed()
        self._buffer.append(event)
        self.recorded += 1
        self._work.set()

    async def durable(self) -> None:
        """Return once every event recorded before this call is committed."""
        target = self.recorded
        while self.written < target:
            self._raise_if_failed()
            await self._progress.wait()

    async def change(self, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Change -> durable: call ``apply(*args, **kwargs)`` (it changes the experiment) and
        return its answer once every change made so far is durable.  A change that raises
        made no change: its error is raised at once."""
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
            try:
                await anyio.to_thread.run_sync(self._write_buffer)
            except JournalError as exc:
                if on_failure is None:
                    raise
                on_failure(exc)
                return
            finally:
                self._progress.set()
                self._progress = anyio.Event()

    def flush(self) -> None:
        """Write what is still buffered (once :meth:`run` has ended; never after a failure:
        a failed write here raises, and the writer refuses every change from then on).

        Should a shutdown reach here while the worker thread still writes (an interpreter
        exit from elsewhere), it waits for that batch, so the journal keeps the order.
        """
        self._write_buffer()

    def _write_buffer(self) -> None:
        """Take the buffer as one batch and commit it (in the worker thread, or :meth:`flush`).

        The batch is taken under the lock, so batches are written in the order they were
        taken; a failure is kept under the lock too, so no batch is written after it."""
        with self._write_lock:
            if self.failure is not None:
                return
            batch, self._buffer = self._buffer, []
            if not batch:
                return
            try:
                self.journal.append_many(batch)
            except JournalError as exc:
                self.failure = exc
                raise
            self.written += len(batch)
            self.batches += 1


async def change(writer: GroupCommit | None, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """:meth:`GroupCommit.change` through ``writer``, or ``apply`` directly when there is
    none (no journal, or a recorder that commits every event itself)."""
    if writer is None:
        return apply(*args, **kwargs)
    return await writer.change(apply, *args, **kwargs)
