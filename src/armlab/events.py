"""The typed events an experiment emits, and how listeners receive them.

One schema serves every consumer: the structured log (the CLI turns each event into one
structlog line), the service's ``GET /events`` stream, the dashboard, and any callable a
user registers with ``add_listener``.  Each event is a small frozen dataclass whose class
attribute ``kind`` names it; :meth:`ExperimentEvent.to_dict` gives the JSON form
``{"event": kind, **fields}``.

Live runs emit every event below.  Monte Carlo runs emit aggregated events only
(:class:`CheckpointReached` per policy and checkpoint, :class:`PolicyFinished`): one event
per pull of thousands of replicas would cost more than the pulls.

``trials`` always counts the trials dispatched so far in the run (live: the one replica;
Monte Carlo: per replica, since every replica is at the same checkpoint count; at
:class:`PolicyFinished`, the mean over replicas), never a total over replicas.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "ArmEliminated",
    "ArmRetired",
    "AttritionFlagged",
    "BanditConfident",
    "CheckpointReached",
    "EVENT_TYPES",
    "ExperimentEvent",
    "ExperimentStopped",
    "Listener",
    "PolicyFinished",
    "RecommendationChanged",
    "ReportLate",
    "TrialAbandoned",
    "TrialDispatched",
    "TrialFailed",
    "TrialObserved",
]


@dataclass(frozen=True, slots=True)
class ExperimentEvent:
    """Base of every event; ``kind`` is the event's name in logs and streams."""

    kind: ClassVar[str] = "event"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"event": kind, **fields}`` (a shallow copy: field values are
        numbers, strings and recommendation lists, never nested events)."""
        out: dict[str, Any] = {"event": self.kind}
        for name in self.__slots__:  # type: ignore[attr-defined]
            out[name] = getattr(self, name)
        return out


#: Receives every event of an experiment, in the order the changes were applied.
Listener = Callable[[ExperimentEvent], None]


@dataclass(frozen=True, slots=True)
class TrialDispatched(ExperimentEvent):
    """A trial was started: ``pull`` is how often ``arm`` of ``bandit`` was pulled before."""

    kind: ClassVar[str] = "trial_dispatched"
    trial: int
    bandit: int
    arm: int
    pull: int


@dataclass(frozen=True, slots=True)
class TrialObserved(ExperimentEvent):
    """A trial's reward arrived and was folded into the statistics."""

    kind: ClassVar[str] = "trial_observed"
    trial: int
    bandit: int
    arm: int
    reward: float


@dataclass(frozen=True, slots=True)
class TrialFailed(ExperimentEvent):
    """A trial ended without a usable reward (pipeline error, rejected reward, timeout)."""

    kind: ClassVar[str] = "trial_failed"
    trial: int
    bandit: int
    arm: int
    reason: str


@dataclass(frozen=True, slots=True)
class TrialAbandoned(ExperimentEvent):
    """The client gave a pending trial up; its slot was freed."""

    kind: ClassVar[str] = "trial_abandoned"
    trial: int
    bandit: int
    arm: int
    reason: str


@dataclass(frozen=True, slots=True)
class ReportLate(ExperimentEvent):
    """A reward arrived for a trial that had already failed or been abandoned: kept, not counted."""

    kind: ClassVar[str] = "report_late"
    trial: int
    bandit: int
    arm: int
    reward: float


@dataclass(frozen=True, slots=True)
class ArmEliminated(ExperimentEvent):
    """The policy of ``bandit`` cleared ``arm`` from its active set (elimination rules)."""

    kind: ClassVar[str] = "arm_eliminated"
    bandit: int
    arm: int
    trials: int


@dataclass(frozen=True, slots=True)
class ArmRetired(ExperimentEvent):
    """An operator or a guardrail retired ``arm`` of ``bandit``: never dispatched again, its
    results kept.  A guardrail's ``reason`` is JSON, ``{"guardrail": evidence}`` (docs/safeguards.md)."""

    kind: ClassVar[str] = "arm_retired"
    bandit: int
    arm: int
    trials: int
    reason: str


@dataclass(frozen=True, slots=True)
class AttritionFlagged(ExperimentEvent):
    """The attrition check of ``bandit`` fired: the share of trials that come back differs
    across its arms (anytime-valid ``p_value``, docs/safeguards.md); sent once."""

    kind: ClassVar[str] = "attrition_flagged"
    bandit: int
    p_value: float
    trials: int


@dataclass(frozen=True, slots=True)
class BanditConfident(ExperimentEvent):
    """The stopping rule of ``bandit`` passed its test: that bandit gets no more trials."""

    kind: ClassVar[str] = "bandit_confident"
    bandit: int
    trials: int
    recommendation: Any


@dataclass(frozen=True, slots=True)
class RecommendationChanged(ExperimentEvent):
    """The answer of ``bandit`` (best arm, or arm set) differs from the last one announced."""

    kind: ClassVar[str] = "recommendation_changed"
    bandit: int
    trials: int
    recommendation: Any


@dataclass(frozen=True, slots=True)
class CheckpointReached(ExperimentEvent):
    """A checkpoint: ``trials`` dispatched (see the architecture guide for the exact moment).

    Live runs carry the recommendation of every bandit; Monte Carlo runs carry ``policy``,
    the aggregated ``metric`` (``error_rate`` or ``regret_mean``), ``value`` (its mean over
    replicas), ``stderr`` and the run's ``budget``.
    """

    kind: ClassVar[str] = "checkpoint"
    trials: int
    recommendation: Any = None
    policy: str | None = None
    metric: str | None = None
    value: float | None = None
    stderr: float | None = None
    budget: int | None = None  # Monte Carlo: the run's budget (tells the runs of a sweep apart)


@dataclass(frozen=True, slots=True)
class ExperimentStopped(ExperimentEvent):
    """No trial will be dispatched any more: ``reason`` is ``"budget"`` (spent),
    ``"confident"`` (every stopping rule passed its test), ``"anytime"`` (``[stopping]``) or
    ``"allocator"``."""

    kind: ClassVar[str] = "experiment_stopped"
    reason: str
    trials: int


@dataclass(frozen=True, slots=True)
class PolicyFinished(ExperimentEvent):
    """Monte Carlo: every replica of ``policy`` is done.  ``trials`` is per replica, like
    every event's: the budget, or the mean over replicas when a stopping rule ended some early."""

    kind: ClassVar[str] = "policy_finished"
    policy: str
    trials: float
    wall_seconds: float
    budget: int | None = None  # the run's budget (tells the runs of a sweep apart)


#: Every event type, by name (for documentation and for clients that decode streams).
EVENT_TYPES: dict[str, type[ExperimentEvent]] = {
    cls.kind: cls
    for cls in (
        TrialDispatched, TrialObserved, TrialFailed, TrialAbandoned, ReportLate, ArmEliminated, ArmRetired,
        AttritionFlagged, BanditConfident, RecommendationChanged, CheckpointReached, ExperimentStopped, PolicyFinished,
    )
}
