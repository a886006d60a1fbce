"""The ask/tell HTTP service in process (ASGI): endpoints, errors, auth, limits, durability."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx
import pytest
import structlog
import uvicorn
from click.testing import CliRunner

from armlab.cli import cli
from armlab.errors import ConfigError
from armlab.events import TrialDispatched, TrialObserved
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app
from armlab.service.auth import is_loopback, resolve_token
from armlab.service.events import EventHub

TOKEN = "t" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@asynccontextmanager
async def served(session: LiveSession, *, lifespan: bool = True, **kw) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app serving ``session`` (with its lifespan: background tasks, group commit)."""
    app = create_app(session, token=TOKEN, **kw)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://armlab.test", headers=AUTH) as client:
        if lifespan:
            async with app.router.lifespan_context(app):
                yield client
        else:
            yield client


@asynccontextmanager
async def over_tcp(app) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``app`` served by uvicorn on a free loopback port, in this event loop."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, ws="none", log_config=None, access_log=False,
                                           timeout_graceful_shutdown=1))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(0.01)
            url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            try:
                async with httpx.AsyncClient(base_url=url, headers=AUTH, timeout=10) as client:
                    yield client
            finally:
                server.should_exit = True


async def sse_frames(lines: AsyncIterator[str], until) -> list[dict[str, str]]:
    """Server-sent event frames read from ``lines`` (field -> value; a comment under "") up to
    and including the first frame for which ``until(frame)`` is true."""
    frames: list[dict[str, str]] = []
    frame: dict[str, str] = {}
    with anyio.fail_after(10):
        async for line in lines:
            if line:
                field, _, value = line.partition(": ")
                frame[field] = value
            elif frame:
                frames.append(frame)
                if until(frame):
                    return frames
                frame = {}
    raise AssertionError(f"the stream ended after {frames}")


@pytest.fixture
def open_session(live, registry, tmp_path):
    sessions = []

    def make(name="j.sqlite", **tables):
        session = LiveSession.open(journal=tmp_path / name, config=live.config(**tables), registry=registry)
        sessions.append(session)
        return session

    yield make
    for session in sessions:
        session.close()


async def test_ask_tell_abandon_status(open_session):
    session = open_session()
    async with served(session) as client:
        first = (await client.post("/ask", json={})).json()
        assert first == {"trial_id": 0, "arm": first["arm"], "arm_name": "ABC"[first["arm"]], "bandit": 0, "bandit_label": "bandit0",
                         "pull": 0, "status": "pending", "unit": None, "exposure": "new"}
        second = (await client.post("/ask", json={})).json()  # no fields at all is fine too
        told = await client.post("/tell", json={"trial_id": 0, "reward": 1})
        assert told.status_code == 200 and told.json() == {"trial_id": 0, "status": "accepted", "message": ""}
        # acknowledged means durable: the event is in the journal file already
        assert [e.kind for e in session.journal.events()] == ["dispatch", "dispatch", "result"]
        duplicate = await client.post("/tell", json={"trial_id": 0, "reward": 1.0})
        assert duplicate.json()["status"] == "duplicate"
        abandoned = await client.post("/abandon", json={"trial_id": second["trial_id"], "reason": "lost sample"})
        assert abandoned.json()["status"] == "accepted"
        late = (await client.post("/tell", json={"trial_id": second["trial_id"], "reward": 0})).json()
        assert late["status"] == "late" and "lost sample" in late["message"]
        status = (await client.get("/status")).json()
        trial = (await client.get("/trials/1")).json()
    assert status["state"] == "running" and status["dispatched"] == 2 and status["pending"] == 0
    assert (status["completed"], status["abandoned"], status["late"]) == (1, 1, 1)
    assert status["arm_names"] == ["A", "B", "C"] and status["policy"] == "thompson"
    assert status["confidence"]["level"] == 0.95 and len(status["confidence"]["intervals"]) == 3
    assert trial["status"] == "abandoned"


