"""The clients' sans-IO protocol core, and both transports driving it, on httpx's mock
transport: URL building per experiment (quoted), each admin request and the reading of its
answer (the JSON of the server contract, docs/client.md), and the errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from armlab.client import (
    AdminClient,
    AsyncAdminClient,
    AsyncClient,
    Client,
    ConflictError,
    ExperimentExistsError,
    ForbiddenError,
    InvalidExperimentError,
    InvalidRequestError,
    NotFoundError,
    Problem,
    ServiceUnavailableError,
    UnknownExperimentError,
    UnknownTrialError,
)
from armlab.client import _protocol as p
from armlab.client._calls import config_body
from armlab.errors import ConfigError

TOKEN = "t" * 32
SUMMARY = {"name": "a/b c", "state": "running", "trials": 3, "budget": 100, "recommendation": [1, 2],
           "created": "2025-01-02T03:04:05Z", "last_activity": None, "owner": None, "added_later": 1}
TRIAL = {"trial_id": 0, "arm": 1, "arm_name": "B", "bandit": 0, "bandit_label": "bandit0", "pull": 0,
         "status": "pending"}
#: The contract's answer to each admin request, by (method, raw path).
ANSWERS = {
    ("POST", "/experiments"): (201, {"name": "a/b c", "token": "secret", "token_id": "t1", "experiment": SUMMARY}),
    ("GET", "/experiments"): (200, {"experiments": [SUMMARY]}),
    ("GET", "/experiments/a%2Fb%20c"): (200, SUMMARY),
    ("POST", "/experiments/a%2Fb%20c/stop"): (200, {**SUMMARY, "state": "stopped"}),
    ("DELETE", "/experiments/a%2Fb%20c"): (204, None),
    ("POST", "/experiments/a%2Fb%20c/tokens"): (201, {"token": "another", "token_id": "t2"}),
    ("DELETE", "/experiments/a%2Fb%20c/tokens/t%2F2"): (204, None),
    ("POST", "/experiments/a%2Fb%20c/ask"): (200, TRIAL),
    ("GET", "/experiments/a%2Fb%20c/trials/0"): (200, TRIAL),
}


class Recorder:
    """Answers from ANSWERS; keeps (method, raw path, JSON body, Authorization) of each request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.raw_path.decode()
        self.seen.append((request.method, path, json.loads(request.content) if request.content else None,
                          request.headers.get("authorization", "")))
        status, body = ANSWERS[(request.method, path)]
        return httpx.Response(status) if body is None else httpx.Response(status, json=body)


def _admin_calls(tmp_path: Path) -> list[tuple[str, tuple[Any, ...]]]:
    config = tmp_path / "exp.toml"
    config.write_text('name = "x"\n')
    return [("create_experiment", ("a/b c", config)), ("create_experiment", ("a/b c", {"name": "x"})),
            ("list_experiments", ()), ("get_experiment", ("a/b c",)), ("stop_experiment", ("a/b c",)),
            ("delete_experiment", ("a/b c",)), ("issue_token", ("a/b c",)), ("revoke_token", ("a/b c", "t/2"))]


def _check_admin_answers(recorder: Recorder, answers: list[Any]) -> None:
    created, from_dict, listed, got, stopped, deleted, issued, revoked = answers
    assert [(m, path, body) for m, path, body, _ in recorder.seen] == [
        ("POST", "/experiments", {"name": "a/b c", "config": 'name = "x"\n'}),
        ("POST", "/experiments", {"name": "a/b c", "config": {"name": "x"}}),
        ("GET", "/experiments", None),
        ("GET", "/experiments/a%2Fb%20c", None),
        ("POST", "/experiments/a%2Fb%20c/stop", {}),
        ("DELETE", "/experiments/a%2Fb%20c", None),
        ("POST", "/experiments/a%2Fb%20c/tokens", {}),
        ("DELETE", "/experiments/a%2Fb%20c/tokens/t%2F2", None),
    ]
    assert {auth for *_, auth in recorder.seen} == {f"Bearer {TOKEN}"}
    assert (created.name, created.token, created.token_id, created.experiment.trials) == ("a/b c", "secret", "t1", 3)
    assert from_dict == created and [s.name for s in listed] == ["a/b c"] and got == listed[0]
    assert got.created.isoformat() == "2025-01-02T03:04:05+00:00" and got.recommendation == [1, 2]
    assert got.last_activity is None and got.owner is None and not hasattr(got, "added_later")
    assert stopped.state == "stopped" and deleted is None and revoked is None
    assert (issued.token, issued.token_id) == ("another", "t2")


