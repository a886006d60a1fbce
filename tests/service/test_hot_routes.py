"""POST /ask, /tell and their batches answered by HotRoutes: the same answers as the app's own
routes, byte for byte."""

from __future__ import annotations

from contextlib import closing

import httpx
import pytest
from starlette.routing import Router

from armlab.config import validate_config
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app
from armlab.service.hot_routes import HotRoutes
from armlab.service.server_app import create_server_app
from armlab.service.server_experiments import Experiments
from armlab.storage import open_storage

TOKEN = "h" * 32
AUTH = {"Authorization": f"Bearer {TOKEN}"}

#: (path, body) in order: valid asks and tells, and every kind of refusal of the two routes.
REQUESTS = [
    ("/ask", {}), ("/ask", {"key": "k1"}), ("/ask", {"key": "k1"}), ("/tell", {"trial_id": 0, "reward": 1.0}),
    ("/tell", {"trial_id": 0, "reward": 1.0}), ("/tell", {"trial_id": 0, "reward": 0.0}),
    ("/tell", {"trial_id": 99, "reward": 1.0}), ("/tell", {"trial_id": 1, "reward": 7.0}),
    ("/tell", {"trial_id": 1, "reward": "1"}), ("/tell", {"trial_id": 1}), ("/tell", [1, 2]),
    ("/ask", {"wait": -1}), ("/ask", {"extra": 1}), ("/ask", {}), ("/ask", {}), ("/ask", {}),
    ("/tell", {"trial_id": 1, "reward": -0.0}), ("/ask/batch", {"count": 2}),
    ("/ask/batch", {"count": 2, "keys": ["a", "a"]}), ("/tell/batch", {"reports": []}),
    ("/tell/batch", {"reports": [{"trial_id": 2, "reward": 1.0}, {"trial_id": 99, "reward": 0.5},
                                 {"trial_id": 3, "reward": 5}, {"trial_id": 2, "reward": 0.0}]}),
]
SHOWN_HEADERS = ("content-type", "content-length", "retry-after", "x-content-type-options", "cache-control")


async def answers(journal, config, registry) -> list[tuple[int, dict, bytes]]:
    """Status, headers and body of each request, served from a fresh ``journal``."""
    session = LiveSession.open(journal=journal, config=config, registry=registry)
    app = create_app(session, token=TOKEN)
    out = []
    with closing(session):
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://armlab.test", headers=AUTH) as client:
            for path, body in REQUESTS + [("/ask", b"{not json")]:
                if isinstance(body, bytes):
                    response = await client.post(path, content=body, headers={"Content-Type": "application/json"})
                else:
                    response = await client.post(path, json=body)
                out.append((response.status_code, {k: response.headers.get(k) for k in SHOWN_HEADERS},
                            response.content))
    return out


async def test_hot_routes_answer_as_the_apps_own_routes(live, registry, tmp_path, monkeypatch):
    config = live.config(feedback={"in_flight": 3})
    reached: list[str] = []
    original = HotRoutes.__init__

    def counting(self, app, **kw):  # count what goes on to FastAPI's routes
        async def counted(scope, receive, send):
            if scope["type"] == "http":
                reached.append(scope["path"])
            await app(scope, receive, send)
        original(self, counted, **kw)

    monkeypatch.setattr(HotRoutes, "__init__", counting)
    hot = await answers(tmp_path / "hot.sqlite", config, registry)
    # valid asks, tells and the service's refusals never reach FastAPI; the models' refusals do
    assert reached == ["/tell", "/tell", "/tell", "/tell", "/ask", "/ask", "/ask/batch", "/tell/batch", "/ask"], reached

    async def passing(self, scope, receive, send):  # HotRoutes answering nothing: the app's own routes
        await self.app(scope, receive, send)

    monkeypatch.setattr(HotRoutes, "__call__", passing)
    plain = await answers(tmp_path / "plain.sqlite", config, registry)
    assert [status for status, _, _ in hot] == [200, 200, 200, 200, 200, 409, 404, 422, 422, 422, 422, 422, 422, 200,
                                                200, 409, 200, 200, 422, 422, 200, 422]
    assert hot[15][1]["retry-after"] == "1" and hot[0][1]["x-content-type-options"] == "nosniff"
    for (path, body), mine, theirs in zip(REQUESTS, hot, plain):
        assert mine == theirs, (path, body)


async def test_the_servers_experiment_routes_answer_as_armlab_serve(live, registry, tmp_path, monkeypatch):
    """On ``armlab server`` an experiment's asks and tells skip the server's router and the
    experiment app's own layers, and answer byte for byte as ``armlab serve`` does."""
    config = {"name": "hot", "seed": 4, "problem": {"objective": "best-arm", "budget": 30},
              "source": {"plugin": "external", "arms": ["A", "B", "C"], "reward_min": 0, "reward_max": 1},
              "feedback": {"in_flight": 3}, "policies": [{"plugin": "thompson"}]}
    served = await answers(tmp_path / "serve.sqlite", validate_config(config), registry)
    routed: list[str] = []
    original = Router.__call__

    async def counting(self, scope, receive, send):  # every request the routers of FastAPI see
        if scope["type"] == "http":
            routed.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(Router, "__call__", counting)
    storage = open_storage(f"sqlite:///{tmp_path / 'armlab.sqlite'}")
    app = create_server_app(Experiments(storage, registry), admin_token=TOKEN)
    out = []
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://armlab.test", headers=AUTH) as client:
        assert (await client.post("/experiments", json={"name": "e", "config": config})).status_code == 201
        routed.clear()
        for path, body in REQUESTS:
            response = await client.post(f"/experiments/e{path}", json=body)
            out.append((response.status_code, {k: response.headers.get(k) for k in SHOWN_HEADERS},
                        response.content))
    storage.close()
    assert out == served[:len(REQUESTS)]
    # only the models' refusals (answered by the app's own routes) went through a router: the
    # experiment app's, reached through the server's middleware, never the server's router
    assert routed == (["/experiments/e/tell"] * 4 + ["/experiments/e/ask"] * 2
                      + ["/experiments/e/ask/batch", "/experiments/e/tell/batch"]), routed
