"""The SQLite journal: durability, invariants in the schema, exclusive use, group commit."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import anyio
import pytest

from armlab.orchestrator.journal.group_commit import GroupCommit, _wake_ups_of
from armlab.orchestrator.journal.store import FORMAT_VERSION, ROWS_PER_STATEMENT, Journal, JournalError
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.live.types import Event


def test_create_open_and_read_back(tmp_path):
    path = tmp_path / "j.sqlite"
    with Journal.create(path, {"seed": 3, "config": {"name": "x"}}) as journal:
        journal.append(Event("dispatch", 0, 2, key="k", at=1.5))
        journal.append_many([Event("result", 0, 2, reward=0.1 + 0.2, at=2.0), Event("dispatch", 1, 0, at=2.5)])
    with Journal.open(path) as journal:
        meta = journal.meta
        events = list(journal.events())
        mode = journal._db.execute("PRAGMA journal_mode").fetchone()[0]
        sync = journal._db.execute("PRAGMA synchronous").fetchone()[0]
    assert meta["seed"] == 3 and meta["config"] == {"name": "x"} and meta["format"] == FORMAT_VERSION
    assert events == [
        Event("dispatch", 0, 2, key="k", at=1.5),
        Event("result", 0, 2, reward=0.1 + 0.2, at=2.0),  # floats round-trip exactly
        Event("dispatch", 1, 0, at=2.5),
    ]
    assert mode == "wal" and sync == 2  # FULL


def test_the_schema_refuses_double_counting(tmp_path):
    with Journal.create(tmp_path / "j.sqlite", {}) as journal:
        journal.append(Event("dispatch", 0, 1, key="a", at=0))
        journal.append(Event("result", 0, 1, reward=1.0, at=0))
        for bad in (
            Event("dispatch", 0, 1, at=0),  # the same trial twice
            Event("result", 0, 1, reward=1.0, at=0),  # a second outcome
            Event("abandoned", 0, 1, at=0),
            Event("dispatch", 1, 1, key="a", at=0),  # an idempotency key reused
            Event("result", 1, 1, at=0),  # a result without reward
        ):
            with pytest.raises(JournalError, match="cannot write 1 event"):
                journal.append(bad)
        # a failing batch writes nothing at all
        with pytest.raises(JournalError):
            journal.append_many([Event("dispatch", 5, 0, at=0), Event("dispatch", 5, 0, at=0)])
        assert [e.trial for e in journal.events()] == [0, 0]


def test_a_small_batch_is_one_statement(tmp_path):
    """A live batch is written by one INSERT committed as its own transaction (no BEGIN,
    no statement per row, no COMMIT): one release of the interpreter lock per commit."""
    with Journal.create(tmp_path / "j.sqlite", {}) as journal:
        statements: list[str] = []
        journal._db.set_trace_callback(statements.append)
        journal.append_many([Event("dispatch", t, 0, at=float(t)) for t in range(4)])
        journal._db.set_trace_callback(None)
        assert len(statements) == 1 and statements[0].startswith("INSERT INTO events")
        assert [e.trial for e in journal.events()] == [0, 1, 2, 3]


@pytest.mark.parametrize("size", [ROWS_PER_STATEMENT, ROWS_PER_STATEMENT + 1, 3 * ROWS_PER_STATEMENT + 5])
def test_a_batch_of_any_size_is_written_whole_or_not_at_all(tmp_path, size):
    with Journal.create(tmp_path / "j.sqlite", {}) as journal:
        journal.append(Event("dispatch", 0, 0, at=0.0))
        repeated = Event("dispatch", 1, 0, at=0.0)
        bad = [Event("dispatch", 1 + t, t % 3, at=float(t)) for t in range(size - 1)] + [repeated]
        with pytest.raises(JournalError, match=f"cannot write {size} event"):
            journal.append_many(bad)  # the last row repeats a trial: its statement fails, the earlier ones are undone
        assert [e.trial for e in journal.events()] == [0]
        good = [Event("dispatch", 1 + t, t % 3, at=float(t)) for t in range(size)]
        journal.append_many(good)
        assert [e.trial for e in journal.events()] == [0, *range(1, size + 1)]
    with Journal.open(tmp_path / "j.sqlite") as journal:  # the chain verifies across the statements
        assert len(list(journal.events())) == size + 1


def test_open_errors(tmp_path):
    with pytest.raises(JournalError, match="does not exist"):
        Journal.open(tmp_path / "missing.sqlite")
    (tmp_path / "text.sqlite").write_text("hello, not a database" * 100)
    with pytest.raises(JournalError, match="not an armlab journal|cannot open"):
        Journal.open(tmp_path / "text.sqlite")
    Journal.create(tmp_path / "j.sqlite", {}).close()
    with pytest.raises(JournalError, match="already exists"):
        Journal.create(tmp_path / "j.sqlite", {})
    db = sqlite3.connect(tmp_path / "j.sqlite")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="has format 99"):
        Journal.open(tmp_path / "j.sqlite")


_FORMAT_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, trial INTEGER NOT NULL,
    arm INTEGER NOT NULL, reward REAL, reason TEXT NOT NULL DEFAULT '', key TEXT, at REAL NOT NULL
);
INSERT INTO meta VALUES ('format', '1'), ('seed', '4');
INSERT INTO events (kind, trial, arm, reward, key, at) VALUES ('dispatch', 0, 2, NULL, 'k', 1.0);
INSERT INTO events (kind, trial, arm, reward, key, at) VALUES ('result', 0, 2, 0.5, NULL, 2.0);
"""