def test_every_admin_request_and_answer_sync(tmp_path):
    recorder = Recorder()
    with AdminClient("http://armlab.test", TOKEN, transport=httpx.MockTransport(recorder)) as admin:
        answers = [getattr(admin, method)(*args) for method, args in _admin_calls(tmp_path)]
    _check_admin_answers(recorder, answers)


async def test_every_admin_request_and_answer_async(tmp_path):
    recorder = Recorder()
    async with AsyncAdminClient("http://armlab.test", TOKEN, transport=httpx.MockTransport(recorder)) as admin:
        answers = [await getattr(admin, method)(*args) for method, args in _admin_calls(tmp_path)]
    _check_admin_answers(recorder, answers)


async def test_experiment_routes_are_under_the_quoted_name():
    recorder = Recorder()
    transport = httpx.MockTransport(recorder)
    with Client("http://armlab.test", TOKEN, experiment="a/b c", transport=transport) as client:
        client.ask(key="k")
        client.trial(0)
    async with AsyncClient("http://armlab.test", TOKEN, experiment="a/b c", transport=transport) as client:
        await client.ask(key="k")
    assert [(m, path) for m, path, *_ in recorder.seen] == [
        ("POST", "/experiments/a%2Fb%20c/ask"), ("GET", "/experiments/a%2Fb%20c/trials/0"),
        ("POST", "/experiments/a%2Fb%20c/ask")]
    assert recorder.seen[0][2] == {"key": "k", "wait": 0.0}
    for name in ("", ".", ".."):
        with pytest.raises(ConfigError, match="cannot name an experiment"):
            Client("http://armlab.test", TOKEN, experiment=name)
        with pytest.raises(ConfigError, match="cannot name an experiment"), AdminClient(
            "http://armlab.test", TOKEN, transport=transport
        ) as admin:
            admin.get_experiment(name)


def _answering(status: int, body: Any) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(status, json=body))


@pytest.mark.parametrize(("status", "body", "error"), [
    (401, {"detail": "missing or wrong bearer token"}, "AuthError"),
    (403, {"detail": "a client token on an admin route"}, "ForbiddenError"),
    (404, {"detail": "no experiment named 'x'"}, "UnknownExperimentError"),
    (409, {"detail": "experiment x is running: stop it first"}, "ConflictError"),
    (418, {"detail": "short and stout"}, "ServiceError"),
])
async def test_admin_error_statuses(status, body, error):
    with AdminClient("http://armlab.test", TOKEN, transport=_answering(status, body)) as admin, pytest.raises(
        Exception
    ) as sync_error:
        admin.delete_experiment("x")
    async with AsyncAdminClient("http://armlab.test", TOKEN, transport=_answering(status, body)) as admin:
        with pytest.raises(Exception) as async_error:
            await admin.delete_experiment("x")
    for raised in (sync_error.value, async_error.value):
        assert type(raised).__name__ == error and raised.detail == body["detail"] and raised.status_code == status


def test_create_maps_409_and_every_422_problem():
    problems = [{"field": "source.plugin", "message": "not external", "fix": 'plugin = "external"'},
                {"field": "problem.budget", "message": "missing", "fix": "give one"}]
    with AdminClient("http://armlab.test", TOKEN, transport=_answering(422, {"detail": problems})) as admin:
        with pytest.raises(InvalidExperimentError) as refused:
            admin.create_experiment("x", "name = 1")
    fastapi_shape = {"detail": [{"loc": ["body", "name"], "msg": "Field required", "type": "missing"}]}
    with AdminClient("http://armlab.test", TOKEN, transport=_answering(422, fastapi_shape)) as admin:
        with pytest.raises(InvalidExperimentError) as unreadable:
            admin.create_experiment("x", "name = 1")
    with AdminClient("http://armlab.test", TOKEN,
                     transport=_answering(409, {"detail": "experiment x exists"})) as admin:
        with pytest.raises(ExperimentExistsError, match="experiment x exists") as taken:
            admin.create_experiment("x", "name = 1")
    assert isinstance(refused.value, InvalidRequestError) and refused.value.status_code == 422
    assert refused.value.problems == [Problem("source.plugin", "not external", 'plugin = "external"'),
                                      Problem("problem.budget", "missing", "give one")]
    assert str(refused.value).splitlines() == [
        "the server refused the experiment (2 problems):",
        '  source.plugin: not external (fix: plugin = "external")',
        "  problem.budget: missing (fix: give one)",
    ]
    assert unreadable.value.problems == [Problem("body.name", "Field required")]
    assert isinstance(taken.value, ConflictError)


