"""The PostgreSQL journal: one writer per journal, a lost owner fenced off, database faults,
schema management, and a live experiment replayed from it bit for bit (issue 31).

Every test runs on the run's throwaway cluster (``postgres_cluster``), in a database of its own.
"""

from __future__ import annotations

import os

import psycopg
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.orchestrator.journal.chained import COLUMN_NAMES
from armlab.orchestrator.journal.postgres import JournalUnavailable, PostgresJournal
from armlab.orchestrator.journal.postgres_schema import DATABASE_VERSION, LOCK_CLASS
from armlab.orchestrator.journal.schema import Event
from armlab.orchestrator.journal.store import Journal, JournalError

pytestmark = [pytest.mark.postgres, pytest.mark.system]


def dispatch(trial: int) -> Event:
    return Event("dispatch", trial, trial % 3, at=float(trial))


def result(trial: int) -> Event:
    return Event("result", trial, trial % 3, reward=trial / 7, at=trial + 0.5)


def owner_pid(url: str) -> int:
    """The server process holding armlab's advisory lock (what an operator would look up)."""
    with psycopg.connect(url, autocommit=True) as db:
        return db.execute("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND granted",
                          (LOCK_CLASS,)).fetchone()[0]


def terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        assert db.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,)).fetchone()[0]


def test_a_second_writer_is_refused_until_the_owner_is_cut_off_then_takes_over_with_nothing_lost(postgres_storage):
    first = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    first.append_many([dispatch(0), dispatch(1)])
    first.append(result(0))  # acknowledged: three events committed
    with pytest.raises(JournalError, match="'exp' .* is in use by another process"):
        PostgresJournal.open(postgres_storage, "exp")
    terminate(postgres_storage, owner_pid(postgres_storage))  # the owner's connection is cut
    with PostgresJournal.open(postgres_storage, "exp") as second:  # takes over: the lock went with the connection
        assert list(second.events()) == [dispatch(0), dispatch(1), result(0)]
        with pytest.raises(JournalUnavailable, match="the database cannot be reached.*nothing was acknowledged"):
            first.append(result(1))  # the old owner's commit cannot succeed
        with pytest.raises(JournalError, match="can no longer be used"):
            first.append(result(1))  # and it stays done
        second.append(result(1))  # the new owner goes on, the chain continued
    first.close()
    with PostgresJournal.open(postgres_storage, "exp") as again:
        assert list(again.events()) == [dispatch(0), dispatch(1), result(0), result(1)]


def test_a_writer_whose_generation_was_superseded_cannot_commit(postgres_storage):
    """As through a pooler that dropped the session's lock: the commit's fence still refuses."""
    journal = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    journal.append(dispatch(0))
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        db.execute("UPDATE armlab_journals SET generation = generation + 1")  # what another opener does
    with pytest.raises(JournalError, match="another process opened it and writes it now"):
        journal.append(dispatch(1))
    journal.close()
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        assert db.execute("SELECT count(*) FROM armlab_events").fetchone()[0] == 1  # nothing of the refused commit


def test_a_database_restart_refuses_appends_and_a_reopened_journal_replays_every_acknowledged_event(
    postgres_cluster, postgres_storage
):
    journal = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    acknowledged = [dispatch(t) for t in range(20)]
    for event in acknowledged:
        journal.append(event)
    position = journal.position
    postgres_cluster.restart_immediately()  # pg_ctl restart -m immediate: every connection cut
    with pytest.raises(JournalUnavailable, match="open the journal again once it answers"):
        journal.append(result(0))
    journal.close()
    with PostgresJournal.open(postgres_storage, "exp") as reopened:
        assert list(reopened.events()) == acknowledged and reopened.position == position
        reopened.append(result(0))


def test_a_row_the_schema_forbids_is_refused_and_the_journal_goes_on(postgres_storage):
    with PostgresJournal.create(postgres_storage, "exp", {"seed": 1}) as journal:
        journal.append(dispatch(0))
        with pytest.raises(JournalError, match="one_dispatch_per_trial"):
            journal.append(dispatch(0))
        journal.append(result(0))
        assert journal.position[0] == 2 and len(list(journal.events())) == 2