@pytest.mark.parametrize(
    ("path", "body", "status", "detail"),
    [
        ("/tell", {"trial_id": 99, "reward": 1}, 404, "no trial with id 99"),
        ("/tell", {"trial_id": 0, "reward": "1"}, 422, "reward: Input should be a valid number"),
        ("/tell", {"trial_id": 0, "reward": 1.5}, 422, "reward: Input should be less than or equal to 1"),
        ("/tell", {"trial_id": 0, "reward": 0.5, "extra": 1}, 422, "extra: Extra inputs are not permitted"),
        ("/tell", {"trial_id": 0}, 422, "reward: Field required"),
        ("/tell", {"trial_id": -1, "reward": 1}, 422, "trial_id: Input should be greater than or equal to 0"),
        ("/tell", [1, 2], 422, "Input should be a valid dictionary"),
        ("/abandon", {"trial_id": 5}, 404, "no trial with id 5"),
        ("/ask", {"wait": 100}, 422, "wait: Input should be less than or equal to 60"),
        ("/ask", {"key": ""}, 422, "key: String should have at least 1 character"),
    ],
)
async def test_malformed_requests_get_4xx_with_a_message(open_session, path, body, status, detail):
    session = open_session()
    async with served(session, lifespan=False) as client:
        await client.post("/ask", json={})
        answer = await client.post(path, json=body)
    assert answer.status_code == status and detail in answer.json()["detail"]
    assert session.experiment.stats.counts.sum() == 0


async def test_nan_malformed_json_and_oversized_bodies(open_session):
    session = open_session()
    async with served(session, lifespan=False, max_body_size=1024) as client:
        await client.post("/ask", json={})
        headers = {"Content-Type": "application/json"}
        nan = await client.post("/tell", content=b'{"trial_id": 0, "reward": NaN}', headers=headers)
        assert nan.status_code == 422 and "finite" in nan.json()["detail"]
        broken = await client.post("/tell", content=b'{"trial_id": 0,', headers=headers)
        assert broken.status_code == 422 and "JSON decode error" in broken.json()["detail"]
        big = await client.post("/tell", content=b'{"trial_id": 0, "reward": 1, "x": "' + b"a" * 2000 + b'"}',
                                headers=headers)
        assert big.status_code == 413
        assert (await client.post("/tell", json={"trial_id": 0, "reward": 0.5})).status_code == 200


@pytest.mark.system
async def test_a_real_server_refuses_oversize_bodies_with_or_without_content_length(open_session):
    session = open_session()

    async def chunked(body: bytes):  # no Content-Length: the client sends it in chunks
        for start in range(0, len(body), 550):
            yield body[start:start + 550]

    oversize = b'{"trial_id": 0, "reward": 1, "x": "' + b"a" * 1060 + b'"}'
    async with over_tcp(create_app(session, token=TOKEN, max_body_size=1024)) as client:
        await client.post("/ask", json={})
        declared = await client.post("/tell", content=oversize, headers={"Content-Type": "application/json"})
        streamed = await client.post("/tell", content=chunked(oversize), headers={"Content-Type": "application/json"})
        small = await client.post("/tell", content=chunked(b'{"trial_id": 0, "reward": 0.5}'),
                                  headers={"Content-Type": "application/json"})
    assert "content-length" not in streamed.request.headers and "content-length" not in small.request.headers
    assert declared.status_code == streamed.status_code == 413
    assert declared.json() == streamed.json() == {
        "detail": "request body larger than 1024 bytes: send a smaller body (the limit is armlab serve --max-body)",
        "state": None,
    }
    assert small.status_code == 200 and small.json()["status"] == "accepted"
    assert session.experiment.stats.counts.sum() == 1


