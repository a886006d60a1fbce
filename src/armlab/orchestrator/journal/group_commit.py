"""Batched, durable journal writes for a live experiment driven from an event loop.

This module holds the durability contract of the live path; it is enforced here and
stated nowhere else.  A :class:`GroupCommit` is a live experiment's recorder for the whole
session (given to the experiment once, when it is built; a replay never calls it): the
experiment hands it each change's event *before* applying the change, and a refused event
leaves the experiment unchanged.  Outside :meth:`GroupCommit.batching` (a script that
drives the experiment step by step, the moments before a driver starts and after it ends) the
record call commits the event itself, so it is durable before it is applied.  Within it
(while a live run or the HTTP service is up) the event is **buffered, not yet durable**, and
the change is applied at once; the journal's commit thread (one of a few that the process
shares among every open journal) commits the buffer batch after batch, each in one
transaction (one fsync for many events), while the changes made meanwhile build the next
batch.  The event loop asks for a commit through the thread's queue and is told it is done
by a callback (``call_soon_threadsafe``, one for every commit of any of its journals done
before the loop runs it): no task, thread-pool round trip or cancel scope per batch.  The
rules that keep a crash or a failed write from losing or inventing anything:

* **The journal is a prefix of the changes, in their order.**  Every event is recorded in
  the order the changes are made, one batch of a journal is written at a time (the next
  commit is asked for once the last is done), and each batch is what was recorded since the
  previous one was taken.  A change may be made from events still being written (batch N+1
  is built while batch N is in the commit thread), but only from events
  recorded before it, so every prefix of the journal is a state the experiment went through,
  and a restart that replays any durable prefix rebuilds that state exactly.
* **Nothing is acknowledged or shown before it is durable.**  A driver awaits
  :meth:`GroupCommit.durable` before it answers a request or reports state; it returns once
  *every* event recorded before the call is committed, so an answer made from batch N's
  events in batch N+1 waits for both.  :meth:`GroupCommit.change` is the one call that does
  change -> durable.
* **A failed batch is final.**  The failure is set before the batch's lock is let go, so no
  later batch is ever written (neither by a commit thread nor by :meth:`flush`);
  every later change is refused, within :meth:`~GroupCommit.batching` and after it, every
  waiter of :meth:`durable` whose events were not committed gets the error (those of the
  failed batch and of the one built meanwhile alike), and the driver stops (``on_failure``).
  The experiment in memory then holds changes that are not in the journal: the driver serves
  nothing more from it, and a restart replays the durable prefix.  (A failed commit of one
  event outside :meth:`~GroupCommit.batching` is only that call's error: its change was
  never made, and nothing was built on it.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from typing import ParamSpec, TypeVar

import anyio

from armlab.orchestrator.journal.commit_threads import LoopWakeUps, commit_threads, serve, wake_ups_of
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal, JournalError

__all__ = ["GroupCommit", "change"]

_P = ParamSpec("_P")
_R = TypeVar("_R")




class _JointCommits:
    """The commits asked by journals of one ``together`` key (those of one PostgreSQL
    database), written together: every journal waiting goes into one transaction
    (:meth:`~armlab.orchestrator.journal.chained.ChainedJournal.append_together`), in a commit
    thread, one such commit at a time; those asked meanwhile wait for the next, so the busier
    the process, the more journals each commit holds.  With 25 experiments on one database,
    a commit of two events cost about 230 us of this process's CPU and 300 us of the
    database's one by one, and 100 and 75 us written together.  Each journal's batches stay
    in order and one at a time: a journal asks again only once told of its last commit.
    The joint commits have a thread of their own (started on first use), since under load
    they keep it busy: a journal of another store sharing it would wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[GroupCommit] = []
        self._busy = False
        self._jobs: queue.SimpleQueue[Callable[[], None]] | None = None

    def ask(self, writer: GroupCommit) -> None:
        """On the loop: ``writer`` has a batch to commit."""
        with self._lock:
            self._waiting.append(writer)
            start, self._busy = not self._busy, True
            if self._jobs is None:
                self._jobs = queue.SimpleQueue()
                threading.Thread(target=serve, args=(self._jobs,), name="armlab-journal-joint-commit",
                                 daemon=True).start()
        if start:
            self._jobs.put(self._run)

    def _run(self) -> None:
        """In the commit thread: commit what every waiting journal has, until none waits."""
        while True:
            with self._lock:
                writers, self._waiting = self._waiting, []
                if not writers:
                    self._busy = False
                    return
            _write_together(writers)
            for writer in writers:
                writer._tell_loop()


