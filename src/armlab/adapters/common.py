"""What the built-in live adapters share: arms, a declared reward range, timeouts and retries.

:class:`ArmsParams` describes the arms and the range every reward must lie in (rewards
outside it, NaN, infinities and non-numbers are rejected with a reason).
:class:`AdapterSource` runs each trial as one or more *attempts*: every attempt is bounded
by ``timeout``; a failed or timed-out attempt is retried up to ``retries`` times after an
exponential backoff (``backoff``, doubling, capped at ``backoff_max``).  A rejected reward is
not retried: the pipeline answered, and another attempt would cost another real trial.
:class:`AnswerParams` and :class:`BoundedAnswer` bound what is read of an answer (a
program's output, a response body): past ``max_answer_bytes`` reading stops and the trial fails.
"""

from __future__ import annotations

import json
import math
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

import anyio
from pydantic import Field, model_validator

from armlab.adapters.base import DEFERRED, LiveSource, Measured, RewardRejected, Trial, _Deferred, validate_reward
from armlab.errors import TrialFailed
from armlab.log import get_logger
from armlab.plugins.interfaces import PluginParams

__all__ = [
    "AdapterParams",
    "AdapterSource",
    "AnswerParams",
    "ArmsParams",
    "ArmsSource",
    "BoundedAnswer",
    "parse_reward_text",
    "reward_of",
]

log = get_logger(__name__)


class ArmsParams(PluginParams):
    arms: int | list[str] = Field(
        description="number of arms (>= 2), or their names (the arm index is the position)"
    )
    reward_min: float | None = Field(None, description="smallest acceptable reward (default: unbounded)")
    reward_max: float | None = Field(None, description="largest acceptable reward (default: unbounded)")

    @model_validator(mode="after")
    def _check(self) -> ArmsParams:
        if isinstance(self.arms, int) and self.arms < 2:
            raise ValueError(f"arms must be at least 2, got {self.arms}")
        if isinstance(self.arms, list):
            if len(self.arms) < 2:
                raise ValueError(f"give at least 2 arm names, got {len(self.arms)}")
            if len(set(self.arms)) != len(self.arms):
                raise ValueError("arm names must be distinct")
        low, high = self.reward_range
        if not (low < high and not math.isnan(low) and not math.isnan(high)):
            raise ValueError(f"reward_min ({self.reward_min}) must be smaller than reward_max ({self.reward_max})")
        return self

    @property
    def reward_range(self) -> tuple[float, float]:
        low = -math.inf if self.reward_min is None else self.reward_min
        high = math.inf if self.reward_max is None else self.reward_max
        return low, high


class ArmsSource(LiveSource):
    """A live source whose arms and reward range come from :class:`ArmsParams`."""

    Params = ArmsParams
    params: ArmsParams

    def __init__(self, params: PluginParams | Mapping[str, Any] | None = None) -> None:
        super().__init__(params)
        self.reward_range = self.params.reward_range  # type: ignore[misc]  # per instance

    @property
    def n_arms(self) -> int:
        arms = self.params.arms
        return arms if isinstance(arms, int) else len(arms)

    @property
    def arm_names(self) -> list[str]:
        arms = self.params.arms
        return [str(i) for i in range(arms)] if isinstance(arms, int) else list(arms)

    def describe(self, trial: Trial) -> dict[str, Any]:
        """The trial as the outside world sees it (JSON payload, environment, placeholders)."""
        return {
            "trial_id": trial.id,
            "arm": trial.arm,
            "arm_name": self.arm_names[trial.arm],
            "bandit": trial.bandit,
            "pull": trial.pull,
        }


class AdapterParams(ArmsParams):
    timeout: float | None = Field(None, gt=0, description="seconds one attempt may take (default: no limit)")
    retries: int = Field(0, ge=0, le=20, description="extra attempts after a failed or timed-out one")
    backoff: float = Field(0.5, ge=0, description="seconds before the first retry; doubles for each further one")
    backoff_max: float = Field(30.0, ge=0, description="longest wait between two attempts")


