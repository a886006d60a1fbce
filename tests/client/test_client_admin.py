"""The admin and per-experiment clients, and `armlab experiments`, against a stub of the
`armlab server` contract (docs/client.md; the real server is tested with it after merging).

The stub keeps the contract's admin routes, one per-experiment route pair (ask/tell) and its
auth rules: the admin token works everywhere, a client token only on its own experiment's
routes (401 without a valid token, 403 with another experiment's or on an admin route),
tokens kept as SHA-256 hashes.  It runs in uvicorn on a loopback port, so both clients and
the command line talk to it over real connections.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import socket
import threading
import time
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from armlab.cli import cli
from armlab.client import (
    AdminClient,
    AsyncAdminClient,
    AsyncClient,
    AuthError,
    Client,
    ConflictError,
    ExperimentExistsError,
    ExperimentStoppedError,
    ForbiddenError,
    InvalidExperimentError,
    NotFoundError,
    Problem,
    UnknownExperimentError,
)

pytestmark = pytest.mark.system

ADMIN = "a" * 32
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
CONFIG = """
name = "stub"
[problem]
objective = "best-arm"
budget = 5
[source]
plugin = "external"
arms = ["A", "B"]
[[policies]]
plugin = "thompson"
"""


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _problems(config: dict[str, Any]) -> list[dict[str, str]]:
    """The stub's validation: two of the checks `armlab validate` makes, each reported."""
    found = []
    if config.get("source", {}).get("plugin") != "external":
        found.append({"field": "source.plugin", "message": "the server runs experiments whose clients ask and tell",
                      "fix": 'set plugin = "external"'})
    if not isinstance(config.get("problem", {}).get("budget"), int):
        found.append({"field": "problem.budget", "message": "missing", "fix": "give a whole number of trials"})
    return found


def stub_app() -> FastAPI:
    app = FastAPI()
    experiments: dict[str, dict[str, Any]] = {}

    def refuse(status: int, detail: Any, **extra: Any) -> JSONResponse:
        return JSONResponse({"detail": detail, **extra}, status_code=status)

    def who(request: Request) -> str | None:
        """'admin', the experiment a client token belongs to, or None."""
        given = request.headers.get("authorization", "").removeprefix("Bearer ")
        if secrets.compare_digest(given, ADMIN):
            return "admin"
        return next((name for name, e in experiments.items() if _hash(given) in e["tokens"].values()), None)

    def allowed(request: Request, name: str | None) -> JSONResponse | None:
        caller = who(request)
        if caller is None:
            return refuse(401, "missing or wrong bearer token")
        if caller != "admin" and caller != name:
            return refuse(403, "this token is not valid for this route")
        return None

    def summary(name: str) -> dict[str, Any]:
        e = experiments[name]
        return {"name": name, "state": e["state"], "trials": e["trials"], "budget": e["budget"],
                "recommendation": None if not e["trials"] else 0, "created": e["created"],
                "last_activity": None, "owner": None}

    def token_for(name: str) -> dict[str, str]:
        token, token_id = secrets.token_urlsafe(24), secrets.token_hex(4)
        experiments[name]["tokens"][token_id] = _hash(token)
        return {"token": token, "token_id": token_id}

    @app.post("/experiments")
    async def create(request: Request) -> Response:
        if refusal := allowed(request, None):
            return refusal
        body = await request.json()
        name, config = body.get("name", ""), body.get("config")
        config = tomllib.loads(config) if isinstance(config, str) else config
        problems = _problems(config)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            problems.insert(0, {"field": "name", "message": f"{name!r} is no experiment name",
                                "fix": "1-64 of A-Z a-z 0-9 . _ -, not starting with . or -"})
        if problems:
            return refuse(422, problems)
        if name in experiments:
            return refuse(409, f"experiment {name} exists")
        experiments[name] = {"state": "running", "trials": 0, "budget": config["problem"]["budget"], "tokens": {},
                             "created": datetime.now(UTC).isoformat()}
        return JSONResponse({"name": name, **token_for(name), "experiment": summary(name)}, status_code=201)

    @app.get("/experiments")
    async def listing(request: Request) -> Response:
        return allowed(request, None) or JSONResponse({"experiments": [summary(n) for n in sorted(experiments)]})

    def known(request: Request, name: str, admin_only: bool = False) -> JSONResponse | None:
        refusal = allowed(request, None if admin_only else name)
        if refusal is None and name not in experiments:
            return refuse(404, f"no experiment named {name!r}")
        return refusal

    @app.get("/experiments/{name}")
    async def get(request: Request, name: str) -> Response:
        return known(request, name) or JSONResponse(summary(name))

    @app.post("/experiments/{name}/stop")
    async def stop(request: Request, name: str) -> Response:
        if refusal := known(request, name, admin_only=True):
            return refusal
        experiments[name]["state"] = "stopped"
        return JSONResponse(summary(name))

    @app.delete("/experiments/{name}")
    async def delete(request: Request, name: str) -> Response:
        if refusal := known(request, name, admin_only=True):
            return refusal
        if experiments[name]["state"] != "stopped":
            return refuse(409, f"experiment {name} is {experiments[name]['state']}: stop it first")
        del experiments[name]
        return Response(status_code=204)

    @app.post("/experiments/{name}/tokens")
    async def issue(request: Request, name: str) -> Response:
        return known(request, name, admin_only=True) or JSONResponse(token_for(name), status_code=201)

    @app.delete("/experiments/{name}/tokens/{token_id}")
    async def revoke(request: Request, name: str, token_id: str) -> Response:
        if refusal := known(request, name, admin_only=True):
            return refusal
        if experiments[name]["tokens"].pop(token_id, None) is None:
            return refuse(404, f"no token {token_id} of {name}")
        return Response(status_code=204)

    @app.post("/experiments/{name}/ask")
    async def ask(request: Request, name: str) -> Response:
        if refusal := known(request, name):
            return refusal
        e = experiments[name]
        if e["state"] != "running":
            return refuse(409, f"experiment {name} is stopped", state="stopped")
        e["trials"] += 1
        return JSONResponse({"trial_id": e["trials"] - 1, "arm": 0, "arm_name": "A", "bandit": 0,
                             "bandit_label": "bandit0", "pull": e["trials"] - 1, "status": "pending"})

    @app.post("/experiments/{name}/tell")
    async def tell(request: Request, name: str) -> Response:
        if refusal := known(request, name):
            return refusal
        body = await request.json()
        return JSONResponse({"trial_id": body["trial_id"], "status": "accepted", "message": ""})

    return app


