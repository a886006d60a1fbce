"""Live reward sources: rewards come from the outside world and are awaited."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import TracebackType
from typing import ClassVar, Self

from armlab.plugins.interfaces import Plugin

__all__ = ["LiveSource", "Trial"]


@dataclass(frozen=True)
class Trial:
    """One pull dispatched to a live pipeline."""

    id: int  # 0-based trial number within the run
    arm: int
    bandit: int = 0
    pull: int = 0  # how many times this arm was pulled before (0-based)


class LiveSource(Plugin, ABC):
    """A reward source backed by a real pipeline, used as an async context manager.

    :meth:`pull` returns the reward of one trial, or raises
    :class:`~armlab.errors.TrialFailed` when the trial produced none; the orchestrator
    records either as an outcome and goes on.  Live sources have no truth, so oracle
    policies refuse them.
    """

    reward_range: ClassVar[tuple[float, float]] = (-float("inf"), float("inf"))

    @property
    @abstractmethod
    def n_arms(self) -> int:
        """Number of arms."""

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
    async def pull(self, trial: Trial) -> float:
        """Run one trial and return its reward."""
