"""The service's behaviour, independent of HTTP: waiting asks, batches, timeouts, driving trials.

:class:`Service` wraps one live session for the HTTP app (:mod:`armlab.service.app`): every
change of the experiment waits for its turn at the journal, every answer and every status
waits until what it reports is durable, and a failed journal write stops the service.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio

from armlab.adapters.base import RewardRejected
from armlab.events import ExperimentEvent
from armlab.log import get_logger
from armlab.orchestrator.journal.group_commit import GroupCommit
from armlab.orchestrator.journal.store import JournalError
from armlab.orchestrator.live.run import LiveRun, TrialOutcome
from armlab.orchestrator.live.types import (
    ExperimentState,
    NoTrialAvailable,
    ReportConflict,
    RetireRefused,
    TrialRecord,
    UnknownTrial,
)
from armlab.orchestrator.live.session import LiveSession
from armlab.service.events import EventHub
from armlab.service.models import ItemReportOut, TrialOut

__all__ = ["Service", "trial_out"]

log = get_logger(__name__)


class Service:
    """The service's behaviour, independent of HTTP: waiting asks, timeouts, driving trials.

    Every change of the experiment first awaits :meth:`turn` (no change while a journal
    batch is being written), every answer and every status awaits :meth:`durable`, and a
    failed journal write stops the service through ``on_fatal`` (see
    :mod:`armlab.orchestrator.journal.group_commit`).
    """

    def __init__(
        self, session: LiveSession, hub: EventHub, on_fatal: Callable[[Exception], None] | None = None
    ) -> None:
        self.session = session
        self.experiment = session.experiment
        self.hub = hub
        self.on_fatal = on_fatal
        self.writer: GroupCommit | None = None  # batched journal writes, while the app runs
        self._slot_freed: anyio.Event | None = None
        self.experiment.add_listener(self._on_event)

    async def turn(self) -> None:
        """Return when the experiment may change (call right before ask, tell, fail, abandon)."""
        if self.writer is not None:
            await self.writer.turn()

    async def durable(self) -> None:
        """Return once every change made so far is in the journal (call before answering)."""
        if self.writer is not None:
            await self.writer.durable()

    def journal_failed(self, exc: JournalError) -> None:
        """The journal can no longer be written: refuse everything, and stop the process."""
        log.error("journal_write_failed", reason=str(exc))
        if self.on_fatal is not None:
            self.on_fatal(exc)

    def _on_event(self, event: ExperimentEvent) -> None:
        if isinstance(event, TrialOutcome) and self._slot_freed is not None:
            self._slot_freed.set()
            self._slot_freed = None

    async def ask(self, key: str | None, wait: float) -> TrialRecord:
        self._refuse_if_runs_trials()
        deadline = anyio.current_time() + wait
        while True:
            await self.turn()
            try:
                return self.experiment.record(self.experiment.ask(key).id)
            except NoTrialAvailable as exc:
                remaining = deadline - anyio.current_time()
                if exc.state is not ExperimentState.IN_FLIGHT_FULL or remaining <= 0:
                    raise
            if self._slot_freed is None:
                self._slot_freed = anyio.Event()
            with anyio.move_on_after(remaining):
                await self._slot_freed.wait()

    async def ask_many(self, count: int, keys: list[str] | None) -> list[TrialRecord]:
        """Dispatch up to ``count`` trials at once (all in the same journal batch)."""
        self._refuse_if_runs_trials()
        await self.turn()
        records: list[TrialRecord] = []
        for i in range(count):
            try:
                key = keys[i] if keys is not None and i < len(keys) else None
                records.append(self.experiment.record(self.experiment.ask(key).id))
            except NoTrialAvailable:
                if not records:
                    raise
                break
        return records

    def tell_one(self, trial_id: int, reward: Any) -> ItemReportOut:
        """One report of a batch: its outcome, or the reason it was refused, never an exception."""
        try:
            report = self.experiment.tell(trial_id, reward)
        except UnknownTrial as exc:
            return ItemReportOut(trial_id=trial_id, status="unknown", message=str(exc))
        except ReportConflict as exc:
            return ItemReportOut(trial_id=trial_id, status="conflict", message=str(exc))
        except RewardRejected as exc:
            return ItemReportOut(trial_id=trial_id, status="rejected", message=str(exc))
        return ItemReportOut(trial_id=trial_id, status=report.status, message=report.message)

    def arm_index(self, bandit: int, arm: int | str) -> int:
        """``arm`` as an index: a name is looked up among bandit ``bandit``'s arm names."""
        if bandit >= len(self.session.sources):
            raise RetireRefused(f"no bandit {bandit}: this experiment has bandits 0..{len(self.session.sources) - 1}")
        names = self.session.arm_names(bandit)
        if isinstance(arm, int):
            return arm
        if arm not in names:
            raise RetireRefused(f"no arm named {arm!r} in bandit {bandit}; its arms are {', '.join(names)}")
        return names.index(arm)

    def _refuse_if_runs_trials(self) -> None:
        if self.session.runs_trials:
            raise NoTrialAvailable(
                self.experiment.state,
                f"source {self.session.sources[0].name!r} runs its own trials; "
                "follow them with /status or /events",
            )

    async def status(self) -> dict[str, Any]:
        """The state, sent only once everything it shows is durable."""
        cfg = self.session.config
        out = {
            "name": cfg.name,
            "policy": self.session.label,
            "source": self.session.sources[0].name,
            "arm_names": self.session.arm_names(0),
            **self.experiment.status(),
        }
        for b, entry in enumerate(out["bandits"]):
            entry["label"] = self.session.plan.bandits[b].label
            entry["arm_names"] = self.session.arm_names(b)
        self.hub.flush()  # the events this answer includes reach /events readers before it
        await anyio.sleep(0)  # the woken readers write before this task goes on
        await self.durable()
        return out

    async def run_background(self) -> None:
        """Drive the source's own trials, or expire unreported external trials."""
        timeout = self.session.config.feedback.timeout
        if self.session.runs_trials:
            await LiveRun(sources=self.session.sources, experiment=self.experiment, timeout=timeout,
                          writer=self.writer).run()
        elif timeout is not None:
            await self._expire_unreported(timeout)

    async def _expire_unreported(self, timeout: float) -> None:
        while True:
            await self.turn()
            now = time.time()
            for trial in self.experiment.pending_trials():
                if now - self.experiment.record(trial.id).dispatched_at >= timeout:
                    self.experiment.fail(trial.id, f"timed out: no report within {timeout} s")
            await anyio.sleep(min(timeout / 4, 1.0))


def trial_out(service: Service, record: TrialRecord) -> TrialOut:
    trial = record.trial
    return TrialOut(trial_id=trial.id, arm=trial.arm, arm_name=service.session.arm_names(trial.bandit)[trial.arm],
                    bandit_label=service.session.plan.bandits[trial.bandit].label,
                    bandit=trial.bandit, pull=trial.pull, status=record.status.value)
