"""The shipped live examples, at a reduced scale."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio
import httpx
import pytest

from armlab import run_experiment
from armlab.config import load_config
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples/live"


@pytest.mark.timeout(120)
@pytest.mark.system
def test_command_example_runs_the_assay_script(registry, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the config's paths are relative to its own directory: any cwd works
    config = load_config(EXAMPLES / "command.toml")
    small = config.model_copy(update={"problem": config.problem.model_copy(update={"budget": 12}),
                                      "checkpoint_every": None})
    summary = run_experiment(small, registry=registry)
    result = summary["policies"]["thompson"]
    assert result["trials"] == 12 and result["completed"] + result["failed"] == 12
    assert sum(result["counts"]) == result["completed"] > 0
    successes = [m * n for m, n in zip(result["means"], result["counts"], strict=True)]
    assert all(abs(s - round(s)) < 1e-9 for s in successes)  # 0/1 outcomes read from the JSON output
    assert result["recommendation"] in range(4)


@pytest.mark.parametrize(("name", "bandits"), [("ab_service.toml", 1), ("three_ab_tests.toml", 3)])
async def test_service_example_with_its_client(registry, tmp_path, name, bandits):
    spec = importlib.util.spec_from_file_location("armlab_example_client", EXAMPLES / "client.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    config = load_config(EXAMPLES / name)
    config = config.model_copy(update={"problem": config.problem.model_copy(update={"budget": 60}),
                                       "checkpoint_every": None})
    session = LiveSession.open(journal=tmp_path / "ab.sqlite", config=config, registry=registry)
    app = create_app(session, token="e" * 32)
    client = example.Client("http://ab.test", "e" * 32, give_up=5, acks=str(tmp_path / "acks.jsonl"))
    await client.http.aclose()
    client.http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://ab.test",
                                    headers={"Authorization": "Bearer " + "e" * 32})
    async with app.router.lifespan_context(app):
        async with anyio.create_task_group() as tg:
            for worker in range(8):
                tg.start_soon(client.worker, worker, 0.005)
        status = (await client.http.get("/status")).json()
    await client.close()
    assert status["state"] == "finished" and client.told == 60
    assert sum(sum(b["counts"]) for b in status["bandits"]) == 60 and len(status["bandits"]) == bandits
    results = [e for e in session.journal.events() if e.kind == "result"]
    assert len(results) == 60 and len({e.bandit for e in results}) == bandits
    for event in results:
        trial = session.experiment.record(event.trial).trial
        names = status["bandits"][trial.bandit]["arm_names"]
        assert event.reward == example.outcome(names[trial.arm], trial.pull)
    session.close()
