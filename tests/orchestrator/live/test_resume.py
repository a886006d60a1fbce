"""Sessions: a journaled live run, stopped and resumed, equals the run that never stopped."""

from __future__ import annotations

import json
import textwrap

import anyio
import pytest
import structlog
from click.testing import CliRunner

from armlab.cli import cli
from armlab.errors import ConfigError
from armlab.orchestrator.journal.store import JournalError
from armlab.orchestrator.live.session import LiveSession

ANSWERS = textwrap.dedent("""
    import hashlib
    import anyio

    async def assay(trial):
        await anyio.sleep(0)
        digest = hashlib.sha256(f"{trial.arm}/{trial.pull}".encode()).digest()
        u = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
        if u > 0.97:
            raise RuntimeError("plate reader jammed")  # a failed trial, deterministically
        return {"reward": float(u < (0.2, 0.5, 0.8)[trial.arm])}
""")


@pytest.fixture
def callback_config(live, tmp_path, monkeypatch):
    (tmp_path / "live_answers.py").write_text(ANSWERS)
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(in_flight=1, budget=40):
        return live.config(
            source={"plugin": "callback", "function": "live_answers:assay", "arms": 3,
                    "reward_min": 0, "reward_max": 1},
            feedback={"in_flight": in_flight},
            problem={"objective": "best-arm", "budget": budget},
        )

    return make


async def _run(session: LiveSession, stop_after: int | None = None) -> None:
    """Run the session's trials; with ``stop_after``, stop (cancel) once that many have ended."""
    async with anyio.create_task_group() as tg, session.group_commit():
        run = session.live_run()
        if stop_after is not None:
            def stop(event):
                if session.experiment.counters.closed >= stop_after:
                    tg.cancel_scope.cancel()

            session.experiment.add_listener(stop)
        await run.run()


def _events(session):
    return [(e.kind, e.trial, e.arm, e.reward, e.reason) for e in session.journal.events()]


@pytest.mark.parametrize("stop_after", [1, 13, 27])
async def test_resumed_run_is_identical_to_the_uninterrupted_one(callback_config, registry, live, tmp_path, stop_after):
    config = callback_config()
    whole = LiveSession.open(journal=tmp_path / "whole.sqlite", config=config, registry=registry)
    await _run(whole)
    expected_state, expected_events = live.state(whole.experiment), _events(whole)
    whole.close()
    assert expected_state["summary"]["failed"] > 0  # the workload includes failures

    first = LiveSession.open(journal=tmp_path / "cut.sqlite", config=config, registry=registry)
    await _run(first, stop_after=stop_after)
    assert first.experiment.counters.closed < 40
    first.close()
    resumed = LiveSession.open(journal=tmp_path / "cut.sqlite", registry=registry)  # config from the journal
    assert resumed.replayed > 0
    await _run(resumed)
    assert live.state(resumed.experiment) == expected_state
    assert _events(resumed) == expected_events
    resumed.close()


async def test_pending_trials_are_rerun_after_a_restart(callback_config, registry, tmp_path):
    config = callback_config(in_flight=4, budget=24)
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=config, registry=registry)
    for _ in range(4):  # four trials handed out, then the process "dies"
        session.experiment.ask()
    session.close()
    resumed = LiveSession.open(journal=tmp_path / "j.sqlite", registry=registry)
    assert [t.id for t in resumed.experiment.pending_trials()] == [0, 1, 2, 3]
    await _run(resumed)
    summary = resumed.experiment.summary()
    assert summary["completed"] + summary["failed"] == 24 and resumed.experiment.state.value == "finished"
    outcomes = [e.trial for e in resumed.journal.events() if e.kind != "dispatch"]
    assert sorted(outcomes) == list(range(24))  # each trial ended exactly once
    resumed.close()


def test_open_refuses_a_different_config_and_missing_pieces(live, registry, tmp_path, make_config):
    path = tmp_path / "j.sqlite"
    with pytest.raises(ConfigError, match="does not exist; give the experiment's config"):
        LiveSession.open(journal=path, registry=registry)
    LiveSession.open(journal=path, config=live.config(), registry=registry).close()
    changed = live.config(seed=5, feedback={"in_flight": 2})
    with pytest.raises(ConfigError, match=r"different experiment \(changed: feedback.in_flight, seed\)"):
        LiveSession.open(journal=path, config=changed, registry=registry)
    same = LiveSession.open(journal=path, config=live.config(), registry=registry)
    with pytest.raises(JournalError, match="in use"):
        LiveSession.open(journal=path, registry=registry)
    same.close()
    with pytest.raises(ConfigError, match="is simulated; a live session needs a live source"):
        LiveSession.open(journal=tmp_path / "other.sqlite", config=make_config(), registry=registry)
    assert not (tmp_path / "other.sqlite").exists()


def test_external_sources_are_not_run_by_armlab_run(live, registry):
    from armlab import run_experiment

    with pytest.raises(ConfigError, match="does not run trials itself"):
        run_experiment(live.config(), registry=registry)


def test_resume_command_continues_a_journal(callback_config, registry, tmp_path):
    path = tmp_path / "j.sqlite"
    session = LiveSession.open(journal=path, config=callback_config(in_flight=2, budget=20), registry=registry)
    for _ in range(2):
        session.experiment.tell(session.experiment.ask().id, 1.0)
    session.close()
    result = CliRunner().invoke(cli, ["--no-plugins", "resume", str(path), "--log", str(tmp_path / "log.jsonl")])
    structlog.reset_defaults()  # the command configured logging into a file it has closed
    assert result.exit_code == 0, result.output
    logged = [json.loads(line)["event"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert logged[0] == "journal_replayed" and logged.count("trial_rerun") == 0 and "live_run_finished" in logged
    assert "replayed 4 events" in result.output and "thompson: finished; 20 dispatched" in result.output
    resumed = LiveSession.open(journal=path, registry=registry)
    assert resumed.experiment.counters.closed == 20 and resumed.replayed == 40
    resumed.close()
