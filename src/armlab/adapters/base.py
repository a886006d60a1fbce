"""Live reward sources: rewards come from the outside world and are awaited."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType
from collections.abc import Mapping
from typing import Any, ClassVar, Final, NamedTuple, Self

from armlab.errors import TrialFailed
from armlab.plugins.interfaces import Plugin

__all__ = ["DEFERRED", "LiveSource", "Measured", "RewardRejected", "Trial", "validate_reward"]


@dataclass(frozen=True)
class Trial:
    """One pull dispatched to a live pipeline."""

    id: int  # 0-based trial number within the run
    arm: int
    bandit: int = 0
    pull: int = 0  # how many times this arm was pulled before (0-based)
    #: what an ask of a sticky unit got: "new" (this trial was dispatched for it), "open" (the
    #: unit's trial still open), "repeat" (a closed trial's arm again), "rebound" (a new trial:
    #: the unit's arm was retired); docs/safeguards.md
    exposure: str = "new"


class Measured(NamedTuple):
    """A reward with named metrics besides it (``{"reward": r, "metrics": {...}}`` from a
    pipeline): the metrics are journaled and watched by ``[[guardrails]]`` (docs/safeguards.md)."""

    reward: Any
    metrics: Mapping[str, Any]


class _Deferred:
    """Type of :data:`DEFERRED` (a singleton marker)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DEFERRED"


#: What :meth:`LiveSource.pull` returns when the pipeline accepted the trial but will report
#: its reward later, through ``tell`` (the ask/tell service's report endpoint).
DEFERRED: Final = _Deferred()


class RewardRejected(TrialFailed):
    """A reward was NaN, infinite, not a number, or outside the source's declared range.

    Raised by :func:`validate_reward`.  A pipeline that produced such a value is not retried
    (running the trial again would cost a real trial for likely the same answer).
    """


def validate_reward(value: Any, reward_range: tuple[float, float], what: str = "reward") -> float:
    """Return ``value`` as a float, or raise :class:`RewardRejected` saying why it is unusable.

    Accepts ints and floats (not bools, not strings: a report must say what it means);
    rejects NaN, infinities and values outside ``reward_range`` (inclusive).  ``what`` names
    the value in the message (a report's named metrics are checked the same way).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RewardRejected(f"{what} must be a number, got {type(value).__name__} {_short(value)}")
    try:
        reward = float(value)
    except OverflowError:  # an int past the largest float (JSON may carry 10**309)
        raise RewardRejected(f"{what} must be a finite number, got an integer too large for a float: "
                             f"{_short(value)}") from None
    if not math.isfinite(reward):
        raise RewardRejected(f"{what} must be a finite number, got {reward!r}")
    low, high = reward_range
    if not low <= reward <= high:
        raise RewardRejected(f"{what} {reward!r} is outside the declared range [{low}, {high}]")
    return reward


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class LiveSource(Plugin, ABC):
    """A reward source backed by a real pipeline, used as an async context manager.

    :meth:`pull` returns the reward of one trial, :data:`DEFERRED` when the reward will be
    reported later through ``tell``, or raises :class:`~armlab.errors.TrialFailed` when the
    trial produced none; the orchestrator records either as an outcome and goes on.  Live
    sources have no truth, so oracle policies refuse them.
    """

    reward_range: ClassVar[tuple[float, float]] = (-float("inf"), float("inf"))
    #: Rewards come from the outside world (what the plugin registry asks a source class).
    live: ClassVar[bool] = True
    #: False for sources whose trials are handed out by ``ask`` (the HTTP service or the
    #: Python ask/tell API) instead of being run by armlab through :meth:`pull`.
    runs_trials: ClassVar[bool] = True
    #: True when :meth:`pull` may answer :data:`DEFERRED`: the reward is reported later
    #: through ``tell``, so the experiment must run behind the ask/tell service.
    defers_rewards: bool = False

    @property
    @abstractmethod
    def n_arms(self) -> int:
        """Number of arms."""

    @property
    def arm_names(self) -> list[str]:
        """A display name per arm (default: the arm index)."""
        return [str(i) for i in range(self.n_arms)]

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    @abstractmethod
    async def pull(self, trial: Trial) -> float | Measured | _Deferred:
        """Run one trial and return its reward, the reward with metrics (:class:`Measured`),
        or :data:`DEFERRED`."""
