"""Drive one live replica: trials are awaited through a :class:`~armlab.adapters.LiveSource`.

:class:`LiveRun` is the async driver of an ask/tell
:class:`~armlab.orchestrator.live.experiment.LiveExperiment`: it asks for a trial whenever an in-flight
slot is free, runs each trial in its own task of one task group, and tells the experiment
what came of it.  The experiment is synchronous, so each tell is applied atomically on the
event loop and the next ``ask`` sees every finished trial; a slot is free again only once
its result is applied.  The experiment's own in-flight bound is the only limiter, so
reports that arrive from elsewhere (the HTTP service's ``/tell``) free slots too.

Failed, rejected and timed-out trials are outcomes: they release their slot and are logged.
Cancellation (shutdown) is not an outcome: the trial stays pending in the experiment, and a
run resumed from the journal runs it again.  A source may answer :data:`~armlab.adapters.base.DEFERRED`;
the trial then waits (under the same timeout) until a report closes it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup
from structlog.contextvars import bound_contextvars

from armlab.adapters.base import DEFERRED, LiveSource, Measured, RewardRejected, Trial
from armlab.errors import ConfigError, TrialFailed
from armlab.log import get_logger
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.slots import SlotWaiter
from armlab.orchestrator.live.types import ExperimentState, NoTrialAvailable, ReportConflict, TrialStatus
from armlab.stats import ArmStats

__all__ = ["LiveRun", "Outcome"]

log = get_logger("armlab.orchestrator")

@dataclass(frozen=True)
class Outcome:
    """What became of one trial run by this driver."""

    trial: Trial
    status: Literal["completed", "failed", "timed_out", "reported"]
    reward: float | None = None
    reason: str = ""
    metrics: Any = None  # the named metrics the source returned besides the reward


class LiveRun:
    """Run the trials of ``experiment`` through ``sources`` (one per bandit, in bandit order).

    ``timeout`` (seconds) bounds each trial, including the wait for a deferred report.
    """

    def __init__(
        self,
        *,
        experiment: LiveExperiment,
        sources: Sequence[LiveSource],
        timeout: float | None = None,
    ) -> None:
        if len(sources) != len(experiment.problems):
            raise ValueError(f"{len(experiment.problems)} bandit(s) need as many sources, got {len(sources)}")
        for source in sources:
            if not source.runs_trials:
                raise ConfigError(
                    f"source {source.name!r} does not run trials itself: its trials are handed out by "
                    "ask/tell (`armlab serve`, or armlab.orchestrator.live.experiment.LiveExperiment in Python)"
                )
        self.experiment = experiment
        self.sources = list(sources)
        self.timeout = timeout
        self.outcomes: list[Outcome] = []
        self._reported: dict[int, anyio.Event] = {}

    @property
    def stats(self) -> ArmStats:
        return self.experiment.stats

    def __repr__(self) -> str:
        failed = sum(o.status in ("failed", "timed_out") for o in self.outcomes)
        return (
            f"LiveRun(dispatched={len(self.experiment.trials)}, "
            f"in_flight={len(self.experiment.pending_trials())}, "
            f"completed={len(self.outcomes) - failed}, failed={failed})"
        )

    async def run(self) -> LiveRun:
        """Run until the budget is spent (or the policy stops) and every trial has ended."""
        started = time.perf_counter()
        self.experiment.add_close_watcher(self._on_close)
        slots = SlotWaiter(self.experiment)
        try:
            async with AsyncExitStack() as stack:
                for source in self.sources:
                    await stack.enter_async_context(source)
                tg = await stack.enter_async_context(anyio.create_task_group())
                for trial in self.experiment.pending_trials():  # left pending by a previous process
                    log.info("trial_rerun", trial=trial.id, arm=trial.arm)
                    tg.start_soon(self._run_trial, trial)
                await self._dispatch(tg, slots)
        finally:
            slots.close()
            self.experiment.remove_close_watcher(self._on_close)
        log.info("live_run_finished", trials=len(self.outcomes),
                 wall_seconds=round(time.perf_counter() - started, 4))
        return self

    async def _dispatch(self, tg: TaskGroup, slots: SlotWaiter) -> None:
        experiment = self.experiment
        while True:
            state = experiment.state
            if state is ExperimentState.RUNNING:
                try:
                    trial = experiment.ask()
                except NoTrialAvailable:
                    continue  # the policy stopped; the state now says so
                tg.start_soon(self._run_trial, trial)
            elif state is ExperimentState.IN_FLIGHT_FULL:
                await slots.wait()
            else:  # budget spent or policy stopped: the task group waits for the trials in flight
                log.info("dispatch_finished", state=state.value, trials=len(experiment.trials))
                return

    def _on_close(self, trial_id: int) -> None:
        if (waiting := self._reported.get(trial_id)) is not None:
            waiting.set()

    async def _run_trial(self, trial: Trial) -> None:
        with bound_contextvars(trial=trial.id, arm=trial.arm, bandit=trial.bandit):
            log.debug("trial_started")
            outcome = await self._await_result(trial)
            try:
                outcome = self._apply(outcome)
            except ReportConflict as exc:  # a report from elsewhere closed the trial first
                log.warning("report_conflict", reason=str(exc))
                return
            self.outcomes.append(outcome)

    async def _await_result(self, trial: Trial) -> Outcome:
        try:
            with anyio.fail_after(self.timeout if self.timeout is not None else math.inf):
                value = await self.sources[trial.bandit].pull(trial)
                if value is DEFERRED:
                    await self._wait_for_report(trial.id)
                    return Outcome(trial, "reported", reward=self.experiment.record(trial.id).reward)
        except TrialFailed as exc:
            return Outcome(trial, "failed", reason=str(exc))
        except TimeoutError:
            return Outcome(trial, "timed_out", reason=f"timed out: no reward within {self.timeout} s")
        if isinstance(value, Measured):
            return Outcome(trial, "completed", reward=value.reward, metrics=value.metrics)
        return Outcome(trial, "completed", reward=value)  # type: ignore[arg-type]  # validated in _apply

    def _apply(self, outcome: Outcome) -> Outcome:
        """Tell the experiment; an unusable reward turns the outcome into a failure."""
        trial = outcome.trial
        if outcome.status == "completed":
            try:
                self.experiment.tell(trial.id, outcome.reward, outcome.metrics)
                return Outcome(trial, "completed", reward=float(outcome.reward),  # type: ignore[arg-type]
                               metrics=outcome.metrics)
            except RewardRejected as exc:
                outcome = Outcome(trial, "failed", reason=str(exc))
        if outcome.status != "reported":
            self.experiment.fail(trial.id, outcome.reason)
        return outcome

    async def _wait_for_report(self, trial_id: int) -> None:
        if self.experiment.record(trial_id).status is not TrialStatus.PENDING:
            return
        self._reported[trial_id] = event = anyio.Event()
        try:
            await event.wait()
        finally:
            del self._reported[trial_id]

    def recommendation(self) -> Any:
        """The policy's current answer, JSON-ready (None for the regret objective)."""
        return self.experiment.recommendation()

    def summary(self) -> dict[str, Any]:
        """Counts, means, failures and the final recommendation."""
        return self.experiment.summary()
