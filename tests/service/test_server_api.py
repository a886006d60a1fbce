"""`armlab server` in process (httpx over ASGI): every admin route and refusal, client tokens
stored only as hashes, lazy opening, eviction and reopening to the same state."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import httpx
import pytest

from armlab.plugins.registry import default_registry
from armlab.service.server_access import hash_token
from armlab.service.server_app import create_server_app
from armlab.service.server_experiments import Experiments
from armlab.storage import open_storage
from armlab.errors import ConfigError
from armlab.storage.url import sqlite_path

ADMIN = "admin-token-" + "x" * 20
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "live"
AB = (EXAMPLES / "ab_service.toml").read_text()
THREE = (EXAMPLES / "three_ab_tests.toml").read_text()

pytestmark = pytest.mark.anyio


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class Server:
    """A server app over a fresh storage, with an admin client."""

    def __init__(self, tmp_path: Path, max_loaded: int = 8) -> None:
        self.url = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
        self.storage = open_storage(self.url)
        self.experiments = Experiments(self.storage, default_registry(), max_loaded=max_loaded)
        self.app = create_server_app(self.experiments, admin_token=ADMIN)

    async def __aenter__(self) -> httpx.AsyncClient:
        self._lifespan = self.app.router.lifespan_context(self.app)
        await self._lifespan.__aenter__()
        self.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url="http://armlab.test",
                                        headers=bearer(ADMIN))
        return self.client

    async def __aexit__(self, *exc) -> None:
        await self.client.aclose()
        await self._lifespan.__aexit__(*exc)
        self.storage.close()


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def create(client: httpx.AsyncClient, name: str, config=AB) -> str:
    answer = await client.post("/experiments", json={"name": name, "config": config})
    assert answer.status_code == 201, answer.text
    return answer.json()["token"]


async def test_create_list_get_stop_delete_and_reuse_the_name(tmp_path):
    async with Server(tmp_path) as client:
        created = await client.post("/experiments", json={"name": "ab", "config": AB})
        assert created.status_code == 201
        body = created.json()
        assert body["name"] == "ab" and body["token"] and body["token_id"]
        assert body["experiment"] == {**body["experiment"], "name": "ab", "state": "running", "trials": 0,
                                      "budget": 400, "recommendation": None, "owner": None}
        await create(client, "three", THREE)
        listed = (await client.get("/experiments")).json()["experiments"]
        assert [e["name"] for e in listed] == ["ab", "three"]
        assert (await client.get("/experiments/ab")).json()["budget"] == 400
        assert (await client.delete("/experiments/ab")).status_code == 409  # not stopped
        assert "stop it first" in (await client.delete("/experiments/ab")).json()["detail"]
        stopped = await client.post("/experiments/ab/stop", json={})
        assert stopped.status_code == 200 and stopped.json()["state"] == "stopped"
        assert (await client.delete("/experiments/ab")).status_code == 204
        assert (await client.get("/experiments/ab")).status_code == 404
        await create(client, "ab")  # the name can be used again, with a fresh journal
        assert (await client.get("/experiments/ab")).json()["trials"] == 0


async def test_refusals_name_the_problem(tmp_path):
    async with Server(tmp_path) as client:
        await create(client, "ab")
        assert (await client.post("/experiments", json={"name": "ab", "config": AB})).status_code == 409
        bad_name = await client.post("/experiments", json={"name": ".hidden", "config": AB})
        assert bad_name.status_code == 422 and bad_name.json()["detail"][0]["field"] == "name"
        bad = await client.post("/experiments", json={"name": "x", "config": "[problem]\nbudget = -1\n"})
        assert bad.status_code == 422
        fields = {p["field"] for p in bad.json()["detail"]}
        assert {"problem.budget", "problem.objective", "source", "policies"} <= fields  # every problem
        assert all(p["message"] and p["fix"] for p in bad.json()["detail"])
        command = (EXAMPLES / "command.toml").read_text()
        runs_own = await client.post("/experiments", json={"name": "cmd", "config": command})
        assert runs_own.status_code == 422 and runs_own.json()["detail"][0]["field"] == "source.plugin"
        assert (await client.get("/experiments/nope")).status_code == 404
        assert (await client.post("/experiments/nope/ask", json={})).status_code == 404
        assert (await client.post("/experiments/nope/stop", json={})).status_code == 404
        assert (await client.delete("/experiments/ab/tokens/nope")).status_code == 404
        unjson = await client.post("/experiments", content=b"{}", headers={"Content-Type": "text/plain"})
        assert unjson.status_code == 415


async def test_the_config_may_be_a_json_object(tmp_path):
    import tomllib

    async with Server(tmp_path) as client:
        await create(client, "ab", tomllib.loads(AB))
        assert (await client.get("/experiments/ab")).json()["budget"] == 400


async def test_client_tokens_work_for_their_experiment_only_and_are_stored_hashed(tmp_path):
    server = Server(tmp_path)
    async with server as client:
        token_a = await create(client, "a")
        token_b = await create(client, "b")
        asked = await client.post("/experiments/a/ask", json={}, headers=bearer(token_a))
        assert asked.status_code == 200
        told = await client.post("/experiments/a/tell", json={"trial_id": 0, "reward": 1}, headers=bearer(token_a))
        assert told.json()["status"] == "accepted"
        assert (await client.get("/experiments/a", headers=bearer(token_a))).status_code == 200
        assert (await client.post("/experiments/b/ask", json={}, headers=bearer(token_a))).status_code == 403
        assert (await client.get("/experiments/b", headers=bearer(token_a))).status_code == 403
        assert (await client.get("/experiments", headers=bearer(token_a))).status_code == 403
        assert (await client.post("/experiments/a/stop", json={}, headers=bearer(token_a))).status_code == 403
        assert (await client.post("/experiments/a/tokens", json={}, headers=bearer(token_a))).status_code == 403
        assert (await client.post("/experiments", json={"name": "c", "config": AB},
                                  headers=bearer(token_a))).status_code == 403
        assert (await client.get("/experiments/a/status", headers=bearer("wrong" * 8))).status_code == 401
        assert (await client.get("/experiments/a/status", headers={"Authorization": ""})).status_code == 401
        assert (await client.get("/experiments/b/status", headers=bearer(token_b))).status_code == 200
        # another token, then revoked
        issued = await client.post("/experiments/a/tokens", json={})
        assert issued.status_code == 201
        second = issued.json()
        assert (await client.get("/experiments/a/status", headers=bearer(second["token"]))).status_code == 200
        assert (await client.delete(f"/experiments/a/tokens/{second['token_id']}")).status_code == 204
        assert (await client.get("/experiments/a/status", headers=bearer(second["token"]))).status_code == 401
    catalog = sqlite_path(server.url)
    dump = "\n".join(sqlite3.connect(catalog).iterdump())
    assert token_a not in dump and token_b not in dump and hash_token(token_a) in dump


async def test_a_stopped_experiment_takes_reports_but_dispatches_nothing(tmp_path):
    async with Server(tmp_path) as client:
        token = await create(client, "ab")
        trial = (await client.post("/experiments/ab/ask", json={}, headers=bearer(token))).json()
        await client.post("/experiments/ab/stop", json={})
        refused = await client.post("/experiments/ab/ask", json={}, headers=bearer(token))
        assert refused.status_code == 409 and refused.json()["state"] == "stopped"
        told = await client.post("/experiments/ab/tell", json={"trial_id": trial["trial_id"], "reward": 0},
                                 headers=bearer(token))
        assert told.json()["status"] == "accepted"
        status = (await client.get("/experiments/ab/status", headers=bearer(token))).json()
        assert status["state"] == "stopped" and status["counts"][trial["arm"]] == 1 and status["pending"] == 0


async def _drive(client, name, token, n):
    for _ in range(n):
        trial = (await client.post(f"/experiments/{name}/ask", json={}, headers=bearer(token))).json()
        reward = float(trial["arm"] == 2)
        await client.post(f"/experiments/{name}/tell", json={"trial_id": trial["trial_id"], "reward": reward},
                          headers=bearer(token))


async def test_experiments_open_lazily_are_evicted_and_reopen_to_the_same_state(tmp_path):
    server = Server(tmp_path, max_loaded=1)
    async with server as client:
        tokens = {name: await create(client, name) for name in ("a", "b")}
        assert server.experiments.loaded == []  # nothing replayed until used
        await _drive(client, "a", tokens["a"], 12)
        before = (await client.get("/experiments/a/status", headers=bearer(tokens["a"]))).json()
        await _drive(client, "b", tokens["b"], 3)
        assert server.experiments.loaded == ["b"]  # a was closed: the cap is one
        listed = {e["name"]: e for e in (await client.get("/experiments")).json()["experiments"]}
        assert listed["a"]["trials"] == 12 and listed["a"]["last_activity"] is not None
        after = (await client.get("/experiments/a/status", headers=bearer(tokens["a"]))).json()
        assert server.experiments.loads == 3  # a, b, and a again (replayed)
        assert after == before


async def test_a_restarted_server_replays_every_experiment_exactly(tmp_path):
    async with Server(tmp_path) as client:
        tokens = {name: await create(client, name, config) for name, config in (("a", AB), ("t", THREE))}
        for name, token in tokens.items():
            await _drive(client, name, token, 10)
        before = {name: (await client.get(f"/experiments/{name}/status", headers=bearer(tokens[name]))).json()
                  for name in tokens}
    async with Server(tmp_path) as client:
        for name, token in tokens.items():
            assert (await client.get(f"/experiments/{name}/status", headers=bearer(token))).json() == before[name]


async def test_an_unopenable_journal_answers_503_for_its_experiment_only(tmp_path):
    server = Server(tmp_path)
    async with server as client:
        token_a = await create(client, "a")
        token_b = await create(client, "b")
        Path(server.storage.journal_path("a")).write_bytes(b"not a journal at all" * 100)
        broken = await client.get("/experiments/a/status", headers=bearer(token_a))
        assert broken.status_code == 503 and "cannot be opened" in broken.json()["detail"]
        assert (await client.get("/experiments/b/status", headers=bearer(token_b))).status_code == 200


@pytest.mark.parametrize("url, words", [
    ("postgresql://u@h/db", "PostgreSQL"), ("mysql://x", "unknown storage kind"), ("armlab.sqlite", "not a storage URL"),
    ("sqlite://", "names no file"), ("sqlite:///dir/", "directory"),
])
def test_storage_urls_other_than_sqlite_are_refused_clearly(url, words):
    with pytest.raises(ConfigError, match=words):
        sqlite_path(url)


def test_a_sqlite_url_names_its_file():
    assert sqlite_path("sqlite:///./armlab.sqlite") == Path("./armlab.sqlite")
    assert sqlite_path("sqlite:////var/lib/a.sqlite") == Path("/var/lib/a.sqlite")


async def test_an_experiment_of_the_storage_exports_and_verifies_by_name(tmp_path):
    """`armlab export` / `armlab journal verify` read an experiment of a storage by its name."""
    from click.testing import CliRunner

    from armlab import read_log
    from armlab.cli import cli

    async with Server(tmp_path) as client:
        await create(client, "ab")
        for _ in range(3):
            trial = (await client.post("/experiments/ab/ask", json={})).json()
            assert (await client.post("/experiments/ab/tell", json={"trial_id": trial["trial_id"], "reward": 1.0})
                    ).status_code == 200
        status = (await client.get("/experiments/ab/status")).json()
        await client.post("/experiments/ab/stop", json={})
    url = f"sqlite:///{tmp_path / 'armlab.sqlite'}"
    frame = read_log(url, experiment="ab")
    assert len(frame) == 3 and list(frame["reward"]) == [1.0, 1.0, 1.0]
    assert frame.groupby("arm").size().reindex(range(len(status["counts"])), fill_value=0).tolist() == status["counts"]
    runner = CliRunner()
    verified = runner.invoke(cli, ["journal", "verify", url, "--experiment", "ab"])
    assert verified.exit_code == 0, verified.output
    unnamed = runner.invoke(cli, ["export", url, "--out", str(tmp_path / "x.csv")])
    assert unnamed.exit_code == 2 and "--experiment NAME" in unnamed.output


async def test_safeguards_work_per_experiment_of_the_server(tmp_path):
    """Units and metrics reach each experiment of `armlab server` (its routes are `armlab serve`'s),
    and /status shows that experiment's anytime intervals and attrition check."""
    async with Server(tmp_path) as client:
        await create(client, "a")
        await create(client, "b")
        first = (await client.post("/experiments/a/ask", json={"unit": "user-1"})).json()
        again = (await client.post("/experiments/a/ask", json={"unit": "user-1"})).json()
        assert first["exposure"] == "new" and again["exposure"] == "open" and again["trial_id"] == first["trial_id"]
        told = await client.post("/experiments/a/tell", json={"trial_id": first["trial_id"], "reward": 1.0,
                                                               "metrics": {"latency_ms": 120}})
        assert told.status_code == 200, told.text
        repeat = (await client.post("/experiments/a/ask", json={"unit": "user-1"})).json()
        assert repeat["exposure"] == "repeat" and repeat["arm"] == first["arm"]
        other = (await client.post("/experiments/b/ask", json={"unit": "user-1"})).json()
        assert other["exposure"] == "new"  # a unit is bound per experiment
        status = (await client.get("/experiments/a/status")).json()
        assert status["counts"][first["arm"]] == 1 and sum(status["counts"]) == 1  # the repeat is no trial
        assert status["anytime_intervals"][first["arm"]] is not None and "attrition" in status["checks"]
