"""``command``: run an external program per trial and read the reward from its output."""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import ExitStack, suppress
from typing import Annotated, Any, Self

import anyio
from anyio.abc import Process
from pydantic import Field, ValidationInfo, field_validator

from armlab.adapters.base import Trial
from armlab.adapters.common import AdapterSource, AnswerParams, BoundedAnswer, parse_reward_text
from armlab.config_paths import ConfigDir, path_base, resolve_path
from armlab.errors import TrialFailed

__all__ = ["Command"]

PLACEHOLDERS = ("trial_id", "arm", "arm_name", "bandit", "pull", "attempt")


class CommandParams(AnswerParams):
    command: list[str] = Field(
        min_length=1,
        description="program and arguments; {trial_id} {arm} {arm_name} {bandit} {pull} {attempt} "
        "in an argument are replaced by the trial's values; a program given as a relative path "
        "(./run.py, scripts/run) is relative to the config file's directory, a bare name is looked up "
        "on PATH, arguments are passed as written",
    )
    cwd: Annotated[str | None, ConfigDir] = Field(
        None, description="working directory (relative to the config file's directory; default: the current one)"
    )
    env: dict[str, str] = Field(default_factory=dict, description="extra environment variables")
    stderr_tail: int = Field(2000, ge=0, le=100_000, description="characters of stderr kept in a failure reason")

    @field_validator("command")
    @classmethod
    def _program_next_to_the_config(cls, command: list[str], info: ValidationInfo) -> list[str]:
        """A program named by a relative path (with a slash) is the one next to the config;
        a bare name (``python3``) stays a PATH lookup."""
        base = path_base(info)
        program = command[0]
        if base is None or "/" not in program or os.path.isabs(program):
            return command
        try:
            return [resolve_path(program, base, "file"), *command[1:]]
        except ValueError as exc:
            raise ValueError(f"program {exc}") from None


class Command(AdapterSource):
    """One process per trial: ``command`` with the trial's values as arguments and environment.

    The trial is passed both ways: placeholders in the arguments, and the environment
    variables ``ARMLAB_TRIAL_ID``, ``ARMLAB_ARM``, ``ARMLAB_ARM_NAME``, ``ARMLAB_BANDIT``,
    ``ARMLAB_PULL`` and ``ARMLAB_ATTEMPT`` (0 first, 1 for the first retry...).  The reward
    is the whole standard output read as JSON (a number, or an object with ``reward`` and
    optionally ``metrics``, an object of name to number, for ``[[guardrails]]``; an
    object with ``error`` fails the trial), or else its last non-empty line.  A non-zero
    exit status, unreadable output or a timeout fail the attempt; the reason carries the
    tail of standard error (its last ``stderr_tail`` characters, all that is kept).  The
    answer is read when the program exits: a background process it started is not waited
    for, even if it keeps standard output open.  Standard output over ``max_answer_bytes``
    fails the attempt and the program is killed without being read further.  The process
    runs in its own session, and on timeout or shutdown its whole process group is killed.
    If armlab itself is killed (SIGKILL), a running command finishes on its own and its
    answer is lost: the resumed run runs that trial again, so a command should tolerate
    being run twice for one trial id.
    """

    name = "command"
    Params = CommandParams
    params: CommandParams

    async def run_once(self, trial: Trial, attempt: int) -> Any:
        values = {key: str(value) for key, value in {**self.describe(trial), "attempt": attempt}.items()}
        argv = [_substitute(part, values) for part in self.params.command]
        env = {**os.environ, **self.params.env, **{f"ARMLAB_{k.upper()}": v for k, v in values.items()}}
        answer = BoundedAnswer(self.params.max_answer_bytes)
        errors = _Tail(4 * self.params.stderr_tail)  # UTF-8 takes at most 4 bytes a character
        with ExitStack() as pipes:
            try:
                stdout = pipes.enter_context(_Pipe(answer))
                stderr = pipes.enter_context(_Pipe(errors))
                process = await anyio.open_process(
                    argv, stdin=subprocess.DEVNULL, stdout=stdout.write_end, stderr=stderr.write_end,
                    cwd=self.params.cwd, env=env, start_new_session=True,
                )
            except OSError as exc:
                raise TrialFailed(f"cannot start {argv[0]!r}: {exc}") from None
            stdout.close_write_end()  # the program has its own copies
            stderr.close_write_end()
            async with process:
                try:
                    await _read_until_exit(process, stdout, stderr)
                except BaseException:
                    _kill_group(process)  # timeout or shutdown: no orphans left running
                    raise
                if not answer.complete:
                    _kill_group(process)  # its answer is refused: stop it rather than wait
        err = errors.data.decode(errors="replace")[-self.params.stderr_tail :] if self.params.stderr_tail else ""
        tail = f"; stderr: {err.strip()}" if err.strip() else ""
        output = answer.value()
        if process.returncode != 0:
            raise TrialFailed(f"{argv[0]} exited with status {process.returncode}{tail}")
        try:
            return parse_reward_text(output.decode(errors="replace"))
        except TrialFailed as exc:
            raise TrialFailed(f"{exc}{tail}") from None