def test_many_journals_share_the_tables_each_with_its_own_chain(postgres_storage):
    for name in ("a", "b"):
        with PostgresJournal.create(postgres_storage, name, {"seed": name}) as journal:
            journal.append_many([dispatch(0), result(0)])  # the same trials in both: keyed by journal
    with PostgresJournal.open(postgres_storage, "a") as a, PostgresJournal.open(postgres_storage, "b") as b:
        assert list(a.events()) == list(b.events()) and a.position != b.position  # chains start at their meta
        assert a.meta["seed"] == "a" and a.meta["state"] == "open"
    with pytest.raises(JournalError, match="'a' .* already exists"):
        PostgresJournal.create(postgres_storage, "a", {})
    with pytest.raises(JournalError, match="'c' does not exist"):
        PostgresJournal.open(postgres_storage, "c")


def transactions_of(url: str) -> dict[str, set[str]]:
    """Per journal name, the transactions that wrote its events (``xmin`` of their rows)."""
    with psycopg.connect(url, autocommit=True) as db:
        rows = db.execute("SELECT j.name, e.xmin::text FROM armlab_events e JOIN armlab_journals j ON j.id = e.journal")
        written: dict[str, set[str]] = {}
        for name, xmin in rows:
            written.setdefault(name, set()).add(xmin)
        return written


def test_journals_of_one_database_commit_together_in_one_transaction_each_through_its_fence(postgres_storage):
    """One transaction for the batches of three journals; the one another process took over
    writes nothing and fails alone."""
    a, b, taken = (PostgresJournal.create(postgres_storage, name, {"seed": 1}) for name in ("a", "b", "taken"))
    assert a.together == b.together == postgres_storage
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        db.execute("UPDATE armlab_journals SET generation = generation + 1 WHERE name = 'taken'")
    errors = PostgresJournal.append_together([(a, [dispatch(0), dispatch(1)]), (b, [dispatch(0)]),
                                              (taken, [dispatch(0)])])
    assert errors[:2] == [None, None]
    assert isinstance(errors[2], JournalError) and "another process opened it" in str(errors[2])
    assert transactions_of(postgres_storage).keys() == {"a", "b"}
    assert len(set.union(*transactions_of(postgres_storage).values())) == 1  # one transaction
    assert (a.position[0], b.position[0]) == (2, 1)
    for journal in (a, b, taken):
        journal.close()
    with PostgresJournal.open(postgres_storage, "a") as again:
        assert list(again.events()) == [dispatch(0), dispatch(1)]


def test_a_joint_transaction_that_fails_writes_each_batch_alone(postgres_storage):
    """A row the schema forbids aborts the joint transaction: each batch is written again
    alone, so only its journal is refused, and it goes on."""
    a, b = (PostgresJournal.create(postgres_storage, name, {"seed": 1}) for name in ("a", "b"))
    b.append(dispatch(0))
    errors = PostgresJournal.append_together([(a, [dispatch(0)]), (b, [dispatch(0)])])
    assert errors[0] is None and "one_dispatch_per_trial" in str(errors[1])
    assert (a.position[0], b.position[0]) == (1, 1)
    b.append(result(0))
    assert [list(a.events()), list(b.events())] == [[dispatch(0)], [dispatch(0), result(0)]]
    a.close()
    b.close()


