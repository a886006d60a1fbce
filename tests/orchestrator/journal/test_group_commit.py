"""The group commit: batched, durable writes from an event loop, in the process's few commit
threads, journals of one database committed together, one loop wake-up for many commits."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

import anyio
import pytest

from armlab.orchestrator.journal.commit_threads import wake_ups_of
from armlab.orchestrator.journal.group_commit import GroupCommit
from armlab.orchestrator.journal.store import Journal, JournalError
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.live.types import Event


async def test_group_commit_batches_and_waits_for_durability(tmp_path):
    journal = Journal.create(tmp_path / "j.sqlite", {})
    writer = GroupCommit(journal)
    async with writer.batching():
        for i in range(20):
            writer.record(Event("dispatch", i, 0, at=0))
        assert writer.written == 0  # buffered, not yet durable
        await writer.durable()
        assert writer.written == 20 and writer.batches < 20
        writer.record(Event("dispatch", 20, 0, at=0))
        await writer.durable()
    writer.record(Event("dispatch", 21, 0, at=0))  # outside batching: committed by the call itself
    assert writer.written == 22 and [e.trial for e in journal.events()] == list(range(22))
    journal.close()


async def test_group_commit_failure_is_loud(tmp_path):
    journal = Journal.create(tmp_path / "j.sqlite", {})
    journal.append(Event("dispatch", 0, 0, at=0))
    writer = GroupCommit(journal)
    with pytest.raises(ExceptionGroup) as group:
        async with writer.batching():
            writer.record(Event("dispatch", 0, 0, at=0))  # violates the schema: the batch fails
            with pytest.raises(JournalError):
                await writer.durable()
    assert group.group_contains(JournalError)
    with pytest.raises(JournalError, match="can no longer be written"):
        writer.record(Event("dispatch", 1, 0, at=0))
    journal.close()


async def four_clients_each(writers):
    """Every writer batching at once, four clients each recording ten of its trials 0-39,
    each waiting for its event to be durable before the next."""

    async def client(writer, first):
        for trial in range(first, 40, 4):
            writer.record(Event("dispatch", trial, 0, at=0))
            await writer.durable()

    async with anyio.create_task_group() as outer:
        for writer in writers:
            async def run(writer=writer):
                async with writer.batching(), anyio.create_task_group() as tg:
                    for first in range(4):
                        tg.start_soon(client, writer, first)
            outer.start_soon(run)


async def test_many_journals_commit_in_order_through_a_few_shared_threads(tmp_path):
    """Fifty journals batching at once: each journal gets exactly its events in its order,
    and the commits run in the process's few commit threads, not a thread per journal."""
    journals = [Journal.create(tmp_path / f"j{i}.sqlite", {}) for i in range(50)]
    writers = [GroupCommit(journal) for journal in journals]
    threads = set()

    def recording(journal):
        real_append = journal.append_many

        def append_many(events):
            threads.add(threading.current_thread().name)
            real_append(events)
        return append_many

    for journal in journals:
        journal.append_many = recording(journal)

    await four_clients_each(writers)
    for journal, writer in zip(journals, writers):
        trials = [e.trial for e in journal.events()]
        assert sorted(trials) == list(range(40)) and writer.written == 40 and writer.batches < 40
        journal.close()
    assert threads and all(name.startswith("armlab-journal-commit") for name in threads)
    assert len(threads) <= 8


async def test_commits_done_while_the_loop_is_busy_wake_it_once(tmp_path):
    """Five journals' commits finished while the loop's thread is busy: one wake-up of the loop
    tells them all (not one per commit), each in the order of its own events."""
    journals = [Journal.create(tmp_path / f"j{i}.sqlite", {}) for i in range(5)]
    writers = [GroupCommit(journal) for journal in journals]
    loop = asyncio.get_running_loop()
    wake_ups = []
    real_call = loop.call_soon_threadsafe

    def counting(callback, *args):
        wake_ups.append(callback)
        return real_call(callback, *args)

    async with contextlib.AsyncExitStack() as stack:
        for writer in writers:
            await stack.enter_async_context(writer.batching())
        loop.call_soon_threadsafe = counting
        try:
            for writer in writers:
                writer.record(Event("dispatch", 0, 0, at=0))
            await asyncio.sleep(0)  # the commits are asked for at the end of the turn
            deadline = time.monotonic() + 10
            while any(writer.written < 1 for writer in writers) and time.monotonic() < deadline:
                time.sleep(0.001)  # the loop's thread busy while the commit threads write
            for writer in writers:
                await writer.durable()
        finally:
            del loop.call_soon_threadsafe
    assert len(wake_ups) == 1
    for journal in journals:
        assert [e.trial for e in journal.events()] == [0]
        journal.close()


class _TogetherJournal(Journal):
    """SQLite journals that say they commit together (as PostgreSQL journals of one database
    do), each joint call recorded: the journals' names, in a list kept by the test."""

    together = "one-database"
    calls: list[list[str]] = []
    fail: set[str] = set()

    @classmethod
    def append_together(cls, batches):
        cls.calls.append([journal.path.stem for journal, _ in batches])
        errors = []
        for journal, events in batches:
            if journal.path.stem in cls.fail:
                errors.append(JournalError(f"{journal.path.stem} lost"))
            else:
                errors.extend(super().append_together([(journal, events)]))
        return errors


