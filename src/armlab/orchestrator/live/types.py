"""The vocabulary of a live experiment: trial records, states, reports and errors.

Shared by the ask/tell core (:mod:`armlab.orchestrator.live.experiment`) and the drivers (live
runs, the HTTP service) that react to it.  Its changes are the journal's own records
(:class:`~armlab.orchestrator.journal.schema.Event`, re-exported here).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from armlab.adapters.base import Trial
from armlab.errors import ArmlabError
from armlab.orchestrator.journal.schema import Event, EventKind

__all__ = [
    "Counters",
    "Event",
    "EventKind",
    "ExperimentState",
    "JournalMismatch",
    "NoTrialAvailable",
    "Report",
    "ReportConflict",
    "RetireRefused",
    "TrialRecord",
    "TrialStatus",
    "UnknownTrial",
]

class TrialStatus(str, enum.Enum):
    PENDING = "pending"
    COMPLETED = "completed"
    FAILED = "failed"  # the pipeline produced no usable reward, or the trial timed out
    ABANDONED = "abandoned"  # the client gave the trial up


class ExperimentState(str, enum.Enum):
    """What :meth:`LiveExperiment.ask` would do now."""

    RUNNING = "running"  # a trial can be dispatched
    IN_FLIGHT_FULL = "in_flight_full"  # every in-flight slot is taken: wait for a report
    BUDGET_SPENT = "budget_spent"  # every trial of the budget is dispatched; some are pending
    STOPPED = "stopped"  # the policy stopped (a stopping rule is confident); some are pending
    FINISHED = "finished"  # budget spent or policy stopped, and nothing is pending


class NoTrialAvailable(ArmlabError):
    """``ask`` cannot dispatch a trial now; ``state`` says why (and whether to retry)."""

    def __init__(self, state: ExperimentState, message: str) -> None:
        super().__init__(message)
        self.state = state


class UnknownTrial(ArmlabError, LookupError):
    """A report names a trial id this experiment never dispatched."""


class ReportConflict(ArmlabError):
    """A report contradicts what is already recorded for the trial."""


class RetireRefused(ArmlabError):
    """An arm cannot be retired (unknown, the last active one, or the policy cannot skip arms)."""


class JournalMismatch(ArmlabError):
    """Replaying a journal did not reproduce its dispatches (policy or config changed)."""


@dataclass
class Counters:
    """How many trials completed, failed or were abandoned, and how many late reports came
    (for trials that had failed or were abandoned: ``closed`` counts each trial once)."""

    completed: int = 0
    failed: int = 0
    abandoned: int = 0
    late: int = 0

    @property
    def closed(self) -> int:
        return self.completed + self.failed + self.abandoned


@dataclass
class TrialRecord:
    """A dispatched trial and what became of it."""

    trial: Trial
    dispatched_at: float
    key: str | None = None
    unit: str | None = None  # the unit it was dispatched for (sticky units)
    status: TrialStatus = TrialStatus.PENDING
    reward: float | None = None
    reason: str = ""
    late_reward: float | None = None


@dataclass(frozen=True)
class Report:
    """The answer to a report (``tell``, ``abandon``, ``fail``)."""

    trial_id: int
    status: Literal["accepted", "duplicate", "late"]
    message: str = ""
