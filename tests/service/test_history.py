"""``GET /history`` in process: the experiment since its start, downsampled, agreeing with
``/status`` and with what ``/events`` sent, behind the token like ``/status``."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from armlab.config import validate_config
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan
from armlab.service.app import create_app
from armlab.service.events import EventHub
from armlab.service.history import LATEST_EVENTS, experiment_history, sample_points

TOKEN = "h" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def session(live, registry, tmp_path):
    opened = LiveSession.open(journal=tmp_path / "history.sqlite", registry=registry,
                              config=live.config(problem={"objective": "best-arm", "budget": 120},
                                                 feedback={"in_flight": 3}))
    yield opened
    opened.close()


async def run_trials(client: httpx.AsyncClient, service, live, n: int) -> None:
    """``n`` trials: most answered, every 7th abandoned, every 11th failed by a timeout."""
    for i in range(n):
        trial = (await client.post("/ask", json={})).json()
        if i % 7 == 3:
            assert (await client.post("/abandon", json={"trial_id": trial["trial_id"]})).status_code == 200
        elif i % 11 == 5:
            await service.change(service.experiment.fail, trial["trial_id"], "timed out: no report within 1 s")
        else:
            reward = live.conversion(trial["arm"], trial["pull"])
            assert (await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})).status_code == 200


def test_sample_points_are_bounded_even_and_keep_both_ends():
    assert sample_points(0, 500) == [0]
    assert sample_points(4, 500) == [0, 1, 2, 3, 4]
    points = sample_points(10_000, 7)
    assert points[0] == 0 and points[-1] == 10_000 and len(points) == 7
    assert max(b - a for a, b in zip(points, points[1:])) - min(b - a for a, b in zip(points, points[1:])) <= 1
    assert len(sample_points(999, 500)) <= 500


async def test_history_matches_status_and_the_event_stream(session, live):
    hub = EventHub()
    app = create_app(session, token=TOKEN, hub=hub)
    service = app.state.service
    with hub.subscribe() as subscription:  # a reader from the start: every event the stream sent
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://armlab.test",
                                     headers=AUTH) as client, app.router.lifespan_context(app):
            await run_trials(client, service, live, 60)
            status = (await client.get("/status")).json()
            history = (await client.get("/history")).json()
            short = (await client.get("/history", params={"points": 5})).json()
        frames = []
        while True:
            try:
                frames.append(subscription.receive.receive_nowait())
            except Exception:  # noqa: BLE001 - the buffer is empty
                break
    sent = [json.loads(frame.decode().split("\ndata: ", 1)[1]) for frame in frames]

    assert history["trials"] == status["dispatched"] == 60 and history["budget"] == 120
    assert history["state"] == status["state"] and history["name"] == "live-test"
    outcomes = history["outcomes"]
    assert {k: outcomes[k] for k in ("completed", "failed", "abandoned", "late")} == \
        {k: status[k] for k in ("completed", "failed", "abandoned", "late")}
    assert outcomes["overdue"] == status["failed"] == sum(1 for i in range(60) if i % 7 != 3 and i % 11 == 5)
    # the latest events are those the stream sent, as it sent them (less the stream's id)
    assert len(history["events"]) == LATEST_EVENTS
    assert history["events"] == [{k: v for k, v in event.items() if k != "id"} for event in sent[-LATEST_EVENTS:]]
    assert history["stream_id"] == sent[-1]["id"] == hub.sequence

    # every reward observed is a point (fewer than 500), the last one is /status now
    series = history["series"]
    assert history["bandits"][0]["series"] == series and history["bandits"][0]["arm_names"] == ["A", "B", "C"]
    assert [p["observed"] for p in series] == list(range(status["completed"] + 1))
    last, bandit = series[-1], status["bandits"][0]
    assert last["counts"] == bandit["counts"] and last["means"] == bandit["means"]
    assert last["intervals"] == bandit["intervals"] and last["recommendation"] == bandit["recommendation"]
    assert last["trials"] <= 60 and series[0] == {**series[0], "observed": 0, "trials": 0, "counts": [0, 0, 0]}
    observed = [e for e in sent if e["event"] == "trial_observed"]
    for point in series[1:]:  # the sums are the rewards observed so far, in order
        upto = observed[:point["observed"]]
        assert point["sums"] == pytest.approx([sum(e["reward"] for e in upto if e["arm"] == a) for a in range(3)])
        assert sum(point["counts"]) == point["observed"]

    # downsampled: at most 5 points, the ends kept, the same values as the full series there
    assert len(short["series"]) <= 5
    assert short["series"][0] == series[0] and short["series"][-1] == series[-1]
    assert all(point in series for point in short["series"])


async def test_history_needs_the_token_and_a_sensible_number_of_points(session):
    app = create_app(session, token=TOKEN)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://armlab.test") as client:
        missing = await client.get("/history")
        wrong = await client.get("/history", headers={"Authorization": "Bearer " + "x" * 32})
        one = await client.get("/history", params={"points": 1}, headers=AUTH)
        word = await client.get("/history", params={"points": "many"}, headers=AUTH)
        fresh = await client.get("/history", headers=AUTH)
        schema = (await client.get("/openapi.json")).json()
    assert missing.status_code == wrong.status_code == 401
    assert one.status_code == word.status_code == 422 and "points" in one.json()["detail"]
    body = fresh.json()  # before any trial: one point, no events
    assert fresh.status_code == 200 and body["trials"] == 0 and body["events"] == [] and body["stream_id"] == 0
    assert [p["observed"] for p in body["series"]] == [0]
    assert schema["paths"]["/history"]["get"]["security"] == [{"HTTPBearer": []}]


def test_history_of_several_bandits_has_a_series_per_bandit(live, registry, tmp_path):
    config = validate_config({
        "name": "two", "seed": 5, "problem": {"objective": "best-arm", "budget": 40},
        "bandits": [{"label": "one", "source": {"plugin": "external", "arms": ["a", "b"], "reward_min": 0,
                                                "reward_max": 1}},
                    {"label": "two", "source": {"plugin": "external", "arms": ["x", "y", "z"], "reward_min": 0,
                                                "reward_max": 1}}],
        "allocator": {"plugin": "uniform-bandit"}, "policies": [{"plugin": "ucb1"}],
    })
    session = LiveSession.open(journal=tmp_path / "two.sqlite", config=config, registry=registry)
    try:
        for _ in range(12):
            trial = session.experiment.ask()
            session.experiment.tell(trial.id, live.conversion(trial.arm, trial.pull))
        history = experiment_history(session, list(session.journal.events()), points=3)
        status = session.experiment.status()
    finally:
        session.close()
    assert [b["label"] for b in history["bandits"]] == ["one", "two"]
    for b, bandit in enumerate(history["bandits"]):
        assert len(bandit["series"]) <= 3 and bandit["series"][-1]["counts"] == status["bandits"][b]["counts"]
        assert bandit["observed"] == sum(status["bandits"][b]["counts"])
    assert history["series"] == history["bandits"][0]["series"]


async def test_history_of_an_experiment_without_journal_says_so(live, registry):
    session = LiveSession.from_plan(build_plan(live.config(), registry))
    app = create_app(session, token=TOKEN)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://armlab.test",
                                 headers=AUTH) as client:
        answer = await client.get("/history")
    assert answer.status_code == 409 and "no journal" in answer.json()["detail"]


async def test_history_per_experiment_on_armlab_server(tmp_path):
    """``/experiments/NAME/history`` of ``armlab server``: the client token of that experiment
    reads it, another experiment's token gets 403, no token 401."""
    from armlab.plugins.registry import default_registry
    from armlab.service.server_app import create_server_app
    from armlab.service.server_experiments import Experiments
    from armlab.storage import open_storage

    admin = "admin-" + "y" * 26
    config = (Path(__file__).resolve().parents[2] / "examples" / "live" / "ab_service.toml").read_text()
    storage = open_storage(f"sqlite:///{tmp_path / 'armlab.sqlite'}")
    app = create_server_app(Experiments(storage, default_registry()), admin_token=admin)
    try:
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://armlab.test") as client:
            tokens = {}
            for name in ("ab", "other"):
                created = await client.post("/experiments", json={"name": name, "config": config},
                                            headers={"Authorization": f"Bearer {admin}"})
                tokens[name] = created.json()["token"]
            own = {"Authorization": f"Bearer {tokens['ab']}"}
            for reward in (1.0, 0.0, 1.0):
                trial = (await client.post("/experiments/ab/ask", json={}, headers=own)).json()
                await client.post("/experiments/ab/tell", json={"trial_id": trial["trial_id"], "reward": reward},
                                  headers=own)
            history = await client.get("/experiments/ab/history", params={"points": 3}, headers=own)
            status = (await client.get("/experiments/ab/status", headers=own)).json()
            across = await client.get("/experiments/other/history", headers=own)
            missing = await client.get("/experiments/ab/history")
    finally:
        storage.close()
    assert history.status_code == 200, history.text
    body = history.json()
    assert body["name"] == status["name"] and body["trials"] == status["dispatched"] == 3
    assert len(body["series"]) == 3 and body["series"][-1]["counts"] == status["counts"]
    assert across.status_code == 403 and missing.status_code == 401
