"""The SQLite journal: durability, invariants in the schema, exclusive use."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from armlab.orchestrator.journal.store import FORMAT_VERSION, ROWS_PER_STATEMENT, Journal, JournalError
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