async def test_a_404_on_an_experiment_route_names_the_experiment_or_the_trial():
    unknown_experiment = _answering(404, {"detail": "no experiment named 'x'"})
    unknown_trial = _answering(404, {"detail": "no trial with id 9 (trials 0..2 exist)"})
    with Client("http://armlab.test", TOKEN, experiment="x", transport=unknown_experiment) as client:
        for call in (client.status, lambda: client.tell(9, 1.0), lambda: client.trial(9)):
            with pytest.raises(UnknownExperimentError):
                call()
        with pytest.raises(UnknownExperimentError):
            client.events().open()
    async with AsyncClient("http://armlab.test", TOKEN, experiment="x", transport=unknown_trial) as client:
        with pytest.raises(UnknownTrialError):
            await client.tell(9, 1.0)
    with Client("http://armlab.test", TOKEN, transport=unknown_experiment) as serve_client:
        with pytest.raises(UnknownTrialError):  # `armlab serve`'s routes: as before
            serve_client.abandon(9)
    forbidden = _answering(403, {"detail": "another experiment's token"})
    with Client("http://armlab.test", TOKEN, experiment="x", transport=forbidden) as client, pytest.raises(
        ForbiddenError
    ):
        client.ask()


def test_config_sources(tmp_path):
    path = tmp_path / "exp.toml"
    path.write_text("budget = 3\n")
    assert config_body(path) == config_body("budget = 3\n") == "budget = 3\n"
    assert config_body({"budget": 3}) == {"budget": 3}
    with pytest.raises(ConfigError, match=r"pass pathlib.Path\('exp.toml'\)"):
        config_body("exp.toml")
    with pytest.raises(ConfigError, match="cannot read the experiment file"):
        config_body(tmp_path / "missing.toml")
    with pytest.raises(ConfigError, match="not bytes"):
        config_body(b"budget = 3")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):  # the base of the 404 errors is a LookupError too
        raise UnknownExperimentError("x", status_code=404)


def test_the_core_does_no_io_a_hand_driven_retry():
    """The core's operations are plain generators: driven by hand, a refused connection is
    answered with a pause and the same request again, and the admin token comes from its variable."""
    protocol = p.AdminProtocol("http://armlab.test", {}, timeout=5.0, retries=1, deadline=None, backoff=0.5,
                               max_backoff=0.5)
    operation = protocol.get_experiment("a")
    first = next(operation)
    request = httpx.Request("GET", "http://armlab.test/experiments/a")
    pause = operation.send(httpx.ConnectError("refused", request=request))
    second = operation.send(None)
    with pytest.raises(StopIteration) as done:
        operation.send(httpx.Response(200, json={**SUMMARY, "name": "a"}, request=request))
    assert first == second == p.Send("GET", "/experiments/a", None, httpx.Timeout(5.0))
    assert isinstance(pause, p.Pause) and 0.25 <= pause.seconds <= 0.5
    assert done.value.value.name == "a"
    again = protocol.get_experiment("a")
    next(again)
    again.send(httpx.ConnectError("refused", request=request))
    again.send(None)
    with pytest.raises(ServiceUnavailableError, match="after 2 tries"):
        again.send(httpx.ConnectError("refused", request=request))


def test_the_admin_token_comes_from_its_variable(monkeypatch):
    seen = []
    transport = httpx.MockTransport(lambda r: seen.append(r.headers["authorization"]) or httpx.Response(
        200, json={"experiments": []}))
    monkeypatch.setenv("ARMLAB_ADMIN_TOKEN", "admin-" + "x" * 20)
    monkeypatch.setenv("ARMLAB_TOKEN", "client-" + "x" * 20)
    with AdminClient("http://armlab.test", transport=transport) as admin:
        assert admin.list_experiments() == []
    monkeypatch.delenv("ARMLAB_ADMIN_TOKEN")
    with pytest.raises(ConfigError, match="ARMLAB_ADMIN_TOKEN"):
        AdminClient("http://armlab.test")
    assert seen == ["Bearer admin-" + "x" * 20]


