"""The shipped live examples, at a reduced scale."""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import load_config, validate_config
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app
from armlab.service.models import StatusOut

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
    lines = example.recommendation_lines(StatusOut.model_validate(status))  # what the example prints
    assert lines == [f"{b['label']}: recommendation {b['arm_names'][b['recommendation']]} (arm {b['recommendation']})"
                     for b in status["bandits"]]
    results = [e for e in session.journal.events() if e.kind == "result"]
    assert len(results) == 60 and len({e.bandit for e in results}) == bandits
    for event in results:
        trial = session.experiment.record(event.trial).trial
        names = status["bandits"][trial.bandit]["arm_names"]
        assert event.reward == example.outcome(names[trial.arm], trial.pull)
    session.close()


async def test_safeguards_example_retires_the_slow_variant_and_stops_with_the_best(registry, tmp_path):
    """examples/live/safeguards.toml as shipped, through HTTP: users as sticky units, latency as
    a metric; the slow control is retired by the guardrail, the anytime rule stops on express."""
    config = load_config(EXAMPLES / "safeguards.toml")
    session = LiveSession.open(journal=tmp_path / "safe.sqlite", config=config, registry=registry)
    app = create_app(session, token="e" * 32)
    rates, latency = {"control": 0.5, "one-page": 0.2, "express": 0.8}, {"control": 900, "one-page": 150, "express": 120}
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://safe.test",
            headers={"Authorization": "Bearer " + "e" * 32}) as client:
        for user in range(config.problem.budget):  # each user asks twice: the second ask is a repeat
            asked = await client.post("/ask", json={"unit": f"user-{user // 2}"})
            if asked.status_code == 409:
                break
            trial = asked.json()
            if trial["exposure"] == "repeat":
                continue
            converted = (user * 7919 % 1000) / 1000 < rates[trial["arm_name"]]
            told = await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": int(converted),
                                                    "metrics": {"latency_ms": latency[trial["arm_name"]]}})
            assert told.json()["status"] == "accepted"
        status = (await client.get("/status")).json()
    session.close()
    assert status["stop"]["reason"] == "anytime" and status["stop"]["best_arm"] == 2
    bandit = status["bandits"][0]
    assert bandit["retired"] == [0] and bandit["guardrail_retirements"][0]["metric"] == "latency_ms"
    assert status["dispatched"] < 1000 and status["units"]["bound"] == status["dispatched"]  # one trial per user
    assert status["units"]["repeat_exposures"] >= status["units"]["bound"] - 2  # second asks: nothing counted
    assert status["checks"]["attrition"]["flagged"] is False


def _toml_blocks(path: Path) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", path.read_text(), flags=re.S)


def test_safeguards_example_and_the_documented_tables_validate():
    """`armlab validate` accepts the example; every [[guardrails]]/[stopping] block of the README
    and docs/safeguards.md, put in place of the example's, makes a valid live config too."""
    result = CliRunner().invoke(cli, ["--no-plugins", "validate", str(EXAMPLES / "safeguards.toml")])
    assert result.exit_code == 0 and "OK" in result.output, result.output
    example = tomllib.loads((EXAMPLES / "safeguards.toml").read_text())
    blocks = [tomllib.loads(block) for doc in (REPO / "README.md", REPO / "docs/safeguards.md")
              for block in _toml_blocks(doc) if "[[guardrails]]" in block or "[stopping]" in block]
    assert len(blocks) >= 3
    for tables in blocks:
        assert set(tables) <= {"guardrails", "stopping"}, tables
        validate_config({**example, **tables})
