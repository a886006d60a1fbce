"""Journal faults other than a clean kill: a full disk, a deleted, damaged or half-copied
journal, a crash while creating one.  Each must be noticed, never acknowledged past, and
leave a journal that resumes (or a clear way to salvage it)."""

from __future__ import annotations

import copy
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading

import anyio
import httpx
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.orchestrator.journal.repair import salvage
from armlab.orchestrator.journal.store import Journal, JournalCorrupted, JournalError
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.live.types import Event
from armlab.service.app import create_app


def _events(n: int) -> list[Event]:
    out = []
    for trial in range(n):
        out += [Event("dispatch", trial, trial % 3, at=float(trial)),
                Event("result", trial, trial % 3, reward=(trial % 7) / 7, at=trial + 0.5)]
    return out


def _journal(path, n: int = 50) -> None:
    with Journal.create(path, {"seed": 1}) as journal:
        journal.append_many(_events(n))


# -- integrity chain (L7) -------------------------------------------------------------------
def test_a_changed_reward_is_reported_with_the_last_good_event(tmp_path):
    path = tmp_path / "j.sqlite"
    _journal(path)
    db = sqlite3.connect(path)
    db.execute("UPDATE events SET reward = 0.999 WHERE seq = 8")  # one stored reward changed
    db.commit()
    db.close()
    with Journal.open(path) as journal, pytest.raises(JournalCorrupted, match=r"event 8 \(result of trial 3\) "
                                                                             r"was changed.*last good event is 7") as err:
        list(journal.events())
    assert err.value.good == 7


def test_a_removed_event_is_reported(tmp_path):
    path = tmp_path / "j.sqlite"
    _journal(path)
    db = sqlite3.connect(path)
    db.execute("DELETE FROM events WHERE seq = 20")
    db.commit()
    db.close()
    with Journal.open(path) as journal, pytest.raises(JournalCorrupted, match="missing event 20"):
        list(journal.events())


@pytest.mark.system
def test_a_copy_of_the_main_file_alone_is_refused(tmp_path):
    """A journal in use keeps its newest events in NAME-wal; a copy without it is incomplete."""
    path = tmp_path / "j.sqlite"
    script = textwrap.dedent(f"""
        import os
        from armlab.orchestrator.journal.store import Journal
        from armlab.orchestrator.live.types import Event
        journal = Journal.create({str(path)!r}, {{}})
        journal.append_many([Event("dispatch", t, 0, at=0.0) for t in range(30)])
        os._exit(0)  # a crash: no clean close
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert (tmp_path / "j.sqlite-wal").exists()
    copy = tmp_path / "copy" / "j.sqlite"
    copy.parent.mkdir()
    shutil.copy(path, copy)  # the main file only
    with pytest.raises(JournalCorrupted, match="write-ahead log .* is missing"):
        Journal.open(copy)
    with Journal.open(path) as journal:  # the original, both files: every event is there
        assert len(list(journal.events())) == 30


def _crash_after_batches(path, batches: int) -> None:
    """Write ``batches`` commits of 5 events to a new journal, then die without closing it."""
    script = textwrap.dedent(f"""
        import os
        from armlab.orchestrator.journal.store import Journal
        from armlab.orchestrator.live.types import Event
        journal = Journal.create({str(path)!r}, {{}})
        for b in range({batches}):
            journal.append_many([Event("dispatch", 5 * b + t, 0, at=0.0) for t in range(5)])
        os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)


@pytest.mark.system
def test_a_damaged_write_ahead_log_is_refused_not_silently_cut(tmp_path):
    path = tmp_path / "j.sqlite"
    _crash_after_batches(path, 40)
    wal = tmp_path / "j.sqlite-wal"
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    data[32 + 3 * (24 + page) + 24 + 100] ^= 0x01  # one bit of the fourth frame's page
    wal.write_bytes(bytes(data))
    with pytest.raises(JournalCorrupted, match="write-ahead log .* is damaged at frame .* committed transaction"):
        Journal.open(path)
    kept = salvage(path, tmp_path / "new.sqlite")
    assert 0 <= kept < 200


