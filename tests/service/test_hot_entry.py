"""``armlab server``'s entry point (HotEntry): a request it answers before the app's layers gets
the answer those layers give, byte for byte and header for header, and every request those
layers refuse is still refused by them (too large, no or another experiment's token, not
JSON, a foreign Host, an experiment not open), with the same answer."""

from __future__ import annotations

from functools import partial

import httpx
import pytest
from fastapi import FastAPI

from armlab.orchestrator.journal.store import JournalError
from armlab.service.hot_entry import HotEntry
from armlab.service.server_app import create_server_app
from armlab.service.server_experiments import Experiments
from armlab.service.service import Service
from armlab.storage import open_storage

ADMIN = "e" * 32
ADMIN_HEADERS = {"Authorization": f"Bearer {ADMIN}"}
MAX_BODY = 300
CONFIG = {"name": "hot", "seed": 4, "problem": {"objective": "best-arm", "budget": 40},
          "source": {"plugin": "external", "arms": ["A", "B", "C"], "reward_min": 0, "reward_max": 1},
          "feedback": {"in_flight": 3}, "policies": [{"plugin": "ucb1"}]}

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def _chunks(*parts: bytes):
    for part in parts:
        yield part


def _requests(own: str, other: str) -> list[tuple[str, dict]]:
    """(path, httpx keyword arguments) of each request, in order; ``own`` and ``other`` are
    the client tokens of experiments ``e`` and ``f``."""
    me = {"Authorization": f"Bearer {own}"}
    json_me = {**me, "Content-Type": "application/json"}
    return [
        ("/experiments/e/ask", {"json": {}, "headers": me}),
        ("/experiments/e/tell", {"json": {"trial_id": 0, "reward": 1.0}, "headers": me}),
        ("/experiments/e/ask", {"json": {}}),  # no token: 401
        ("/experiments/e/ask", {"json": {}, "headers": {"Authorization": "Bearer wrong"}}),  # 401
        ("/experiments/e/ask", {"json": {}, "headers": {"Authorization": f"Bearer {other}"}}),  # f's token: 403
        ("/experiments/e/ask", {"content": b"{}", "headers": {**me, "Content-Type": "text/plain"}}),  # 415
        ("/experiments/e/ask", {"json": {"key": "k" * MAX_BODY}, "headers": me}),  # declared too large: 413
        ("/experiments/e/ask", {"content": _chunks(b'{"key": "b"', b" " * MAX_BODY, b"}"), "headers": json_me}),  # 413
        ("/experiments/e/ask", {"content": _chunks(b'{"key":', b' "c"}'), "headers": json_me}),  # chunked: 200
        ("/experiments/e/ask", {"json": {"extra": 1}, "headers": me}),  # the model's 422
        ("/experiments/e/ask", {"content": b"{not json", "headers": json_me}),  # 422
        ("/experiments/e/tell", {"json": {"trial_id": 99, "reward": 1.0}, "headers": me}),  # 404
        ("/experiments/e/tell", {"json": {"trial_id": 1, "reward": 7.0}, "headers": me}),  # the model's 422
        ("/experiments/e/ask", {"json": {}, "headers": me}),
        ("/experiments/e/ask", {"json": {}, "headers": me}),
        ("/experiments/e/ask", {"json": {}, "headers": me}),  # in flight full: 409, Retry-After
        ("/experiments/e/tell", {"json": {"trial_id": 1, "reward": 0.25}, "headers": me}),  # unexpected error: 500
        ("/experiments/e/tell", {"json": {"trial_id": 1, "reward": 0.75}, "headers": me}),  # journal failed: 503
        ("/experiments/e/ask/batch", {"json": {"count": 2}, "headers": me}),  # 409
        ("/experiments/e/tell/batch", {"json": {"reports": [{"trial_id": 1, "reward": 0.5}]}, "headers": me}),
        ("/experiments/e/tell", {"json": {"trial_id": 2, "reward": 0.0}, "headers": ADMIN_HEADERS}),
        ("/experiments/e/status", {"headers": me}),  # not a hot route
    ]


