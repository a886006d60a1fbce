"""The live adapters: callback, command (real processes), webhook, retries and reward checks."""

from __future__ import annotations

import json
import math
import os
import threading
import time

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from armlab.adapters.base import DEFERRED, RewardRejected, Trial, validate_reward
from armlab.adapters.callback import Callback
from armlab.adapters.command import Command
from armlab.adapters.webhook import Webhook
from armlab.errors import ConfigError, TrialFailed
from armlab.orchestrator.live.run import LiveRun
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import build_plan
from armlab.plugins.policies.ucb1 import UCB1
from armlab.plugins.policies.uniform import Uniform

TRIAL = Trial(id=7, arm=1, pull=3)


async def pull(source, trial=TRIAL):
    async with source:
        return await source.pull(trial)


# -- reward checks -----------------------------------------------------------------------------

@given(value=st.one_of(st.floats(), st.integers(), st.text(max_size=5), st.none(), st.booleans(),
                       st.lists(st.floats(), max_size=2)),
       low=st.floats(-10, 0), width=st.floats(0.1, 10))
def test_validate_reward_returns_a_usable_float_or_says_why(value, low, width):
    try:
        reward = validate_reward(value, (low, low + width))
    except RewardRejected as exc:
        assert str(exc).startswith("reward ")
    else:
        assert isinstance(reward, float) and math.isfinite(reward) and low <= reward <= low + width


# -- callback -----------------------------------------------------------------------------------

async def test_callback_sync_functions_run_in_a_bounded_number_of_threads():
    lock, running, peak = threading.Lock(), [0], [0]

    def assay(trial):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return {"reward": trial.arm / 10}

    source = Callback.from_function(assay, arms=3, threads=2)
    rewards = []
    async with source, anyio.create_task_group() as tg:
        for i in range(6):
            async def one(i=i):
                rewards.append(await source.pull(Trial(id=i, arm=i % 3)))
            tg.start_soon(one)
    assert sorted(rewards) == [0.0, 0.0, 0.1, 0.1, 0.2, 0.2] and peak[0] == 2


async def test_callback_errors_fail_the_trial_and_retries_back_off():
    calls = []

    async def flaky(trial):
        calls.append(trial.id)
        if len(calls) < 3:
            raise ConnectionError("instrument busy")
        return 0.5

    source = Callback.from_function(flaky, arms=2, retries=3, backoff=0.01)
    with capture_logs() as logs:
        assert await pull(source) == 0.5
    retries = [e for e in logs if e["event"] == "trial_retry"]
    assert [e["delay"] for e in retries] == [0.01, 0.02] and retries[0]["reason"] == "ConnectionError: instrument busy"

    calls.clear()
    stubborn = Callback.from_function(lambda trial: 1 / 0, arms=2, retries=1, backoff=0)
    with pytest.raises(TrialFailed, match=r"ZeroDivisionError: division by zero \(after 2 attempts\)"):
        await pull(stubborn)


async def test_callback_timeouts_and_rejected_rewards():
    async def slow(trial):
        await anyio.sleep(10)

    with pytest.raises(TrialFailed, match=r"attempt timed out after 0.05 s \(after 2 attempts\)"):
        await pull(Callback.from_function(slow, arms=2, timeout=0.05, retries=1, backoff=0))
    calls = []

    def out_of_range(trial):
        calls.append(1)
        return 2.0

    with pytest.raises(RewardRejected, match="outside the declared range"):
        await pull(Callback.from_function(out_of_range, arms=2, reward_max=1, retries=3))
    assert len(calls) == 1  # the pipeline answered: no retry
    with pytest.raises(TrialFailed, match="pipeline reported an error: no cells"):
        await pull(Callback.from_function(lambda t: {"error": "no cells"}, arms=2))


def test_callback_configuration_errors(registry):
    with pytest.raises(ConfigError, match="needs function = 'module:function'"):
        Callback({"arms": 2})
    with pytest.raises(ConfigError, match="cannot import function 'no_such_module:f'"):
        Callback({"arms": 2, "function": "no_such_module:f"})
    with pytest.raises(ConfigError, match="is a float, not a function"):
        Callback({"arms": 2, "function": "math:pi"})
    assert Callback({"arms": ["x", "y"], "function": "math:sqrt"}).arm_names == ["x", "y"]
    with pytest.raises(ValueError, match="arms must be at least 2"):
        Callback({"arms": 1, "function": "math:sqrt"})
    with pytest.raises(ValueError, match="must be smaller than reward_max"):
        Callback({"arms": 2, "function": "math:sqrt", "reward_min": 1, "reward_max": 0})


# -- command: real processes --------------------------------------------------------------------

@pytest.mark.system
async def test_command_passes_the_trial_and_reads_the_reward():
    script = 'echo "$ARMLAB_TRIAL_ID/$ARMLAB_ARM_NAME/$ARMLAB_PULL/$ARMLAB_ATTEMPT {trial_id} {arm_name}" >&2; echo log line; echo 0.{arm}'
    source = Command({"command": ["sh", "-c", script], "arms": ["a", "b"]})
    assert await pull(source) == 0.1
    json_source = Command({"command": ["sh", "-c", 'echo \'{"reward": 0.25, "note": "ok"}\''], "arms": 2})
    assert await pull(json_source) == 0.25


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("echo boom >&2; exit 3", r"sh exited with status 3; stderr: boom"),
        ("echo hello", r"cannot read a reward from the output's last line 'hello'"),
        ("true", r"the output is empty"),
        ("echo '{\"error\": \"no sample\"}'", r"the pipeline reported an error: no sample"),
        ("echo NaN", r"reward must be a finite number"),
        ("echo 7", r"outside the declared range"),
    ],
)
@pytest.mark.system
async def test_command_failures_carry_a_reason(script, message):
    source = Command({"command": ["sh", "-c", script], "arms": 2, "reward_min": 0, "reward_max": 1})
    with pytest.raises(TrialFailed, match=message):
        await pull(source)


