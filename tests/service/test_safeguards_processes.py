"""The safeguards of issue 32 against a real `armlab serve` process: sticky units kept across a
SIGKILL and a restart on the same journal, and the Python client end to end (units, metrics,
batches, the status's anytime intervals and checks, a guardrail retirement).

The service runs as a child process (conftest's ``live.serve``), so a kill is a real crash.
"""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from armlab.client import Client
from armlab.orchestrator.journal.store import Journal
from armlab.service.models import StatusOut
from tests.conftest import live_toml

pytestmark = pytest.mark.system

TOKEN = "p" * 32  # the token live.serve starts the service with
AUTH = {"Authorization": f"Bearer {TOKEN}"}

STICKY = live_toml(name="sticky-crash", seed=9, problem={"budget": 500}, source={"arms": ["control", "one-page", "express"]},
                   feedback={"in_flight": 60}, policies=[{"plugin": "thompson"}])

GUARDED = live_toml(name="client-guardrail", seed=12, problem={"budget": 3000}, source={"arms": ["slow", "fast", "faster"]},
                    feedback={"in_flight": 60}, guardrails=[{"metric": "latency_ms", "max": 300, "range": [0, 1000]}],
                    policies=[{"plugin": "uniform"}])


def _journaled_dispatches(path) -> int:
    with Journal.open(path) as journal:
        return sum(1 for event in journal.events() if event.kind == "dispatch")


@pytest.mark.timeout(180)
async def test_sticky_units_keep_their_trial_or_arm_across_kill_9(tmp_path, live):
    """Forty units asked, half of them told; SIGKILL; restart: every unit gets its bound arm
    (an open trial: that trial; a told one: a repeat of its arm), and repeats count nothing."""
    config, journal = tmp_path / "sticky.toml", tmp_path / "sticky.sqlite"
    config.write_text(STICKY)
    service = await live.serve(config, journal).started()
    units = [f"user-{i}" for i in range(40)]
    try:
        async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as http:
            first = {unit: (await http.post("/ask", json={"unit": unit})).json() for unit in units}
            assert all(answer["exposure"] == "new" and answer["unit"] == unit for unit, answer in first.items())
            told = units[::2]
            for i, unit in enumerate(told):
                answer = await http.post("/tell", json={"trial_id": first[unit]["trial_id"], "reward": i % 2})
                assert answer.json()["status"] == "accepted"
            before = (await http.get("/status")).json()
        service.kill()
        service = await live.serve(config, journal, service.port).started()
        async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as http:
            for _ in range(2):  # asking twice changes nothing either
                for unit in units:
                    again = (await http.post("/ask", json={"unit": unit})).json()
                    expected = "repeat" if unit in told else "open"
                    assert (again["trial_id"], again["arm"], again["exposure"], again["unit"]) == (
                        first[unit]["trial_id"], first[unit]["arm"], expected, unit), unit
            after = (await http.get("/status")).json()
            fresh = (await http.post("/ask", json={"unit": "user-new"})).json()
    finally:
        code, _ = service.stop()
    assert code == 0
    assert after["units"] == {"bound": 40, "repeat_exposures": 2 * len(told)}
    for key in ("dispatched", "completed", "pending", "counts", "means"):
        assert after[key] == before[key], key
    assert before["dispatched"] == 40 and sum(before["counts"]) == len(told)
    assert fresh["exposure"] == "new" and fresh["trial_id"] == 40
    assert _journaled_dispatches(journal) == 41  # repeats and open answers journal no dispatch


@pytest.mark.timeout(180)
async def test_the_client_with_units_metrics_batches_and_a_guardrail_retirement(tmp_path, live):
    config, journal = tmp_path / "guarded.toml", tmp_path / "guarded.sqlite"
    config.write_text(GUARDED)
    service = await live.serve(config, journal).started()
    try:
        await anyio.to_thread.run_sync(_drive_with_the_client, service.url)
    finally:
        code, _ = service.stop()
    assert code == 0
    with Journal.open(journal) as opened:
        events = list(opened.events())
    retired = [e for e in events if e.kind == "retired"]
    assert len(retired) == 1 and retired[0].arm == 0
    results = [e for e in events if e.kind == "result"]
    assert results and all(json.loads(e.metrics) == {"latency_ms": 900.0 if e.arm == 0 else 100.0} for e in results)


def _drive_with_the_client(url: str) -> None:
    """Units and metrics through the sync client until the guardrail retires the slow arm 0."""
    with Client(url, TOKEN) as client:
        first = client.ask(unit="alice")
        assert first.unit == "alice" and first.exposure == "new"
        assert client.ask(unit="alice").exposure == "open"
        told = client.tell(first.trial_id, 1.0, metrics={"latency_ms": 900.0 if first.arm == 0 else 100.0})
        assert told.status == "accepted"
        repeat = client.ask(unit="alice")
        assert (repeat.trial_id, repeat.arm, repeat.exposure) == (first.trial_id, first.arm, "repeat")
        slow_unit = "alice" if first.arm == 0 else None
        status = client.status()
        assert isinstance(status, StatusOut) and status.units.bound == 1 and status.units.repeat_exposures == 1
        for batch_number in range(40):
            batch = client.ask_many(30, units=[f"b{batch_number}-{i}" for i in range(30)])
            assert [t.unit for t in batch.trials] == [f"b{batch_number}-{i}" for i in range(30)]
            answers = client.tell_many([
                (t.trial_id, float(t.arm == 2), {"latency_ms": 900.0 if t.arm == 0 else 100.0}) for t in batch.trials
            ])
            assert {r.status for r in answers.results} == {"accepted"}
            slow_unit = next((t.unit for t in batch.trials if t.arm == 0), slow_unit)
            status = client.status()
            if status.bandits[0].retired:
                break
        bandit = status.bandits[0]
        assert bandit.retired == [0], "the guardrail never retired the slow arm"
        evidence = bandit.guardrail_retirements[0]
        assert (evidence["arm"], evidence["metric"], evidence["max"]) == (0, "latency_ms", 300)
        assert evidence["interval"][0] > 300
        assert status.checks.attrition.flagged is False and status.checks.attrition.threshold == 0.001
        assert sum(status.checks.attrition.reported) == status.completed
        assert len(status.anytime_intervals) == 3
        assert all(low <= mean <= high for (low, high), mean in zip(status.anytime_intervals, status.means, strict=True))
        assert status.anytime is not None and status.anytime.simultaneous
        assert status.confidence.label.startswith("fixed-sample")
        assert status.guardrails[0]["metric"] == "latency_ms"
        rebound = client.ask(unit=slow_unit)  # its arm was retired: a new trial on an active arm
        assert rebound.exposure == "rebound" and rebound.arm != 0
