"""Resuming a live experiment: re-applying its journaled events in order.

:class:`JournalReplay` is mixed into :class:`~armlab.orchestrator.live.experiment.LiveExperiment`.  Replay
goes through the same ask, tell, fail, abandon, retire and stop paths as the live run, with
the recorder off, so the rebuilt state is the state that was journaled; dispatches and stops
are re-derived from the policies and must match the journal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from armlab.log import get_logger
from armlab.orchestrator.live.types import (
    Event,
    JournalMismatch,
    NoTrialAvailable,
    ReportConflict,
    RetireRefused,
    UnknownTrial,
)

if TYPE_CHECKING:
    from armlab.adapters.base import Trial
    from armlab.orchestrator.live.types import Report, TrialRecord

__all__ = ["JournalReplay"]

log = get_logger(__name__)


class JournalReplay:
    """Journal replay (mixed into :class:`~armlab.orchestrator.live.experiment.LiveExperiment`)."""

    recorder: Callable[[Event], None] | None
    trials: list[TrialRecord]
    _replay_at: float | None

    # supplied by the experiment
    state: Any
    ask: Callable[..., Trial]
    tell: Callable[..., Report]
    fail: Callable[..., Report]
    abandon: Callable[..., Report]
    retire: Callable[..., bool]
    _decide: Callable[[], tuple[str, int, int]]
    _commit: Callable[[Event], None]

    def replay(self, events: Iterable[Event]) -> int:
        """Re-apply journaled ``events`` in order (the recorder is not called); return their number.

        Dispatches are re-derived from the policies and must match the journal, so a changed
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
            if event.kind == "retired":
                if not self.retire(event.arm, event.bandit, event.reason):
                    raise JournalMismatch(f"{where}: arm {event.arm} of bandit {event.bandit} was already retired")
                return
            if event.kind == "stopped":
                decision, bandit, _ = self._decide()
                expected = ("close", event.bandit) if event.reason == "confident" else ("stop", 0)
                if (decision, bandit) != expected:
                    raise JournalMismatch(f"{where}: the journal says a stopping rule or the allocator stopped "
                                          "here, but the experiment now goes on; the policy or the experiment "
                                          "changed")
                self._commit(event)
                return
            if event.kind == "dispatch":
                trial = self.ask(event.key)
                if (trial.id, trial.bandit, trial.arm) != (event.trial, event.bandit, event.arm):
                    raise JournalMismatch(
                        f"{where}: the journal sent trial {event.trial} to {_place(event.bandit, event.arm)}, "
                        f"but the policy now sends trial {trial.id} to {_place(trial.bandit, trial.arm)}; "
                        "the policy or the experiment changed since the journal was written"
                    )
                return
            if event.kind in ("result", "late"):
                expected = "accepted" if event.kind == "result" else "late"
                status = self.tell(event.trial, event.reward).status
            else:
                expected = "accepted"
                close = self.fail if event.kind == "failed" else self.abandon
                status = close(event.trial, event.reason).status
        except (NoTrialAvailable, UnknownTrial, ReportConflict, RetireRefused) as exc:
            raise JournalMismatch(f"{where} cannot be applied: {exc}") from None
        if status != expected:
            raise JournalMismatch(f"{where} was {status} on replay, expected {expected}")



def _place(bandit: int, arm: int) -> str:
    return f"arm {arm}" if bandit == 0 else f"bandit {bandit}, arm {arm}"
