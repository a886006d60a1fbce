"""The service against hostile or careless clients and operators: connections that never
finish their request head, too many connections, DNS rebinding without a token, a token file
others can read, plain HTTP on a public address."""

from __future__ import annotations

import socket

import httpx
import pytest
from structlog.testing import capture_logs

from armlab import run_experiment
from armlab.errors import ConfigError
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app
from armlab.service.auth import resolve_token

#: The guarded experiment (``live.toml(**GUARDED)``): two arms, UCB1, results one at a time.
GUARDED = {"name": "guards", "seed": 2, "problem": {"budget": 50}, "source": {"arms": ["A", "B"]}, "feedback": None,
           "policies": [{"plugin": "ucb1"}]}


def _closed_by_server(sock: socket.socket, within: float) -> bool:
    """True when the server closes ``sock`` within ``within`` seconds (a liveness bound)."""
    sock.settimeout(within)
    try:
        return sock.recv(1024) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_an_unfinished_request_head_is_closed_and_connections_are_capped(tmp_path, live):
    config = tmp_path / "guards.toml"
    config.write_text(live.toml(**GUARDED))
    service = await live.serve(config, tmp_path / "j.sqlite",
                               extra=("--header-timeout", "0.5", "--max-connections", "3")).started()
    sockets = []
    try:
        slow = socket.create_connection(("127.0.0.1", service.port))
        sockets.append(slow)
        slow.sendall(b"GET /status HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
        assert _closed_by_server(slow, within=20)

        idle = [socket.create_connection(("127.0.0.1", service.port)) for _ in range(3)]
        sockets += idle
        extra = socket.create_connection(("127.0.0.1", service.port))
        sockets.append(extra)
        assert _closed_by_server(extra, within=5)  # the fourth while three are open
        for sock in idle:
            sock.close()
        async with httpx.AsyncClient(base_url=service.url, timeout=10,
                                     headers={"Authorization": f"Bearer {'p' * 32}"}) as client:
            assert (await client.get("/status")).status_code == 200  # served again once they left
    finally:
        for sock in sockets:
            sock.close()
        code, _ = service.stop()
    assert code == 0


async def test_without_a_token_only_loopback_host_names_are_answered(tmp_path, registry, live):
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=live.config(), registry=registry)
    app = create_app(session, token=None)
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app):
        for base, expected in [("http://evil.example", 421), ("http://evil.example:8000", 421),
                               ("http://127.0.0.1:8000", 200), ("http://localhost", 200), ("http://[::1]:80", 200)]:
            async with httpx.AsyncClient(transport=transport, base_url=base) as client:
                response = await client.get("/status")
                assert response.status_code == expected, base
        assert "not a loopback name" in response.text or expected == 200
    session.close()
    tokened = create_app(LiveSession.from_plan(session.plan), token="t" * 32)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=tokened), base_url="http://armlab.example",
                                 headers={"Authorization": f"Bearer {'t' * 32}"}) as client:
        assert (await client.get("/status")).status_code == 200  # with a token any name may be used


def test_a_token_file_others_can_read_is_refused(tmp_path):
    path = tmp_path / "token"
    path.write_text("s" * 32 + "\n")
    path.chmod(0o644)
    with pytest.raises(ConfigError, match=r"accessible to other users \(mode 644\).*chmod 600"):
        resolve_token("127.0.0.1", path, insecure=False)
    path.chmod(0o600)
    assert resolve_token("127.0.0.1", path, insecure=False) == "s" * 32


@pytest.mark.timeout(60)
@pytest.mark.system
async def test_plain_http_on_a_public_address_is_warned_about(tmp_path, live):
    config = tmp_path / "guards.toml"
    config.write_text(live.toml(**GUARDED))
    service = await live.serve(config, tmp_path / "j.sqlite", extra=("--host", "0.0.0.0")).started()
    async with httpx.AsyncClient(base_url=service.url, timeout=10,
                                 headers={"Authorization": f"Bearer {'p' * 32}"}) as client:
        assert (await client.get("/status")).status_code == 200  # up, signal handlers installed
    code, _ = service.stop()
    assert code == 0 and "warning: serving plain HTTP on 0.0.0.0" in service.stderr


def test_a_live_run_logs_one_replica(live, tmp_path, monkeypatch, registry):
    (tmp_path / "answers.py").write_text("def one(trial):\n    return 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    config = live.config(source={"plugin": "callback", "function": "answers:one", "arms": 2,
                                 "reward_min": 0, "reward_max": 1})
    with capture_logs() as logs:
        run_experiment(config, registry=registry)
    started = [e for e in logs if e["event"] == "experiment_started"]
    assert started[0]["replicas"] == 1
