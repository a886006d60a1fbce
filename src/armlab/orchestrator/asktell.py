"""The ask/tell core of a live experiment: one synchronous, I/O-free state machine.

Everything that drives a live experiment goes through :class:`Experiment`: the async
:class:`~armlab.orchestrator.live.LiveRun` (armlab runs the trials through a source), the
HTTP service (clients run them and report back), and journal replay (the journal says what
happened).  So there is exactly one set of rules for trials, budget and reports.

Every change is an :class:`Event` (``dispatch``, ``result``, ``failed``, ``abandoned``,
``late``).  A method first validates its request, then hands the event to the ``recorder``
(the journal, which makes it durable), and only then applies it.  If the recorder raises,
nothing changed.  Because the policy's randomness is a pure function of (seed, replica,
step) and the statistics a pure function of the events, applying the same events in the
same order gives bit-identical state: that is how :meth:`Experiment.replay` resumes a run.

Pending trials count toward the budget and the in-flight limit and are visible to the
policy through ``stats.pending`` (delayed feedback).  Report semantics, by trial id:

* pending trial: the reward is folded in (``accepted``);
* same reward again: ``duplicate``, no effect; a different one: :class:`ReportConflict`;
* trial that had failed or was abandoned (e.g. timed out, its slot given to another
  trial): the reward is recorded but not counted (``late``);
* unknown id: :class:`UnknownTrial`; unusable reward: :class:`~armlab.adapters.base.RewardRejected`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import structlog
from scipy import special

from armlab.adapters.base import Trial, validate_reward
from armlab.orchestrator.live_types import (
    Event,
    ExperimentState,
    JournalMismatch,
    NoTrialAvailable,
    Report,
    ReportConflict,
    TrialRecord,
    TrialStatus,
    UnknownTrial,
)
from armlab.plugins.interfaces import STOPPED, Policy
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

__all__ = ["Experiment"]  # its vocabulary (events, states, errors) is in live_types

log = structlog.get_logger(__name__)

_ROW = np.zeros(1, dtype=np.int64)
_Z95 = float(special.ndtri(0.975))
_MAX_REASON = 2000

@dataclass
class _Counters:
    completed: int = 0
    failed: int = 0
    abandoned: int = 0
    late: int = 0

    @property
    def closed(self) -> int:
        return self.completed + self.failed + self.abandoned


class Experiment:
    """One live replica of ``policy`` on ``problem``: ask for trials, tell their rewards.

    ``in_flight`` bounds the pending trials; ``checkpoints`` are counts of finished trials
    at which the recommendation is kept (as in simulated runs); ``recorder(event)`` is
    called before each change is applied (the journal); ``clock`` stamps events.
    """

    def __init__(
        self,
        policy: Policy,
        problem: Problem,
        seed: int,
        *,
        in_flight: int = 1,
        checkpoints: Sequence[int] = (),
        recorder: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if in_flight < 1:
            raise ValueError("in_flight must be >= 1")
        self.policy = policy
        self.problem = problem
        self.seed = seed
        self.in_flight = in_flight
        self.checkpoints = frozenset(checkpoints)
        self.recorder = recorder
        self.clock = clock
        self.stats = ArmStats(1, problem.n_arms)
        self.trials: list[TrialRecord] = []
        self.counters = _Counters()
        self.recommendations: list[Any] = []
        self._pending: dict[int, TrialRecord] = {}
        self._by_key: dict[str, TrialRecord] = {}
        self._stopped = False
        self._replay_at: float | None = None
        self._listeners: list[Callable[[Event], None]] = []
        policy.reset(problem, 1, KeyedRandom(seed, "policy", 0, replicas=_ROW))

    def __repr__(self) -> str:
        c = self.counters
        return (
            f"Experiment(state={self.state.value}, dispatched={len(self.trials)}/{self.problem.budget}, "
            f"pending={len(self._pending)}, completed={c.completed}, failed={c.failed}, "
            f"abandoned={c.abandoned}, late={c.late})"
        )

    # -- state ---------------------------------------------------------------------------
    @property
    def state(self) -> ExperimentState:
        pending = len(self._pending)
        if self._stopped or len(self.trials) >= self.problem.budget:
            if pending == 0:
                return ExperimentState.FINISHED
            return ExperimentState.STOPPED if self._stopped else ExperimentState.BUDGET_SPENT
        if pending >= self.in_flight:
            return ExperimentState.IN_FLIGHT_FULL
        return ExperimentState.RUNNING

    def pending_trials(self) -> list[Trial]:
        """Trials dispatched and not yet closed, oldest first."""
        return [record.trial for record in self._pending.values()]

    def record(self, trial_id: int) -> TrialRecord:
        """The record of trial ``trial_id``; raises :class:`UnknownTrial`."""
        if isinstance(trial_id, bool) or not isinstance(trial_id, int) or not 0 <= trial_id < len(self.trials):
            known = f"trials 0..{len(self.trials) - 1} exist" if self.trials else "no trial was dispatched yet"
            raise UnknownTrial(f"no trial with id {trial_id!r} ({known})")
        return self.trials[trial_id]

    def add_listener(self, listener: Callable[[Event], None]) -> None:
        """Call ``listener(event)`` after every applied change (drivers wake up on it)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[Event], None]) -> None:
        self._listeners.remove(listener)

    # -- ask / tell ----------------------------------------------------------------------
    def ask(self, key: str | None = None) -> Trial:
        """Dispatch the policy's next trial, or raise :class:`NoTrialAvailable`.

        ``key`` makes the request idempotent: asking again with the same key returns the
        trial dispatched for it (a client that lost the answer, e.g. in a crash, retries).
        """
        if key is not None and (known := self._by_key.get(key)) is not None:
            return known.trial
        state = self.state
        if state is not ExperimentState.RUNNING:
            raise NoTrialAvailable(state, self._explain(state))
        arm = int(self.policy.select(self.stats)[0])
        if arm == STOPPED:
            self._stopped = True
            if self._replay_at is None:
                log.info("policy_stopped", trials=len(self.trials))
            state = self.state
            raise NoTrialAvailable(state, self._explain(state))
        self._commit(Event("dispatch", len(self.trials), arm, key=key, at=self._now()))
        return self.trials[-1].trial

    def tell(self, trial_id: int, reward: Any) -> Report:
        """Report the reward of a trial (see the module docstring for every case)."""
        record = self.record(trial_id)
        value = validate_reward(reward, self.problem.reward_range)
        if record.status is TrialStatus.PENDING:
            self._commit(Event("result", trial_id, record.trial.arm, reward=value, at=self._now()))
            return Report(trial_id, "accepted")
        if record.status is TrialStatus.COMPLETED:
            return self._same_or_conflict(record, record.reward, value, "reward")
        if record.late_reward is not None:
            return self._same_or_conflict(record, record.late_reward, value, "late reward")
        self._commit(Event("late", trial_id, record.trial.arm, reward=value, at=self._now()))
        return Report(
            trial_id, "late",
            f"trial {trial_id} was {record.status.value} ({record.reason}) before this report; "
            "the reward is recorded but not counted",
        )

    def abandon(self, trial_id: int, reason: str = "abandoned by the client") -> Report:
        """Give a pending trial up: its slot is freed and it gets no reward."""
        return self._close(trial_id, "abandoned", reason)

    def fail(self, trial_id: int, reason: str) -> Report:
        """Record that a pending trial produced no usable reward (adapter error, timeout)."""
        return self._close(trial_id, "failed", reason)

    def _close(self, trial_id: int, kind: Literal["failed", "abandoned"], reason: str) -> Report:
        record = self.record(trial_id)
        if record.status is TrialStatus.COMPLETED:
            raise ReportConflict(
                f"trial {trial_id} already has reward {record.reward!r}; it cannot be marked {kind}"
            )
        if record.status is not TrialStatus.PENDING:
            return Report(trial_id, "duplicate", f"trial {trial_id} was already {record.status.value}")
        reason = str(reason)[:_MAX_REASON]
        self._commit(Event(kind, trial_id, record.trial.arm, reason=reason, at=self._now()))
        return Report(trial_id, "accepted")

    @staticmethod
    def _same_or_conflict(record: TrialRecord, known: float | None, value: float, what: str) -> Report:
        trial_id = record.trial.id
        if known == value:
            return Report(trial_id, "duplicate", f"trial {trial_id} already has this {what}; nothing changed")
        raise ReportConflict(f"trial {trial_id} already has {what} {known!r}; refusing the different {value!r}")

    # -- applying events -----------------------------------------------------------------
    def _now(self) -> float:
        return self.clock() if self._replay_at is None else self._replay_at

    def _commit(self, event: Event) -> None:
        if self.recorder is not None:
            self.recorder(event)  # durable first: if this raises, nothing changed
        self._apply(event)
        for listener in self._listeners:
            listener(event)

    def _apply(self, event: Event) -> None:
        quiet = self._replay_at is not None
        arm = np.array([event.arm])
        if event.kind == "dispatch":
            trial = Trial(id=event.trial, arm=event.arm, pull=int(self.stats.pulls[0, event.arm]))
            record = TrialRecord(trial, dispatched_at=event.at, key=event.key)
            self.trials.append(record)
            self._pending[trial.id] = record
            if event.key is not None:
                self._by_key[event.key] = record
            self.stats.dispatch(_ROW, arm)
            if not quiet:
                log.info("trial_dispatched", trial=trial.id, arm=trial.arm, pull=trial.pull)
                if len(self.trials) == self.problem.budget:
                    log.info("budget_spent", trials=len(self.trials))
            return
        record = self.trials[event.trial]
        if event.kind == "late":
            record.late_reward = event.reward
            self.counters.late += 1
            if not quiet:
                log.warning("report_late", trial=event.trial, arm=event.arm, reward=event.reward,
                            status=record.status.value)
            return
        del self._pending[event.trial]
        if event.kind == "result":
            assert event.reward is not None
            record.status, record.reward = TrialStatus.COMPLETED, event.reward
            reward = np.array([event.reward])
            self.stats.observe(_ROW, arm, reward)
            self.policy.update(self.stats, _ROW, arm, reward)
            self.counters.completed += 1
            if not quiet:
                log.info("trial_completed", trial=event.trial, arm=event.arm, reward=event.reward)
        else:
            record.status = TrialStatus.FAILED if event.kind == "failed" else TrialStatus.ABANDONED
            record.reason = event.reason
            self.stats.release(_ROW, arm)
            if event.kind == "failed":
                self.counters.failed += 1
            else:
                self.counters.abandoned += 1
            if not quiet:
                log.warning(f"trial_{event.kind}", trial=event.trial, arm=event.arm, reason=event.reason)
        if self.counters.closed in self.checkpoints:
            self.recommendations.append(self.recommendation())
            if not quiet:
                log.info("checkpoint", trials=self.counters.closed, recommendation=self.recommendations[-1])

    def replay(self, events: Iterable[Event]) -> int:
        """Re-apply journaled ``events`` in order (the recorder is not called); return their number.

        Dispatches are re-derived from the policy and must match the journal, so a changed
        policy or configuration is caught (:class:`JournalMismatch`) instead of silently
        producing a different run.
        """
        recorder, self.recorder = self.recorder, None
        n = 0
        try:
            for n, event in enumerate(events, start=1):
                self._replay_at = event.at
                self._replay_one(n, event)
        finally:
            self.recorder, self._replay_at = recorder, None
        if n:
            log.info("journal_replayed", events=n, state=self.state.value, dispatched=len(self.trials))
        return n

    def _replay_one(self, n: int, event: Event) -> None:
        where = f"journal event {n} ({event.kind} of trial {event.trial})"
        try:
            if event.kind == "dispatch":
                trial = self.ask(event.key)
                if (trial.id, trial.arm) != (event.trial, event.arm):
                    raise JournalMismatch(
                        f"{where}: the journal sent trial {event.trial} to arm {event.arm}, but the "
                        f"policy now sends trial {trial.id} to arm {trial.arm}; the policy or the "
                        "experiment changed since the journal was written"
                    )
                return
            if event.kind in ("result", "late"):
                expected = "accepted" if event.kind == "result" else "late"
                status = self.tell(event.trial, event.reward).status
            else:
                expected = "accepted"
                close = self.fail if event.kind == "failed" else self.abandon
                status = close(event.trial, event.reason).status
        except (NoTrialAvailable, UnknownTrial, ReportConflict) as exc:
            raise JournalMismatch(f"{where} cannot be applied: {exc}") from None
        if status != expected:
            raise JournalMismatch(f"{where} was {status} on replay, expected {expected}")

    # -- answers -------------------------------------------------------------------------
    def recommendation(self) -> Any:
        """The policy's current answer, JSON-ready (None for the regret objective)."""
        if self.problem.objective is Objective.REGRET:
            return None
        answer = self.policy.recommend(self.stats)[0]
        return int(answer) if np.ndim(answer) == 0 else np.flatnonzero(answer).tolist()

    def confidence_intervals(self) -> list[list[float] | None]:
        """Normal-approximation 95% intervals of each arm's mean (None below two rewards)."""
        n = self.stats.counts[0]
        half = _Z95 * np.sqrt(self.stats.variances(ddof=1)[0] / np.maximum(n, 1))
        means = self.stats.means[0]
        return [
            [float(means[i] - half[i]), float(means[i] + half[i])] if n[i] >= 2 else None
            for i in range(self.problem.n_arms)
        ]

    def summary(self) -> dict[str, Any]:
        """Counts, means, outcomes and the recommendation (the live part of ``summary.json``)."""
        c = self.counters
        return {
            "trials": c.closed,
            "completed": c.completed,
            "failed": c.failed,
            "abandoned": c.abandoned,
            "late": c.late,
            "counts": self.stats.counts[0].tolist(),
            "means": self.stats.means[0].tolist(),
            "recommendation": self.recommendation(),
            "recommendations": list(self.recommendations),
        }

    def status(self) -> dict[str, Any]:
        """Everything a monitoring client needs: state, progress, estimates, recommendation."""
        return {
            "state": self.state.value,
            "budget": self.problem.budget,
            "dispatched": len(self.trials),
            "in_flight_limit": self.in_flight,
            "pending": len(self._pending),
            "pending_trials": list(self._pending),
            **self.summary(),
            "confidence": {
                "level": 0.95,
                "intervals": self.confidence_intervals(),
                "policy_stopped": self._stopped,
            },
        }

    def _explain(self, state: ExperimentState) -> str:
        pending, budget = len(self._pending), self.problem.budget
        if state is ExperimentState.IN_FLIGHT_FULL:
            return f"all {self.in_flight} in-flight slots are taken; report or abandon a trial first"
        if state is ExperimentState.BUDGET_SPENT:
            return f"budget spent: all {budget} trials are dispatched, {pending} still pending"
        if state is ExperimentState.STOPPED:
            return f"the policy stopped after {len(self.trials)} trials; {pending} still pending"
        return f"the experiment is finished: {len(self.trials)} trials dispatched, none pending"