class AdapterSource(ArmsSource):
    """A source that runs trials itself: :meth:`run_once` once, and again on failure."""

    Params = AdapterParams
    params: AdapterParams

    async def pull(self, trial: Trial) -> float | _Deferred:
        p = self.params
        reason = ""
        for attempt in range(p.retries + 1):
            if attempt:
                delay = min(p.backoff * 2 ** (attempt - 1), p.backoff_max)
                log.info("trial_retry", trial=trial.id, attempt=attempt + 1, reason=reason, delay=delay)
                await anyio.sleep(delay)
            try:
                with anyio.fail_after(p.timeout if p.timeout is not None else math.inf):
                    value = await self.run_once(trial, attempt)
            except RewardRejected:
                raise
            except TrialFailed as exc:
                reason = str(exc)
                continue
            except TimeoutError:
                reason = f"attempt timed out after {p.timeout} s{self.timeout_detail()}"
                continue
            if isinstance(value, Measured):
                return Measured(validate_reward(value.reward, self.reward_range), value.metrics)
            return value if value is DEFERRED else validate_reward(value, self.reward_range)
        attempts = f" (after {p.retries + 1} attempts)" if p.retries else ""
        raise TrialFailed(reason + attempts)

    @abstractmethod
    async def run_once(self, trial: Trial, attempt: int) -> Any:
        """Run the trial once (``attempt`` counts from 0); return the reward (a number or
        what :func:`reward_of` reads), :data:`DEFERRED`, or raise TrialFailed."""

    def timeout_detail(self) -> str:
        """Words added to a timed-out attempt's reason when the source knows more (default none)."""
        return ""


class AnswerParams(AdapterParams):
    max_answer_bytes: int = Field(
        1 << 20,
        ge=1,
        description="largest answer read (a program's output, a response body), in bytes; "
        "a larger one fails the trial",
    )


class BoundedAnswer:
    """The bytes of one answer, kept up to ``limit``: past it, reading stops and the trial fails.

    An answer is held in memory until it is parsed, so without a bound a runaway pipeline
    (a program printing in a loop, a server streaming a file) could take all of armlab's memory.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.complete = True  # False once more than `limit` bytes arrived

    def add(self, chunk: bytes) -> bool:
        """Keep ``chunk`` (up to the limit); False once the answer is over it: stop reading."""
        room = self.limit - len(self.data)
        self.data += chunk[:room]
        if len(chunk) > room:
            self.complete = False
        return self.complete

    def value(self) -> bytes:
        """The whole answer, or TrialFailed naming the parameter when it is over the limit."""
        if not self.complete:
            raise TrialFailed(
                f"the answer is larger than {self.limit} bytes; raise max_answer_bytes if such answers are expected"
            )
        return bytes(self.data)


def reward_of(value: Any) -> Any:
    """The reward in a pipeline's answer: a number, or a JSON object with a ``reward`` field
    and optionally ``metrics`` (an object of name to number: then a :class:`Measured`).

    An object with an ``error`` field (and no reward) is a failed trial carrying that error.
    """
    if isinstance(value, Mapping):
        if "reward" in value:
            metrics = value.get("metrics")
            return value["reward"] if metrics is None else Measured(value["reward"], metrics)
        if "error" in value:
            raise TrialFailed(f"the pipeline reported an error: {str(value['error'])[:500]}")
        raise TrialFailed(f"the answer has no 'reward' field: {sorted(value)[:10]}")
    return value


def parse_reward_text(text: str) -> Any:
    """Read a reward from program output: the whole text as JSON, else its last non-empty line."""
    text = text.strip()
    if not text:
        raise TrialFailed("the output is empty; print the reward (a number or a JSON object)")
    for candidate in (text, text.splitlines()[-1].strip()):
        try:
            return reward_of(json.loads(candidate))
        except json.JSONDecodeError:
            continue
    raise TrialFailed(f"cannot read a reward from the output's last line {text.splitlines()[-1][:200]!r}")
