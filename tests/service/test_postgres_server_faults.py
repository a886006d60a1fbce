"""A real ``armlab server`` on PostgreSQL while the database restarts in immediate mode under
load: changes are refused with 503 and Retry-After meanwhile, service resumes by itself, and
every acknowledged tell is in the journal exactly once, the journal replaying to the same state."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import anyio
import httpx
import pytest

from armlab.storage import open_storage
from tests.service.test_server_processes import ADMIN, RunningServer

pytestmark = [pytest.mark.system, pytest.mark.postgres, pytest.mark.anyio]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"
CLIENTS, ROUNDS = 3, 40  # bounded: each client asks and tells at most ROUNDS times


@pytest.fixture
def anyio_backend():
    return "asyncio"


class Seen:
    """What the clients saw: acknowledged tells, and every 503 with its Retry-After."""

    def __init__(self) -> None:
        self.acks: list[tuple[int, float]] = []
        self.refusals: list[str | None] = []  # the Retry-After header of each 503
        self.restarted = False
        self.acks_after_restart = 0


async def _until_answered(client: httpx.AsyncClient, path: str, body: dict, seen: Seen) -> httpx.Response:
    """POST until the answer is not a 503 (at most 30 s): what a client that honours
    Retry-After does."""
    with anyio.fail_after(30):
        while True:
            answer = await client.post(path, json=body)
            if answer.status_code != 503:
                return answer
            seen.refusals.append(answer.headers.get("retry-after"))
            await anyio.sleep(0.1)


async def _client(url: str, token: str, seen: Seen, number: int) -> None:
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"{url}/experiments/ab", headers=auth, timeout=30) as client:
        for _ in range(ROUNDS):
            asked = await _until_answered(client, "/ask", {"wait": 1}, seen)
            if asked.status_code == 409:
                return  # the budget is spent
            assert asked.status_code == 200, asked.text
            trial = asked.json()
            reward = float((trial["arm"] + number) % 2)
            told = await _until_answered(client, "/tell", {"trial_id": trial["trial_id"], "reward": reward}, seen)
            if told.status_code == 200:
                seen.acks.append((trial["trial_id"], reward))
                seen.acks_after_restart += seen.restarted


@pytest.mark.timeout(240)
async def test_a_postgresql_restart_under_load_loses_and_doubles_nothing(postgres_cluster, postgres_storage, tmp_path):
    server = await RunningServer(postgres_storage, tmp_path / "server.log").started()
    seen = Seen()
    try:
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"},
                                     timeout=30) as admin:
            created = await admin.post("/experiments", json={"name": "ab",
                                                             "config": (EXAMPLES / "ab_service.toml").read_text()})
            assert created.status_code == 201, created.text
            token = created.json()["token"]
            async with anyio.create_task_group() as tg:
                for number in range(CLIENTS):
                    tg.start_soon(_client, server.url, token, seen, number)
                with anyio.fail_after(60):
                    while len(seen.acks) < 15:
                        await anyio.sleep(0.02)
                await anyio.to_thread.run_sync(postgres_cluster.restart_immediately)  # every connection cut
                seen.restarted = True
            status = (await admin.get("/experiments/ab/status")).json()
    finally:
        assert server.stop() == 0
    assert seen.refusals and all(after == "1" for after in seen.refusals), seen.refusals  # 503 + Retry-After
    assert seen.acks_after_restart > 0  # service resumed by itself
    storage = open_storage(postgres_storage)
    try:
        with storage.open_journal("ab") as journal:
            results = [(e.trial, e.reward) for e in journal.events() if e.kind == "result"]
    finally:
        storage.close()
    told = Counter(trial for trial, _ in results)
    assert all(count == 1 for count in told.values())  # none counted twice
    assert set(seen.acks) <= set(results)  # every acknowledged tell, with its reward
    assert len(results) == sum(status["counts"])
    server = await RunningServer(postgres_storage, tmp_path / "replayed.log").started()
    try:
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"},
                                     timeout=30) as admin:
            replayed = (await admin.get("/experiments/ab/status")).json()
    finally:
        assert server.stop() == 0
    assert (replayed["counts"], replayed["means"]) == (status["counts"], status["means"])
