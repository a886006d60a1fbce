"""The ask/tell state machine of a live experiment: one replica of the engine core, no I/O.

Everything that drives a live experiment goes through :class:`LiveExperiment`: the async
:class:`~armlab.orchestrator.live.run.LiveRun` (armlab runs the trials through its sources),
the HTTP service (clients run them and report back), and journal replay (the journal says
what happened).  Its decisions come from the engine core that Monte Carlo runs use
(:class:`~armlab.orchestrator.core.DecisionCore` with one replica), so allocators, several
bandits (``[[bandits]]``), stopping rules and checkpoints behave as in simulation.

Every change is a journal :class:`~armlab.orchestrator.journal.schema.Event` (``dispatch``,
``result``, ``failed``, ``abandoned``, ``late``).  A method first validates its request,
then hands the event to the ``recorder``, and only then applies it.  If the recorder
raises, nothing changed.  When the event becomes durable, and what waits for it, is the
recorder's contract, stated once in :mod:`armlab.orchestrator.journal.group_commit`.  Because the policies' and the
allocator's randomness is a pure function of (seed, replica, step) and the statistics a
pure function of the events, applying the same events in the same order gives bit-identical
state: that is how :meth:`LiveExperiment.replay` resumes a run.  After each applied change the
listeners receive typed :mod:`armlab.events` (trial dispatched / observed / failed /
abandoned, arm eliminated, recommendation changed, checkpoint, bandit confident, stopped),
built only while some listener wants them (:meth:`LiveExperiment.add_listener`).  What every
driver needs after each change costs no event: a trial closed (:meth:`~LiveExperiment.add_close_watcher`,
which frees an in-flight slot) and when the last change was made (``last_change``).

Pending trials count toward the budget and the in-flight limit and are visible to the
policy through ``stats.pending`` (delayed feedback).  Report semantics, by trial id:

* pending trial: the reward is folded in (``accepted``);
* same reward again: ``duplicate``, no effect; a different one: :class:`ReportConflict`;
* trial that had failed or was abandoned (e.g. timed out, its slot given to another
  trial): the reward is recorded but not counted (``late``);
* unknown id: :class:`UnknownTrial`; unusable reward: :class:`~armlab.adapters.base.RewardRejected`.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import numpy as np

from armlab import events as ev
from armlab.adapters.base import Trial, validate_reward
from armlab.log import get_logger
from armlab.orchestrator.core import DecisionCore
from armlab.orchestrator.journal.values import stored_float, stored_text
from armlab.orchestrator.live import answers
from armlab.orchestrator.live.exploration_floor import ExplorationFloor, LoggedChoice, chooses_deterministically
from armlab.orchestrator.live.safeguards import FIXED_SAMPLE_LABEL, LiveSafeguards, metrics_text
from armlab.orchestrator.live.types import (
    Counters,
    Event,
    ExperimentState,
    JournalMismatch,
    NoTrialAvailable,
    Report,
    ReportConflict,
    RetireRefused,
    TrialRecord,
    TrialStatus,
    UnknownTrial,
)
from armlab.plugins.allocators.single import Single
from armlab.plugins.interfaces import Allocator, Policy
from armlab.problem import Problem
from armlab.safeguards import GuardrailConfig, StoppingConfig, UnitAsk
from armlab.stats import ArmStats

__all__ = ["LiveExperiment"]  # its vocabulary (states, errors, records) is in .types

log = get_logger(__name__)

_ROW = np.zeros(1, dtype=np.int64)
_MAX_REASON = 2000
_MAX_UNIT = 200
#: The journaled reason of each way a bandit or the experiment stops, by the decision that stopped it.
_STOP_REASONS = {"close": "confident", "anytime": "anytime", "stop": "allocator"}


class LiveExperiment:
    """One live replica of an experiment: ask for trials, tell their rewards.

    ``policy_factory()`` makes the policy of each bandit of ``problems`` (one problem for a
    one-bandit experiment); ``allocator`` shares the budget between several bandits.
    ``in_flight`` bounds the pending trials; ``checkpoints`` are counts of dispatched trials
    at which the recommendation is kept (as in simulated runs); ``recorder(event)`` is
    called before each change is applied (the journal; never by :meth:`replay`); ``clock`` stamps events;
    ``exploration_floor`` sends that share of the trials to a uniformly drawn active arm
    (:mod:`~armlab.orchestrator.live.exploration_floor`).  Each dispatch journals the
    propensity of its arm.  ``guardrails`` and ``stopping`` are the safeguards of
    docs/safeguards.md (:mod:`~armlab.orchestrator.live.safeguards`); the anytime intervals,
    the attrition check and sticky units are always on.
    """

    def __init__(
        self,
        policy_factory: Callable[[], Policy],
        problems: Sequence[Problem],
        seed: int,
        *,
        allocator: Allocator | None = None,
        in_flight: int = 1,
        checkpoints: Sequence[int] = (),
        recorder: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.time,
        exploration_floor: float = 0.0,
        guardrails: Sequence[GuardrailConfig] = (),
        stopping: StoppingConfig | None = None,
    ) -> None:
        if in_flight < 1:
            raise ValueError("in_flight must be >= 1")
        self.core = DecisionCore(
            policy_factory=policy_factory, problems=problems, allocator=allocator or Single(),
            seed=seed, replicas=_ROW, checkpoints=sorted(set(checkpoints)),
        )
        self.problems = self.core.problems
        self.seed = seed
        self.in_flight = in_flight
        self.recorder = recorder
        self.clock = clock
        self.trials: list[TrialRecord] = []
        self.counters = Counters()
        self.recommendations: list[Any] = []
        self.checkpoint_states: list[dict[str, Any]] = []  # what the run was at each checkpoint
        self._sent = [np.zeros(p.n_arms, dtype=np.int64) for p in self.problems]  # trials per arm
        self._pending: dict[int, TrialRecord] = {}
        self._by_key: dict[str, TrialRecord] = {}
        self._replay_at: float | None = None
        self._listeners: list[tuple[ev.Listener, Callable[[], bool] | None]] = []  # with what says it listens
        self._close_watchers: list[Callable[[int], None]] = []
        self.last_change: float | None = None  # when the last change was made (not replayed)
        self._announced: list[Any] = [None] * len(self.problems)  # the answer events compare with
        # bandits whose answer at their last observation was not computed (nobody listened);
        # only where the answer reads nothing but counts and means (the default ``recommend``)
        self._unannounced = [False] * len(self.problems)
        self._answer_can_wait = [type(p).recommend is Policy.recommend for p in self.core.policies]
        self.retired: set[tuple[int, int]] = set()  # (bandit, arm) retired by the operator
        self.stop_record: dict[str, Any] | None = None  # when, why and with what answer it stopped
        self.floor = ExplorationFloor(exploration_floor, seed)
        self._joint = type(self.core.allocator).select_arms is not Allocator.select_arms  # it picks arms too
        self._deterministic = [chooses_deterministically(p) for p in self.core.policies]  # propensity 1 at the choice
        self.safeguards = LiveSafeguards(self.problems, guardrails, stopping)
        self._held_arm: int | None = None  # the policy's arm, selected once for a batch of asks
        self._holding = False  # inside one_choice()

    def __repr__(self) -> str:
        c = self.counters
        return (
            f"LiveExperiment(state={self.state.value}, dispatched={len(self.trials)}/{self.problem.budget}, "
            f"pending={len(self._pending)}, completed={c.completed}, failed={c.failed}, "
            f"abandoned={c.abandoned}, late={c.late})"
        )

    # -- state ---------------------------------------------------------------------------
    @property
    def problem(self) -> Problem:
        """The (first) bandit's problem; every bandit shares its budget."""
        return self.problems[0]

    @property
    def stats(self) -> ArmStats:
        """The (first) bandit's statistics."""
        return self.core.stats[0]

    @property
    def stopped(self) -> bool:
        """A stopping rule (or the allocator) ended the experiment before its budget."""
        return bool(self.core.stopped_at[0] >= 0)

    @property
    def state(self) -> ExperimentState:
        pending = len(self._pending)
        stopped = self.stopped
        if stopped or len(self.trials) >= self.problem.budget:
            if pending == 0:
                return ExperimentState.FINISHED
            return ExperimentState.STOPPED if stopped else ExperimentState.BUDGET_SPENT
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

    def add_listener(self, listener: ev.Listener) -> None:
        """Call ``listener(event)`` with every :mod:`armlab.events` event, after the change.

        A listener with a ``wants_events()`` method (e.g. the event stream, while someone
        reads it) gets events only while that returns True; while no listener wants them,
        no event is built.  The events it gets are those it would get if it always listened.
        """
        self._listeners.append((listener, getattr(listener, "wants_events", None)))

    def remove_listener(self, listener: ev.Listener) -> None:
        self._listeners.remove(next(entry for entry in self._listeners if entry[0] is listener))
        if not self._listeners:  # the answers not computed yet, before an observation changes them
            for bandit in np.flatnonzero(self._unannounced):
                self._unannounced[bandit] = False
                self._follow_answer(int(bandit))

    def add_close_watcher(self, watcher: Callable[[int], None]) -> None:
        """Call ``watcher(trial_id)`` whenever a trial closes (observed, failed or abandoned:
        its in-flight slot is free), after the change; no event is built for it."""
        self._close_watchers.append(watcher)

    def remove_close_watcher(self, watcher: Callable[[int], None]) -> None:
        self._close_watchers.remove(watcher)

    def _listening(self) -> bool:
        """Whether some listener wants events now (a loop: asked at every change)."""
        for _, wants in self._listeners:
            if wants is None or wants():
                return True
        return False

    # -- answers -------------------------------------------------------------------------
    def recommendation(self) -> Any:
        """The current answer, JSON-ready: one bandit's, or a list with one per bandit."""
        if not self.core.multi_bandit:
            return answers.answer(self.core, 0)
        return [answers.answer(self.core, b) for b in range(len(self.problems))]

    def confidence_intervals(self, bandit: int = 0) -> list[list[float] | None]:
        """Normal-approximation 95% intervals of each arm's mean, clipped to the reward range
        (None below two rewards); valid only at one pre-planned look."""
        return self.safeguards.fixed_sample(self.core.stats[bandit], bandit)

    def bandit_summaries(self) -> list[dict[str, Any]]:
        """Per bandit: observed counts, means, pending trials, 95% intervals and answer."""
        return answers.bandit_summaries(self.core, self.retired, self.confidence_intervals)

    def summary(self) -> dict[str, Any]:
        """Counts, means, outcomes and the recommendation (the live part of ``summary.json``).

        ``counts`` and ``means`` are the first bandit's (the only one in a one-bandit
        experiment); ``bandits`` holds every bandit's.
        """
        c = self.counters
        out = {
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
        if self.core.multi_bandit:
            out["bandits"] = self.bandit_summaries()
        return out

    def status(self) -> dict[str, Any]:
        """Everything a monitoring client needs: state, progress, estimates, recommendation."""
        guards = self.safeguards
        bandits = self.bandit_summaries()
        for b, entry in enumerate(bandits):
            entry.update(guards.bandit_status(b, self.core.stats[b]))
        return {
            "state": self.state.value,
            "budget": self.problem.budget,
            "dispatched": len(self.trials),
            "in_flight_limit": self.in_flight,
            "pending": len(self._pending),
            "pending_trials": list(self._pending),
            **self.summary(),
            "bandits": bandits,
            "confidence": {
                "level": 0.95,
                "label": FIXED_SAMPLE_LABEL,
                "intervals": bandits[0]["intervals"],
                "policy_stopped": self.stopped,
            },
            "anytime_intervals": bandits[0]["anytime_intervals"],
            "anytime": guards.anytime(),
            "checks": bandits[0]["checks"],
            "guardrails": [g.model_dump() for g in guards.guardrails],
            "units": guards.unit_status(),
            "stop": self.stop_record,
        }

    def _explain(self, state: ExperimentState) -> str:
        return answers.explain(state, dispatched=len(self.trials), pending=len(self._pending),
                               budget=self.problem.budget, in_flight=self.in_flight)

    # -- ask / tell ----------------------------------------------------------------------
    def ask(self, key: str | None = None, unit: str | None = None) -> Trial:
        """Dispatch the next trial, or raise :class:`NoTrialAvailable`.

        ``key`` makes the request idempotent: asking again with the same key returns the
        trial dispatched for it (a client that lost the answer, e.g. in a crash, retries).
        ``unit`` (a user, a session) makes the arm sticky (:mod:`armlab.safeguards.units`):
        the unit's open trial is returned again (``exposure = "open"``), a closed one's arm as
        a repeat exposure (``"repeat"``: no new trial, nothing counted), and a unit whose arm
        was retired gets a new trial (``"rebound"``).  A stopped experiment still answers
        open and repeat asks.
        """
        key = None if key is None else stored_text(key)  # as journaled, so a replayed key still matches
        if key is not None and (known := self._by_key.get(key)) is not None:
            return known.trial
        if unit is None:
            return self._dispatch(key, None)
        unit = _unit_text(unit)
        kind, binding = self.safeguards.units.decide(unit, self._pending.__contains__,
                                                     lambda bandit, arm: (bandit, arm) in self.retired)
        if kind is UnitAsk.NEW:
            return self._dispatch(key, unit)
        if kind is UnitAsk.REBIND:
            return dataclasses.replace(self._dispatch(key, unit), exposure="rebound")
        assert binding is not None
        if kind is UnitAsk.REPEAT:
            self.safeguards.repeats += 1
        return dataclasses.replace(self.trials[binding.trial].trial, exposure=kind.value)

    @contextmanager
    def one_choice(self) -> Iterator[None]:
        """Asks made inside select the policy's arm once, while the policy says its choice
        holds (:meth:`~armlab.plugins.interfaces.Policy.choice_holds`): the arm it would select
        at each of them.  For a batch of asks with nothing else between them (no tell, no
        retirement: each ask dispatches, or stops the experiment); one bandit only."""
        self._holding = True
        try:
            yield
        finally:
            self._holding, self._held_arm = False, None

    def _dispatch(self, key: str | None, unit: str | None) -> Trial:
        """Dispatch a new trial (for ``key`` and ``unit``), or raise :class:`NoTrialAvailable`."""
        state = self.state
        if state is not ExperimentState.RUNNING:
            raise NoTrialAvailable(state, self._explain(state))
        self._take_checkpoints()  # the ones passed since the last dispatch
        while True:
            decision, bandit, arm = self._decide()
            if decision == "dispatch":
                choice = self._logged(bandit, arm)
                self._commit(Event("dispatch", len(self.trials), choice.arm, bandit, key=key, at=self._now(),
                                   propensity=choice.propensity, propensity_draws=choice.draws, unit=unit))
                return self.trials[-1].trial
            # a stopping rule is confident (its bandit closes; "anytime" names the best arm) or
            # the allocator is done (the experiment stops): recorded, then applied; other
            # bandits may still take the trial
            self._commit(Event("stopped", len(self.trials), arm, bandit, reason=_STOP_REASONS[decision],
                               at=self._now()))
            if self.stopped:
                state = self.state
                raise NoTrialAvailable(state, self._explain(state))

    def _decide(self) -> tuple[str, int, int]:
        """The core's next step for this replica: ``("dispatch", bandit, arm)``,
        ``("close", bandit, 0)`` (that bandit's stopping rule stopped), ``("anytime", bandit,
        best)`` (``[stopping] rule = "anytime"`` is sure ``best`` is best) or ``("stop", 0, 0)``
        (the allocator is done)."""
        core = self.core
        if self.safeguards.stopping is not None:
            for bandit in np.flatnonzero(core.open[0]):
                best = self.safeguards.anytime_stop(int(bandit), core.stats[bandit])
                if best is not None:
                    return "anytime", int(bandit), best
        if not core.multi_bandit:  # the one-bandit fast path of DecisionCore.choose
            arm = self._held_arm if self._held_arm is not None else self._select_one()
            return ("dispatch", 0, arm) if arm >= 0 else ("close", 0, 0)
        choice = core.choose(_ROW)
        if choice.chosen:
            bandit, _, arms = choice.chosen[0]
            return "dispatch", bandit, int(arms[0])
        if choice.closing:
            return "close", choice.closing[0][0], 0
        return "stop", 0, 0

    def _select_one(self) -> int:
        """The one bandit's policy's arm now, held for the next asks inside :meth:`one_choice`
        when the policy's choice holds until something but a dispatch changes."""
        policy, stats = self.core.policies[0], self.core.stats[0]
        arm = int(policy.select(stats)[0])
        if self._holding and arm >= 0 and policy.choice_holds(stats):
            self._held_arm = arm
        return arm

    def _logged(self, bandit: int, policy_arm: int) -> LoggedChoice:
        """The arm of the next trial under the exploration floor, with its propensity when a
        journal records it (a replay re-derives only the arm: the journal holds the rest)."""
        stats = self.core.stats[bandit]
        arm = self.floor.arm(len(self.trials), policy_arm, stats)
        if self.recorder is None or self._replay_at is not None:
            return LoggedChoice(arm)
        return self.floor.logged(arm, None if self._joint else self.core.policies[bandit], stats, policy_arm,
                                 self._deterministic[bandit])

    def tell(self, trial_id: int, reward: Any, metrics: Any = None) -> Report:
        """Report the reward of a trial (see the module docstring for every case), with named
        ``metrics`` (name to finite number) besides it: journaled, and folded into the
        ``[[guardrails]]`` that watch them; an arm a guardrail finds beyond its bound is
        retired right after the result, its evidence journaled as the reason."""
        record = self.record(trial_id)
        value = stored_float(validate_reward(reward, self.problems[record.trial.bandit].reward_range))
        text = None if metrics is None else metrics_text(metrics, self.safeguards.guardrails)
        trial = record.trial
        if record.status is TrialStatus.PENDING:
            self._commit(Event("result", trial_id, trial.arm, trial.bandit, reward=value, at=self._now(),
                               metrics=text))
            if text is not None and self._replay_at is None:  # a replay applies the journaled retirement
                self._guardrail_retire(trial.bandit, trial.arm)
            return Report(trial_id, "accepted")
        if record.status is TrialStatus.COMPLETED:
            return self._same_or_conflict(record, record.reward, value, "reward")
        if record.late_reward is not None:
            return self._same_or_conflict(record, record.late_reward, value, "late reward")
        self._commit(Event("late", trial_id, trial.arm, trial.bandit, reward=value, at=self._now(), metrics=text))
        return Report(
            trial_id, "late",
            f"trial {trial_id} was {record.status.value} ({record.reason}) before this report; "
            "the reward is recorded but not counted",
        )

    def _guardrail_retire(self, bandit: int, arm: int) -> None:
        """Retire ``arm`` when a guardrail's sequence lies beyond its bound (the last active arm stays)."""
        evidence = self.safeguards.breach(bandit, arm)
        active = self.core.stats[bandit].active[0]
        if evidence is not None and active[arm] and active.sum() > 1:
            self.retire(arm, bandit, json.dumps({"guardrail": evidence}))

    def retire(self, arm: int, bandit: int = 0, reason: str = "retired by the operator") -> bool:
        """Never dispatch ``arm`` of ``bandit`` again; its results so far stay in the statistics.

        The policy sees the arm as inactive (``stats.active``), so only policies that skip
        inactive arms (``honours_inactive_arms``) can retire one; raises
        :class:`RetireRefused` otherwise, for an unknown arm, or for the last active arm.
        Returns False when the arm was already retired (nothing changes).
        """
        if not 0 <= bandit < len(self.problems):
            raise RetireRefused(f"no bandit {bandit}: this experiment has bandits 0..{len(self.problems) - 1}")
        policy = self.core.policies[bandit]
        if not policy.honours_inactive_arms:
            raise RetireRefused(
                f"policy {policy.name!r} cannot retire arms: its rule may still pick an inactive arm; "
                "policies that can include ucb1, thompson, klucb, eucbv, gape, apt and uniform"
            )
        n_arms = self.problems[bandit].n_arms
        if not 0 <= arm < n_arms:
            raise RetireRefused(f"no arm {arm} in bandit {bandit}: its arms are 0..{n_arms - 1}")
        active = self.core.stats[bandit].active[0]
        if not active[arm]:
            return False
        if active.sum() == 1:
            raise RetireRefused(f"arm {arm} is the last active arm of bandit {bandit}; it cannot be retired")
        self._commit(Event("retired", len(self.trials), arm, bandit, reason=_reason(reason),
                           at=self._now()))
        return True

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
        reason = _reason(reason)
        trial = record.trial
        self._commit(Event(kind, trial_id, trial.arm, trial.bandit, reason=reason, at=self._now()))
        return Report(trial_id, "accepted")

    @staticmethod
    def _same_or_conflict(record: TrialRecord, known: float | None, value: float, what: str) -> Report:
        trial_id = record.trial.id
        if known == value:
            return Report(trial_id, "duplicate", f"trial {trial_id} already has this {what}; nothing changed")
        raise ReportConflict(f"trial {trial_id} already has {what} {known!r}; refusing the different {value!r}")

    # -- replay --------------------------------------------------------------------------
    def replay(self, events: Iterable[Event]) -> int:
        """Re-apply journaled ``events`` in order (the recorder is not called); return their number.

        Dispatches are re-derived from the policies and must match the journal, so a changed
        policy or configuration is caught (:class:`JournalMismatch`) instead of silently
        producing a different run.
        """
        n = 0
        try:
            for n, event in enumerate(events, start=1):
                self._replay_at = event.at
                self._replay_one(n, event)
        finally:
            self._replay_at = None
        if n:
            log.info("journal_replayed", events=n, state=self.state.value, dispatched=len(self.trials))
        return n

    def _replay_one(self, n: int, event: Event) -> None:
        where = f"journal event {n} ({event.kind} of trial {event.trial})"
        try:
            if event.kind == "retired":
                if not self.retire(event.arm, event.bandit, event.reason):
                    raise JournalMismatch(f"{where}: arm {event.arm} of bandit {event.bandit} was already retired")
                return
            if event.kind == "stopped":
                decision, bandit, _ = self._decide()
                if (_STOP_REASONS[decision], bandit) != (event.reason, event.bandit if decision != "stop" else 0):
                    raise JournalMismatch(f"{where}: the journal says a stopping rule or the allocator stopped "
                                          "here, but the experiment now goes on; the policy or the experiment "
                                          "changed")
                self._commit(event)
                return
            if event.kind == "dispatch":
                trial = self._dispatch(event.key, event.unit)
                if (trial.id, trial.bandit, trial.arm) != (event.trial, event.bandit, event.arm):
                    raise JournalMismatch(
                        f"{where}: the journal sent trial {event.trial} to {_place(event.bandit, event.arm)}, "
                        f"but the policy now sends trial {trial.id} to {_place(trial.bandit, trial.arm)}; "
                        "the policy or the experiment changed since the journal was written"
                    )
                return
            if event.kind in ("result", "late"):
                expected = "accepted" if event.kind == "result" else "late"
                metrics = None if event.metrics is None else json.loads(event.metrics)
                status = self.tell(event.trial, event.reward, metrics).status
            else:
                expected = "accepted"
                close = self.fail if event.kind == "failed" else self.abandon
                status = close(event.trial, event.reason).status
        except (NoTrialAvailable, UnknownTrial, ReportConflict, RetireRefused) as exc:
            raise JournalMismatch(f"{where} cannot be applied: {exc}") from None
        if status != expected:
            raise JournalMismatch(f"{where} was {status} on replay, expected {expected}")

    # -- applying events -----------------------------------------------------------------
    def _now(self) -> float:
        return self.clock() if self._replay_at is None else self._replay_at

    def _commit(self, event: Event) -> None:
        if self._replay_at is not None:  # replaying what the journal already holds
            self._apply(event)
            return
        if self.recorder is not None:
            self.recorder(event)  # recorded first: if this raises, nothing changed
        self._apply(event)
        self.last_change = event.at

    def _emit(self, event: ev.ExperimentEvent) -> None:
        for listener, wants in self._listeners:
            if wants is None or wants():
                listener(event)

    def _apply(self, event: Event) -> None:
        arm = np.array([event.arm])
        bandit = event.bandit
        if event.kind == "dispatch":
            stats = self.core.stats[bandit]  # its pulls at one arm, without the (1, K) array of ``pulls``
            pull = int(stats.counts[0, event.arm] + stats.pending[0, event.arm])
            trial = Trial(id=event.trial, arm=event.arm, bandit=bandit, pull=pull)
            record = TrialRecord(trial, dispatched_at=event.at, key=event.key, unit=event.unit)
            self.trials.append(record)
            self._pending[trial.id] = record
            if event.key is not None:
                self._by_key[event.key] = record
            self.core.dispatch(bandit, _ROW, arm)
            self.safeguards.dispatched(event)
            self._sent[bandit][event.arm] += 1
            if self._listening():
                self._emit(ev.TrialDispatched(trial.id, bandit, trial.arm, pull))
                if len(self.trials) == self.problem.budget:
                    self._emit(ev.ExperimentStopped("budget", len(self.trials)))
            return
        if event.kind == "retired":
            self.core.stats[bandit].active[0, event.arm] = False
            self.retired.add((bandit, event.arm))
            self.safeguards.retired(event)
            self._emit(ev.ArmRetired(bandit, event.arm, len(self.trials), event.reason))
            return
        if event.kind == "stopped":
            if event.reason in ("confident", "anytime"):
                self.core.close(bandit, _ROW)
                self._emit(ev.BanditConfident(bandit, len(self.trials), answers.answer(self.core, bandit)))
            else:
                self.core.stop(_ROW)
            if self.stopped:
                self.stop_record = {"trials": len(self.trials), "reason": event.reason, "bandit": bandit,
                                    "recommendation": self.recommendation(), "delta": self.problems[bandit].delta}
                if event.reason == "anytime":  # the arm its sequences found best, at their delta
                    self.stop_record.update(delta=self.safeguards.delta, best_arm=event.arm)
                self._emit(ev.ExperimentStopped(event.reason, len(self.trials)))
                if not self._pending:
                    self._take_checkpoints()  # finished: the last checkpoints
            return
        record = self.trials[event.trial]
        if event.kind == "late":
            record.late_reward = event.reward
            self.counters.late += 1
            if self._listening():
                self._emit(ev.ReportLate(event.trial, bandit, event.arm, event.reward))  # type: ignore[arg-type]
            return
        del self._pending[event.trial]
        if event.kind == "result":
            assert event.reward is not None
            record.status, record.reward = TrialStatus.COMPLETED, event.reward
            self._observe(bandit, arm, event)
            if self.safeguards.observed(event):
                self._attrition_flagged(bandit)
        else:
            record.status = TrialStatus.FAILED if event.kind == "failed" else TrialStatus.ABANDONED
            record.reason = event.reason
            self.core.release(bandit, _ROW, arm)
            if self.safeguards.closed(event):
                self._attrition_flagged(bandit)
            failed = event.kind == "failed"
            if failed:
                self.counters.failed += 1
            else:
                self.counters.abandoned += 1
            if self._listening():
                self._emit((ev.TrialFailed if failed else ev.TrialAbandoned)(event.trial, bandit, event.arm,
                                                                            event.reason))
        if not self._pending and (len(self.trials) >= self.problem.budget or self.stopped):
            self._take_checkpoints()  # finished: the last checkpoints
        for watcher in self._close_watchers:
            watcher(event.trial)

    def _observe(self, bandit: int, arm: np.ndarray, event: Event) -> None:
        """Fold a result in; to listeners that want events, say what it changed (eliminations,
        the answer).  The answer is compared with the one after the bandit's last observation
        made while a listener was registered, whether or not it wanted events then; where that
        answer reads only counts and means, which nothing but an observation changes, it is
        computed only when next needed (now, before observing: the same value)."""
        reward = np.array([event.reward])
        self.counters.completed += 1
        if not self._listeners:
            self.core.observe(bandit, _ROW, arm, reward)
            return
        if not self._listening():
            self.core.observe(bandit, _ROW, arm, reward)
            if self._answer_can_wait[bandit]:
                self._unannounced[bandit] = True
            else:
                self._follow_answer(bandit)
            return
        if self._unannounced[bandit]:
            self._unannounced[bandit] = False
            self._follow_answer(bandit)
        active = self.core.stats[bandit].active[0].copy()
        self.core.observe(bandit, _ROW, arm, reward)
        trials = len(self.trials)
        self._emit(ev.TrialObserved(event.trial, bandit, event.arm, event.reward))  # type: ignore[arg-type]
        for gone in np.flatnonzero(active & ~self.core.stats[bandit].active[0]):
            self._emit(ev.ArmEliminated(bandit, int(gone), trials))
        if self._follow_answer(bandit):
            self._emit(ev.RecommendationChanged(bandit, trials, self._announced[bandit]))

    def _follow_answer(self, bandit: int) -> bool:
        """Keep ``bandit``'s current answer as the one events compare with; whether it changed."""
        answer = answers.answer(self.core, bandit)
        if answer is None or answer == self._announced[bandit]:
            return False
        self._announced[bandit] = answer
        return True

    def _attrition_flagged(self, bandit: int) -> None:
        summary = self.safeguards.attrition[bandit].summary()
        self._emit(ev.AttritionFlagged(bandit, summary["p_value"], len(self.trials)))

    def _take_checkpoints(self) -> None:
        for _rows, index in self.core.due_checkpoints(len(self._pending)):
            trials = int(self.core.checkpoints[index[0]])
            recommendation = self.recommendation()
            self.recommendations.append(recommendation)
            self.checkpoint_states.append(answers.checkpoint_state(self.core, self.counters, self._sent, trials))
            if self._listening():
                self._emit(ev.CheckpointReached(trials, recommendation))


def _place(bandit: int, arm: int) -> str:
    return f"arm {arm}" if bandit == 0 else f"bandit {bandit}, arm {arm}"


def _unit_text(unit: Any) -> str:
    """A unit as journaled: text of 1..``_MAX_UNIT`` characters, storable."""
    if not isinstance(unit, str) or not 0 < len(unit) <= _MAX_UNIT:
        raise TypeError(f"unit must be text of 1..{_MAX_UNIT} characters (a user or session id), got {unit!r:.60}")
    return stored_text(unit)


def _reason(reason: Any) -> str:
    """A reason as journaled: text, at most ``_MAX_REASON`` characters, storable."""
    return stored_text(str(reason)[:_MAX_REASON])
