"""The service's behaviour, independent of HTTP: waiting asks, batches, timeouts, driving trials.

:class:`Service` wraps one live session for the HTTP app (:mod:`armlab.service.app`): every
change of the experiment waits for its turn at the journal, every answer and every status
waits until what it reports is durable, and a failed journal write stops the service.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, ParamSpec, TypeVar

import anyio

from armlab.adapters.base import RewardRejected, Trial
from armlab.log import get_logger
from armlab.orchestrator.journal.group_commit import GroupCommit, change
from armlab.orchestrator.journal.store import JournalError
from armlab.orchestrator.live.run import LiveRun
from armlab.orchestrator.live.slots import SlotWaiter
from armlab.orchestrator.live.types import (
    ExperimentState,
    NoTrialAvailable,
    Report,
    ReportConflict,
    RetireRefused,
    UnknownTrial,
)
from armlab.orchestrator.live.session import LiveSession
from armlab.service.events import EventHub
from armlab.service.models import (
    AskBatchIn,
    AskIn,
    ReportOut,
    RetireOut,
    TellBatchIn,
    TrialOut,
)

__all__ = ["Service", "report_fields", "report_out", "trial_fields", "trial_out", "trials_fields"]

log = get_logger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")


class Service:
    """The service's behaviour, independent of HTTP: waiting asks, timeouts, driving trials.

    Every change of the experiment goes through :meth:`change` (turn -> change -> durable,
    :mod:`armlab.orchestrator.journal.group_commit`), every status awaits :meth:`durable`,
    and a failed journal write stops the service through ``on_fatal``.  ``halted`` (an
    operator's stop, ``armlab server``) refuses new dispatches and still takes reports.
    """

    def __init__(
        self, session: LiveSession, hub: EventHub, on_fatal: Callable[[Exception], None] | None = None
    ) -> None:
        self.session = session
        self.experiment = session.experiment
        self.hub = hub
        self.on_fatal = on_fatal
        self.writer: GroupCommit | None = None  # batched journal writes, while the service runs
        self.halted = False
        self.slots = SlotWaiter(self.experiment)

    async def change(self, apply: Callable[_P, _R], *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Turn -> ``apply(*args, **kwargs)`` -> durable: the one way a route changes the experiment."""
        return await change(self.writer, apply, *args, **kwargs)

    async def durable(self) -> None:
        """Return once every change made so far is in the journal (call before answering)."""
        if self.writer is not None:
            await self.writer.durable()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """While inside, journal writes are batched and the background work runs."""
        async with self.session.group_commit(self.journal_failed) as writer, anyio.create_task_group() as tg:
            self.writer = writer
            tg.start_soon(self.run_background)
            yield
            tg.cancel_scope.cancel()
        self.writer = None

    def journal_failed(self, exc: JournalError) -> None:
        """The journal can no longer be written: refuse everything, and stop the process."""
        log.error("journal_write_failed", reason=str(exc))
        if self.on_fatal is not None:
            self.on_fatal(exc)

    @property
    def last_activity(self) -> float | None:
        """When the experiment last changed while served (None before its first change)."""
        return self.experiment.last_change

    async def ask(self, key: str | None, wait: float, unit: str | None = None) -> dict[str, Any]:
        """Dispatch a trial (for sticky ``unit``), waiting up to ``wait`` seconds for an in-flight
        slot; the trial's answer (:func:`trial_fields`)."""
        self._refuse_dispatch()
        deadline = anyio.current_time() + wait
        while True:
            try:
                return trial_fields(self, await self.change(self._ask_now, key, unit))
            except NoTrialAvailable as exc:
                remaining = deadline - anyio.current_time()
                if exc.state is not ExperimentState.IN_FLIGHT_FULL or remaining <= 0:
                    raise
            await self.slots.wait(remaining)

    def _ask_now(self, key: str | None, unit: str | None) -> Trial:
        self._refuse_dispatch()
        return self.experiment.ask(key, unit)

    # -- the answers of the four hot routes (the app's routes and HotRoutes both call these) --
    # Each is the fields of the route's answer model, JSON-ready and in the model's order, built
    # from values known to be valid: HotRoutes encodes them as they are, and the app's routes
    # validate them through their response models, which gives the same bytes.
    async def answer_ask(self, body: AskIn) -> dict[str, Any]:
        """The answer of ``/ask`` (a :class:`TrialOut`'s fields)."""
        return await self.ask(body.key, body.wait, body.unit)

    async def answer_tell(self, body: Any) -> dict[str, Any]:
        """The answer of ``/tell`` (``body`` of the experiment's tell model; a :class:`ReportOut`'s
        fields), once durable."""
        return report_fields(await self.change(self.experiment.tell, body.trial_id, body.reward, body.metrics))

    async def answer_ask_batch(self, body: AskBatchIn) -> dict[str, Any]:
        """The answer of ``/ask/batch`` (the fields of an :class:`AskBatchOut`, JSON-ready): up
        to ``count`` trials dispatched in one journal batch."""
        trials = await self.change(self.ask_many, body.count, body.keys, body.units)
        return {"trials": trials_fields(self, trials), "state": self.state}

    async def answer_tell_batch(self, body: TellBatchIn) -> dict[str, Any]:
        """The answer of ``/tell/batch`` (the fields of a :class:`TellBatchOut`, JSON-ready):
        every report in one journal batch, a result each."""
        reports = [(r.trial_id, r.reward, r.metrics) for r in body.reports]
        return {"results": await self.change(self.tell_many, reports)}

    def ask_many(self, count: int, keys: list[str] | None, units: list[str] | None = None) -> list[Trial]:
        """Dispatch up to ``count`` trials at once (call through :meth:`change`: one journal batch)."""
        self._refuse_dispatch()
        records: list[Trial] = []
        with self.experiment.one_choice():  # nothing but these asks changes the experiment meanwhile
            for i in range(count):
                try:
                    key = keys[i] if keys is not None and i < len(keys) else None
                    unit = units[i] if units is not None and i < len(units) else None
                    records.append(self.experiment.ask(key, unit))
                except NoTrialAvailable:
                    if not records:
                        raise
                    break
        return records

    def tell_many(self, reports: list[tuple[int, Any, Any]]) -> list[dict[str, Any]]:
        """Report many ``(trial, reward, metrics)`` (call through :meth:`change`), a result per
        report (the fields of an :class:`ItemReportOut`), never an exception."""
        return [self._tell_one(*report) for report in reports]

    def _tell_one(self, trial_id: int, reward: Any, metrics: Any = None) -> dict[str, Any]:
        try:
            report = self.experiment.tell(trial_id, reward, metrics)
        except UnknownTrial as exc:
            return _item("unknown", trial_id, exc)
        except ReportConflict as exc:
            return _item("conflict", trial_id, exc)
        except RewardRejected as exc:
            return _item("rejected", trial_id, exc)
        return report_fields(report)

    def retire(self, bandit: int, arm: int | str, reason: str) -> RetireOut:
        """Retire an arm given by index or name (call through :meth:`change`)."""
        index = self._arm_index(bandit, arm)
        changed = self.experiment.retire(index, bandit, reason)
        return RetireOut(bandit=bandit, arm=index, arm_name=self.session.arm_names(bandit)[index],
                         status="retired" if changed else "already retired")

    def _arm_index(self, bandit: int, arm: int | str) -> int:
        """``arm`` as an index: a name is looked up among bandit ``bandit``'s arm names."""
        if bandit >= len(self.session.sources):
            raise RetireRefused(f"no bandit {bandit}: this experiment has bandits 0..{len(self.session.sources) - 1}")
        names = self.session.arm_names(bandit)
        if isinstance(arm, int):
            return arm
        if arm not in names:
            raise RetireRefused(f"no arm named {arm!r} in bandit {bandit}; its arms are {', '.join(names)}")
        return names.index(arm)

    def _refuse_dispatch(self) -> None:
        if self.session.runs_trials:
            raise NoTrialAvailable(
                self.experiment.state,
                f"source {self.session.sources[0].name!r} runs its own trials; "
                "follow them with /status or /events",
            )
        if self.halted:
            raise NoTrialAvailable(
                ExperimentState.STOPPED,
                f"experiment {self.session.config.name!r} was stopped by an operator: no more trials are "
                "dispatched; reports of trials already dispatched are still accepted",
            )

    @property
    def state(self) -> str:
        """The experiment's state; ``stopped`` once an operator stopped it (until nothing is pending)."""
        state = self.experiment.state
        if self.halted and state is not ExperimentState.FINISHED:
            return ExperimentState.STOPPED.value
        return state.value

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
        out["state"] = self.state
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
            await LiveRun(sources=self.session.sources, experiment=self.experiment, timeout=timeout).run()
        elif timeout is not None:
            await self._expire_unreported(timeout)

    async def _expire_unreported(self, timeout: float) -> None:
        while True:
            await self.change(self._expire, timeout)
            await anyio.sleep(min(timeout / 4, 1.0))

    def _expire(self, timeout: float) -> None:
        now = time.time()
        for trial in self.experiment.pending_trials():
            if now - self.experiment.record(trial.id).dispatched_at >= timeout:
                self.experiment.fail(trial.id, f"timed out: no report within {timeout} s")


def report_out(report: Report) -> ReportOut:
    return ReportOut(**report_fields(report))


def report_fields(report: Report) -> dict[str, Any]:
    """``report`` as answered: the fields of a :class:`ReportOut` (and of an accepted batch
    item), in its order."""
    return {"trial_id": report.trial_id, "status": report.status, "message": report.message}


def _item(status: str, trial_id: int, refusal: Exception) -> dict[str, Any]:
    return {"trial_id": trial_id, "status": status, "message": str(refusal)}


def trial_out(service: Service, trial: Trial) -> TrialOut:
    """``trial`` as answered (:func:`trial_fields`)."""
    return TrialOut.model_construct(**trial_fields(service, trial))


def trial_fields(service: Service, trial: Trial) -> dict[str, Any]:
    """``trial`` (one the experiment dispatched) as answered, with its record's status and unit
    and the ask's exposure: the fields of a :class:`TrialOut` in its order, from values known
    to be valid (neither validated again nor made into a model)."""
    return trials_fields(service, [trial])[0]


def trials_fields(service: Service, trials: list[Trial]) -> list[dict[str, Any]]:
    """:func:`trial_fields` of each of ``trials``, each bandit's arm names and label looked up
    once for them all (a batch answers up to a thousand; the names are a new list per lookup)."""
    session, records = service.session, service.experiment.trials
    bandits: dict[int, tuple[list[str], str]] = {}
    answers = []
    for trial in trials:
        bandit = trial.bandit
        if bandit not in bandits:
            bandits[bandit] = (session.arm_names(bandit), session.plan.bandits[bandit].label)
        names, label = bandits[bandit]
        record = records[trial.id]
        answers.append({"trial_id": trial.id, "arm": trial.arm, "arm_name": names[trial.arm], "bandit": bandit,
                        "bandit_label": label, "pull": trial.pull, "status": record.status.value,
                        "unit": record.unit, "exposure": trial.exposure})
    return answers