def _write_together(writers: list[GroupCommit]) -> None:
    """Take each writer's buffer as its batch and commit them all in one call, under every
    writer's lock (so :meth:`GroupCommit.flush` keeps the order); each failure is its writer's."""
    with contextlib.ExitStack() as held:
        batches = []
        for writer in writers:
            held.enter_context(writer._write_lock)
            if batch := writer._take_batch():
                batches.append((writer, batch))
        if not batches:
            return
        try:
            errors = type(batches[0][0].journal).append_together([(w.journal, batch) for w, batch in batches])
        except Exception as exc:  # a store's bug: no batch is known to be written
            errors = [exc] * len(batches)
        for (writer, batch), error in zip(batches, errors, strict=True):
            writer._settle(batch, error)


_joint_commits: dict[Hashable, _JointCommits] = {}
_joint_commits_lock = threading.Lock()


def _joint_commits_of(key: Hashable) -> _JointCommits:
    """The joint commits of the journals whose ``together`` key is ``key`` (one per process)."""
    with _joint_commits_lock:
        return _joint_commits.setdefault(key, _JointCommits())


def _new_after_fork() -> None:
    """A forked child starts its own joint commits (the parent's thread is not in it, and its
    locks may have been held at the fork)."""
    global _joint_commits, _joint_commits_lock
    _joint_commits, _joint_commits_lock = {}, threading.Lock()


