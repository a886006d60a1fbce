"""``command``: run an external program per trial and read the reward from its output."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from pydantic import Field

from armlab.adapters.base import Trial
from armlab.adapters.common import AdapterParams, AdapterSource, parse_reward_text
from armlab.errors import TrialFailed

__all__ = ["Command"]

PLACEHOLDERS = ("trial_id", "arm", "arm_name", "bandit", "pull", "attempt")


class CommandParams(AdapterParams):
    command: list[str] = Field(
        min_length=1,
        description="program and arguments; {trial_id} {arm} {arm_name} {bandit} {pull} {attempt} "
        "in an argument are replaced by the trial's values",
    )
    cwd: str | None = Field(None, description="working directory (default: the current one)")
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables")
    stderr_tail: int = Field(2000, ge=0, le=100_000, description="characters of stderr kept in a failure reason")


class Command(AdapterSource):
    """One process per trial: ``command`` with the trial's values as arguments and environment.

    The trial is passed both ways: placeholders in the arguments, and the environment
    variables ``ARMLAB_TRIAL_ID``, ``ARMLAB_ARM``, ``ARMLAB_ARM_NAME``, ``ARMLAB_BANDIT``,
    ``ARMLAB_PULL`` and ``ARMLAB_ATTEMPT`` (0 first, 1 for the first retry...).  The reward
    is the whole standard output read as JSON (a number, or an object with ``reward``; an
    object with ``error`` fails the trial), or else its last non-empty line.  A non-zero
    exit status, unreadable output or a timeout fail the attempt; the reason carries the
    tail of standard error.  The process runs in its own session, and on timeout or
    shutdown its whole process group is killed.  If armlab itself is killed (SIGKILL), a
    running command finishes on its own and its answer is lost: the resumed run runs that
    trial again, so a command should tolerate being run twice for one trial id.
    """

    name = "command"
    Params = CommandParams
    params: CommandParams

    async def run_once(self, trial: Trial, attempt: int) -> Any:
        values = {key: str(value) for key, value in {**self.describe(trial), "attempt": attempt}.items()}
        argv = [_substitute(part, values) for part in self.params.command]
        env = {**os.environ, **self.params.env, **{f"ARMLAB_{k.upper()}": v for k, v in values.items()}}
        try:
            process = await anyio.open_process(
                argv, stdin=subprocess.DEVNULL, cwd=self.params.cwd, env=env, start_new_session=True
            )
        except OSError as exc:
            raise TrialFailed(f"cannot start {argv[0]!r}: {exc}") from None
        async with process:
            try:
                stdout, stderr = await _communicate(process)
            except BaseException:
                _kill_group(process)  # timeout or shutdown: no orphans left running
                raise
        err = stderr.decode(errors="replace")[-self.params.stderr_tail :] if self.params.stderr_tail else ""
        tail = f"; stderr: {err.strip()}" if err.strip() else ""
        if process.returncode != 0:
            raise TrialFailed(f"{argv[0]} exited with status {process.returncode}{tail}")
        try:
            return parse_reward_text(stdout.decode(errors="replace"))
        except TrialFailed as exc:
            raise TrialFailed(f"{exc}{tail}") from None


def _substitute(argument: str, values: dict[str, str]) -> str:
    for key in PLACEHOLDERS:
        argument = argument.replace("{" + key + "}", values[key])
    return argument


async def _communicate(process: Process) -> tuple[bytes, bytes]:
    chunks: tuple[list[bytes], list[bytes]] = ([], [])

    async def drain(stream: ByteReceiveStream | None, into: list[bytes]) -> None:
        if stream is not None:
            async for chunk in stream:
                into.append(chunk)

    async with anyio.create_task_group() as tg:
        tg.start_soon(drain, process.stdout, chunks[0])
        tg.start_soon(drain, process.stderr, chunks[1])
        await process.wait()
    return b"".join(chunks[0]), b"".join(chunks[1])


def _kill_group(process: Process) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
