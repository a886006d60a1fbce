"""The service against the defects of an adversarial review (issue 29): stalled request
bodies, rewards no float holds, cross-origin posts, control characters in logs, repeated
idempotency keys, the event stream's cost per subscriber, unexpected errors."""

from __future__ import annotations

import io
import json
import socket
import time

import anyio
import httpx
import pytest
import structlog
import uvicorn

from armlab.client import _protocol as protocol
from armlab.client.errors import RewardRejectedError
from armlab.events import TrialDispatched
from armlab.log import configure_logging, log_event
from armlab.orchestrator.live.session import LiveSession
from armlab.service import events as events_module
from armlab.service.app import create_app
from armlab.service.connections import uvicorn_options
from armlab.service.events import EventHub, TooManySubscribers

TOKEN = "h" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SERVED_AUTH = {"Authorization": f"Bearer {'p' * 32}"}  # the token live.serve gives armlab serve


@pytest.fixture
def session(live, registry, tmp_path):
    opened = LiveSession.open(journal=tmp_path / "j.sqlite", registry=registry,
                              config=live.config(feedback={"in_flight": 10}))
    yield opened
    opened.close()


def _client(app, base_url: str = "http://armlab.test", **kw) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url, **kw)


def _stalled_post(port: int, headers: str = "") -> socket.socket:
    """A connection that announces a 100-byte body and never sends it."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"POST /ask HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Type: application/json\r\n"
                 "Content-Length: 100\r\n\r\n".encode())
    return sock


def _read_until_closed(sock: socket.socket, within: float) -> bytes | None:
    """What the server sent before closing ``sock``, or None when it is still open after ``within`` s."""
    sock.settimeout(within)
    received = b""
    try:
        while chunk := sock.recv(4096):
            received += chunk
    except TimeoutError:
        return None
    except ConnectionResetError:
        pass
    return received


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_stalled_request_bodies_cannot_lock_clients_out(tmp_path, live):
    config = tmp_path / "hardening.toml"
    config.write_text(live.toml(name="hardening", seed=3, problem={"budget": 50}, source={"arms": ["A", "B"]},
                                feedback=None, policies=[{"plugin": "ucb1"}]))
    cap, deadline = 5, 1.0
    service = await live.serve(config, tmp_path / "j.sqlite",
                               extra=("--request-timeout", str(deadline), "--max-connections", str(cap))).started()
    sockets: list[socket.socket] = []
    try:
        # without the token: refused from the head, the body never read, the connection closed
        anonymous = _stalled_post(service.port)
        sockets.append(anonymous)
        answer = await anyio.to_thread.run_sync(_read_until_closed, anonymous, 10.0)
        assert answer is not None and answer.startswith(b"HTTP/1.1 401"), answer

        # with the token: more stalled bodies than the cap, each closed at the request deadline
        stalled = [_stalled_post(service.port, f"Authorization: Bearer {'p' * 32}\r\n") for _ in range(cap + 3)]
        sockets += stalled
        started = time.monotonic()
        async with httpx.AsyncClient(base_url=service.url, timeout=5, headers=SERVED_AUTH) as client:
            status = None
            for _ in range(200):  # bounded: about 20 s at most
                try:
                    status = (await client.get("/status")).status_code
                except httpx.TransportError:  # refused while the cap is full
                    status = None
                if status == 200:
                    break
                await anyio.sleep(0.1)
        assert status == 200, "a well-behaved client was locked out by stalled bodies"
        assert time.monotonic() - started < 15  # liveness bound only: served once the deadline passed
        for sock in stalled:  # every stalled request was closed, none answered
            assert await anyio.to_thread.run_sync(_read_until_closed, sock, 10.0) == b""
    finally:
        for sock in sockets:
            sock.close()
        code, _ = service.stop()
    assert code == 0


async def test_a_reward_no_float_holds_is_rejected_item_by_item(session):
    app = create_app(session, token=TOKEN)
    trials = [session.experiment.ask().id for _ in range(3)]
    async with app.router.lifespan_context(app), _client(app, headers=AUTH) as client:
        raw = '{"reports": [{"trial_id": %d, "reward": 1}, {"trial_id": %d, "reward": %s}, ' \
              '{"trial_id": %d, "reward": 0}]}' % (trials[0], trials[1], "1" + "0" * 309, trials[2])
        batch = await client.post("/tell/batch", content=raw, headers={"Content-Type": "application/json"})
        single = await client.post("/tell", content='{"trial_id": %d, "reward": %s}' % (trials[1], "9" * 400),
                                   headers={"Content-Type": "application/json"})
    assert batch.status_code == 200, batch.text
    results = batch.json()["results"]
    assert [r["status"] for r in results] == ["accepted", "rejected", "accepted"]
    assert "too large for a float" in results[1]["message"]
    assert single.status_code == 422 and single.json()["detail"].startswith("reward: ")
    assert session.experiment.counters.completed == 2


def test_the_client_rejects_a_reward_no_float_holds_locally():
    assert [item["trial_id"] for item in protocol.TellBatch([(0, 1.0), (1, 10**309)]).items] == [0]
    batch = protocol.TellBatch([(1, 10**309), (2, -(10**400))])
    assert batch.call() is None  # nothing to send: the results are local
    assert [r.status for r in batch.merge(None).results] == ["rejected", "rejected"]
    with pytest.raises(RewardRejectedError, match="too large for a float"):
        protocol.tell_call(1, 10**309)


async def test_state_changing_requests_must_be_json_and_json_answers_are_not_sniffed_or_stored(session):
    for token, headers, base in [(TOKEN, AUTH, "http://armlab.test"), (None, {}, "http://127.0.0.1")]:
        app = create_app(session, token=token)
        async with _client(app, base_url=base, headers=headers) as client:
            bare = await client.post("/ask")  # what a no-cors fetch from another page can send
            form = await client.post("/ask", content=b"key=x", headers={"Content-Type": "text/plain"})
            ok = await client.post("/ask", json={})
        assert bare.status_code == form.status_code == 415, (bare.text, form.text)
        assert "Content-Type: application/json" in bare.json()["detail"] and "text/plain" in form.json()["detail"]
        assert ok.status_code == 200
        for answer in (bare, ok):
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["cache-control"] == "no-store"
    assert len(session.experiment.trials) == 2  # the two JSON asks only


async def test_a_request_without_the_token_is_refused_before_its_body_is_read(session):
    app = create_app(session, token=TOKEN)
    read = []

    async def receive():
        read.append(True)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    sent = []

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/ask", "raw_path": b"/ask", "query_string": b"",
             "headers": [(b"host", b"armlab.test"), (b"content-type", b"application/json"),
                         (b"content-length", b"2")], "http_version": "1.1", "scheme": "http",
             "server": ("armlab.test", 80), "client": ("127.0.0.1", 1), "root_path": "", "app": app,
             "state": {}}
    await app(scope, receive, send)
    assert sent[0]["status"] == 401 and (b"connection", b"close") in sent[0]["headers"]
    assert not read  # the body was never read


async def test_repeated_idempotency_keys_in_one_batch_are_refused(session):
    app = create_app(session, token=TOKEN)
    async with app.router.lifespan_context(app), _client(app, headers=AUTH) as client:
        answer = await client.post("/ask/batch", json={"count": 3, "keys": ["a", "b", "a"]})
    assert answer.status_code == 422
    assert "'a' is repeated (positions 0 and 2)" in answer.json()["detail"]
    assert session.experiment.trials == []  # one key, one trial: nothing dispatched


def test_control_characters_from_clients_are_escaped_in_console_logs(session):
    stream = io.StringIO()
    configure_logging(stream=stream, json=False)
    try:
        session.experiment.add_listener(log_event)
        trial = session.experiment.ask("key\x1b[31m")
        session.experiment.abandon(trial.id, "\u001b]0;PWNED\u0007\u001b[2J")  # no space: written unquoted
    finally:
        structlog.reset_defaults()
    text = stream.getvalue()
    assert "reason=\\x1b]0;PWNED\\x07\\x1b[2J" in text
    assert not any(ord(c) < 32 and c != "\n" or 0x7F <= ord(c) <= 0x9F for c in text)


async def test_each_event_is_encoded_once_whatever_the_subscribers(monkeypatch):
    calls = []
    encode = events_module.encode_event
    monkeypatch.setattr(events_module, "encode_event", lambda *a: calls.append(a) or encode(*a))
    hub = EventHub(max_subscribers=7)
    subscriptions = [hub.subscribe() for _ in range(7)]
    readers = [s.__enter__() for s in subscriptions]
    hub(TrialDispatched(trial=0, bandit=0, arm=1, pull=0))
    frames = [reader.receive.receive_nowait() for reader in readers]
    assert len(calls) == 1 and all(frame is frames[0] for frame in frames)
    with pytest.raises(TooManySubscribers, match="--max-subscribers"):
        hub.subscribe().__enter__()
    for s in subscriptions:
        s.__exit__(None, None, None)


@pytest.mark.timeout(60)
async def test_events_beyond_the_subscriber_limit_get_503(session):
    app = create_app(session, token=TOKEN, max_subscribers=1)
    async with _over_tcp(app) as url, httpx.AsyncClient(base_url=url, headers=AUTH, timeout=10) as client:
        async with client.stream("GET", "/events") as first:
            assert await anext(first.aiter_lines()) == ": connected"
            refused = await client.get("/events")
        assert refused.status_code == 503 and "--max-subscribers" in refused.json()["detail"]
        for _ in range(100):  # bounded: the slot is free once the server saw the reader leave
            async with client.stream("GET", "/events") as again:
                if again.status_code == 200:
                    assert await anext(again.aiter_lines()) == ": connected"
                    break
            await anyio.sleep(0.05)
        assert again.status_code == 200


@pytest.mark.timeout(60)
async def test_an_unexpected_error_answers_json_and_keeps_the_connection(session):
    app = create_app(session, token=TOKEN)

    async def broken() -> None:
        raise RuntimeError("a bug")

    app.add_api_route("/broken", broken)
    async with _over_tcp(app) as url:
        port = int(url.rsplit(":", 1)[1])
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            answers = []
            for path in ("/broken", "/status"):  # one connection, kept alive across the error
                await stream.send(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
                                  .encode())
                answers.append(await _read_response(stream))
    (status_500, body_500), (status_ok, _) = answers
    assert status_500 == 500 and "RuntimeError" in json.loads(body_500)["detail"]
    assert status_ok == 200


async def _read_response(stream) -> tuple[int, bytes]:
    """One HTTP/1.1 answer with a Content-Length: its status and body."""
    data = b""
    with anyio.fail_after(10):
        while b"\r\n\r\n" not in data:
            data += await stream.receive()
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
        while len(body) < length:
            body += await stream.receive()
    return int(head.split(b" ")[1]), body


class _over_tcp:  # noqa: N801 - used as a context manager
    """``app`` served by uvicorn with armlab's connection limits on a free loopback port, in this loop."""

    def __init__(self, app) -> None:
        self.app = app

    async def __aenter__(self) -> str:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="on",
                                                    timeout_graceful_shutdown=1, **uvicorn_options(5.0, 50)))
        self.group = anyio.create_task_group()
        await self.group.__aenter__()
        self.group.start_soon(self.server.serve, [self.sock])
        with anyio.fail_after(10):
            while not self.server.started:
                await anyio.sleep(0.01)
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    async def __aexit__(self, *exc) -> None:
        self.server.should_exit = True
        await self.group.__aexit__(*exc)
        self.sock.close()