async def _answers(tmp_path, monkeypatch, registry, *, hot: bool, admin_token: str | None = ADMIN,
                   host: str = "armlab.test") -> tuple[list[tuple[int, list, bytes]], list[str]]:
    """Status, raw headers and body of every request, and the paths that went past HotEntry to
    the app (``hot=False``: the app alone)."""
    original = Service.answer_tell

    async def failing(self, body):  # two rewards stand for failures of the service
        if body.reward == 0.25:
            raise RuntimeError("boom")
        if body.reward == 0.75:
            raise JournalError("disk full")
        return await original(self, body)

    monkeypatch.setattr(Service, "answer_tell", failing)
    tmp_path.mkdir(exist_ok=True)
    storage = open_storage(f"sqlite:///{tmp_path / ('hot' if hot else 'plain')}.sqlite")
    experiments = Experiments(storage, registry)
    app = create_server_app(experiments, admin_token=admin_token, max_body_size=MAX_BODY)
    passed: list[str] = []
    plain = partial(FastAPI.__call__, app)
    if hot:
        assert isinstance(app.entry, HotEntry)

        async def counted(scope, receive, send):
            if scope["type"] == "http":
                passed.append(scope["path"])
            await plain(scope, receive, send)

        app.entry.app = counted
    else:
        app.entry = plain
    out = []
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=f"http://{host}") as client:
        tokens = [(await client.post("/experiments", json={"name": name, "config": CONFIG},
                                     headers={**ADMIN_HEADERS, "Host": "localhost"})).json()["token"]
                  for name in ("e", "f")]
        await experiments.use("e").__aenter__()  # opened, as after a first request
        passed.clear()
        for path, kwargs in _requests(*tokens):
            method = client.get if "status" in path else client.post
            response = await method(path, **kwargs)
            out.append((response.status_code, response.headers.raw, response.content))
        await experiments.close("e")  # an experiment not open: the app opens it
        response = await client.post("/experiments/e/ask", json={}, headers={"Authorization": f"Bearer {tokens[0]}"})
        out.append((response.status_code, response.headers.raw, response.content))
    storage.close()
    return out, passed


async def test_hot_entry_answers_as_the_apps_layers(tmp_path, monkeypatch, registry):
    hot, passed = await _answers(tmp_path, monkeypatch, registry, hot=True)
    plain, _ = await _answers(tmp_path, monkeypatch, registry, hot=False)
    assert [status for status, _, _ in hot] == [200, 200, 401, 401, 403, 415, 413, 413, 200, 422, 422, 404, 422, 200,
                                                200, 409, 500, 503, 409, 200, 200, 200, 200]
    for i, (mine, theirs) in enumerate(zip(hot, plain)):
        assert mine == theirs, (i, mine, theirs)
    headers = dict(hot[17][1])
    assert headers[b"retry-after"] == b"1" and headers[b"x-content-type-options"] == b"nosniff"
    assert dict(hot[16][1])[b"cache-control"] == b"no-store" and dict(hot[15][1])[b"retry-after"] == b"1"
    # what the app's layers refuse, the models' refusals, other routes and a closed experiment
    # went on to the app; every valid ask and tell, and the service's refusals, did not
    assert passed == (["/experiments/e/ask"] * 8 + ["/experiments/e/tell", "/experiments/e/status", "/experiments/e/ask"]
                      ), passed


async def test_without_a_token_only_loopback_hosts_are_answered(tmp_path, monkeypatch, registry):
    for host in ("localhost:8000", "evil.example"):
        hot, passed = await _answers(tmp_path / host, monkeypatch, registry, hot=True, admin_token=None, host=host)
        plain, _ = await _answers(tmp_path / host, monkeypatch, registry, hot=False, admin_token=None, host=host)
        assert hot == plain
        if host == "evil.example":  # the Host check answers every request, past the entry
            assert {status for status, _, _ in hot} == {421} and len(passed) == len(hot)
        else:  # no token needed: the tokens' requests are answered by the entry too
            assert hot[2][0] == 200
            assert passed == ["/experiments/e/ask"] * 5 + ["/experiments/e/tell", "/experiments/e/status",
                                                           "/experiments/e/ask"], passed


async def test_a_check_that_fails_is_answered_by_the_apps_layers(tmp_path, registry, monkeypatch):
    """An unexpected error of a check the entry runs (here the token's access) is the app's to
    answer, as without the entry: a JSON 500."""
    from armlab.service.server_access import ServerAccess

    storage = open_storage(f"sqlite:///{tmp_path / 'armlab.sqlite'}")
    experiments = Experiments(storage, registry)
    app = create_server_app(experiments, admin_token=ADMIN)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://armlab.test", headers=ADMIN_HEADERS) as client:
        assert (await client.post("/experiments", json={"name": "e", "config": CONFIG})).status_code == 201
        assert (await client.post("/experiments/e/ask", json={})).status_code == 200  # open now

        def broken(self, method, path, token):
            raise RuntimeError("catalog gone")

        monkeypatch.setattr(ServerAccess, "refusal", broken)
        response = await client.post("/experiments/e/ask", json={})
    storage.close()
    assert response.status_code == 500 and "RuntimeError" in response.json()["detail"]
    assert response.headers["x-content-type-options"] == "nosniff"