os.register_at_fork(after_in_child=_new_after_fork)


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
        self._progress = anyio.Event()
        self._failed = anyio.Event()
        self._write_lock = threading.Lock()  # one writer at a time: the commit thread, or flush()
        self._in_flight = False  # on the loop: a commit is asked of the commit thread and not done
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop of batching(), while in it
        self._wake_ups: LoopWakeUps | None = None  # that loop's, told of each commit done
        self._commit_thread: queue.SimpleQueue[Callable[[], None]] | None = None  # its queue, from the first batch
        self._on_failure: Callable[[JournalError], None] | None = None
        self._failure_told = False

    def __repr__(self) -> str:
        return f"GroupCommit(recorded={self.recorded}, written={self.written}, batches={self.batches})"

    def record(self, event: Event) -> None:
        """The experiment's recorder: commit ``event`` now, or within :meth:`batching` buffer
        it for the next batch."""
        self._raise_if_failed()
        if self._loop is None:
            self.journal.append(event)  # durable before the change is applied
            self.recorded += 1
            self.written += 1
            return
        self._buffer.append(event)
        self.recorded += 1
        if not self._in_flight:
            self._in_flight = True
            self._loop.call_soon(self._ask_commit)  # after this turn's changes (a batch's in one commit)

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
        """Within this context (on an asyncio event loop, as every armlab driver runs), events
        are buffered and committed batch by batch in the commit thread; on leaving it (even
        cancelled) the batch being written is finished, every buffered event is written, and
        the record call commits each event itself again.  A failed write is passed to
        ``on_failure`` (else raised), and from then on every change is refused: nothing is
        ever written after a gap."""
        self._loop, self._on_failure = asyncio.get_running_loop(), on_failure
        self._wake_ups = wake_ups_of(self._loop)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._raise_failure)
                try:
                    yield
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                while self._in_flight:  # a commit asked for is finished first
                    await self._progress.wait()
            self._loop = None
            if self.failure is None:
                self.flush()
            elif not self._failure_told:  # it failed as the context was left
                self._tell_failure()

    async def _raise_failure(self) -> None:
        """Wait for a failed batch (until cancelled) and raise it in :meth:`batching`'s
        task group (when it has no ``on_failure``)."""
        await self._failed.wait()
        self._tell_failure()

    def _tell_failure(self) -> None:
        """Pass the failure to ``on_failure`` (the service stops itself), else raise it; once."""
        assert self.failure is not None
        self._failure_told = True
        if self._on_failure is None:
            raise self.failure
        self._on_failure(self.failure)

    def _ask_commit(self) -> None:
        """On the loop: ask this journal's commit thread to write the buffer (one batch at a
        time), or, for a journal that commits together with others, their joint commits."""
        if (key := self.journal.together) is not None:
            _joint_commits_of(key).ask(self)
            return
        if self._commit_thread is None:
            self._commit_thread = commit_threads().assign()
        self._commit_thread.put(self._commit)

    def _commit(self) -> None:
        """In the commit thread: write the buffer as one batch, then tell the loop.  The buffer
        is taken when the thread runs (once the loop lets go of the interpreter), so what the
        loop records until then joins the batch."""
        try:
            self._write_buffer()
        except JournalError:
            pass  # kept as self.failure, reported by the loop
        finally:
            self._tell_loop()

    def _tell_loop(self) -> None:
        """In a commit thread: tell the loop that the commit asked for is done."""
        loop, wake_ups = self._loop, self._wake_ups
        if loop is not None and wake_ups is not None:
            wake_ups.tell(loop, self._committed)

    def _committed(self) -> None:
        """On the loop: a commit is done; ask for the next one, or tell the failure; then
        wake the waiters."""
        if self.failure is None and self._buffer:
            self._ask_commit()
        else:
            self._in_flight = False
        if self.failure is not None and not self._failure_told:
            if self._on_failure is None:
                self._failed.set()  # before the waiters wake: the task group raises it first
            else:
                self._tell_failure()
        self._progress.set()
        self._progress = anyio.Event()

    def flush(self) -> None:
        """Write what is still buffered (once :meth:`batching` has ended; never after a failure:
        a failed write here raises, and the writer refuses every change from then on).

        Should a shutdown reach here while the commit thread still writes (an interpreter
        exit from elsewhere), it waits for that batch, so the journal keeps the order.
        """
        self._write_buffer()

    def _write_buffer(self) -> None:
        """Take the buffer as one batch and commit it (in the commit thread, or :meth:`flush`).

        The batch is taken under the lock, so batches are written in the order they were
        taken; a failure is kept under the lock too, so no batch is written after it."""
        with self._write_lock:
            batch = self._take_batch()
            if not batch:
                return
            try:
                self.journal.append_many(batch)
            except Exception as exc:
                self._settle(batch, exc)
                if self.failure is exc:
                    raise
                raise self.failure from exc
            self._settle(batch, None)

    def _take_batch(self) -> list[Event]:
        """(Under the write lock) the buffer as the next batch; none after a failure."""
        if self.failure is not None:
            return []
        batch, self._buffer = self._buffer, []
        return batch

    def _settle(self, batch: list[Event], error: Exception | None) -> None:
        """(Under the write lock) ``batch`` was written, or failed with ``error``: then the
        journal fails for good (an unexpected error as a :class:`JournalError` does)."""
        if error is None:
            self.written += len(batch)
            self.batches += 1
        elif isinstance(error, JournalError):
            self.failure = error
        else:
            self.failure = JournalError(f"writing a batch failed: {error!r}")


async def change(writer: GroupCommit | None, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
    """:meth:`GroupCommit.change` through ``writer``, or ``apply`` directly when there is
    none (no journal, or a recorder that commits every event itself)."""
    if writer is None:
        return apply(*args, **kwargs)
    return await writer.change(apply, *args, **kwargs)
