"""Fuzzing the HTTP service: every operation from its OpenAPI schema, and report payloads."""

from __future__ import annotations

import json
import math
from functools import partial

import anyio.from_thread
import httpx
import pytest
import schemathesis
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from armlab.cli import cli
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app

TOKEN = "f" * 32
JSON_CONTENT = {"Content-Type": "application/json"}


@pytest.fixture
def service_app(live, registry, tmp_path):
    session = LiveSession.open(journal=tmp_path / "fuzz.sqlite", registry=registry,
                               config=live.config(problem={"objective": "best-arm", "budget": 40},
                                                  feedback={"in_flight": 40}))  # asks never wait
    for _ in range(2):  # a few trials exist, so ids 0 and 1 are known
        session.experiment.ask()
    yield create_app(session, token=TOKEN)
    session.close()


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_every_operation_conforms_to_its_schema(service_app):
    """Generated requests (valid and invalid) for each operation: never a 5xx, and every
    answer (status, headers, body) is one the schema declares."""
    schema = schemathesis.openapi.from_asgi("/openapi.json", service_app).exclude(path="/events")
    operations = [result.ok() for result in schema.get_all_operations()]  # /events streams forever
    assert {op.path for op in operations} == {"/ask", "/tell", "/abandon", "/status", "/trials/{trial_id}",
                                              "/ask/batch", "/tell/batch", "/retire", "/history"}
    for operation in operations:

        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
        @given(case=operation.as_strategy())
        def check(case):
            case.call_and_validate(headers={"Authorization": f"Bearer {TOKEN}"})

        check()


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**20), st.floats(allow_nan=True), st.text(max_size=8))
JSON = st.recursive(
    JSON_LEAF, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
REPORTS = st.one_of(
    JSON,
    st.fixed_dictionaries({"trial_id": st.one_of(st.integers(-2, 4), JSON_LEAF), "reward": JSON_LEAF}),
    st.fixed_dictionaries({"trial_id": st.integers(0, 3), "reward": st.floats(allow_nan=True, allow_infinity=True)}),
)


def test_report_payloads_never_break_the_service(service_app):
    session = service_app.state.service.session
    experiment = session.experiment
    transport = httpx.ASGITransport(app=service_app)
    headers = {"Authorization": f"Bearer {TOKEN}"}

    with anyio.from_thread.start_blocking_portal() as portal:  # the app runs in the portal's loop
        client = httpx.AsyncClient(transport=transport, base_url="http://armlab.test", headers=headers)

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(payload=REPORTS)
        def check(payload):
            raw = json.dumps(payload).encode()  # NaN and Infinity included, as Python clients send them
            answer = portal.call(partial(client.post, "/tell", content=raw, headers=JSON_CONTENT))
            assert answer.status_code in (200, 404, 409, 422), answer.text
            body = answer.json()
            if answer.status_code == 200:
                assert body["status"] in ("accepted", "duplicate", "late")
            else:
                assert isinstance(body["detail"], str) and body["detail"]
            c = experiment.counters
            assert experiment.stats.counts.sum() == c.completed
            assert len(experiment.pending_trials()) + c.closed == len(experiment.trials)
            results = [e for e in session.journal.events() if e.kind == "result"]
            assert len(results) == c.completed == len({e.trial for e in results})

        try:
            check()
        finally:
            portal.call(client.aclose)


#: Reward spellings no finite float holds (raw JSON text, as any client may send them).
UNUSABLE_REWARDS = ["1" + "0" * 309, "-" + "9" * 400, "1e999", "-1e999", "Infinity", "-Infinity", "NaN"]


async def test_rewards_no_finite_float_holds_are_rejected_item_by_item(service_app, registry):
    """Each unusable reward is ``rejected`` in its own item; those beside it are applied and
    journaled, and the journal still opens."""
    session = service_app.state.service.session
    trials = [session.experiment.ask().id for _ in range(len(UNUSABLE_REWARDS) + 1)]
    items = [f'{{"trial_id": {t}, "reward": {r}}}' for t, r in zip(trials, UNUSABLE_REWARDS, strict=False)]
    items.append(f'{{"trial_id": {trials[-1]}, "reward": 1}}')
    transport = httpx.ASGITransport(app=service_app)
    async with service_app.router.lifespan_context(service_app), httpx.AsyncClient(
            transport=transport, base_url="http://armlab.test", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        answer = await client.post("/tell/batch", content=f'{{"reports": [{", ".join(items)}]}}', headers=JSON_CONTENT)
    assert answer.status_code == 200, answer.text
    assert [r["status"] for r in answer.json()["results"]] == ["rejected"] * len(UNUSABLE_REWARDS) + ["accepted"]
    path = session.journal.path
    session.close()
    reopened = LiveSession.open(journal=path, registry=registry)  # replays and verifies the chain
    assert reopened.experiment.counters.completed == 1
    reopened.close()


#: Raw JSON spellings of a negative zero reward (the journal stores each as 0.0).
NEGATIVE_ZEROS = ["-0.0", "-0", "-0e0"]


@pytest.mark.parametrize("spelling", NEGATIVE_ZEROS)
@pytest.mark.parametrize("route", ["/tell", "/tell/batch"])
async def test_a_negative_zero_reward_keeps_the_journal_readable(service_app, registry, route, spelling):
    """A reward of negative zero is accepted, reopens (the chain replays) as +0.0, and
    ``armlab journal verify`` finds the chain intact."""
    session = service_app.state.service.session
    trial = session.experiment.ask().id
    report = f'{{"trial_id": {trial}, "reward": {spelling}}}'
    body = report if route == "/tell" else f'{{"reports": [{report}]}}'
    transport = httpx.ASGITransport(app=service_app)
    async with service_app.router.lifespan_context(service_app), httpx.AsyncClient(
            transport=transport, base_url="http://armlab.test", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        answer = await client.post(route, content=body, headers=JSON_CONTENT)
    assert answer.status_code == 200, answer.text
    assert (answer.json() if route == "/tell" else answer.json()["results"][0])["status"] == "accepted"
    path = session.journal.path
    session.close()
    reopened = LiveSession.open(journal=path, registry=registry)  # replays and verifies the chain
    reward = reopened.experiment.record(trial).reward
    reopened.close()
    assert reward == 0.0 and math.copysign(1, reward) == 1
    verified = CliRunner().invoke(cli, ["--no-plugins", "journal", "verify", str(path)])
    assert verified.exit_code == 0, verified.output


async def test_metrics_no_finite_float_holds_are_rejected_item_by_item(service_app, registry):
    """A metric that cannot be a finite float (an integer of 10^309 or more, a 400-digit one)
    is ``rejected`` in its own item, as such a reward is; the item beside it is applied."""
    session = service_app.state.service.session
    trials = [session.experiment.ask().id for _ in range(3)]
    items = [f'{{"trial_id": {trials[0]}, "reward": 1, "metrics": {{"latency_ms": {10**309}}}}}',
             f'{{"trial_id": {trials[1]}, "reward": 1, "metrics": {{"latency_ms": -{"9" * 400}}}}}',
             f'{{"trial_id": {trials[2]}, "reward": 1, "metrics": {{"latency_ms": 212}}}}']
    transport = httpx.ASGITransport(app=service_app)
    async with service_app.router.lifespan_context(service_app), httpx.AsyncClient(
            transport=transport, base_url="http://armlab.test", headers={"Authorization": f"Bearer {TOKEN}"}) as client:
        answer = await client.post("/tell/batch", content=f'{{"reports": [{", ".join(items)}]}}', headers=JSON_CONTENT)
    assert answer.status_code == 200, answer.text
    results = answer.json()["results"]
    assert [r["status"] for r in results] == ["rejected", "rejected", "accepted"]
    assert all("metrics.latency_ms" in r["message"] for r in results[:2])
    path = session.journal.path
    session.close()
    reopened = LiveSession.open(journal=path, registry=registry)
    assert reopened.experiment.counters.completed == 1
    reopened.close()