def test_a_format_1_journal_is_migrated_to_the_bandit_column(tmp_path):
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(_FORMAT_1)
    db.close()
    with Journal.open(path) as journal:
        assert journal.meta["format"] == FORMAT_VERSION == 3
        assert list(journal.events()) == [
            Event("dispatch", 0, 2, 0, key="k", at=1.0), Event("result", 0, 2, 0, reward=0.5, at=2.0),
        ]
        journal.append(Event("dispatch", 1, 0, 3, at=3.0))
    with Journal.open(path) as journal:  # migrated once, readable again
        assert [e.bandit for e in journal.events()] == [0, 0, 3]


_READ = "import sqlite3, sys; print(sqlite3.connect(sys.argv[1], timeout=0).execute('SELECT count(*) FROM events').fetchone()[0])"


@pytest.mark.timeout(60)
@pytest.mark.system
def test_a_journal_in_use_is_locked_for_other_processes(tmp_path):
    path = tmp_path / "j.sqlite"
    with Journal.create(path, {}) as journal:
        journal.append(Event("dispatch", 0, 0, at=0))
        busy = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, timeout=50)
    assert busy.returncode != 0 and "database is locked" in busy.stderr
    free = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, timeout=50)
    assert free.returncode == 0 and free.stdout.strip() == "1"


_WRITER = textwrap.dedent("""
    import sys
    from armlab.orchestrator.journal.store import Journal
    from armlab.orchestrator.live.types import Event
    journal = Journal.create(sys.argv[1], {})
    for i in range(100000):
        journal.append(Event("dispatch", i, i % 3, at=float(i)))
        print("ack", i, flush=True)  # acknowledged: the append returned
""")


@pytest.mark.timeout(60)
@pytest.mark.system
def test_every_acknowledged_append_survives_kill_9(tmp_path):
    path = tmp_path / "j.sqlite"
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    acknowledged = -1
    try:
        for line in writer.stdout:
            if line.startswith("ack "):
                acknowledged = int(line.split()[1])
                if acknowledged >= 40:
                    break
    finally:
        os.kill(writer.pid, signal.SIGKILL)
        writer.wait(timeout=30)
        writer.stdout.close()
    with Journal.open(path) as journal:
        trials = [e.trial for e in journal.events()]
    assert trials == list(range(len(trials))) and len(trials) >= acknowledged + 1


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
    assert _wake_ups_of(loop) is not _wake_ups_of(loop)  # one per journal, nothing kept


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
