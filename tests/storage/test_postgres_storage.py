"""The PostgreSQL storage of ``armlab server``: the catalog, journals per experiment, a real
server process on it, and ``armlab journal`` / ``armlab export`` reading an experiment by name."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.errors import ConfigError
from armlab.orchestrator.journal.postgres_schema import JournalInUse
from armlab.orchestrator.journal.store import Journal, JournalError
from armlab.storage import ExperimentExists, UnknownExperiment, open_storage
from armlab.storage.postgres import PostgresStorage

pytestmark = [pytest.mark.postgres, pytest.mark.system]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"
AB = (EXAMPLES / "ab_service.toml").read_text()


def invoke(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", *args])


def test_the_catalog_keeps_experiments_tokens_and_journals(postgres_storage):
    storage = open_storage(postgres_storage)
    assert isinstance(storage, PostgresStorage)
    try:
        storage.create_experiment("ab", "config text", {"config": {}, "seed": 1})
        with pytest.raises(ExperimentExists):
            storage.create_experiment("ab", "other", {})
        storage.add_token("ab", "t1", "hash1")
        storage.save_summary("ab", {"trials": 3}, 12.5)
        storage.set_stopped("ab")
        record = storage.get_experiment("ab")
        assert (record.config, record.stopped, record.summary, record.last_activity) == ("config text", True,
                                                                                         {"trials": 3}, 12.5)
        assert storage.token_hashes() == {"hash1": ("t1", "ab")}
        with storage.open_journal("ab") as journal:
            assert journal.meta["seed"] == 1
            with pytest.raises(JournalError, match="in use by another process"):
                storage.open_journal("ab")
        assert not storage.revoke_token("ab", "nope") and storage.revoke_token("ab", "t1")
        storage.delete_experiment("ab")
        with pytest.raises(UnknownExperiment):
            storage.get_experiment("ab")
        storage.create_experiment("ab", "again", {"seed": 2})  # the name can be used again, with a new journal
        with storage.open_journal("ab") as journal:
            assert journal.meta["seed"] == 2 and list(journal.events()) == []
        assert [r.name for r in storage.list_experiments()] == ["ab"]
    finally:
        storage.close()


def test_an_experiment_whose_journal_a_process_holds_is_not_deleted(postgres_storage):
    owner, other = PostgresStorage.open(postgres_storage, "http://owner:1"), PostgresStorage.open(postgres_storage)
    try:
        owner.create_experiment("ab", "config text", {"seed": 1})
        with owner.open_journal("ab") as journal:
            with pytest.raises(JournalInUse, match="in use by another process") as refused:
                other.delete_experiment("ab")
            assert refused.value.owner == "http://owner:1"  # the server to send the delete to
            assert other.get_experiment("ab").config == "config text" and journal.meta["seed"] == 1
        other.delete_experiment("ab")  # nobody holds it now
        with pytest.raises(UnknownExperiment):
            other.delete_experiment("ab")
    finally:
        owner.close()
        other.close()


def test_a_database_without_armlabs_tables_is_refused_with_the_fix(postgres_url):
    with pytest.raises(ConfigError, match="run armlab storage init"):
        open_storage(postgres_url)


@pytest.mark.timeout(120)
def test_a_server_process_on_postgresql_and_the_journal_commands(postgres_storage, tmp_path):
    """`armlab server --storage postgresql://...` serves; stopped, its experiment is verified,
    backed up, salvaged and exported by name; a restart replays it to the same state."""
    from tests.service.test_server_processes import ADMIN, RunningServer

    async def serve() -> dict:
        server = await RunningServer(postgres_storage, tmp_path / "server.log").started()
        try:
            async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"},
                                         timeout=30) as client:
                created = await client.post("/experiments", json={"name": "ab", "config": AB})
                assert created.status_code == 201, created.text
                for _ in range(5):
                    trial = (await client.post("/experiments/ab/ask", json={})).json()
                    told = await client.post("/experiments/ab/tell", json={"trial_id": trial["trial_id"], "reward": 1})
                    assert told.status_code == 200, told.text
                return (await client.get("/experiments/ab/status")).json()
        finally:
            assert server.stop() == 0

    async def status_after_restart() -> dict:
        server = await RunningServer(postgres_storage, tmp_path / "server2.log").started()
        try:
            async with httpx.AsyncClient(base_url=server.url, headers={"Authorization": f"Bearer {ADMIN}"},
                                         timeout=30) as client:
                return (await client.get("/experiments/ab/status")).json()
        finally:
            assert server.stop() == 0

    status = anyio.run(serve)
    assert status["counts"] and sum(status["counts"]) == 5
    verified = invoke("journal", "verify", postgres_storage, "--experiment", "ab")
    assert verified.exit_code == 0 and "integrity chain intact" in verified.output, verified.output
    copy, salvaged = tmp_path / "copy.sqlite", tmp_path / "salvaged.sqlite"
    backed = invoke("journal", "backup", postgres_storage, str(copy), "--experiment", "ab")
    assert backed.exit_code == 0, backed.output
    saved = invoke("journal", "salvage", postgres_storage, str(salvaged), "--experiment", "ab")
    assert saved.exit_code == 0 and saved.output.startswith("10 events"), saved.output  # 5 asks, 5 tells
    with Journal.open(copy) as backup, Journal.open(salvaged) as rescued:
        assert [e.kind for e in backup.events()] == [e.kind for e in rescued.events()]
    exported = invoke("export", postgres_storage, "--experiment", "ab", "--out", str(tmp_path / "ab.csv"))
    assert exported.exit_code == 0, exported.output
    assert len((tmp_path / "ab.csv").read_text().splitlines()) == 1 + 5
    assert anyio.run(status_after_restart)["counts"] == status["counts"]


def test_an_unknown_experiment_is_named_without_a_traceback(postgres_storage):
    refused = invoke("journal", "verify", postgres_storage, "--experiment", "nope")
    assert refused.exit_code == 2 and "no experiment named 'nope'" in refused.output
    assert "Traceback" not in refused.output