async def test_conflicts_in_flight_and_budget(open_session):
    session = open_session(feedback={"in_flight": 1}, problem={"objective": "best-arm", "budget": 2})
    async with served(session) as client:
        await client.post("/ask", json={})
        full = await client.post("/ask", json={})
        assert full.status_code == 409 and full.json()["state"] == "in_flight_full"
        assert full.headers["retry-after"] == "1"
        await client.post("/tell", json={"trial_id": 0, "reward": 1})
        conflict = await client.post("/tell", json={"trial_id": 0, "reward": 0})
        assert conflict.status_code == 409 and "refusing the different 0.0" in conflict.json()["detail"]
        await client.post("/ask", json={})
        spent = await client.post("/ask", json={})
        assert spent.status_code == 409 and spent.json()["state"] == "budget_spent"
        assert "budget spent: all 2 trials are dispatched" in spent.json()["detail"]


async def test_ask_can_wait_for_a_free_slot(open_session):
    session = open_session(feedback={"in_flight": 1})
    async with served(session) as client:
        first = (await client.post("/ask", json={})).json()
        answers = []

        async def waiting_ask():
            answers.append(await client.post("/ask", json={"wait": 10}))

        async with anyio.create_task_group() as tg:
            tg.start_soon(waiting_ask)
            await anyio.sleep(0.2)
            assert answers == []  # still waiting for the slot
            await client.post("/tell", json={"trial_id": first["trial_id"], "reward": 0.5})
        assert answers[0].status_code == 200 and answers[0].json()["trial_id"] == 1
        timed_out = await client.post("/ask", json={"wait": 0.1})
        assert timed_out.status_code == 409 and timed_out.json()["state"] == "in_flight_full"


async def test_idempotent_ask_survives_a_restart(open_session):
    session = open_session()
    async with served(session) as client:
        trial = (await client.post("/ask", json={"key": "robot-3/plate-17"})).json()
    session.close()
    restarted = open_session()  # same journal: replayed
    async with served(restarted) as client:
        again = (await client.post("/ask", json={"key": "robot-3/plate-17"})).json()
        other = (await client.post("/ask", json={"key": "robot-3/plate-18"})).json()
    assert again == trial and other["trial_id"] == 1


async def test_unreported_external_trials_time_out(open_session):
    session = open_session(feedback={"in_flight": 2, "timeout": 0.2})
    async with served(session) as client:
        trial = (await client.post("/ask", json={})).json()
        await anyio.sleep(0.6)
        status = (await client.get("/status")).json()
        late = (await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1})).json()
    assert status["failed"] == 1 and status["pending"] == 0
    assert late["status"] == "late" and "timed out: no report within 0.2 s" in late["message"]


async def test_a_source_that_runs_its_own_trials_is_driven_by_the_service(open_session, tmp_path, monkeypatch):
    (tmp_path / "svc_answers.py").write_text("def answer(trial):\n    return 0.9 if trial.arm == 2 else 0.1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    session = open_session(source={"plugin": "callback", "function": "svc_answers:answer"},
                           problem={"objective": "best-arm", "budget": 12})
    async with served(session) as client:
        refused = await client.post("/ask", json={})
        assert refused.status_code == 409 and "runs its own trials" in refused.json()["detail"]
        with anyio.fail_after(20):
            while (status := (await client.get("/status")).json())["state"] != "finished":
                await anyio.sleep(0.02)
    assert status["completed"] == 12 and status["recommendation"] == 2
    assert len([e for e in session.journal.events() if e.kind == "result"]) == 12


async def test_a_failed_journal_write_is_not_acknowledged(open_session):
    session = open_session()
    async with served(session, lifespan=False) as client:
        await client.post("/ask", json={})
        session.journal._db.close()  # the disk went away
        answer = await client.post("/tell", json={"trial_id": 0, "reward": 1})
    assert answer.status_code == 503 and "not recorded" in answer.json()["detail"]
    assert session.experiment.stats.counts.sum() == 0


async def test_authentication_and_the_published_schema(open_session):
    session = open_session()
    app = create_app(session, token=TOKEN)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://armlab.test") as client:
        missing = await client.get("/status")
        wrong = await client.get("/status", headers={"Authorization": "Bearer " + "x" * 32})
        right = await client.get("/status", headers=AUTH)
        schema = (await client.get("/openapi.json")).json()
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer" and "bearer token" in missing.json()["detail"]
    assert right.status_code == 200
    assert {"/ask", "/tell", "/abandon", "/status", "/events", "/trials/{trial_id}"} <= schema["paths"].keys()
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
    insecure = create_app(session, token=None)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=insecure), base_url="http://localhost") as client:
        assert (await client.get("/status")).status_code == 200