def test_a_lost_joint_connection_is_made_again_and_nothing_is_lost(postgres_storage):
    """The process's connection for joint commits cut (its backend terminated): that commit
    writes each batch alone through the journals' own connections, the next one reconnects."""
    from armlab.orchestrator.journal import postgres

    a, b = (PostgresJournal.create(postgres_storage, name, {"seed": 1}) for name in ("a", "b"))
    assert PostgresJournal.append_together([(a, [dispatch(0)]), (b, [dispatch(0)])]) == [None, None]
    joint = next(db for (pid, url), db in postgres._joint._connections.items() if url == postgres_storage)
    terminate(postgres_storage, joint.info.backend_pid)
    assert PostgresJournal.append_together([(a, [dispatch(1)]), (b, [dispatch(1)])]) == [None, None]
    assert PostgresJournal.append_together([(a, [dispatch(2)]), (b, [dispatch(2)])]) == [None, None]
    written = transactions_of(postgres_storage)
    assert len(written["a"] | written["b"]) == 4  # joint, two alone, joint again
    assert [e.trial for e in a.events()] == [e.trial for e in b.events()] == [0, 1, 2]
    joint = postgres._joint._connections[os.getpid(), postgres_storage]  # made again
    a.close()
    assert not joint.closed  # b is still open
    b.close()
    assert joint.closed and (os.getpid(), postgres_storage) not in postgres._joint._connections  # with the last


def test_a_changed_row_is_found_on_replay(postgres_storage):
    with PostgresJournal.create(postgres_storage, "exp", {"seed": 1}) as journal:
        journal.append_many([dispatch(0), result(0), dispatch(1)])
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        db.execute("UPDATE armlab_events SET reward = 0.5 WHERE seq = 2")
    with PostgresJournal.open(postgres_storage, "exp") as journal, pytest.raises(
        JournalError, match="event 2 \\(result of trial 0\\) was changed") as caught:
        list(journal.events())
    assert caught.value.good == 1


def test_a_live_experiment_replays_from_postgresql_bit_for_bit_and_its_backup_verifies(postgres_storage, live, tmp_path):
    journal = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    experiment = live.experiment(budget=40, in_flight=3, recorder=journal)
    pulls = [0, 0, 0]
    for _ in range(40):
        trial = experiment.ask()
        pulls[trial.arm] += 1
        experiment.tell(trial.id, live.conversion(trial.arm, pulls[trial.arm]))
    journal.close()
    with PostgresJournal.open(postgres_storage, "exp") as reopened:
        replayed = live.experiment(budget=40, in_flight=3)
        assert replayed.replay(reopened.events()) == 80
        reopened.backup(tmp_path / "copy.sqlite")
    assert live.state(replayed) == live.state(experiment)
    result_ = CliRunner().invoke(cli, ["--no-plugins", "journal", "verify", str(tmp_path / "copy.sqlite")])
    assert result_.exit_code == 0 and "80 events, integrity chain intact" in result_.output
    with Journal.open(tmp_path / "copy.sqlite") as copy:
        assert copy.meta["seed"] == 1