@pytest.mark.system
def test_a_cut_write_ahead_log_is_refused(tmp_path):
    """A log cut at a frame boundary looks like a crash to SQLite; the tail marker knows better."""
    path = tmp_path / "j.sqlite"
    _crash_after_batches(path, 40)
    wal = tmp_path / "j.sqlite-wal"
    data = wal.read_bytes()
    page = int.from_bytes(data[8:12], "big")
    wal.write_bytes(data[: 32 + 10 * (24 + page)])  # the first ten frames only
    with pytest.raises(JournalCorrupted, match=r"holds \d+ events but committed 200") as err:
        Journal.open(path)
    assert 0 <= err.value.good < 200


@pytest.mark.system
def test_a_crash_leaves_a_log_that_opens_with_every_committed_event(tmp_path):
    path = tmp_path / "j.sqlite"
    _crash_after_batches(path, 40)
    with Journal.open(path) as journal:
        assert len(list(journal.events())) == 200


def test_backup_copies_a_journal_into_one_verified_file(tmp_path):
    path, copy = tmp_path / "j.sqlite", tmp_path / "backup.sqlite"
    _journal(path, 20)
    result = CliRunner().invoke(cli, ["--no-plugins", "journal", "backup", str(path), str(copy)])
    assert result.exit_code == 0, result.output
    assert "40 events copied" in result.output and not (tmp_path / "backup.sqlite-wal").exists()
    with Journal.open(copy) as journal:
        assert list(journal.events()) == _events(20)


# -- damaged pages and salvage (L6) -----------------------------------------------------------
def test_a_damaged_page_gives_a_clear_error_and_salvage_keeps_the_good_prefix(tmp_path):
    path = tmp_path / "j.sqlite"
    _journal(path, 400)  # several pages of events
    size = path.stat().st_size
    with open(path, "r+b") as f:  # overwrite a page in the middle with garbage
        f.seek((size // 4096 // 2) * 4096)
        f.write(os.urandom(4096))
    runner = CliRunner()
    verify = runner.invoke(cli, ["--no-plugins", "journal", "verify", str(path)])
    assert verify.exit_code == 2 and "Traceback" not in verify.output
    assert "armlab journal salvage" in verify.output
    salvaged = runner.invoke(cli, ["--no-plugins", "journal", "salvage", str(path), str(tmp_path / "new.sqlite")])
    assert salvaged.exit_code == 0, salvaged.output
    kept = int(salvaged.output.split()[0])
    assert 0 < kept < 800
    with Journal.open(tmp_path / "new.sqlite") as journal:
        assert list(journal.events()) == _events(400)[:kept]


# -- creation is atomic (L4) --------------------------------------------------------------------
def test_a_failed_creation_leaves_no_file(tmp_path):
    path = tmp_path / "j.sqlite"
    with pytest.raises(TypeError):
        Journal.create(path, {"config": object()})  # not JSON: fails in the middle of creating
    assert list(tmp_path.iterdir()) == []
    Journal.create(path, {"seed": 1}).close()  # and the name is free for a real journal
    with Journal.open(path) as journal:
        assert journal.meta["seed"] == 1


# -- a journal deleted while in use (L5) ---------------------------------------------------------
async def test_a_journal_deleted_while_serving_stops_the_service(tmp_path, registry, live):
    path = tmp_path / "j.sqlite"
    session = LiveSession.open(journal=path, config=live.config(), registry=registry)
    fatal = []
    app = create_app(session, token=None, on_fatal=fatal.append)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        trial = (await client.post("/ask", json={})).json()
        assert (await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1.0})).status_code == 200
        path.unlink()
        assert (await client.post("/ask", json={})).status_code == 503  # not acknowledged
        assert (await client.get("/status")).status_code == 503
        assert (await client.post("/ask", json={})).status_code == 503  # and nothing after it either
    session.close()
    assert len(fatal) == 1 and "deleted, moved or replaced" in str(fatal[0])


def test_appending_to_a_replaced_journal_is_refused(tmp_path):
    path = tmp_path / "j.sqlite"
    journal = Journal.create(path, {})
    journal.append(Event("dispatch", 0, 0, at=0.0))
    os.rename(path, tmp_path / "moved.sqlite")
    with pytest.raises(JournalError, match="deleted, moved or replaced"):
        journal.append(Event("dispatch", 1, 0, at=0.0))
    journal.close()


# -- a full disk (L1) ------------------------------------------------------------------------------
@pytest.mark.timeout(240)
@pytest.mark.system
async def test_a_full_disk_stops_the_service_and_the_same_command_resumes(tmp_path, live, small_disk):
    await _fill_the_disk_while_serving(tmp_path, small_disk, live)