class Cluster:
    """Server processes ``a``, ``b``, ``c`` (``http://X.test``) of one storage for httpx's mock
    transport: ``owner`` answers, ``down`` ones refuse connections, ``failing`` ones answer
    503, the others redirect (307) to the owner with the same path; keeps (process, method,
    path) of each request."""

    def __init__(self, owner: str) -> None:
        self.owner, self.down, self.failing = owner, set(), set()
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        process, path = request.url.host.removesuffix(".test"), request.url.raw_path.decode()
        self.seen.append((process, request.method, path))
        if process in self.down:
            raise httpx.ConnectError("connection refused", request=request)
        if process in self.failing:
            return httpx.Response(503, json={"detail": "the storage cannot be reached"})
        if process != self.owner:
            return httpx.Response(307, headers={"location": f"http://{self.owner}.test{path}"})
        if request.method == "DELETE":
            return httpx.Response(204)
        return httpx.Response(200, json=SUMMARY if path == "/experiments/ab" else TRIAL)

    def since(self, mark: int) -> list[str]:
        return [process for process, *_ in self.seen[mark:]]


def _moves(cluster: Cluster) -> list[tuple[Callable[[], None], list[str]]]:
    """Owner moves, each with the processes the next request of experiment ``ab`` (a client
    at ``http://a.test``) reaches."""
    def move(owner: str, down: frozenset[str] = frozenset(), failing: frozenset[str] = frozenset()) -> Callable[[], None]:
        return lambda: (setattr(cluster, "owner", owner), setattr(cluster, "down", set(down)),
                        setattr(cluster, "failing", set(failing)))

    return [
        (move("b"), ["a", "b"]),  # redirected once...
        (move("b"), ["b"]),  # ...then straight to the owner
        (move("a", down=frozenset("b")), ["b", "a"]),  # the owner died and a took over: a at once
        (move("a"), ["a"]),  # nothing remembered
        (move("c"), ["a", "c"]),
        (move("b"), ["c", "a", "b"]),  # the remembered owner redirects: ask a, which names b
        (move("a", failing=frozenset("b")), ["b", "a"]),  # the remembered owner answers 503: ask a
    ]


def test_the_client_remembers_the_owner_and_falls_back_to_its_url():
    cluster = Cluster("b")
    with Client("http://a.test", TOKEN, experiment="ab", transport=httpx.MockTransport(cluster), backoff=0.001,
                max_backoff=0.002) as client:
        for move, reached in _moves(cluster):
            move()
            mark = len(cluster.seen)
            client.trial(0)
            assert cluster.since(mark) == reached
    assert {path for *_, path in cluster.seen} == {"/experiments/ab/trials/0"}
    cluster = Cluster("b")
    with AdminClient("http://a.test", TOKEN, transport=httpx.MockTransport(cluster)) as admin:
        admin.get_experiment("ab")
        admin.delete_experiment("ab")  # at the owner, remembered from the read
    assert cluster.seen == [("a", "GET", "/experiments/ab"), ("b", "GET", "/experiments/ab"),
                            ("b", "DELETE", "/experiments/ab")]


async def test_the_async_client_remembers_the_owner_the_same_way():
    cluster = Cluster("b")
    async with AsyncClient("http://a.test", TOKEN, experiment="ab", transport=httpx.MockTransport(cluster),
                           backoff=0.001, max_backoff=0.002) as client:
        for move, reached in _moves(cluster):
            move()
            mark = len(cluster.seen)
            await client.trial(0)
            assert cluster.since(mark) == reached


def test_the_owner_is_remembered_with_the_base_path_of_its_url():
    cluster = Cluster("b")  # processes behind proxies at /armlab: redirects keep the whole path
    with Client("http://a.test/armlab", TOKEN, experiment="ab", transport=httpx.MockTransport(cluster)) as client:
        client.trial(0)
        client.trial(0)
        assert client.experiment_protocol.owners == {"/experiments/ab": "http://b.test/armlab"}
    assert cluster.seen == [(process, "GET", "/armlab/experiments/ab/trials/0") for process in "abb"]