def _substitute(argument: str, values: dict[str, str]) -> str:
    for key in PLACEHOLDERS:
        argument = argument.replace("{" + key + "}", values[key])
    return argument


class _Tail:
    """The last ``size`` bytes of a stream: a failure reason quotes the end of stderr."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data = bytearray()

    def add(self, chunk: bytes) -> bool:
        self.data += chunk
        del self.data[: max(len(self.data) - self.size, 0)]
        return True


class _Pipe:
    """A pipe the program writes to and armlab reads without blocking, into ``sink``.

    ``sink.add(chunk)`` keeps each chunk and answers False to stop the reading (an answer
    over its limit).  Both ends are armlab's file descriptors, not the event loop's
    subprocess pipes, so reading can end when the program exits (see :func:`_read_until_exit`).
    """

    def __init__(self, sink: BoundedAnswer | _Tail) -> None:
        self.sink = sink
        self.read_end, write_end = os.pipe()
        self.write_end: int | None = write_end
        os.set_blocking(self.read_end, False)
        self.open = True  # False at end of file, or once the sink refused more
        self.refused = False  # the sink refused more: stop the reading and the program

    def read_available(self) -> None:
        """Read what the pipe holds now, without waiting for more."""
        while self.open:
            try:
                chunk = os.read(self.read_end, 1 << 16)
            except BlockingIOError:
                return
            if not chunk:
                self.open = False  # end of file: every writer has closed the pipe
            elif not self.sink.add(chunk):
                self.open, self.refused = False, True

    async def drain(self) -> None:
        """Read as the data comes, until end of file or until the sink refuses more."""
        self.read_available()
        while self.open:
            await anyio.wait_readable(self.read_end)
            self.read_available()

    def close_write_end(self) -> None:
        if self.write_end is not None:
            os.close(self.write_end)
            self.write_end = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close_write_end()
        os.close(self.read_end)


async def _read_until_exit(process: Process, *pipes: _Pipe) -> None:
    """Read ``pipes`` while the program runs, then what it wrote before it exited.

    The program's exit ends the reading, not the end of file: a background process it
    started (``sleep 30 &``) may keep the pipes open long after.  Everything the program
    wrote is in the pipes once it has exited, so a last read that does not wait gets it
    all.  Reading stops at once when a pipe's sink refuses more (an answer over its limit).
    """
    async with anyio.create_task_group() as tg:

        async def drain(pipe: _Pipe) -> None:
            await pipe.drain()
            if pipe.refused:
                tg.cancel_scope.cancel()

        for pipe in pipes:
            tg.start_soon(drain, pipe)
        await process.wait()
        tg.cancel_scope.cancel()
    for pipe in pipes:
        pipe.read_available()


def _kill_group(process: Process) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
