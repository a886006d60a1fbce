"""Batched, durable journal writes for a live experiment driven from an event loop.

This module holds the durability contract of the live path; it is enforced here and
stated nowhere else.  A :class:`GroupCommit` is a live experiment's recorder for the whole
session (given to the experiment once, when it is built; a replay never calls it): the
experiment hands it each change's event *before* applying the change, and a refused event
leaves the experiment unchanged.  Outside :meth:`GroupCommit.batching` (a script that
drives the experiment step by step, the moments before a driver starts and after it ends) the
record call commits the event itself, so it is durable before it is applied.  Within it
(while a live run or the HTTP service is up) the event is **buffered, not yet durable**, and
the change is applied at once; a background task commits the buffer batch after batch in a
worker thread, each in one transaction (one fsync for many events), while the changes made
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
* **A failed batch is final.**  The failure is set before the batch's lock is let go, so no
  later batch is ever written (neither by the writer, which stops, nor by :meth:`flush`);
  every later change is refused, within :meth:`~GroupCommit.batching` and after it, every
  waiter of :meth:`durable` whose events were not committed gets the error (those of the
  failed batch and of the one built meanwhile alike), and the driver stops (``on_failure``).
  The experiment in memory then holds changes that are not in the journal: the driver serves
  nothing more from it, and a restart replays the durable prefix.  (A failed commit of one
  event outside :meth:`~GroupCommit.batching` is only that call's error: its change was
  never made, and nothing was built on it.)
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import ParamSpec, TypeVar

import anyio

from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal, JournalError

__all__ = ["GroupCommit", "change"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


class GroupCommit:
    """A live experiment's recorder: each event committed at once, or, within
    :meth:`batching`, buffered on the event loop and committed batch by batch."""

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
        self._batching = False

    def __repr__(self) -> str:
        return f"GroupCommit(recorded={self.recorded}, written={self.written}, batches={self.batches})"

    def record(self, event: Event) -> None:
        """The experiment's recorder: commit ``event`` now, or within :meth:`batching` buffer
        it for the next batch."""
        self._raise_if_failed()
        if not self._batching:
            self.journal.append(event)  # durable before the change is applied
            self.recorded += 1
            self.written += 1
            return
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

    @asynccontextmanager
    async def batching(self, on_failure: Callable[[JournalError], None] | None = None) -> AsyncIterator[None]:
        """Within this context, events are buffered and committed batch by batch by a
        background task; on leaving it (even cancelled) every buffered event is written, and
        the record call commits each event itself again.  A failed write is passed to
        ``on_failure`` (else raised), and from then on every change is refused: nothing is
        ever written after a gap."""
        self._batching = True
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._run, on_failure)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()  # a batch being written is finished first
        finally:
            self._batching = False
            if self.failure is None:
                self.flush()

    async def _run(self, on_failure: Callable[[JournalError], None] | None) -> None:
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
        """Write what is still buffered (once the batching task has ended; never after a failure:
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
