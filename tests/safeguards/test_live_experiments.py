"""The safeguards in live experiments (issue 32): through LiveSession, HTTP, the client and
`armlab run` with an adapter; journaled, replayed bit for bit, and shown in the status."""

from __future__ import annotations

import copy
import json
import sqlite3
from typing import Any

import httpx
import numpy as np
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.config import validate_config
from armlab.events import ArmRetired, AttritionFlagged
from armlab.orchestrator.live.session import LiveSession
from armlab.orchestrator.live.types import NoTrialAvailable
from armlab.service.app import create_app
from tests.conftest import EXTERNAL_EXPERIMENT

TOKEN = "t" * 32
GUARD = {"metric": "latency_ms", "max": 300, "range": [0, 1000]}


def _config(**changes: Any):
    data = copy.deepcopy(EXTERNAL_EXPERIMENT)
    data.update({"policies": [{"plugin": "uniform"}], "problem": {"objective": "best-arm", "budget": 600},
                 "feedback": {"in_flight": 50}, **changes})
    return validate_config(data)


def _drive(session: LiveSession, trials: int, *, drop_arm: int | None = None) -> list[Any]:
    """Ask for unit u{i % 400}, report a reward and latency (arm 0 slow); ``drop_arm``'s
    trials are abandoned every other time (attrition)."""
    experiment, rng, seen = session.experiment, np.random.default_rng(3), []
    experiment.add_listener(seen.append)
    for i in range(trials):
        try:
            trial = experiment.ask(unit=f"u{i % 400}")
        except NoTrialAvailable:
            break
        if trial.exposure != "new":
            continue
        if trial.arm == drop_arm and i % 2:
            experiment.abandon(trial.id, "never came back")
            continue
        latency = 900.0 if trial.arm == 0 else 100.0
        experiment.tell(trial.id, float(rng.random() < 0.3 + 0.2 * trial.arm), metrics={"latency_ms": latency})
    return seen


def test_a_guardrail_retires_the_slow_arm_with_evidence_and_a_replay_gives_the_same_status(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    session = LiveSession.open(journal=path, config=_config(guardrails=[GUARD]), registry=registry)
    seen = _drive(session, 1000, drop_arm=1)
    status = session.experiment.status()
    session.close()
    bandit = status["bandits"][0]
    assert bandit["retired"] == [0]
    evidence = bandit["guardrail_retirements"][0]
    assert evidence["arm"] == 0 and evidence["metric"] == "latency_ms" and evidence["max"] == 300
    assert evidence["interval"][0] > 300 and evidence["n"] >= 1
    assert [e for e in seen if isinstance(e, ArmRetired)][0].reason.startswith('{"guardrail"')
    assert status["checks"]["attrition"]["flagged"] and any(isinstance(e, AttritionFlagged) for e in seen)
    assert status["units"]["bound"] == 400 and status["units"]["repeat_exposures"] > 0
    assert all(i is None or 0 <= i[0] <= i[1] <= 1 for i in status["anytime_intervals"])
    assert status["confidence"]["label"].startswith("fixed-sample")
    db = sqlite3.connect(path)
    assert db.execute("SELECT count(*) FROM events WHERE unit IS NOT NULL").fetchone()[0] > 400  # rebound units too
    metrics = db.execute("SELECT metrics FROM events WHERE kind = 'result' LIMIT 1").fetchone()[0]
    db.close()
    assert json.loads(metrics)["latency_ms"] in (100.0, 900.0)
    again = LiveSession.open(journal=path, registry=registry)
    try:
        replayed = again.experiment.status()
        assert replayed["units"]["repeat_exposures"] == 0  # answered in memory, not journaled
        replayed["units"]["repeat_exposures"] = status["units"]["repeat_exposures"]
        assert replayed == status
        binding = again.experiment.ask(unit="u7")  # the binding survived: a repeat of its arm
        assert binding.exposure in ("repeat", "open", "rebound")
    finally:
        again.close()


def test_sticky_units_repeat_the_arm_and_rebind_after_a_retirement(tmp_path, registry):
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=_config(), registry=registry)
    experiment = session.experiment
    try:
        first = experiment.ask(unit="alice")
        assert experiment.ask(unit="alice") == first.__class__(**{**first.__dict__, "exposure": "open"})
        experiment.tell(first.id, 1.0)
        repeat = experiment.ask(unit="alice")
        assert (repeat.id, repeat.arm, repeat.exposure) == (first.id, first.arm, "repeat")
        assert len(experiment.trials) == 1 and experiment.stats.counts[0].sum() == 1
        experiment.retire(first.arm)
        rebound = experiment.ask(unit="alice")
        assert rebound.exposure == "rebound" and rebound.arm != first.arm and rebound.id == 1
        with pytest.raises(TypeError, match="unit must be text"):
            experiment.ask(unit="")
    finally:
        session.close()


