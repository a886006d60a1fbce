"""``armlab storage copy``: experiments moved between SQLite and PostgreSQL storages (and a
journal file of ``armlab serve`` imported), verified by replay, tokens and flags kept."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.plugins.registry import default_registry
from armlab.service.server_app import create_server_app
from armlab.service.server_experiments import Experiments
from armlab.storage import open_storage

pytestmark = [pytest.mark.postgres, pytest.mark.system]

ADMIN = "copy-admin-" + "c" * 24
AB = (Path(__file__).resolve().parents[2] / "examples" / "live" / "ab_service.toml").read_text()


def invoke(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", *args])


def fill(url: str) -> dict[str, dict]:
    """Two experiments on the storage ``url`` with a few tells each, one of them stopped;
    their statuses."""

    async def run() -> dict[str, dict]:
        storage = open_storage(url)
        app = create_server_app(Experiments(storage, default_registry()), admin_token=ADMIN)
        statuses = {}
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://armlab.test",
                headers={"Authorization": f"Bearer {ADMIN}"}) as client:
            for name, tells in (("ab", 4), ("other", 2)):
                assert (await client.post("/experiments", json={"name": name, "config": AB})).status_code == 201
                for _ in range(tells):
                    trial = (await client.post(f"/experiments/{name}/ask", json={})).json()
                    await client.post(f"/experiments/{name}/tell", json={"trial_id": trial["trial_id"], "reward": 0.5})
                statuses[name] = (await client.get(f"/experiments/{name}/status")).json()
            await client.post("/experiments/other/stop", json={})
        storage.close()
        return statuses

    return anyio.run(run)


def journal_of(url: str, name: str) -> tuple[list, tuple[int, str]]:
    storage = open_storage(url)
    try:
        with storage.open_journal(name) as journal:
            return list(journal.events()), journal.position
    finally:
        storage.close()


@pytest.mark.parametrize("direction", ["sqlite->postgresql", "postgresql->sqlite"])
def test_a_storage_is_copied_with_its_journals_tokens_and_flags(direction, postgres_storage, tmp_path):
    sqlite = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
    source, target = (sqlite, postgres_storage) if direction.startswith("sqlite") else (postgres_storage, sqlite)
    fill(source)
    copied = invoke("storage", "copy", source, target)
    assert copied.exit_code == 0, copied.output
    assert "ab: 8 events copied and verified" in copied.output and "2 experiment(s) copied" in copied.output
    for name in ("ab", "other"):
        assert journal_of(target, name) == journal_of(source, name)  # same events, chain ends on the same value
    before, after = open_storage(source), open_storage(target)
    try:
        assert after.token_hashes() == before.token_hashes()
        assert [(r.name, r.config, r.stopped) for r in after.list_experiments()] == \
               [(r.name, r.config, r.stopped) for r in before.list_experiments()] and after.get_experiment("other").stopped
    finally:
        before.close(), after.close()
    again = invoke("storage", "copy", source, target, "--experiment", "ab")
    assert again.exit_code == 2 and "holds experiment(s) ab already" in again.output


def test_a_journal_file_of_armlab_serve_is_imported_under_a_name(postgres_storage, tmp_path):
    sqlite = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
    fill(sqlite)
    backup = tmp_path / "ab-journal.sqlite"
    assert invoke("journal", "backup", sqlite, str(backup), "--experiment", "ab").exit_code == 0
    unnamed = invoke("storage", "copy", str(backup), postgres_storage)
    assert unnamed.exit_code == 2 and "--experiment NAME" in unnamed.output
    imported = invoke("storage", "copy", str(backup), postgres_storage, "--experiment", "checkout")
    assert imported.exit_code == 0 and "checkout: 8 events copied and verified" in imported.output, imported.output
    assert journal_of(postgres_storage, "checkout") == journal_of(sqlite, "ab")
    verified = invoke("journal", "verify", postgres_storage, "--experiment", "checkout")
    assert verified.exit_code == 0 and "8 events, integrity chain intact" in verified.output
