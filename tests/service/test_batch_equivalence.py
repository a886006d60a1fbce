"""``/ask/batch`` and ``/tell/batch`` give exactly what the same asks and tells one by one give:
the same answers and the same journal (every field but the time), for a deterministic policy
and a randomized one (whose journaled propensities are estimated from its keyed draws)."""

from __future__ import annotations

import dataclasses
from contextlib import closing

import httpx
import pytest

from armlab.orchestrator.journal.store import Journal
from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app

TOKEN = "b" * 32


async def run(journal, config, registry, batched: bool) -> list:
    """Answers of three rounds of 6 asks then 6 tells (a key and a unit among them), as batches
    or one request each."""
    session = LiveSession.open(journal=journal, config=config, registry=registry)
    app = create_app(session, token=TOKEN)
    answers = []
    with closing(session):
        async with app.router.lifespan_context(app), httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app), base_url="http://armlab.test",
                headers={"Authorization": f"Bearer {TOKEN}"}) as client:
            for round_ in range(3):
                keys, units = [f"k{round_}"] + [None] * 5, [f"u{round_}"] + [None] * 5
                if batched:
                    asked = (await client.post("/ask/batch", json={"count": 6, "keys": keys[:1],
                                                                   "units": units[:1]})).json()
                    trials = asked.pop("trials")
                    answers.append(asked)
                else:
                    trials = [(await client.post("/ask", json={k: v for k, v in (("key", key), ("unit", unit))
                                                               if v is not None})).json()
                              for key, unit in zip(keys, units, strict=True)]
                answers.extend(trials)
                reports = [{"trial_id": t["trial_id"], "reward": (t["arm"] + t["pull"]) % 2} for t in trials]
                reports.append({"trial_id": trials[0]["trial_id"], "reward": 0.5})  # a conflict, or a duplicate
                if batched:
                    answers.extend((await client.post("/tell/batch", json={"reports": reports})).json()["results"])
                else:
                    for report in reports:
                        response = await client.post("/tell", json=report)
                        answers.append(response.json() if response.status_code == 200
                                       else {"trial_id": report["trial_id"], "status": "conflict",
                                             "message": response.json()["detail"]})
    return answers


def journaled(path) -> list:
    with Journal.open(path) as journal:
        return [dataclasses.replace(event, at=0.0) for event in journal.events()]


@pytest.mark.parametrize("policy", ["ucb1", "thompson"])
async def test_batches_answer_and_journal_as_the_same_requests_one_by_one(live, registry, tmp_path, policy):
    config = live.config(feedback={"in_flight": 6}, policies=[{"plugin": policy}])
    batched = await run(tmp_path / "batched.sqlite", config, registry, batched=True)
    one_by_one = await run(tmp_path / "single.sqlite", config, registry, batched=False)
    states = [answer for answer in batched if set(answer) == {"state"}]
    assert [answer for answer in batched if set(answer) != {"state"}] == one_by_one and len(states) == 3
    events = journaled(tmp_path / "batched.sqlite")
    assert events == journaled(tmp_path / "single.sqlite") and len(events) == 36
    dispatches = [event for event in events if event.kind == "dispatch"]
    assert all(event.propensity is not None for event in dispatches)
    assert {event.propensity_draws is None for event in dispatches} == {policy == "ucb1"}


async def test_a_batch_selects_once_where_the_policys_choice_holds(live, registry, tmp_path, monkeypatch):
    """UCB1 warm, with lowest-index ties, holds its choice through a batch of asks
    (``Policy.choice_holds``): the batched run above selects fewer times, to the same answers."""
    from armlab.plugins.policies.ucb1 import UCB1

    selects = []
    original = UCB1.select

    def counted(self, stats):
        selects.append(1)
        return original(self, stats)

    monkeypatch.setattr(UCB1, "select", counted)
    config = live.config(feedback={"in_flight": 6}, policies=[{"plugin": "ucb1"}])
    batched = await run(tmp_path / "batched.sqlite", config, registry, batched=True)
    in_batches = len(selects)
    one_by_one = await run(tmp_path / "single.sqlite", config, registry, batched=False)
    assert [answer for answer in batched if set(answer) != {"state"}] == one_by_one
    asked_singly = len(selects) - in_batches
    assert asked_singly - in_batches == 10, (in_batches, asked_singly)  # rounds 2 and 3 select once, not 6 times