async def _fill_the_disk_while_serving(tmp_path, disk, live):
    config, journal = tmp_path / "faults.toml", disk / "j.sqlite"
    config.write_text(live.toml(name="faults", seed=5, problem={"budget": 100000}, feedback={"in_flight": 4},
                                policies=[{"plugin": "ucb1"}]))
    headers = {"Authorization": f"Bearer {'p' * 32}"}
    service = await live.serve(config, journal, log=tmp_path / "serve.log").started()
    acknowledged, refused = [], 0
    free = shutil.disk_usage(disk).free
    (disk / "filler").write_bytes(b"\0" * max(free - 48 * 1024, 0))  # leave a little room
    async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=10) as client:
        for _ in range(20000):
            try:
                trial = await client.post("/ask", json={})
                if trial.status_code != 200:
                    refused += 1
                    break
                trial = trial.json()
                told = await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 0.5})
            except httpx.TransportError:
                break  # the service stopped
            if told.status_code != 200:
                refused += 1
                break
            acknowledged.append(trial["trial_id"])
    code = service.process.wait(timeout=30)
    stderr = service.process.stderr.read()
    service.close()
    assert acknowledged and code == 2, stderr  # it stopped by itself, with a clear message
    assert "stopped:" in stderr and "journal" in stderr and "Traceback" not in stderr

    (disk / "filler").unlink()  # space freed: the same command resumes
    service = await live.serve(config, journal, service.port, log=tmp_path / "serve.log").started()
    try:
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=10) as client:
            status = (await client.get("/status")).json()
            trial = (await client.post("/ask", json={})).json()  # and goes on
            assert (await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1.0})).status_code == 200
    finally:
        code, _ = service.stop()
    assert code == 0
    assert status["completed"] == len(acknowledged)  # every acknowledged tell, nothing else


# -- a failed write while the next batch is built (pipelined group commit) ------------------------
async def test_a_failed_batch_takes_the_batch_built_on_it_down_too(tmp_path, registry, live):
    """Batch N fails in the worker thread while batch N+1 (a tell of N's trial, another ask) is
    built from it: no answer of either is given, the journal keeps exactly the durable prefix,
    nothing is written afterwards, and reopening replays to that prefix."""
    path = tmp_path / "j.sqlite"
    session = LiveSession.open(journal=path, config=live.config(feedback={"in_flight": 5}), registry=registry)
    experiment, journal = session.experiment, session.journal
    failures, answers = [], {}
    entered, release = threading.Event(), threading.Event()

    def failing_append(events):
        entered.set()
        release.wait(10)
        raise JournalError("injected: the disk is full")

    async def answer(name, apply, *args):
        try:
            answers[name] = await writer.change(apply, *args)
        except JournalError as exc:
            answers[name] = exc

    async with session.group_commit(failures.append) as writer:
        for reward in (1.0, 0.0, 1.0):
            trial = await writer.change(experiment.ask)
            await writer.change(experiment.tell, trial.id, reward)
        prefix, prefix_state = list(journal.events()), copy.deepcopy(live.state(experiment))
        journal.append_many = failing_append
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer, "N: ask", experiment.ask)
            await anyio.to_thread.run_sync(entered.wait, 10)  # batch N is in the worker thread
            n_trial = experiment.trials[-1].trial.id
            tg.start_soon(answer, "N+1: tell of N's trial", experiment.tell, n_trial, 1.0)
            tg.start_soon(answer, "N+1: ask", experiment.ask)
            await anyio.wait_all_tasks_blocked()
            assert writer.recorded == writer.written + 3 and answers == {}  # N+1 built, nothing answered
            release.set()
        del journal.append_many  # the disk works again: only the refusal keeps N+1 out now
        with pytest.raises(JournalError, match="can no longer be written"):
            experiment.ask()
        writer.flush()  # never writes what was built on the failed batch
    assert len(failures) == 1 and len(answers) == 3
    assert all(isinstance(a, JournalError) for a in answers.values()), answers
    assert list(journal.events()) == prefix
    session.close()
    resumed = LiveSession.resume(Journal.open(path), registry=registry)
    assert live.state(resumed.experiment) == prefix_state
    resumed.close()