def test_metrics_outside_a_guardrail_range_are_refused_naming_the_metric(tmp_path, registry):
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=_config(guardrails=[GUARD]), registry=registry)
    try:
        trial = session.experiment.ask()
        with pytest.raises(Exception, match=r"metrics.latency_ms = 5000 is outside the guardrail's range \[0"):
            session.experiment.tell(trial.id, 1.0, metrics={"latency_ms": 5000})
        with pytest.raises(Exception, match="metrics.x must be a finite number"):
            session.experiment.tell(trial.id, 1.0, metrics={"x": float("nan")})
        assert session.experiment.record(trial.id).status.value == "pending"  # nothing changed
    finally:
        session.close()


def test_anytime_stopping_stops_with_the_best_arm_and_replays(tmp_path, registry):
    path = tmp_path / "j.sqlite"
    config = _config(stopping={"rule": "anytime", "delta": 0.05}, problem={"objective": "best-arm", "budget": 5000},
                     feedback={"in_flight": 1})
    session = LiveSession.open(journal=path, config=config, registry=registry)
    rng = np.random.default_rng(1)
    with pytest.raises(NoTrialAvailable):
        while True:
            trial = session.experiment.ask()
            session.experiment.tell(trial.id, float(rng.random() < (0.1, 0.2, 0.9)[trial.arm]))
    stop = session.experiment.status()["stop"]
    session.close()
    assert stop["reason"] == "anytime" and stop["best_arm"] == 2 and stop["delta"] == 0.05
    again = LiveSession.open(journal=path, registry=registry)
    try:
        assert again.experiment.status()["stop"] == stop and again.experiment.stopped
    finally:
        again.close()


async def test_through_http_units_metrics_batches_and_status(tmp_path, registry):
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=_config(guardrails=[GUARD]), registry=registry)
    app = create_app(session, token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://armlab.test",
                                     headers={"Authorization": f"Bearer {TOKEN}"}) as client, \
                app.router.lifespan_context(app):
            first = (await client.post("/ask", json={"unit": "bob"})).json()
            assert first["unit"] == "bob" and first["exposure"] == "new"
            told = await client.post("/tell", json={"trial_id": first["trial_id"], "reward": 1,
                                                    "metrics": {"latency_ms": 120}})
            assert told.status_code == 200, told.text
            again = (await client.post("/ask", json={"unit": "bob"})).json()
            assert (again["trial_id"], again["exposure"]) == (first["trial_id"], "repeat")
            bad = await client.post("/tell", json={"trial_id": 0, "reward": 1, "metrics": {"latency_ms": "slow"}})
            assert bad.status_code == 422
            batch = (await client.post("/ask/batch", json={"count": 2, "units": ["c", "d"]})).json()
            assert [t["unit"] for t in batch["trials"]] == ["c", "d"]
            repeated = await client.post("/ask/batch", json={"count": 2, "units": ["e", "e"]})
            assert repeated.status_code == 422 and "unit 'e' is repeated" in repeated.text
            results = (await client.post("/tell/batch", json={"reports": [
                {"trial_id": batch["trials"][0]["trial_id"], "reward": 0, "metrics": {"latency_ms": 5000}},
                {"trial_id": batch["trials"][1]["trial_id"], "reward": 0, "metrics": {"latency_ms": 50}},
            ]})).json()["results"]
            assert [r["status"] for r in results] == ["rejected", "accepted"]
            status = (await client.get("/status")).json()
            assert status["units"] == {"bound": 3, "repeat_exposures": 1}
            assert status["checks"]["attrition"]["flagged"] is False
            assert status["anytime"]["simultaneous"] is True and len(status["anytime_intervals"]) == 3
            assert status["bandits"][0]["checks"] == status["checks"]
            assert status["guardrails"][0]["metric"] == "latency_ms"
    finally:
        session.close()


CALLBACK = """
name = "metrics-run"
seed = 2
[problem]
objective = "best-arm"
budget = 40
[source]
plugin = "callback"
function = "latency_cb:run"
arms = 2
reward_min = 0
reward_max = 1
[[guardrails]]
metric = "latency_ms"
max = 300
range = [0, 1000]
[[policies]]
plugin = "ucb1"
"""


def test_armlab_run_with_a_callback_returning_metrics_journals_them(tmp_path, monkeypatch):
    (tmp_path / "latency_cb.py").write_text(
        "def run(trial):\n    return {'reward': 0.5, 'metrics': {'latency_ms': 100 + trial.arm}}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config, path = tmp_path / "run.toml", tmp_path / "run.sqlite"
    config.write_text(CALLBACK)
    result = CliRunner().invoke(cli, ["--no-plugins", "run", str(config), "--journal", str(path),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT arm, metrics FROM events WHERE kind = 'result'").fetchall()
    assert len(rows) == 40 and all(json.loads(m) == {"latency_ms": 100.0 + arm} for arm, m in rows)