@pytest.mark.system
async def test_command_cannot_start():
    with pytest.raises(TrialFailed, match="cannot start '/no/such/program'"):
        await pull(Command({"command": ["/no/such/program"], "arms": 2}))


@pytest.mark.timeout(30)
@pytest.mark.system
async def test_command_timeout_kills_the_whole_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    script = f"sleep 30 & echo $! > {pidfile}; wait"
    source = Command({"command": ["sh", "-c", script], "arms": 2, "timeout": 2.0})
    with pytest.raises(TrialFailed, match="attempt timed out after 2.0 s"):
        await pull(source)
    child = int(pidfile.read_text())
    for _ in range(100):  # the grandchild got SIGKILL with its group; wait until it is reaped
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split()[2] == "Z":  # a zombie: killed, its parent (init) reaps it
                break
        await anyio.sleep(0.05)
    else:
        pytest.fail("the command's child process survived the timeout")


# -- webhook (network replaced by httpx.MockTransport) ---------------------------------------------

def webhook(handler, **params):
    return Webhook({"url": "http://pipeline.test/run", "arms": 3, **params}, transport=httpx.MockTransport(handler))


async def test_webhook_posts_the_trial_and_reads_the_reward(monkeypatch):
    seen = []

    def handler(request):
        seen.append((json.loads(request.content), request.headers.get("authorization")))
        return httpx.Response(200, json={"reward": 0.75})

    monkeypatch.setenv("PIPELINE_TOKEN", "s3cret")
    assert await pull(webhook(handler, token_env="PIPELINE_TOKEN")) == 0.75
    assert seen == [({"trial_id": 7, "arm": 1, "arm_name": "1", "bandit": 0, "pull": 3, "attempt": 0},
                     "Bearer s3cret")]
    assert await pull(webhook(lambda r: httpx.Response(200, json=0.5))) == 0.5


async def test_webhook_failures_and_retries():
    answers = iter([httpx.Response(503, text="overloaded"), httpx.Response(200, json={"reward": 1})])
    assert await pull(webhook(lambda r: next(answers), retries=1, backoff=0)) == 1.0
    with pytest.raises(TrialFailed, match="answered HTTP 500: broken"):
        await pull(webhook(lambda r: httpx.Response(500, text="broken")))
    with pytest.raises(TrialFailed, match="not JSON"):
        await pull(webhook(lambda r: httpx.Response(200, text="<html>")))
    with pytest.raises(TrialFailed, match="without a reward"):
        await pull(webhook(lambda r: httpx.Response(200)))

    def refuse(request):
        raise httpx.ConnectError("connection refused")

    with pytest.raises(TrialFailed, match="failed: ConnectError: connection refused"):
        await pull(webhook(refuse))
    with pytest.raises(ConfigError, match="'NOT_SET_ANYWHERE' .token_env. is not set"):
        webhook(refuse, token_env="NOT_SET_ANYWHERE")


async def test_webhook_deferred_rewards():
    source = webhook(lambda r: httpx.Response(202, json={"status": "queued"}), reward_in_response=False)
    assert source.defers_rewards and await pull(source) is DEFERRED
    immediate = webhook(lambda r: httpx.Response(200, json={"reward": 0.5}), reward_in_response=False)
    assert await pull(immediate) == 0.5


def test_deferred_rewards_need_the_service(live, registry):
    config = live.config(source={"plugin": "webhook", "url": "http://pipeline.test/run", "reward_in_response": False})
    session = LiveSession.from_plan(build_plan(config, registry))
    with pytest.raises(ConfigError, match="armlab serve CONFIG --journal FILE"):
        session.live_run()


# -- the live driver with deferred reports and cancellation -------------------------------------

async def test_live_run_waits_for_deferred_reports_under_the_timeout(live):
    source = webhook(lambda r: httpx.Response(202), reward_in_response=False)
    exp = live.experiment(Uniform(), budget=4, in_flight=2)
    run = LiveRun(sources=[source], experiment=exp, timeout=0.5)

    async def reporter():
        while exp.counters.closed < 3:
            for trial in exp.pending_trials():
                if trial.id < 3:
                    exp.tell(trial.id, 1.0)  # what /tell does; trial 3 is never reported
            await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reporter)
        await run.run()
    statuses = sorted((o.trial.id, o.status) for o in run.outcomes)
    assert statuses == [(0, "reported"), (1, "reported"), (2, "reported"), (3, "timed_out")]
    assert exp.summary()["completed"] == 3 and exp.summary()["failed"] == 1


async def test_cancelled_trials_stay_pending(live):
    async def never(trial):
        await anyio.sleep_forever()

    exp = live.experiment(UCB1(), budget=5, in_flight=2)
    run = LiveRun(sources=[Callback.from_function(never, arms=3)], experiment=exp)
    with anyio.move_on_after(0.1):
        await run.run()
    assert [t.id for t in exp.pending_trials()] == [0, 1] and run.outcomes == []
    assert "in_flight=2" in repr(run)
