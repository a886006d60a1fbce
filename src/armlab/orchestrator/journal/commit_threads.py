"""Where a live experiment's journal commits run, and how the event loop hears of them.

The process shares a few commit threads among every open journal (:class:`CommitThreads`),
and each event loop is woken once for every commit done while it was busy
(:class:`LoopWakeUps`).  :mod:`armlab.orchestrator.journal.group_commit` holds the
durability contract that uses them.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import queue
import threading
import weakref
from collections.abc import Callable

__all__ = ["CommitThreads", "LoopWakeUps", "commit_threads", "serve", "wake_ups_of"]


class CommitThreads:
    """The process's threads that commit journal batches, each journal's always in the same
    thread (so in order, and one at a time: its
    :class:`~armlab.orchestrator.journal.group_commit.GroupCommit` asks for the next commit
    only once the last is done).

    A few threads, not one: SQLite's fsync of one journal file would otherwise wait for
    another's (measured with 50 experiments on one server: one thread for all of them took
    1.1-2.2 s of server CPU per 1000 pairs against 0.8-0.9 s, the file system no longer
    merging the fsyncs of files committed together).  A journal keeps its thread, so a
    thread that has just written is the one woken again.  Started on first use; daemons,
    because leaving ``GroupCommit.batching`` waits for the commit asked of them, and
    ``GroupCommit.flush`` for the batch being written."""

    COUNT = 8

    def __init__(self) -> None:
        self._queues: list[queue.SimpleQueue[Callable[[], None]]] = []
        self._start = threading.Lock()
        self._next = itertools.count()

    def assign(self) -> queue.SimpleQueue[Callable[[], None]]:
        """A thread's queue for a new journal (the threads in turn); a job put there never raises."""
        with self._start:
            if not self._queues:
                for i in range(self.COUNT):
                    jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
                    threading.Thread(target=serve, args=(jobs,), name=f"armlab-journal-commit-{i}",
                                     daemon=True).start()
                    self._queues.append(jobs)
            return self._queues[next(self._next) % self.COUNT]


def serve(jobs: queue.SimpleQueue[Callable[[], None]]) -> None:
    """A commit thread: run each job put in ``jobs``, for ever (a job never raises)."""
    while True:
        jobs.get()()


_commit_threads = CommitThreads()


def commit_threads() -> CommitThreads:
    """This process's commit threads."""
    return _commit_threads


class LoopWakeUps:
    """The commits an event loop is yet to be told of, and one wake-up of the loop for them all.

    A commit thread that finishes a batch wakes the loop only when no wake-up is due yet; the
    loop then tells every journal whose commit is done, in the order they were done.  With 50
    journals on one server, commits finish while the loop is busy with requests, and each wake-up
    was a write to the loop's wake-up socket from a commit thread and a callback on the loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done: list[Callable[[], None]] = []
        self._due = False

    def tell(self, loop: asyncio.AbstractEventLoop, committed: Callable[[], None]) -> None:
        """In a commit thread: a journal's commit is done, ``committed`` tells it on the loop;
        wake ``loop`` unless a wake-up is due."""
        with self._lock:
            self._done.append(committed)
            wake, self._due = not self._due, True
        if wake:
            try:
                loop.call_soon_threadsafe(self._run, loop)
            except RuntimeError:  # the loop is closed: nobody is left to tell
                pass

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        """On the loop: tell each journal whose commit is done; an error of one is reported
        as the loop reports a callback's, and the others are told."""
        with self._lock:
            done, self._done, self._due = self._done, [], False
        for committed in done:
            try:
                committed()
            except Exception as exc:
                loop.call_exception_handler({"message": f"{committed!r} failed", "exception": exc})


_wake_ups: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWakeUps] = weakref.WeakKeyDictionary()
_wake_ups_lock = threading.Lock()


def wake_ups_of(loop: asyncio.AbstractEventLoop) -> LoopWakeUps:
    """The wake-ups of ``loop``, shared by the journals batching on it (kept while the loop lives;
    a loop that takes no weak reference gets new ones for each journal, told one by one)."""
    with _wake_ups_lock:
        try:
            return _wake_ups.setdefault(loop, LoopWakeUps())
        except TypeError:
            return LoopWakeUps()


def _new_after_fork() -> None:
    """A forked child starts its own commit threads and wake-ups (the parent's threads are not
    in it, and their locks may have been held at the fork)."""
    global _commit_threads, _wake_ups, _wake_ups_lock
    _commit_threads = CommitThreads()
    _wake_ups, _wake_ups_lock = weakref.WeakKeyDictionary(), threading.Lock()


os.register_at_fork(after_in_child=_new_after_fork)
