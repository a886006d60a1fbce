"""Several ``armlab server`` processes on one PostgreSQL storage: a non-owner redirects (307)
to the owner's advertised URL, ``owner`` names it, and when the owner is killed with SIGKILL
the other process takes the experiment over (replaying its journal) with nothing lost."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from armlab.service.models import TrialOut
from armlab.storage import open_storage
from armlab.testing.postgres import free_port
from armlab.testing.takeover import AB_CONFIG, ADMIN, TAKEOVER_BOUND, ServerProcess, drill, owner_of

pytestmark = [pytest.mark.system, pytest.mark.postgres, pytest.mark.anyio]

KILLS = 10


@pytest.fixture
def anyio_backend():
    return "asyncio"


def _journal_results(url: str) -> list[tuple[int, float]]:
    storage = open_storage(url)
    try:
        assert storage.owners() == {}  # both servers stopped: nobody owns it
        with storage.open_journal("ab") as journal:
            return [(e.trial, e.reward) for e in journal.events() if e.kind == "result"]
    finally:
        storage.close()


@pytest.mark.timeout(300)
async def test_the_owner_killed_ten_times_loses_and_doubles_nothing(postgres_storage, tmp_path):
    seen = await drill(postgres_storage, tmp_path, kills=KILLS)
    results = _journal_results(postgres_storage)
    told = Counter(trial for trial, _ in results)
    assert all(count == 1 for count in told.values())  # none counted twice
    assert set(seen.acks) <= set(results)  # every acknowledged tell, with its reward
    assert len(results) == sum(seen.status["counts"])
    assert len(seen.takeovers) == KILLS and max(seen.takeovers) < TAKEOVER_BOUND, seen.takeovers
    server = await ServerProcess(postgres_storage, tmp_path, free_port()).start()
    try:  # a fresh process replays the journal to the same state
        async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"},
                                     timeout=30) as admin:
            replayed = (await admin.get("/experiments/ab/status")).json()
    finally:
        assert server.stop() == 0
    assert (replayed["counts"], replayed["means"]) == (seen.status["counts"], seen.status["means"])


@asynccontextmanager
async def _two_servers(storage: str, folder: Path) -> AsyncIterator[tuple[ServerProcess, ServerProcess, str, TrialOut]]:
    """Two server processes on ``storage``, experiment ``ab`` created and owned by the first
    (one trial asked there); its client token and that trial.  Both stop cleanly at the end."""
    from armlab.client import AsyncAdminClient, AsyncClient

    first, second = ServerProcess(storage, folder, free_port()), ServerProcess(storage, folder, free_port())
    await first.start()
    await second.start()
    try:
        async with AsyncAdminClient(first.url, ADMIN) as admin:
            token = (await admin.create_experiment("ab", AB_CONFIG.read_text())).token
            assert [e.owner for e in await admin.list_experiments()] == [None]  # created, opened by nobody
        async with AsyncClient(first.url, token, experiment="ab") as client:
            trial = await client.ask()  # the first process opens it: the owner
        yield first, second, token, trial
    finally:
        assert first.stop() == 0
        assert second.stop() == 0


@pytest.mark.timeout(120)
async def test_a_non_owner_redirects_to_the_owner_and_names_it(postgres_storage, tmp_path):
    from armlab.client import AsyncClient

    async with _two_servers(postgres_storage, tmp_path) as (first, second, token, trial):
        auth = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(headers=auth, timeout=30) as raw:
            moved = await raw.post(f"{second.url}/experiments/ab/tell?x=1",
                                   json={"trial_id": trial.trial_id, "reward": 1.0})
            assert moved.status_code == 307
            assert moved.headers["location"] == f"{first.url}/experiments/ab/tell?x=1"
            listed = (await raw.get(f"{second.url}/experiments", headers={"Authorization": f"Bearer {ADMIN}"}))
            assert [e["owner"] for e in listed.json()["experiments"]] == [first.url]
        assert await owner_of(second, "ab") == first.url
        async with AsyncClient(second.url, token, experiment="ab") as client:  # follows the 307, token and body
            told = await client.tell(trial.trial_id, 1.0)
            assert told.trial_id == trial.trial_id
            assert sum((await client.status()).counts) == 1


@pytest.mark.timeout(120)
async def test_a_delete_at_a_non_owner_is_redirected_to_the_owner(postgres_storage, tmp_path):
    from armlab.client import AsyncAdminClient, AsyncClient, UnknownExperimentError

    async with _two_servers(postgres_storage, tmp_path) as (first, second, token, trial):
        async with AsyncAdminClient(second.url, ADMIN) as admin:
            await admin.stop_experiment("ab")  # redirected to the owner
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30) as raw:
            moved = await raw.delete(f"{second.url}/experiments/ab")
            assert moved.status_code == 307 and moved.headers["location"] == f"{first.url}/experiments/ab"
            kept = await raw.get(f"{first.url}/experiments/ab")  # nothing deleted under the owner
            assert kept.status_code == 200 and kept.json()["owner"] == first.url
        async with AsyncClient(second.url, token, experiment="ab") as client:
            assert (await client.tell(trial.trial_id, 1.0)).status == "accepted"  # the owner still writes it
        async with AsyncAdminClient(second.url, ADMIN) as admin:
            await admin.delete_experiment("ab")  # follows the 307: the owner closes and deletes it
            assert await admin.list_experiments() == []
            with pytest.raises(UnknownExperimentError):
                await admin.get_experiment("ab")
        async with AsyncAdminClient(first.url, ADMIN) as admin:
            assert await admin.list_experiments() == []