@pytest.fixture
def server():
    """The stub in uvicorn on a free loopback port: its URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    stub = uvicorn.Server(uvicorn.Config(stub_app(), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=stub.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not stub.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the stub server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        stub.should_exit = True
        thread.join(20)
        sock.close()


@pytest.mark.timeout(120)
def test_the_admin_client_manages_experiments_and_their_tokens(server, tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG)
    with AdminClient(server, ADMIN) as admin:
        first = admin.create_experiment("web.checkout-2", path)                       # a file
        second = admin.create_experiment("b", CONFIG)                                 # TOML text
        third = admin.create_experiment("a", tomllib.loads(CONFIG))                   # a dict
        with pytest.raises(ExperimentExistsError) as taken:
            admin.create_experiment("b", CONFIG)
        listed = admin.list_experiments()
        with Client(server, first.token, experiment="web.checkout-2") as client:
            trial = client.ask()
            told = client.tell(trial.trial_id, 1.0)
        again = admin.get_experiment("web.checkout-2")
        extra = admin.issue_token("b")
        with Client(server, extra.token, experiment="b") as client:
            client.ask()
            admin.revoke_token("b", extra.token_id)
            with pytest.raises(AuthError) as revoked:
                client.ask()
        with pytest.raises(NotFoundError, match="no token"):
            admin.revoke_token("b", extra.token_id)
        with pytest.raises(ConflictError, match="stop it first"):
            admin.delete_experiment("a")
        stopped = admin.stop_experiment("a")
        with Client(server, third.token, experiment="a") as client, pytest.raises(ExperimentStoppedError):
            client.ask()
        assert admin.delete_experiment("a") is None
        with pytest.raises(UnknownExperimentError) as gone:
            admin.get_experiment("a")
        recreated = admin.create_experiment("a", CONFIG)                                 # the name is free again
    assert first.name == "web.checkout-2" and first.experiment.state == "running" and first.experiment.trials == 0
    assert len({first.token, second.token, third.token}) == 3 and first.token_id
    assert taken.value.status_code == 409 and taken.value.detail == "experiment b exists"
    assert [s.name for s in listed] == ["a", "b", "web.checkout-2"] and listed[0].budget == 5
    assert listed[0].created.tzinfo is not None and listed[0].last_activity is None and listed[0].owner is None
    assert (trial.trial_id, told.status) == (0, "accepted")
    assert again.trials == 1 and again.recommendation == 0
    assert revoked.value.status_code == 401 and not isinstance(revoked.value, ForbiddenError)
    assert stopped.state == "stopped" and gone.value.status_code == 404
    assert recreated.experiment.state == "running"


@pytest.mark.timeout(120)
def test_tokens_open_their_own_experiment_only(server):
    with AdminClient(server, ADMIN) as admin:
        a = admin.create_experiment("a", CONFIG)
        admin.create_experiment("b", CONFIG)
    with Client(server, a.token, experiment="b") as other, pytest.raises(ForbiddenError) as across:
        other.ask()
    with Client(server, "w" * 32, experiment="a") as stranger, pytest.raises(AuthError) as unknown_token:
        stranger.ask()
    with AdminClient(server, a.token) as not_admin, pytest.raises(ForbiddenError) as admin_route:
        not_admin.list_experiments()
    with Client(server, ADMIN, experiment="b") as admin_as_client:                        # the admin token works everywhere
        assert admin_as_client.ask().trial_id == 0
    with Client(server, a.token, experiment="nope") as lost, pytest.raises(ForbiddenError):
        lost.ask()
    with Client(server, ADMIN, experiment="nope") as lost, pytest.raises(UnknownExperimentError, match="nope"):
        lost.tell(0, 1.0)                                                                 # not an unknown trial
    assert across.value.status_code == admin_route.value.status_code == 403
    assert isinstance(across.value, AuthError) and unknown_token.value.status_code == 401


@pytest.mark.timeout(120)
def test_a_refused_config_lists_every_problem(server):
    bad = CONFIG.replace('"external"', '"bernoulli"').replace("budget = 5", "")
    with AdminClient(server, ADMIN) as admin, pytest.raises(InvalidExperimentError) as refused:
        admin.create_experiment("-bad", bad)
    assert refused.value.status_code == 422
    assert [p.field for p in refused.value.problems] == ["name", "source.plugin", "problem.budget"]
    assert refused.value.problems[1] == Problem("source.plugin", "the server runs experiments whose clients ask "
                                                "and tell", 'set plugin = "external"')
    lines = str(refused.value).splitlines()
    assert lines[0] == "the server refused the experiment (3 problems):"
    assert lines[2] == '  source.plugin: the server runs experiments whose clients ask and tell (fix: set plugin = "external")'


@pytest.mark.timeout(120)
async def test_the_async_clients_do_the_same(server):
    async with AsyncAdminClient(server, ADMIN) as admin:
        created = await admin.create_experiment("a", CONFIG)
        async with AsyncClient(server, created.token, experiment="a") as client:
            trial = await client.ask()
            told = await client.tell(trial.trial_id, 0.5)
        listed = await admin.list_experiments()
        token = await admin.issue_token("a")
        await admin.revoke_token("a", token.token_id)
        stopped = await admin.stop_experiment("a")
        await admin.delete_experiment("a")
        with pytest.raises(UnknownExperimentError):
            await admin.get_experiment("a")
        other = await admin.create_experiment("b", CONFIG)
        with pytest.raises(ExperimentExistsError):
            await admin.create_experiment("b", CONFIG)
    async with AsyncAdminClient(server, other.token) as not_admin:
        with pytest.raises(ForbiddenError):
            await not_admin.list_experiments()
    assert (trial.trial_id, told.status) == (0, "accepted")
    assert [s.name for s in listed] == ["a"] and listed[0].trials == 1 and stopped.state == "stopped"


# -- the command line ------------------------------------------------------------------------


def _armlab(*args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["--no-plugins", *args], env={"ARMLAB_ADMIN_TOKEN": ADMIN, **(env or {})})


@pytest.mark.timeout(120)
def test_the_command_line_creates_lists_stops_and_deletes(server, tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text(CONFIG)
    token_file = tmp_path / "admin-token"
    token_file.write_text(ADMIN + "\n")
    created = _armlab("experiments", "create", server, "checkout", str(path))
    token = created.output.splitlines()[1].rsplit(": ", 1)[1]
    with Client(server, token, experiment="checkout") as client:
        trial = client.ask()  # the printed token is the experiment's
    listed = _armlab("experiments", "list", server, "--admin-token-file", str(token_file), env={"ARMLAB_ADMIN_TOKEN": ""})
    shown = _armlab("experiments", "get", server, "checkout", "--json")
    issued = _armlab("experiments", "token", server, "checkout")
    token_id = issued.output.split("(id ", 1)[1].split(")", 1)[0]
    revoked = _armlab("experiments", "revoke", server, "checkout", token_id)
    revoked_again = _armlab("experiments", "revoke", server, "checkout", token_id)
    stopped = _armlab("experiments", "stop", server, "checkout")
    deleted = _armlab("experiments", "delete", server, "checkout")
    empty = _armlab("experiments", "list", server)
    assert revoked_again.exit_code == 2 and revoked_again.output == f"Error: no token {token_id} of checkout\n"
    assert revoked.output == f"revoked token {token_id} of checkout\n"
    for result in (created, listed, shown, issued, revoked, stopped, deleted, empty):
        assert result.exit_code == 0, result.output
    assert created.output.splitlines()[0] == ("created checkout: running, 0/5 trials, "
                                             "recommendation none, last activity never")
    assert "will not be shown again" in created.output.splitlines()[2] and len(token) >= 24
    assert trial.trial_id == 0 and listed.output.startswith("checkout: running, 1/5 trials, recommendation arm 0")
    assert '"name": "checkout"' in shown.output and "will not be shown again" in issued.output
    assert stopped.output.startswith("stopped checkout: stopped") and deleted.output == "deleted checkout\n"
    assert empty.output == "no experiments\n"


@pytest.mark.timeout(120)
def test_command_line_refusals_are_one_line_per_problem_and_exit_2(server, tmp_path):
    good, bad = tmp_path / "good.toml", tmp_path / "bad.toml"
    good.write_text(CONFIG)
    bad.write_text(CONFIG.replace('"external"', '"bernoulli"').replace("budget = 5", ""))
    refused = _armlab("experiments", "create", server, "x", str(bad))
    _armlab("experiments", "create", server, "x", str(good))
    exists = _armlab("experiments", "create", server, "x", str(good))
    running = _armlab("experiments", "delete", server, "x")
    unknown = _armlab("experiments", "stop", server, "nope")
    wrong_token = _armlab("experiments", "list", server, env={"ARMLAB_ADMIN_TOKEN": "w" * 32})
    no_token = _armlab("experiments", "list", server, env={"ARMLAB_ADMIN_TOKEN": ""})
    missing_file = _armlab("experiments", "create", server, "y", str(tmp_path / "missing.toml"))
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        unreachable = _armlab("experiments", "list", f"http://127.0.0.1:{closed.getsockname()[1]}")
    results = (refused, exists, running, unknown, wrong_token, no_token, missing_file, unreachable)
    for result in results:
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output and not isinstance(result.exception, httpx.HTTPError)
    assert refused.output.splitlines() == [
        "Error: the server refused the experiment (2 problems):",
        '  source.plugin: the server runs experiments whose clients ask and tell (fix: set plugin = "external")',
        "  problem.budget: missing (fix: give a whole number of trials)",
    ]
    assert exists.output == "Error: experiment x exists\n"
    assert running.output == "Error: experiment x is running: stop it first\n"
    assert unknown.output == "Error: no experiment named 'nope'\n"
    assert "refused the admin token" in wrong_token.output and "ARMLAB_ADMIN_TOKEN" in wrong_token.output
    assert no_token.output == "Error: no admin token: set ARMLAB_ADMIN_TOKEN or pass --admin-token-file FILE\n"
    assert "cannot read the experiment file" in missing_file.output
    assert unreachable.output.startswith("Error: cannot reach the armlab server at http://127.0.0.1:")
    assert len(unreachable.output.splitlines()) == 1
