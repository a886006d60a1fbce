"""Misbehaving pipelines: callbacks that raise what ends programs or never return, commands
that leave a background process holding their output, and answers too large to hold.

Each of these once stopped or hung a whole live run (or let one trial take all memory);
here each is one failed trial.  The process tests run a real ``armlab run`` on a callback
module written to ``tmp_path``; their timeouts keep a hung run from hanging CI.
"""

from __future__ import annotations

import re

import asyncio
import os
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import httpx
import pytest

from armlab.adapters.base import Trial
from armlab.adapters.callback import Callback
from armlab.adapters.command import Command
from armlab.adapters.webhook import Webhook
from armlab.errors import TrialFailed

TRIAL = Trial(id=7, arm=1, pull=3)
ARMLAB_RUN = [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "run"]
MIB = 1 << 20


async def pull(source, trial=TRIAL):
    async with source:
        return await source.pull(trial)


def armlab_run(tmp_path: Path, module: str, source: str = "", status: int = 0) -> str:
    """The output of ``armlab run --journal`` on a callback experiment (budget 6, 2 in flight):
    ``module`` is the callback's code, ``source`` extra lines of the [source] table.  Fails the
    test unless the run exits with ``status`` within 60 s (a liveness bound); a run in which
    every trial failed exits with 2."""
    (tmp_path / "pipeline.py").write_text(module)
    config = tmp_path / "experiment.toml"
    config.write_text(
        'name = "misbehaving"\nseed = 1\n[problem]\nobjective = "best-arm"\nbudget = 6\n'
        f'[source]\nplugin = "callback"\nfunction = "pipeline:assay"\narms = 2\n{source}\n'
        '[feedback]\nin_flight = 2\n[[policies]]\nplugin = "uniform"\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    try:
        result = subprocess.run(
            [*ARMLAB_RUN, str(config), "--journal", str(tmp_path / "journal.sqlite")],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"armlab run did not exit within 60 s; output so far:\n{exc.stdout}\n{exc.stderr}")
    assert result.returncode == status, result.stderr[-3000:]
    return result.stdout + result.stderr


# -- callbacks raising what ends programs -------------------------------------------------------

async def test_a_cancelled_error_raised_by_the_function_fails_the_trial():
    async def refuses(trial):
        raise asyncio.CancelledError

    def refuses_in_thread(trial):
        raise asyncio.CancelledError

    for function in (refuses, refuses_in_thread):
        with pytest.raises(TrialFailed, match=r"^CancelledError \(raised by the function: it fails this trial"):
            await pull(Callback.from_function(function, arms=2))


async def test_a_cancelled_trial_is_still_cancelled():
    async def slow(trial):
        await anyio.sleep(30)

    with anyio.move_on_after(0.05) as scope:  # the run's shutdown: not a failed trial
        await pull(Callback.from_function(slow, arms=2))
    assert scope.cancelled_caught


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_system_exit_and_keyboard_interrupt_from_the_function_fail_the_trial(kind):
    def stop(trial):
        raise SystemExit(3) if trial.id else KeyboardInterrupt

    async def stop_async(trial):
        stop(trial)

    source = Callback.from_function(stop if kind == "sync" else stop_async, arms=2)
    async with source:
        with pytest.raises(TrialFailed, match=r"^KeyboardInterrupt \(raised by the function: it fails this trial "
                                              r"and does not stop the run\)$"):
            await source.pull(Trial(id=0, arm=0))
        with pytest.raises(TrialFailed, match=r"^SystemExit: 3 \(raised by the function"):
            await source.pull(Trial(id=1, arm=1))


@pytest.mark.timeout(120)
@pytest.mark.system
def test_a_run_goes_on_when_the_callback_raises_cancelled_error(tmp_path):
    module = "import asyncio\n\nasync def assay(trial):\n    raise asyncio.CancelledError\n"
    output = armlab_run(tmp_path, module, status=2)  # every trial failed, none left pending
    assert "none of its 6 trials returned a result (6 failed, 0 abandoned)" in output


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["def", "async def"])
@pytest.mark.system
def test_a_run_goes_on_when_the_callback_raises_system_exit_or_keyboard_interrupt(tmp_path, kind):
    module = (
        f"{kind} assay(trial):\n"
        "    if trial.id % 3 == 0:\n        raise SystemExit(3)\n"
        "    if trial.id % 3 == 1:\n        raise KeyboardInterrupt\n"
        "    return 0.5\n"
    )
    assert re.search(r"uniform +6 +2 +4 ", armlab_run(tmp_path, module))  # trials, completed, failed


# -- callbacks that never return ----------------------------------------------------------------

