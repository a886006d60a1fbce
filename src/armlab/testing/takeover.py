"""Owner failover drill: two ``armlab server`` processes on one PostgreSQL storage, clients on
both, the owner of an experiment killed with SIGKILL again and again.

Used by ``tests/service/test_postgres_takeover.py`` (which checks what it records) and
``benchmarks/takeover.py`` (which reports the takeover times).  :func:`drill` runs the whole
thing and returns a :class:`Drill`: every tell a client saw acknowledged, and for each kill
the seconds from the kill to the first ask answered by the other process.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx

from armlab.client import AsyncClient
from armlab.testing.postgres import free_port

__all__ = ["AB_CONFIG", "ADMIN", "TAKEOVER_BOUND", "Drill", "ServerProcess", "drill", "owner_of"]

ADMIN = "takeover-admin-" + "t" * 24
_SERVER = [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "server"]
AB_CONFIG = Path(__file__).resolve().parents[3] / "examples" / "live" / "ab_service.toml"
TAKEOVER_BOUND = 15.0  # seconds: the most a takeover may take (docs/postgres.md)


class ServerProcess:
    """One ``armlab server`` on ``storage`` and a fixed loopback port (restarted on the same one)."""

    def __init__(self, storage: str, folder: Path, port: int) -> None:
        self.storage, self.folder, self.port = storage, folder, port
        self.url = f"http://127.0.0.1:{port}"
        self.starts = 0
        self.process: subprocess.Popen[str] | None = None

    async def start(self) -> ServerProcess:
        self.starts += 1
        log = self.folder / f"server-{self.port}-{self.starts}.log"
        self.process = subprocess.Popen(
            [*_SERVER, "--storage", self.storage, "--port", str(self.port), "--log", str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "ARMLAB_ADMIN_TOKEN": ADMIN},
        )
        with anyio.fail_after(60):
            banner = await anyio.to_thread.run_sync(self.process.stdout.readline, abandon_on_cancel=True)
        if "server on" not in banner:
            raise RuntimeError(f"armlab server did not start: {banner}{self.process.stderr.read()}")
        return self

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=30)

    def stop(self) -> int:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)
        return self.process.returncode


async def owner_of(server: ServerProcess, name: str) -> str | None:
    """The advertised URL of the process that owns ``name``, asked of ``server`` (opening it
    there if nobody owns it): a 307 names the owner, a 200 its ``owner`` field."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30) as admin:
        with anyio.fail_after(TAKEOVER_BOUND):
            while True:
                answer = await admin.get(f"{server.url}/experiments/{name}")
                if answer.status_code == 307:
                    return answer.headers["location"].removesuffix(f"/experiments/{name}")
                if answer.status_code == 200:
                    return answer.json()["owner"]
                await anyio.sleep(0.05)


@dataclass
class Drill:
    """What one drill saw."""

    acks: list[tuple[int, float]] = field(default_factory=list)  # (trial, reward) of each acknowledged tell
    takeovers: list[float] = field(default_factory=list)  # seconds from each kill to an answered ask elsewhere
    status: dict = field(default_factory=dict)  # /status of the experiment at the end


async def _client(url: str, token: str, number: int, seen: Drill, done: anyio.Event) -> None:
    async with AsyncClient(url, token, experiment="ab", retries=None, deadline=60, backoff=0.05,
                           max_backoff=0.5) as client:
        while not done.is_set():
            trial = await client.ask(wait=5)
            reward = float((trial.arm + number) % 2)
            await client.tell(trial.trial_id, reward)
            seen.acks.append((trial.trial_id, reward))


async def _first_answered_ask(server: ServerProcess, token: str, seen: Drill) -> None:
    """Ask ``server`` itself (no redirect followed) until it answers; tell that trial."""
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"{server.url}/experiments/ab", headers=auth, timeout=10) as probe:
        while True:
            try:
                asked = await probe.post("/ask", json={"wait": 5})
            except httpx.TransportError:
                asked = None
            if asked is not None and asked.status_code == 200:
                break
            await anyio.sleep(0.01)
        trial = asked.json()
        told = await probe.post("/tell", json={"trial_id": trial["trial_id"], "reward": 1.0})
        if told.status_code == 200:
            seen.acks.append((trial["trial_id"], 1.0))


async def drill(storage: str, folder: Path, kills: int, clients: int = 8, seed: int = 0) -> Drill:
    """Run the drill on ``storage`` (armlab's tables created): ``kills`` SIGKILLs of the owner."""
    rng = random.Random(seed)
    servers = [ServerProcess(storage, folder, free_port()), ServerProcess(storage, folder, free_port())]
    seen, done = Drill(), anyio.Event()
    for server in servers:
        await server.start()
    try:
        async with httpx.AsyncClient(base_url=servers[0].url, headers={"Authorization": f"Bearer {ADMIN}"},
                                     timeout=30) as admin:
            config = AB_CONFIG.read_text().replace("budget = 400", "budget = 1000000")
            created = await admin.post("/experiments", json={"name": "ab", "config": config})
            created.raise_for_status()
            token = created.json()["token"]
        async with anyio.create_task_group() as tg:
            for number in range(clients):
                tg.start_soon(_client, servers[number % 2].url, token, number, seen, done)
            for _ in range(kills):
                await anyio.sleep(rng.uniform(0.3, 1.5))
                owner = await owner_of(servers[0], "ab")
                victim = next(s for s in servers if s.url == owner)
                other = next(s for s in servers if s is not victim)
                victim.kill()
                killed_at = time.monotonic()
                with anyio.fail_after(60):
                    await _first_answered_ask(other, token, seen)
                seen.takeovers.append(time.monotonic() - killed_at)
                await victim.start()
            done.set()
        owner = await owner_of(servers[0], "ab")
        async with AsyncClient(owner, token, experiment="ab") as client:
            seen.status = (await client.status()).model_dump()
    finally:
        for server in servers:
            if server.process is not None and server.process.poll() is None:
                server.stop()
    return seen
