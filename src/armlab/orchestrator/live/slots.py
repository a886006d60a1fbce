"""Wait until an in-flight slot of a live experiment is freed: the one waiter of both drivers.

A slot is freed when a trial closes (observed, failed or abandoned).  The async run driver
(:class:`~armlab.orchestrator.live.run.LiveRun`) waits here before its next dispatch when
every slot is taken, and the HTTP service's ``/ask`` with ``wait`` waits here too; a report
from either side wakes both.
"""

from __future__ import annotations

import math

import anyio

from armlab import events
from armlab.orchestrator.live.experiment import LiveExperiment

__all__ = ["TRIAL_OUTCOMES", "SlotWaiter"]

#: The events that close a trial (and free its in-flight slot).
TRIAL_OUTCOMES = (events.TrialObserved, events.TrialFailed, events.TrialAbandoned)


class SlotWaiter:
    """Listen to ``experiment`` and wake every waiter when one of its trials closes."""

    def __init__(self, experiment: LiveExperiment) -> None:
        self.experiment = experiment
        self._freed: anyio.Event | None = None
        experiment.add_listener(self._on_event)

    def _on_event(self, event: events.ExperimentEvent) -> None:
        if isinstance(event, TRIAL_OUTCOMES) and self._freed is not None:
            self._freed.set()
            self._freed = None

    async def wait(self, timeout: float = math.inf) -> None:
        """Return when a trial closes, or after ``timeout`` seconds (whichever comes first)."""
        if self._freed is None:
            self._freed = anyio.Event()
        with anyio.move_on_after(timeout):
            await self._freed.wait()

    def close(self) -> None:
        """Stop listening (the driver is done with the experiment)."""
        self.experiment.remove_listener(self._on_event)
