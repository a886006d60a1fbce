"""`armlab server` as a real process on loopback: three experiments created over HTTP, clients
with their own tokens, refused across experiments, SIGKILL under load, restart, and every
acknowledged tell of every experiment found in its journal."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest

from armlab.orchestrator.journal.store import Journal
from armlab.storage import open_storage

pytestmark = [pytest.mark.system, pytest.mark.anyio]

ADMIN = "server-admin-" + "z" * 24
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"
SERVER = [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "server"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


class RunningServer:
    def __init__(self, storage: str, log: Path, port: int = 0) -> None:
        self.process = subprocess.Popen(
            [*SERVER, "--storage", storage, "--port", str(port), "--log", str(log)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "ARMLAB_ADMIN_TOKEN": ADMIN},
        )

    async def started(self) -> RunningServer:
        with anyio.fail_after(60):
            banner = await anyio.to_thread.run_sync(self.process.stdout.readline, abandon_on_cancel=True)
        assert "server on" in banner, banner + self.process.stderr.read()
        self.port = int(banner.split("http://")[1].split()[0].rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"
        return self

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.communicate(timeout=30)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)
        return self.process.returncode


async def _client(url: str, name: str, token: str, acks: list[tuple[int, float]]) -> None:
    """Ask and tell until the server goes away; keep every acknowledged tell."""
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"{url}/experiments/{name}", headers=auth, timeout=10) as client:
        try:
            while True:
                answer = await client.post("/ask", json={"wait": 1})
                if answer.status_code == 409:
                    return
                trial = answer.json()
                reward = float(trial["arm"] % 2)
                told = await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
                if told.status_code == 200:
                    acks.append((trial["trial_id"], reward))
        except httpx.TransportError:
            return  # the server was killed


@pytest.mark.timeout(180)
async def test_three_experiments_survive_kill_9_with_every_acknowledged_tell(tmp_path):
    storage = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
    server = await RunningServer(storage, tmp_path / "server.log").started()
    configs = {"ab": "ab_service.toml", "three": "three_ab_tests.toml", "ab2": "ab_service.toml"}
    tokens = {}
    try:
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            for name, file in configs.items():
                created = await admin.post("/experiments", json={"name": name,
                                                                 "config": (EXAMPLES / file).read_text()})
                assert created.status_code == 201, created.text
                tokens[name] = created.json()["token"]
            listed = (await admin.get("/experiments")).json()["experiments"]
            assert [e["name"] for e in listed] == sorted(configs)
        async with httpx.AsyncClient(base_url=server.url) as other:
            across = await other.get("/experiments/three/status", headers={"Authorization": f"Bearer {tokens['ab']}"})
            assert across.status_code == 403
            assert (await other.get("/experiments/ab/status")).status_code == 401
        acks: dict[str, list[tuple[int, float]]] = {name: [] for name in configs}
        async with anyio.create_task_group() as tg:
            for name in configs:
                for _ in range(3):
                    tg.start_soon(_client, server.url, name, tokens[name], acks[name])
            with anyio.fail_after(60):
                while min(len(a) for a in acks.values()) < 15:
                    await anyio.sleep(0.02)
            server.kill()  # under load: requests in flight in every experiment
        server = await RunningServer(storage, tmp_path / "server.log", server.port).started()
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"}) as admin:
            for name in configs:  # the restarted server answers for every experiment
                assert (await admin.get(f"/experiments/{name}/status")).status_code == 200
    finally:
        if server.process.poll() is None:
            assert server.stop() == 0
    opened = open_storage(storage)
    try:
        for name in configs:
            with Journal.open(opened.journal_path(name)) as journal:
                results = {e.trial: e.reward for e in journal.events() if e.kind == "result"}
            assert acks[name], name
            for trial_id, reward in acks[name]:
                assert results[trial_id] == reward, (name, trial_id)
    finally:
        opened.close()


@pytest.mark.timeout(180)
async def test_the_python_clients_and_the_experiments_command_drive_a_real_server(tmp_path):
    """AdminClient creates and stops, Client(url, experiment=NAME) asks and tells with the
    experiment's own token, and `armlab experiments list` shows the result."""
    from armlab.client import AdminClient, Client, ForbiddenError

    storage = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
    server = await RunningServer(storage, tmp_path / "server.log").started()
    try:
        def drive() -> tuple[int, list[str]]:
            with AdminClient(server.url, token=ADMIN) as admin:
                created = admin.create_experiment("checkout", EXAMPLES / "ab_service.toml")
                other = admin.create_experiment("pricing", EXAMPLES / "ab_service.toml")
                with Client(server.url, token=created.token, experiment="checkout") as client:
                    for _ in range(6):
                        trial = client.ask()
                        assert client.tell(trial.trial_id, float(trial.arm == 0)).status == "accepted"
                    trials = client.status().trials
                with Client(server.url, token=other.token, experiment="checkout") as wrong, \
                        pytest.raises(ForbiddenError):
                    wrong.status()
                admin.stop_experiment("checkout")
                return trials, [e.name for e in admin.list_experiments()]

        trials, names = await anyio.to_thread.run_sync(drive)
        assert trials == 6 and names == ["checkout", "pricing"]
        listed = await anyio.run_process(
            [sys.executable, "-c", "from armlab.cli import main; main()", "experiments", "list", server.url],
            env={**os.environ, "ARMLAB_ADMIN_TOKEN": ADMIN}, check=False)
        out = listed.stdout.decode()
        assert listed.returncode == 0, listed.stderr.decode()
        assert "checkout" in out and "stopped" in out and "pricing" in out
    finally:
        if server.process.poll() is None:
            assert server.stop() == 0