async def test_journals_that_commit_together_are_written_in_joint_commits_each_with_its_events_in_order(
    tmp_path, monkeypatch
):
    """Twenty journals of one ``together`` key, four clients each: every journal gets exactly
    its events in its order, through joint commits that hold several journals at a time."""
    monkeypatch.setattr(_TogetherJournal, "calls", [])
    journals = [_TogetherJournal.create(tmp_path / f"j{i}.sqlite", {}) for i in range(20)]
    writers = [GroupCommit(journal) for journal in journals]
    await four_clients_each(writers)
    for journal, writer in zip(journals, writers):
        assert sorted(e.trial for e in journal.events()) == list(range(40)) and writer.written == 40
        journal.close()
    calls = _TogetherJournal.calls
    assert max(map(len, calls)) > 1  # several journals in one commit
    assert all(len(set(call)) == len(call) for call in calls)  # a journal's batches one at a time
    assert len(calls) < sum(writer.batches for writer in writers)


async def test_a_journal_that_fails_in_a_joint_commit_fails_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(_TogetherJournal, "calls", [])
    monkeypatch.setattr(_TogetherJournal, "fail", {"lost"})
    lost, kept = (_TogetherJournal.create(tmp_path / f"{name}.sqlite", {}) for name in ("lost", "kept"))
    writers = [GroupCommit(lost), GroupCommit(kept)]
    failures = []
    with anyio.fail_after(10):
        async with writers[0].batching(failures.append), writers[1].batching():
            for writer in writers:
                writer.record(Event("dispatch", 0, 0, at=0))
            with pytest.raises(JournalError, match="lost lost"):
                await writers[0].durable()
            await writers[1].durable()
            writers[1].record(Event("dispatch", 1, 0, at=0))
            await writers[1].durable()
    assert [len(failures), writers[0].written, writers[1].written] == [1, 0, 2]
    assert _TogetherJournal.calls[0] == ["lost", "kept"]  # asked in the same turn: one joint commit
    assert list(lost.events()) == [] and [e.trial for e in kept.events()] == [0, 1]
    lost.close()
    kept.close()


def test_a_loop_without_weak_references_gets_wake_ups_of_its_own():
    class SlottedLoop:  # as an event loop written in C may be
        __slots__ = ()

    loop = SlottedLoop()
    assert wake_ups_of(loop) is not wake_ups_of(loop)  # one per journal, nothing kept


async def test_an_unexpected_error_in_a_batch_is_final_and_the_commit_threads_go_on(tmp_path):
    """A batch that fails with an error other than JournalError ends its journal as a
    JournalError does (refused from then on, the waiter told); other journals still commit."""
    broken, healthy = (Journal.create(tmp_path / f"{name}.sqlite", {}) for name in ("broken", "healthy"))

    def crash(events):
        raise ValueError("not a journal error")

    broken.append_many = crash
    writer, other = GroupCommit(broken), GroupCommit(healthy)
    failures = []
    with anyio.fail_after(10):  # a waiter never told would wait here for ever
        async with writer.batching(failures.append), other.batching():
            writer.record(Event("dispatch", 0, 0, at=0))
            with pytest.raises(JournalError, match="not a journal error"):
                await writer.durable()
            with pytest.raises(JournalError, match="can no longer be written"):
                writer.record(Event("dispatch", 0, 0, at=0))
            other.record(Event("dispatch", 0, 0, at=0))
            await other.durable()
    assert len(failures) == 1 and "not a journal error" in str(failures[0])
    assert [e.trial for e in healthy.events()] == [0] and list(broken.events()) == []
    broken.close()
    healthy.close()


async def test_concurrent_changes_are_built_while_a_batch_is_written_and_acknowledged_only_once_durable(
        tmp_path, registry, live):
    """Pipelined group commit: changes join the next batch while one is in the worker thread,
    and every answer waits until its own events are committed."""
    session = LiveSession.open(journal=tmp_path / "j.sqlite", registry=registry,
                               config=live.config(problem={"budget": 400}, feedback={"in_flight": 400}))
    experiment, journal = session.experiment, session.journal
    committed: set[tuple[str, int]] = set()
    writing, joined = threading.Event(), threading.Event()
    real_append = journal.append_many

    def held_append(events):
        writing.set()
        joined.wait(10)  # the first batch is held until a change joins the next one
        real_append(events)
        committed.update((e.kind, e.trial) for e in events)
        writing.clear()

    journal.append_many = held_append
    unacknowledged = []

    def ask():
        if writing.is_set():
            joined.set()
        return experiment.ask()

    async def client(reward: float) -> None:
        for _ in range(5):
            trial = await writer.change(ask)
            if ("dispatch", trial.id) not in committed:
                unacknowledged.append(("dispatch", trial.id))
            await writer.change(experiment.tell, trial.id, reward)
            if ("result", trial.id) not in committed:
                unacknowledged.append(("result", trial.id))

    async def late_client() -> None:
        await anyio.to_thread.run_sync(writing.wait, 10)
        await client(1.0)  # its first ask is made while a batch is being written

    async with session.group_commit() as writer:
        async with anyio.create_task_group() as tg:
            tg.start_soon(late_client)
            for i in range(39):
                tg.start_soon(client, (i % 3) / 2)
    assert unacknowledged == []
    assert joined.is_set(), "no change was made while a batch was written: not pipelined"
    assert writer.written == writer.recorded == 400 and writer.batches < 400
    expected = live.state(experiment)
    session.close()
    resumed = LiveSession.resume(Journal.open(tmp_path / "j.sqlite"), registry=registry)
    assert live.state(resumed.experiment) == expected
    resumed.close()