def test_the_events_table_has_the_columns_of_schema_py_and_an_index_on_the_journal(postgres_storage):
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        columns = [r[0] for r in db.execute("SELECT column_name FROM information_schema.columns WHERE table_name = "
                                            "'armlab_events' ORDER BY ordinal_position")]
        indexes = [r[0] for r in db.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'armlab_events'")]
    assert columns == ["journal", *COLUMN_NAMES]
    assert indexes and all("(journal, " in index for index in indexes)


# -- armlab storage init | upgrade -------------------------------------------------------------
def storage(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", "storage", *args])


def test_storage_init_creates_the_tables_once_and_upgrade_is_idempotent(postgres_url):
    with pytest.raises(JournalError, match="holds no armlab tables: run armlab storage init"):
        PostgresJournal.create(postgres_url, "exp", {})
    first = storage("init", postgres_url)
    assert first.exit_code == 0 and f"armlab's tables created (format {DATABASE_VERSION})" in first.output
    again = storage("init", postgres_url)
    assert again.exit_code == 0 and f"already holds armlab's tables (format {DATABASE_VERSION}); nothing to do" in again.output
    upgraded = storage("upgrade", postgres_url)
    assert upgraded.exit_code == 0 and f"armlab's tables is current (format {DATABASE_VERSION})" in upgraded.output
    with psycopg.connect(postgres_url, autocommit=True) as db:
        assert db.execute("SELECT max(version) FROM armlab_schema_version").fetchone() == (DATABASE_VERSION,)
    PostgresJournal.create(postgres_url, "exp", {}).close()


def test_a_database_of_a_newer_format_is_refused_and_left_alone(postgres_storage):
    with psycopg.connect(postgres_storage, autocommit=True) as db:
        db.execute("INSERT INTO armlab_schema_version VALUES (99, 0, 'later')")
    refused = storage("upgrade", postgres_storage)
    assert refused.exit_code == 2 and f"format 99, newer than this armlab's {DATABASE_VERSION}" in refused.output
    with pytest.raises(JournalError, match="use the armlab that upgraded it"):
        PostgresJournal.create(postgres_storage, "exp", {})


@pytest.mark.parametrize(("url", "message"), [
    ("sqlite:///x.sqlite", "SQLite storage needs no init or upgrade"),
    ("x.sqlite", "is not a PostgreSQL URL: give postgresql://USER@HOST:PORT/DATABASE"),
])
def test_storage_commands_refuse_other_urls_with_the_fix(url, message):
    for command in ("init", "upgrade"):
        refused = storage(command, url)
        assert refused.exit_code == 2 and message in refused.output and "Traceback" not in refused.output


def test_an_unreachable_database_is_named_without_its_password(postgres_cluster):
    url = f"postgresql://armlab:secret@127.0.0.1:{postgres_cluster.port}/no_such_database"
    refused = storage("init", url)
    assert refused.exit_code == 2 and "cannot connect to postgresql://armlab:***@127.0.0.1" in refused.output
    assert "secret" not in refused.output and "Traceback" not in refused.output


def test_the_writer_records_its_url_for_the_processes_it_turns_away_and_clears_it_on_close(postgres_storage):
    from armlab.orchestrator.journal.postgres import JournalInUse

    PostgresJournal.create(postgres_storage, "exp", {"seed": 1}).close()
    first = PostgresJournal.open(postgres_storage, "exp", "http://10.0.0.7:8000")
    with pytest.raises(JournalInUse, match=r"in use by another process \(http://10\.0\.0\.7:8000\)") as refused:
        PostgresJournal.open(postgres_storage, "exp", "http://10.0.0.8:8000")
    assert refused.value.owner == "http://10.0.0.7:8000"
    first.close()
    with psycopg.connect(postgres_storage) as db:
        assert db.execute("SELECT owner FROM armlab_journals WHERE name = 'exp'").fetchone() == (None,)


def test_the_writing_connection_has_the_server_drop_a_silent_peer_within_the_stated_bound(postgres_storage):
    from armlab.orchestrator.journal.postgres_schema import DEAD_PEER_BOUND

    assert "127.0.0.1" in postgres_storage  # TCP: the settings apply (a Unix socket ignores them)
    journal = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    try:
        shown = {name: journal._db.execute(f"SHOW {name}").fetchone()[0]
                 for name in ("tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count",
                              "tcp_user_timeout")}
    finally:
        journal.close()
    idle, interval, count = (int(shown[name].rstrip("s")) for name in list(shown)[:3])
    assert idle + interval * count == DEAD_PEER_BOUND <= 11
    assert shown["tcp_user_timeout"].removesuffix("ms") == str(DEAD_PEER_BOUND * 1000)


def test_a_closed_journal_opens_again_at_once_even_before_its_connection_is_gone(postgres_storage, monkeypatch):
    """close() releases the ownership lock itself: the end of the connection releases it only
    once the server's backend exits (a moment later), so an open right after a close could be
    refused as "in use".  Here the old connection is kept alive to make that moment last."""
    journal = PostgresJournal.create(postgres_storage, "exp", {"seed": 1})
    journal.append(dispatch(0))
    kept = journal._db
    monkeypatch.setattr(kept, "close", lambda: None)  # the backend lingers
    journal.close()
    try:
        reopened = PostgresJournal.open(postgres_storage, "exp")
        assert [event.trial for event in reopened.events()] == [0]
        reopened.close()
    finally:
        monkeypatch.undo()
        kept.close()
