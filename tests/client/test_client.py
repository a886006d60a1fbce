"""armlab.client against a real `armlab serve` process: the API, lost answers, kill -9 and restarts.

The service runs as a child process (the ``live.serve`` helper of conftest) so that
connections really break when it is killed; the tests at the end use httpx's mock
transport for what a healthy service never sends (5xx answers, unknown event kinds).
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from armlab.client import (
    AsyncClient,
    AuthError,
    Client,
    ConflictError,
    ExperimentStoppedError,
    InvalidRequestError,
    NoTrialError,
    RewardRejectedError,
    ServiceUnavailableError,
    UnknownTrialError,
)
from armlab.errors import ConfigError
from armlab.events import ArmRetired, TrialAbandoned, TrialDispatched, TrialObserved
from armlab.orchestrator.journal.store import Journal
from armlab.service.models import ReportOut, StatusOut, TrialOut

TOKEN = "p" * 32  # the token of ServedExperiment (conftest)


class Served:
    """`armlab serve` on one journal: started, killed with SIGKILL, restarted on the same port."""

    def __init__(self, live: Any, tmp_path: Path) -> None:
        self.live = live
        self.config, self.journal = tmp_path / "exp.toml", tmp_path / "exp.sqlite"
        self.process: Any = None
        self.port = 0

    async def start(self, budget: int = 20, in_flight: int = 6) -> str:
        """Start (the first start writes the config, restarts resume the journal); the URL."""
        if not self.config.exists():
            self.config.write_text(self.live.toml(name="client-test", seed=5, problem={"budget": budget},
                                                  feedback={"in_flight": in_flight}))
        self.process = self.live.serve(self.config, self.journal, self.port)  # stopped by stop() even if cancelled
        await self.process.started()
        self.port = self.process.port
        return self.process.url

    def kill(self) -> None:
        self.process.kill()
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            code, last_line = self.process.stop()
            self.process = None
            assert code == 0, last_line

    def journaled(self) -> Counter[str]:
        """How many events of each kind the journal holds (after :meth:`stop`)."""
        with Journal.open(self.journal) as journal:
            return Counter(event.kind for event in journal.events())


@pytest.fixture
async def served(live, tmp_path):
    service = Served(live, tmp_path)
    try:
        yield service
    finally:
        service.stop()


class Watched(httpx.AsyncBaseTransport, httpx.BaseTransport):
    """The real transport, counting the requests per path (``sent``) and those that got no
    answer (``failed``).

    The first request to each path in ``lose`` reaches the service, which acts on it, and
    its answer is read, kept in ``lost`` and never delivered: ``on_lost`` runs (e.g. kills
    the service) and the client sees a broken connection, as after a crash or a network
    fault between the service's commit and its answer.
    """

    def __init__(self, lose: tuple[str, ...] = (), on_lost: Any = None) -> None:
        self.sync, self.asynchronous = httpx.HTTPTransport(), httpx.AsyncHTTPTransport()
        self.lose, self.on_lost = set(lose), on_lost
        self.lost: dict[str, Any] = {}
        self.sent: Counter[str] = Counter()
        self.failed = 0

    def _deliver(self, request: httpx.Request, response: httpx.Response) -> httpx.Response:
        path = request.url.path
        if path in self.lose and path not in self.lost:
            self.lost[path] = response.json()
            if self.on_lost is not None:
                self.on_lost()
            raise httpx.RemoteProtocolError("server disconnected without sending a response", request=request)
        return response

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent[request.url.path] += 1
        try:
            response = self.sync.handle_request(request)
        except httpx.TransportError:
            self.failed += 1
            raise
        response.read()
        response.close()
        return self._deliver(request, response)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.sent[request.url.path] += 1
        try:
            response = await self.asynchronous.handle_async_request(request)
        except httpx.TransportError:
            self.failed += 1
            raise
        await response.aread()
        await response.aclose()
        return self._deliver(request, response)

    def close(self) -> None:
        self.sync.close()

    async def aclose(self) -> None:
        await self.asynchronous.aclose()


# -- the API against a real service ---------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_ask_tell_abandon_trial_status_and_events(served):
    url = await served.start()
    with Client(url, TOKEN) as client, client.events() as events:
        first = client.ask()
        told = client.tell(first.trial_id, 1.0)
        second = client.ask()
        abandoned = client.abandon(second.trial_id, "the pipeline broke")
        record = client.trial(second.trial_id)
        retired, again = client.retire("B", reason="too expensive"), client.retire(1)
        status = client.status()
        seen = []
        for event in events:
            seen.append(event)
            if isinstance(event, ArmRetired):
                break
    assert isinstance(first, TrialOut) and first.status == "pending" and first.arm_name == "ABC"[first.arm]
    assert told == ReportOut(trial_id=first.trial_id, status="accepted", message="")
    assert abandoned.status == "accepted" and record.status == "abandoned"
    assert isinstance(status, StatusOut) and (status.dispatched, status.completed, status.abandoned) == (2, 1, 1)
    assert status.counts[first.arm] == sum(status.counts) == 1
    assert TrialDispatched(first.trial_id, 0, first.arm, 0) in seen
    assert TrialObserved(first.trial_id, 0, first.arm, 1.0) in seen
    assert TrialDispatched(second.trial_id, 0, second.arm, second.pull) in seen
    assert TrialAbandoned(second.trial_id, 0, second.arm, "the pipeline broke") in seen
    assert (retired.arm, retired.status, again.status) == (1, "retired", "already retired")
    assert status.bandits[0].retired == [1] and seen[-1] == ArmRetired(0, 1, 2, "too expensive")


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_async_client_batches_and_events(served):
    url = await served.start()
    async with AsyncClient(url, TOKEN) as client, client.events() as events:
        batch = await client.ask_many(4)
        ids = [trial.trial_id for trial in batch.trials]
        answer = await client.tell_many([
            (ids[0], 1.0), {"trial_id": ids[1], "reward": 0}, (ids[2], math.nan), (ids[0], 0.0), (99, 1.0),
            (ids[3], 7.0),
        ])
        observed = []
        with anyio.fail_after(60):
            async for event in events:
                if isinstance(event, TrialObserved):
                    observed.append(event)
                if len(observed) == 2:
                    break
        status = await client.status()
    assert ids == [0, 1, 2, 3] and batch.state == "running"
    results = [(r.trial_id, r.status) for r in answer.results]
    assert results == [(0, "accepted"), (1, "accepted"), (2, "rejected"), (0, "conflict"), (99, "unknown"),
                       (3, "rejected")]
    assert "finite" in answer.results[2].message and "range" in answer.results[5].message
    arms = [trial.arm for trial in batch.trials]
    assert observed == [TrialObserved(0, 0, arms[0], 1.0), TrialObserved(1, 0, arms[1], 0.0)]
    assert (status.completed, status.pending) == (2, 2)


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_a_lost_answer_is_retried_with_the_same_key(served):
    url = await served.start()
    transport = Watched(lose=("/ask", "/ask/batch", "/tell", "/tell/batch"))
    with Client(url, TOKEN, backoff=0.01, transport=transport) as client:
        trial = client.ask()
        batch = client.ask_many(3)
        report = client.tell(trial.trial_id, 1.0)
        reports = client.tell_many([(t.trial_id, 0.0) for t in batch.trials])
        status = client.status()
    assert set(transport.lost) == transport.lose  # every first answer was lost, and retried
    assert trial.trial_id == transport.lost["/ask"]["trial_id"] == 0
    assert [t.trial_id for t in batch.trials] == [t["trial_id"] for t in transport.lost["/ask/batch"]["trials"]]
    assert status.dispatched == 4 and status.completed == 4  # the retries dispatched nothing more
    assert transport.lost["/tell"]["status"] == "accepted" and report.status == "duplicate"
    assert [r.status for r in reports.results] == ["duplicate"] * 3


@pytest.mark.timeout(180)
@pytest.mark.system
async def test_kill_9_between_a_batch_ask_and_its_tells(served):
    url = await served.start()
    transport = Watched()
    async with AsyncClient(url, TOKEN, retries=None, deadline=120, transport=transport) as client:
        ids = [trial.trial_id for trial in (await client.ask_many(6)).trials]
        await client.tell(ids[0], 1.0)
        served.kill()
        answers = {}

        async def tell_all() -> None:
            answers["tells"] = await client.tell_many([(i, 1.0) for i in ids])

        async with anyio.create_task_group() as tg:
            tg.start_soon(tell_all)  # refused until the service is back: retried
            await served.start()
        status = await client.status()
    served.stop()
    assert transport.failed > 0
    assert [r.status for r in answers["tells"].results] == ["duplicate"] + ["accepted"] * 5
    assert (status.dispatched, status.completed, status.pending) == (6, 6, 0)
    journaled = served.journaled()
    assert (journaled["dispatch"], journaled["result"]) == (6, 6)  # nothing counted twice


@pytest.mark.timeout(180)
@pytest.mark.system
async def test_restart_in_the_middle_of_a_batch(served):
    """The service journals a batch, then dies before its answer leaves: the client's retries
    reach the restarted service and get the same trials, and the same reports recorded once."""
    url = await served.start()
    killed = anyio.Event()

    def kill() -> None:
        served.kill()
        killed.set()

    transport = Watched(lose=("/ask/batch", "/tell/batch"), on_lost=kill)
    async with AsyncClient(url, TOKEN, retries=None, deadline=120, transport=transport) as client:

        async def across_a_restart(call: Any) -> Any:
            nonlocal killed
            answer = {}

            async def run() -> None:
                answer["value"] = await call()

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await killed.wait()
                killed = anyio.Event()
                await served.start()
            return answer["value"]

        batch = await across_a_restart(lambda: client.ask_many(5, keys=[f"batch-{i}" for i in range(5)]))
        reports = await across_a_restart(lambda: client.tell_many([(t.trial_id, 0.5) for t in batch.trials]))
        again = await client.ask_many(5, keys=[f"batch-{i}" for i in range(5)])
        status = await client.status()
    served.stop()
    lost_trials = [t["trial_id"] for t in transport.lost["/ask/batch"]["trials"]]
    assert [t.trial_id for t in batch.trials] == lost_trials == [t.trial_id for t in again.trials] == [0, 1, 2, 3, 4]
    assert [r["status"] for r in transport.lost["/tell/batch"]["results"]] == ["accepted"] * 5
    assert [r.status for r in reports.results] == ["duplicate"] * 5
    assert (status.dispatched, status.completed) == (5, 5)
    journaled = served.journaled()
    assert (journaled["dispatch"], journaled["result"]) == (5, 5)


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_refusals_are_typed_errors(served):
    url = await served.start(budget=4, in_flight=2)
    with Client(url, TOKEN) as client:
        a, b = client.ask(), client.ask()
        with pytest.raises(NoTrialError) as full:
            client.ask()
        waited, watched = {}, Watched()

        async def ask_and_wait() -> None:
            with Client(url, TOKEN, transport=watched) as other:
                waited["trial"] = await anyio.to_thread.run_sync(lambda: other.ask(wait=30))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask_and_wait)
            await anyio.sleep(0.5)  # the ask is waiting for a slot by now
            client.tell(a.trial_id, 1.0)
        c = waited["trial"]
        with pytest.raises(ConflictError) as conflict:
            client.tell(a.trial_id, 0.0)
        with pytest.raises(ConflictError):
            client.abandon(a.trial_id)
        with pytest.raises(RewardRejectedError) as out_of_range:
            client.tell(b.trial_id, 5.0)
        with pytest.raises(RewardRejectedError) as not_finite:
            client.tell(b.trial_id, math.inf)
        with pytest.raises(InvalidRequestError) as bad_key:
            client.ask(key="k" * 300)
        with pytest.raises(ConflictError) as no_such_arm:
            client.retire("Z")
        for call in (lambda: client.tell(99, 1.0), lambda: client.abandon(99), lambda: client.trial(99)):
            with pytest.raises(UnknownTrialError) as unknown:
                call()
            assert unknown.value.status_code == 404 and "no trial with id 99" in unknown.value.detail
        client.tell(b.trial_id, 1.0)
        d = client.ask()
        with pytest.raises(ExperimentStoppedError) as spent:
            client.ask()
        client.tell_many([(c.trial_id, 0.0), (d.trial_id, 0.0)])
        with pytest.raises(ExperimentStoppedError) as finished:
            client.ask()
    with Client(url, "w" * 32) as stranger, pytest.raises(AuthError) as auth:
        stranger.status()
    with Client(url, "w" * 32) as stranger, pytest.raises(AuthError):
        stranger.events().open()
    assert full.type is NoTrialError and (full.value.status_code, full.value.state) == (409, "in_flight_full")
    assert c.trial_id == 2 and watched.sent["/ask"] == 1  # the service held the ask until a slot was free
    assert conflict.value.status_code == 409 and "refusing the different 0.0" in conflict.value.detail
    assert out_of_range.value.status_code == 422 and "less than or equal to 1" in out_of_range.value.detail
    assert not_finite.value.status_code is None and "finite" in not_finite.value.detail  # JSON cannot carry inf
    assert bad_key.type is InvalidRequestError and bad_key.value.status_code == 422 and "key" in bad_key.value.detail
    assert no_such_arm.value.status_code == 409 and "no arm named 'Z'" in no_such_arm.value.detail
    assert d.trial_id == 3 and (spent.value.status_code, spent.value.state) == (409, "budget_spent")
    assert finished.value.state == "finished" and "finished" in finished.value.detail
    assert auth.value.status_code == 401 and auth.value.detail == "missing or wrong bearer token"


@pytest.mark.timeout(120)
@pytest.mark.system
async def test_the_token_comes_from_the_environment(served, monkeypatch):
    url = await served.start()
    monkeypatch.setenv("ARMLAB_TOKEN", TOKEN)
    with Client(url) as client:
        assert client.status().state == "running"
    monkeypatch.setenv("ARMLAB_TOKEN", "w" * 32)
    with Client(url) as client, pytest.raises(AuthError):
        client.status()
    monkeypatch.delenv("ARMLAB_TOKEN")
    with pytest.raises(ConfigError, match=r"token=.*ARMLAB_TOKEN"):
        Client(url)
    with pytest.raises(ConfigError, match=r"token=.*ARMLAB_TOKEN"):
        AsyncClient(url)


# -- what a healthy service does not send: a mock transport ----------------------------------


def test_retries_are_bounded_and_end_in_service_unavailable():
    calls = Counter()

    def answer(request: httpx.Request) -> httpx.Response:
        calls[request.url.path] += 1
        if request.url.path == "/status":
            return httpx.Response(503, json={"detail": "the journal write failed"})
        if request.url.path == "/trials/1":
            return httpx.Response(401, json={"detail": "missing or wrong bearer token"})
        raise httpx.ConnectError("connection refused", request=request)

    with Client("http://armlab.test", TOKEN, retries=3, backoff=0.001, max_backoff=0.001,
                transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(ServiceUnavailableError) as failing:
            client.status()
        with pytest.raises(ServiceUnavailableError) as unreachable:
            client.tell(1, 1.0)
        with pytest.raises(AuthError):
            client.trial(1)
    assert calls == {"/status": 4, "/tell": 4, "/trials/1": 1}  # 4xx is an answer: not retried
    assert failing.value.status_code == 503 and "the journal write failed" in failing.value.detail
    assert unreachable.value.status_code is None and isinstance(unreachable.value.__cause__, httpx.ConnectError)


def test_a_deadline_bounds_unlimited_retries():
    calls = []

    def refuse(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("connection refused", request=request)

    with Client("http://armlab.test", TOKEN, retries=None, deadline=0.5, backoff=0.01, max_backoff=0.05,
                transport=httpx.MockTransport(refuse)) as client, pytest.raises(ServiceUnavailableError):
        client.ask()
    assert len(calls) > 1
    assert len({request.content for request in calls}) == 1  # every try carried the same key


def test_an_ask_refused_at_once_is_not_repeated_in_a_busy_loop():
    """A service whose source runs its own trials refuses every ask at once, state and all."""
    asks = []

    def refuse(request: httpx.Request) -> httpx.Response:
        asks.append(request)
        return httpx.Response(409, json={"detail": "source 'command' runs its own trials", "state": "in_flight_full"},
                              headers={"Retry-After": "1"})

    with Client("http://armlab.test", TOKEN, transport=httpx.MockTransport(refuse)) as client, pytest.raises(
        NoTrialError, match="runs its own trials"
    ):
        client.ask(wait=0.3)
    assert 2 <= len(asks) <= 3  # asked again after a pause, not thousands of times


STREAM = (
    ": connected\n\n"
    'event: trial_dispatched\ndata: {"id": 1, "event": "trial_dispatched", "trial": 0, "bandit": 0, "arm": 2, '
    '"pull": 0, "shard": 7}\nid: 1\n\n'
    ": ping\n\n"
    'event: arm_cloned\ndata: {"id": 2, "event": "arm_cloned", "bandit": 0, "arm": 1}\nid: 2\n\n'
    'event: trial_observed\ndata: {"id": 3, "event": "trial_observed", "trial": 0}\nid: 3\n\n'
)
#: What STREAM decodes to: a known kind with a field too many, an unknown kind, a field missing.
EXPECTED = [
    TrialDispatched(0, 0, 2, 0),
    {"id": 2, "event": "arm_cloned", "bandit": 0, "arm": 1},
    {"id": 3, "event": "trial_observed", "trial": 0},
]


def _stream(body: str) -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(200, text=body,
                                                              headers={"content-type": "text/event-stream"}))


def test_events_decode_known_kinds_and_keep_unknown_ones_as_dicts():
    with Client("http://armlab.test", TOKEN, transport=_stream(STREAM)) as client, client.events() as events:
        assert list(events) == EXPECTED
    unconfirmed = _stream("event: x\ndata: {}\n\n")
    with Client("http://armlab.test", TOKEN, transport=unconfirmed) as client, pytest.raises(
        ServiceUnavailableError, match="before the service confirmed"
    ):
        client.events().open()


async def test_async_events_decode_known_kinds_and_keep_unknown_ones_as_dicts():
    async with AsyncClient("http://armlab.test", TOKEN, transport=_stream(STREAM)) as client, client.events() as events:
        assert [event async for event in events] == EXPECTED