async def test_event_hub_is_a_listener_with_bounded_buffers():
    hub = EventHub(buffer=2)
    hub(TrialDispatched(trial=0, bandit=0, arm=1, pull=0))  # nobody listens yet: not numbered
    with hub.subscribe() as subscription:
        hub(TrialObserved(trial=3, bandit=0, arm=1, reward=0.5))
        frame = await subscription.receive.receive()
        for pull in range(4):
            hub(TrialDispatched(trial=4 + pull, bandit=0, arm=2, pull=pull))
        assert subscription.dropped == 2  # a slow reader loses events, the experiment never waits
    head, _, data = frame.decode().partition("data: ")
    assert head == "event: trial_observed\nid: 1\n" and data.endswith("\n\n")
    assert json.loads(data) == {"id": 1, "event": "trial_observed", "trial": 3, "bandit": 0, "arm": 1, "reward": 0.5}


@pytest.mark.system
async def test_events_streams_the_experiment_events_whatever_the_logging(open_session):
    structlog.reset_defaults()  # nothing configured: the stream must not care
    session = open_session()
    async with over_tcp(create_app(session, token=TOKEN)) as client:
        async with client.stream("GET", "/events") as stream:
            assert stream.headers["content-type"].startswith("text/event-stream")
            lines = stream.aiter_lines()
            assert await anext(lines) == ": connected"
            trial = (await client.post("/ask", json={})).json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1})
            frames = await sse_frames(lines, until=lambda frame: frame.get("event") == "trial_observed")
    data = [json.loads(frame["data"]) for frame in frames]
    assert [frame["event"] for frame in frames] == [item["event"] for item in data]
    assert [int(frame["id"]) for frame in frames] == [item["id"] for item in data] == list(range(1, len(data) + 1))
    arm = trial["arm"]
    assert data[0] == {"id": 1, "event": "trial_dispatched", "trial": 0, "bandit": 0, "arm": arm, "pull": 0}
    assert data[-1] == {"id": len(data), "event": "trial_observed", "trial": 0, "bandit": 0, "arm": arm, "reward": 1.0}


@pytest.mark.system
async def test_a_slow_reader_is_told_how_many_events_it_lost(open_session):
    session = open_session()
    emitted = []
    session.experiment.add_listener(emitted.append)
    async with over_tcp(create_app(session, token=TOKEN, hub=EventHub(buffer=2))) as client:
        async with client.stream("GET", "/events") as stream:
            lines = stream.aiter_lines()
            assert await anext(lines) == ": connected"
            for _ in range(4):  # without yielding to the event loop: the stream cannot drain meanwhile
                trial = session.experiment.ask()
                session.experiment.tell(trial.id, 1.0)
            burst = len(emitted)
            after = (await client.post("/ask", json={})).json()  # an event after the loss
            frames = await sse_frames(lines, until=lambda frame: frame.get("event") == "trial_dispatched"
                                      and json.loads(frame["data"])["trial"] == after["trial_id"])
    notices = [frame[""] for frame in frames if "" in frame]
    delivered = [json.loads(frame["data"]) for frame in frames if "data" in frame]
    lost = burst - len([item for item in delivered if item["id"] <= burst])
    assert lost > 0 and notices == [f"{lost} events dropped (reader too slow)"]