async def test_threads_bound_the_threads_in_use_and_a_stuck_call_keeps_its_thread():
    calls, release = [], threading.Event()

    def stuck(trial):
        calls.append(trial.id)
        release.wait(30)  # the test releases it; 30 s bounds a failing test
        return 0.5

    source = Callback.from_function(stuck, arms=2, threads=2, timeout=0.5)
    try:
        async with source:
            with pytest.raises(TrialFailed, match=r"^attempt timed out after 0.5 s$"):
                await source.pull(Trial(id=0, arm=0))
            for trial_id in (1, 2):  # trial 2 waits for a thread: both are still held
                with pytest.raises(TrialFailed, match=r"all 2 threads are held by calls that have not returned "
                                                      r".*make the function return, or raise threads"):
                    await source.pull(Trial(id=trial_id, arm=1))
            assert calls == [0, 1]
            release.set()
            with anyio.fail_after(20):  # the returned calls give their threads back
                while any(t.name.startswith("armlab callback") for t in threading.enumerate()):
                    await anyio.sleep(0.01)
            assert await source.pull(Trial(id=3, arm=0)) == 0.5
    finally:
        release.set()


@pytest.mark.timeout(120)
@pytest.mark.system
def test_a_run_exits_although_its_synchronous_callback_never_returns(tmp_path):
    module = (
        "import os, threading\n\n"
        "def assay(trial):\n"
        "    with open(os.path.join(os.path.dirname(__file__), 'calls'), 'a') as calls:\n"
        "        calls.write('.')\n"
        "    threading.Event().wait()  # never returns\n"
    )
    output = armlab_run(tmp_path, module, "timeout = 0.3\nthreads = 2", status=2)
    assert "none of its 6 trials returned a result (6 failed, 0 abandoned)" in output
    assert (tmp_path / "calls").read_text() == ".."  # two threads, each held by its stuck call


# -- commands -------------------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.system
async def test_command_answer_is_read_when_the_program_exits_not_when_its_output_closes(tmp_path):
    pidfile = tmp_path / "background.pid"
    big = shlex.quote(sys.executable) + " -c 'print(\"x\" * 200000)'"  # more than a pipe holds
    script = f"sleep 30 & echo $! > {shlex.quote(str(pidfile))}; {big}; echo 0.5"
    source = Command({"command": ["sh", "-c", script], "arms": 2, "timeout": 20})
    try:
        assert await pull(source) == 0.5  # the background sleep still holds stdout open
    finally:
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


PRODUCER = """
import sys
sys.stdout.write('{"reward": 0.5, "pad": "')
for _ in range(1000):
    sys.stdout.write("x" * 65536)
    sys.stdout.flush()
    with open(sys.argv[1], "a") as progress:
        progress.write(".")
sys.stdout.write('"}')
"""


@pytest.mark.timeout(60)
@pytest.mark.system
async def test_command_output_over_the_cap_fails_the_trial_and_stops_the_program(tmp_path):
    progress = tmp_path / "progress"
    source = Command({"command": [sys.executable, "-c", PRODUCER, str(progress)], "arms": 2, "timeout": 30})
    with pytest.raises(TrialFailed, match=r"^the answer is larger than 1048576 bytes; raise max_answer_bytes"):
        await pull(source)
    assert len(progress.read_text()) < 1000  # the program was killed (and waited for) far from its 64 MiB


@pytest.mark.system
async def test_max_answer_bytes_is_the_largest_answer_read():
    with pytest.raises(TrialFailed, match="larger than 4 bytes"):
        await pull(Command({"command": ["echo", "0.25"], "arms": 2, "max_answer_bytes": 4}))
    assert await pull(Command({"command": ["echo", "0.25"], "arms": 2, "max_answer_bytes": 5})) == 0.25


# -- webhooks -------------------------------------------------------------------------------------

def webhook(handler, **params):
    return Webhook({"url": "http://pipeline.test/run", "arms": 3, **params}, transport=httpx.MockTransport(handler))


async def test_webhook_body_over_the_cap_fails_the_trial_unread():
    sent = []

    async def body():
        yield b'{"reward": 0.5, "pad": "'
        for _ in range(512):  # 32 MiB
            sent.append(1)
            yield b"x" * 65536
        yield b'"}'

    with pytest.raises(TrialFailed, match=r"^the answer is larger than 1048576 bytes; raise max_answer_bytes"):
        await pull(webhook(lambda request: httpx.Response(200, content=body())))
    assert len(sent) <= MIB // 65536 + 1  # reading stopped at the cap
    with pytest.raises(TrialFailed, match="larger than 10 bytes"):
        await pull(webhook(lambda request: httpx.Response(200, json={"reward": 0.5}), max_answer_bytes=10))
    with pytest.raises(TrialFailed, match="larger than 10 bytes"):
        await pull(webhook(lambda request: httpx.Response(202, json={"reward": 0.5}),
                           max_answer_bytes=10, reward_in_response=False))
    assert await pull(webhook(lambda request: httpx.Response(200, json={"reward": 0.5}), max_answer_bytes=20)) == 0.5
    with pytest.raises(TrialFailed, match=r"answered HTTP 500: x{500}$"):  # an error page is quoted, not refused
        await pull(webhook(lambda request: httpx.Response(500, text="x" * 5000), max_answer_bytes=1000))
