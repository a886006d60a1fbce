"""Real processes on loopback: the service killed with SIGKILL under load, restarted, and checked.

Every test here starts `armlab serve` as a child process and stops it by itself; the
per-test timeout keeps a stuck child from hanging CI.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from armlab.config import load_config
from armlab.orchestrator.journal.store import Journal
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan

pytestmark = pytest.mark.system

REPO = Path(__file__).resolve().parents[2]
CLIENT = REPO / "examples/live/client.py"
TOKEN = "p" * 32  # the token of ServedExperiment (conftest)

CONFIG = """
name = "crash-test"
seed = 3
[problem]
objective = "best-arm"
budget = {budget}
[source]
plugin = "external"
arms = ["A", "B", "C"]
reward_min = 0
reward_max = 1
[feedback]
in_flight = 6
[[policies]]
plugin = "thompson"
"""

#: Three live bandits sharing the budget under greedy confidence pursuit.
MULTI_CONFIG = """
name = "crash-test-multi"
seed = 4
[problem]
objective = "best-arm"
budget = {budget}
[[bandits]]
label = "checkout"
source = {{plugin = "external", arms = ["A", "B"], reward_min = 0, reward_max = 1}}
[[bandits]]
label = "banner"
source = {{plugin = "external", arms = ["C", "A", "B"], reward_min = 0, reward_max = 1}}
[[bandits]]
label = "email"
source = {{plugin = "external", arms = ["B", "C"], reward_min = 0, reward_max = 1}}
[allocator]
plugin = "gcp-bayes"
warmup_per_arm = 3
[feedback]
in_flight = 6
[[policies]]
plugin = "bayes-topm"
warmup_per_arm = 3
"""


def _load_client():
    spec = importlib.util.spec_from_file_location("armlab_example_client", CLIENT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _status(url: str) -> dict:
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        return (await client.get(url + "/status")).json()


@pytest.mark.timeout(240)
@pytest.mark.parametrize(("template", "policy"), [(CONFIG, "thompson"), (MULTI_CONFIG, "bayes-topm")],
                         ids=["one-bandit", "three-bandits-gcp"])
async def test_kill_9_under_load_loses_no_acknowledged_tell(tmp_path, registry, live, template, policy):
    """Concurrent clients, two SIGKILLs at random points, restarts on the same journal."""
    budget = 120
    config, journal, acks = tmp_path / "crash.toml", tmp_path / "crash.sqlite", tmp_path / "acks.jsonl"
    config.write_text(template.format(budget=budget))
    service = await live.serve(config, journal).started()
    client = subprocess.Popen(
        [sys.executable, str(CLIENT), "--url", service.url, "--clients", "6", "--latency", "0.02",
         "--acks", str(acks), "--give-up", "120"],
        env={**os.environ, "ARMLAB_TOKEN": TOKEN}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    rng = random.Random(7)
    kills = []
    try:
        for _ in range(2):
            seen = (await _status(service.url))["dispatched"]
            with anyio.fail_after(60):
                while (status := await _status(service.url))["dispatched"] < seen + 10:
                    if status["state"] == "finished":
                        break
                    await anyio.sleep(0.01)
            if status["state"] == "finished":
                break
            await anyio.sleep(rng.uniform(0, 0.1))
            service.kill()
            kills.append(status["dispatched"])
            service = await live.serve(config, journal, service.port).started()
        out, err = await anyio.to_thread.run_sync(lambda: client.communicate(timeout=180))
        assert client.returncode == 0, err
        final = await _status(service.url)
    finally:
        if client.poll() is None:
            client.kill()
            client.communicate()
        code, last_line = service.stop()
    assert len(kills) == 2, f"the run ended before both kills: {kills}"
    assert code == 0 and f"{policy}: finished" in last_line

    with Journal.open(journal) as opened:
        events = list(opened.events())
    results = {e.trial: e.reward for e in events if e.kind == "result"}
    assert len(results) == len([e for e in events if e.kind == "result"]) == budget  # none counted twice
    assert not [e for e in events if e.kind in ("failed", "abandoned", "late")]
    acknowledged = [json.loads(line) for line in acks.read_text().splitlines()]
    assert len(acknowledged) >= budget  # retried tells after a restart may be acknowledged twice
    for ack in acknowledged:
        assert ack["status"] in ("accepted", "duplicate") and results[ack["trial_id"]] == ack["reward"]

    # the same seed and answers, without interruption, in the journal's order: the same run
    outcome = _load_client().outcome
    reference = LiveSession.from_plan(build_plan(load_config(config), registry))
    for e in events:
        if e.kind == "dispatch":
            trial = reference.experiment.ask(e.key)
            assert (trial.id, trial.bandit, trial.arm) == (e.trial, e.bandit, e.arm)
        else:
            trial = reference.experiment.record(e.trial).trial
            answer = outcome(reference.arm_names(trial.bandit)[trial.arm], trial.pull)
            assert answer == e.reward
            reference.experiment.tell(e.trial, answer)
    expected = reference.experiment.status()
    for key in ("state", "dispatched", "counts", "means", "recommendation", "recommendations"):
        assert final[key] == expected[key], key
    assert [b["counts"] for b in final["bandits"]] == [b["counts"] for b in expected["bandits"]]
    assert len({e.bandit for e in events}) == len(final["bandits"])  # every bandit got trials


@pytest.mark.timeout(120)
async def test_event_stream_and_clean_stop(tmp_path, live):
    config, journal = tmp_path / "ab.toml", tmp_path / "ab.sqlite"
    config.write_text(CONFIG.format(budget=10))
    service = await live.serve(config, journal).started()
    lines: list[str] = []
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as client:
            async with client.stream("GET", "/events") as stream:
                assert stream.headers["content-type"].startswith("text/event-stream")
                trial = (await client.post("/ask", json={"key": "x"})).json()
                await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1.0})
                with anyio.fail_after(30):
                    async for line in stream.aiter_lines():
                        lines.append(line)
                        if line == "event: trial_observed":
                            break
            unauthorized = await client.get("/status", headers={"Authorization": "Bearer nope"})
    finally:
        code, last_line = service.stop()
    assert "event: trial_dispatched" in lines and lines[0] == ": connected"
    data = [json.loads(line[6:]) for line in lines if line.startswith("data: ")]
    assert {"event": "trial_dispatched", "trial": 0}.items() <= data[0].items()
    assert unauthorized.status_code == 401
    assert code == 0 and "thompson: running; 1 dispatched, 1 completed" in last_line
    logged = [json.loads(line)["event"] for line in Path(str(journal) + ".log").read_text().splitlines()]
    assert logged[0] == "journal_created" and "trial_observed" not in logged  # per-trial lines: debug level


STOPPING_CONFIG = """
name = "stops"
seed = 6
[problem]
objective = "best-arm"
budget = 3000
delta = 0.1
[source]
plugin = "external"
arms = ["A", "B"]
reward_min = 0
reward_max = 1
[[policies]]
plugin = "lucb1"
"""


@pytest.mark.timeout(180)
async def test_a_live_stop_survives_kill_9_and_batches_count_once(tmp_path, live):
    """Batch asks and tells until LUCB1 is confident; SIGKILL; the restarted service still knows."""
    config, journal = tmp_path / "stops.toml", tmp_path / "stops.sqlite"
    config.write_text(STOPPING_CONFIG)
    service = await live.serve(config, journal).started()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    told = 0
    async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as client:
        while True:
            asked = await client.post("/ask/batch", json={"count": 1})
            if asked.status_code == 409:
                break
            reports = [{"trial_id": t["trial_id"], "reward": float(t["arm"] == 0 and t["pull"] % 10 < 9)}
                       for t in asked.json()["trials"]]
            results = (await client.post("/tell/batch", json={"reports": reports})).json()["results"]
            told += sum(r["status"] == "accepted" for r in results)
        before = (await client.get("/status")).json()
    service.kill()
    service = await live.serve(config, journal, service.port).started()
    try:
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as client:
            after = (await client.get("/status")).json()
            refused = await client.post("/ask", json={})
    finally:
        service.stop()
    assert asked.json()["state"] in ("stopped", "finished") and before["stop"]["reason"] == "confident"
    assert 0 < told == before["completed"] < 3000
    assert after["stop"] == before["stop"] and after["completed"] == told and after["recommendation"] == 0
    assert refused.status_code == 409 and refused.json()["state"] == "finished"


@pytest.mark.timeout(180)
async def test_a_retirement_survives_kill_9(tmp_path, live):
    """`armlab retire` on a served experiment; SIGKILL; the restarted service never sends the arm."""
    config, journal = tmp_path / "retire.toml", tmp_path / "retire.sqlite"
    config.write_text(CONFIG.format(budget=60).replace('"thompson"', '"ucb1"'))
    service = await live.serve(config, journal).started()
    headers = {"Authorization": f"Bearer {TOKEN}"}

    async def trials(client, n):
        arms = []
        for _ in range(n):
            trial = (await client.post("/ask", json={})).json()
            arms.append(trial["arm_name"])
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 0.5})
        return arms

    async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as client:
        await trials(client, 6)
    retire = subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "retire", "B", "--url", service.url],
        env={**os.environ, "ARMLAB_TOKEN": TOKEN}, capture_output=True, text=True, timeout=60,
    )
    assert retire.returncode == 0 and "arm 'B' (bandit 0, arm 1): retired" in retire.stdout, retire.stderr
    service.kill()
    service = await live.serve(config, journal, service.port).started()
    try:
        async with httpx.AsyncClient(base_url=service.url, headers=headers, timeout=30) as client:
            later = await trials(client, 20)
            status = (await client.get("/status")).json()
            again = await client.post("/retire", json={"arm": "B"})
            last = await client.post("/retire", json={"arm": 0})
            refused = await client.post("/retire", json={"arm": "C"})
    finally:
        service.stop()
    assert "B" not in later and status["bandits"][0]["retired"] == [1]
    assert again.json()["status"] == "already retired" and last.json()["status"] == "retired"
    assert refused.status_code == 409 and "last active arm" in refused.json()["detail"]
