"""The files beside a journal (issue 29, items 4 and 9 and what was seen with them).

A link put in the place of ``NAME-tail`` or of SQLite's files is refused, never written
through; a journal reached through a link keeps all its files beside the file it points to;
of two processes creating the same journal exactly one wins; and a journal whose disk is
still full is refused with a clear message, not a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import armlab.orchestrator.journal.store as journal_module
from armlab.cli import cli
from armlab.orchestrator.journal.store import Journal, JournalError
from armlab.orchestrator.live.types import Event
from armlab.orchestrator.live.session import LiveSession

VICTIM_TEXT = b"a file the journal's owner may write, which must never change\n" * 4


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "elsewhere" / "victim.txt"
    victim.parent.mkdir()
    victim.write_bytes(VICTIM_TEXT)
    return victim


# -- links beside a journal (item 4) ---------------------------------------------------------
def test_a_link_in_place_of_the_tail_marker_is_refused_and_its_target_unchanged(tmp_path, registry, live):
    path, victim = tmp_path / "j.sqlite", _victim(tmp_path)
    session = LiveSession.open(journal=path, config=live.config(), registry=registry)
    session.close()
    Path(f"{path}-tail").unlink()
    Path(f"{path}-tail").symlink_to(victim)
    with pytest.raises(JournalError, match=r"j.sqlite-tail' is a symbolic link; armlab does not write through"):
        session = LiveSession.open(journal=path, registry=registry)
        session.experiment.tell(session.experiment.ask().id, 1.0)  # 0.1.0 wrote the marker through it here
    result = CliRunner().invoke(cli, ["--no-plugins", "resume", str(path)])
    assert result.exit_code == 2 and "is a symbolic link" in result.output and "remove the link" in result.output
    assert victim.read_bytes() == VICTIM_TEXT


@pytest.mark.parametrize("suffix", ["-tail", "-wal", "-shm", "-journal"])
def test_a_link_beside_a_new_or_existing_journal_is_refused(tmp_path, suffix):
    path, victim = tmp_path / "j.sqlite", _victim(tmp_path)
    Path(f"{path}{suffix}").symlink_to(victim)
    with pytest.raises(JournalError, match=f"j.sqlite{suffix}' is a symbolic link"):
        Journal.create(path, {})
    assert not path.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    Path(f"{path}{suffix}").unlink()
    Journal.create(path, {}).close()
    Path(f"{path}{suffix}").unlink(missing_ok=True)
    Path(f"{path}{suffix}").symlink_to(victim)
    result = CliRunner().invoke(cli, ["--no-plugins", "journal", "verify", str(path)])
    assert result.exit_code == 2 and f"j.sqlite{suffix}' is a symbolic link" in result.output
    assert victim.read_bytes() == VICTIM_TEXT


def test_a_journal_reached_through_a_link_keeps_its_files_beside_the_file(tmp_path, registry, live):
    real, link = tmp_path / "disk" / "j.sqlite", tmp_path / "here" / "j.sqlite"
    real.parent.mkdir()
    link.parent.mkdir()
    LiveSession.open(journal=real, config=live.config(), registry=registry).close()
    link.symlink_to(real)
    session = LiveSession.open(journal=link, registry=registry)
    try:
        session.experiment.tell(session.experiment.ask().id, 1.0)
        assert sorted(p.name for p in real.parent.iterdir()) == ["j.sqlite", "j.sqlite-tail", "j.sqlite-wal"]
        assert [p.name for p in link.parent.iterdir()] == ["j.sqlite"]  # the link alone
    finally:
        session.close()
    result = CliRunner().invoke(cli, ["--no-plugins", "journal", "verify", str(link)])
    assert result.exit_code == 0 and "2 events" in result.output


def test_a_dangling_link_is_not_followed_to_create_a_journal(tmp_path):
    path, target = tmp_path / "j.sqlite", tmp_path / "elsewhere.sqlite"
    path.symlink_to(target)
    with pytest.raises(JournalError, match="already exists"):
        Journal.create(path, {})
    assert not target.exists()


# -- creating a journal: exactly one process wins (item 9) ------------------------------------
def test_a_journal_created_meanwhile_by_another_process_is_kept(tmp_path, monkeypatch):
    """Deterministic race: the other process creates the journal after this one checked that
    it does not exist (0.1.0 renamed over it: both went on, one with a replaced file)."""
    path, fsync = tmp_path / "j.sqlite", journal_module._fsync
    raced = []

    def fsync_after_the_other_created_it(target: Path) -> None:
        if not raced:
            raced.append(True)
            other = Journal.create(path, {"seed": 7})
            other.append(Event("dispatch", 0, 1, at=1.0))
            other.close()
        fsync(target)

    monkeypatch.setattr(journal_module, "_fsync", fsync_after_the_other_created_it)
    with pytest.raises(JournalError, match="another process created it at the same moment"):
        Journal.create(path, {"seed": 1})
    with Journal.open(path) as journal:
        assert journal.meta["seed"] == 7 and len(list(journal.events())) == 1  # the winner's, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.sqlite", "j.sqlite-tail"]  # no temporary left


SERVE = [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "serve"]


@pytest.mark.timeout(300)
@pytest.mark.system
def test_two_services_started_together_on_a_new_journal_one_serves_one_exits_2(tmp_path, live):
    config = tmp_path / "race.toml"
    config.write_text(live.toml(name="race", seed=5, problem={"budget": 100}, source={"arms": ["A", "B"]}, feedback=None,
                                policies=[{"plugin": "ucb1"}]))
    env = {**os.environ, "ARMLAB_TOKEN": "p" * 32}
    for attempt in range(3):
        path = tmp_path / f"race-{attempt}.sqlite"
        command = [*SERVE, str(config), "--journal", str(path), "--port", "0", "--log", str(tmp_path / "serve.log")]
        both = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                for _ in range(2)]
        try:
            codes = _first_exit(both, timeout=90)
            loser = next(p for p, code in zip(both, codes, strict=True) if code is not None)
            winner = next(p for p in both if p is not loser)
            stderr = loser.stderr.read()
            assert loser.returncode == 2, stderr
            assert "Traceback" not in stderr and str(path) in stderr
            assert any(clear in stderr for clear in ("at the same moment", "already exists", "in use by another process"))
            assert "serving" in winner.stdout.readline()  # the other one serves
        finally:
            for process in both:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
                process.communicate(timeout=30)
        with Journal.open(path) as journal:  # one journal, whole
            assert list(journal.events()) == []


def _first_exit(processes: list[subprocess.Popen], timeout: float) -> list[int | None]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [p.poll() for p in processes]
        if any(code is not None for code in codes):
            time.sleep(0.5)  # the other may be failing too: give it the same moment
            return [p.poll() for p in processes]
        time.sleep(0.05)
    raise AssertionError("neither process exited: both serve the same journal")


# -- a journal whose disk is still full -------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.system
def test_a_journal_on_a_disk_still_full_is_refused_with_a_clear_message(small_disk):
    disk, path = small_disk, small_disk / "j.sqlite"
    with Journal.create(path, {"seed": 1}) as journal:
        journal.append_many([Event("dispatch", t, t % 2, at=float(t)) for t in range(20)])
    (disk / "filler").write_bytes(b"\0" * shutil.disk_usage(disk).free)  # too little space freed
    result = CliRunner().invoke(cli, ["--no-plugins", "resume", str(path)])
    assert result.exit_code == 2, result.output
    assert "cannot open journal" in result.output and "free space on its disk" in result.output
    (disk / "filler").unlink()
    with Journal.open(path) as journal:  # and with space again it opens, whole
        assert len(list(journal.events())) == 20