def test_token_rules(tmp_path, monkeypatch):
    monkeypatch.delenv("ARMLAB_TOKEN", raising=False)
    with pytest.raises(ConfigError, match="needs a bearer token: set ARMLAB_TOKEN or pass --token-file"):
        resolve_token("127.0.0.1", None, insecure=False)
    assert resolve_token("127.0.0.1", None, insecure=True) is None
    with pytest.raises(ConfigError, match="only allowed on loopback addresses, not '0.0.0.0'"):
        resolve_token("0.0.0.0", None, insecure=True)
    monkeypatch.setenv("ARMLAB_TOKEN", "short")
    with pytest.raises(ConfigError, match="too short"):
        resolve_token("127.0.0.1", None, insecure=False)
    (tmp_path / "token").write_text(TOKEN + "\nignored\n")
    (tmp_path / "token").chmod(0o600)
    assert resolve_token("10.1.2.3", tmp_path / "token", insecure=False) == TOKEN
    with pytest.raises(ConfigError, match="cannot read the token file"):
        resolve_token("127.0.0.1", tmp_path / "missing", insecure=False)
    assert is_loopback("localhost") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def test_serve_refuses_to_start_without_a_token(tmp_path, monkeypatch, live):
    monkeypatch.delenv("ARMLAB_TOKEN", raising=False)
    config = tmp_path / "ab.toml"
    config.write_text('[problem]\nobjective = "best-arm"\nbudget = 5\n[source]\nplugin = "external"\narms = 2\n'
                      '[[policies]]\nplugin = "ucb1"\n')
    runner = CliRunner()
    refused = runner.invoke(cli, ["--no-plugins", "serve", str(config), "--journal", str(tmp_path / "j.sqlite")])
    assert refused.exit_code == 2 and "needs a bearer token" in refused.output
    public = runner.invoke(cli, ["--no-plugins", "serve", str(config), "--journal", str(tmp_path / "j.sqlite"),
                                 "--insecure", "--host", "0.0.0.0"])
    assert public.exit_code == 2 and "only allowed on loopback" in public.output
    assert not (tmp_path / "j.sqlite").exists()  # nothing was created


async def test_batch_ask_dispatches_what_it_can_in_one_transaction(open_session):
    session = open_session(feedback={"in_flight": 3})
    app = create_app(session, token=TOKEN)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), \
            httpx.AsyncClient(transport=transport, base_url="http://armlab.test", headers=AUTH) as client:
        writer = app.state.service.writer
        answer = (await client.post("/ask/batch", json={"count": 5, "keys": ["a", "b", "c", "d", "e"]})).json()
        assert [t["trial_id"] for t in answer["trials"]] == [0, 1, 2]  # three in-flight slots
        assert answer["state"] == "in_flight_full" and (writer.written, writer.batches) == (3, 1)
        again = (await client.post("/ask/batch", json={"count": 3, "keys": ["a", "b", "c"]})).json()
        assert again["trials"] == answer["trials"]  # the same keys: the same trials, nothing new
        full = await client.post("/ask/batch", json={"count": 1})
        assert full.status_code == 409 and full.json()["state"] == "in_flight_full"
    assert len(list(session.journal.events())) == 3


async def test_batch_tell_answers_each_report(open_session):
    session = open_session(feedback={"in_flight": 3})
    async with served(session) as client:
        trials = (await client.post("/ask/batch", json={"count": 3})).json()["trials"]
        first, second, third = (t["trial_id"] for t in trials)
        reports = [
            {"trial_id": first, "reward": 1.0},
            {"trial_id": first, "reward": 1.0},   # the same again: duplicate
            {"trial_id": first, "reward": 0.0},   # a different one: conflict
            {"trial_id": 99, "reward": 1.0},      # no such trial
            {"trial_id": second, "reward": "high"},  # not a number
            {"trial_id": third, "reward": 7.0},   # outside [0, 1]
            {"trial_id": second, "reward": 0.25},
        ]
        results = (await client.post("/tell/batch", json={"reports": reports})).json()["results"]
        status = (await client.get("/status")).json()
    assert [r["status"] for r in results] == ["accepted", "duplicate", "conflict", "unknown", "rejected",
                                              "rejected", "accepted"]
    assert "different" in results[2]["message"] and "outside" in results[5]["message"]
    assert status["completed"] == 2 and status["pending"] == 1
    events = [(e.kind, e.trial) for e in session.journal.events()]
    assert events[-2:] == [("result", first), ("result", second)]
