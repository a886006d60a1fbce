"""Wait until an in-flight slot of a live experiment is freed: the one waiter of both drivers.

A slot is freed when a trial closes (observed, failed or abandoned), which the experiment
tells its close watchers without building an event.  The async run driver
(:class:`~armlab.orchestrator.live.run.LiveRun`) waits here before its next dispatch when
every slot is taken, and the HTTP service's ``/ask`` with ``wait`` waits here too; a report
from either side wakes both.
"""

from __future__ import annotations

import math

import anyio

from armlab.orchestrator.live.experiment import LiveExperiment

__all__ = ["SlotWaiter"]


class SlotWaiter:
    """Watch ``experiment`` and wake every waiter when one of its trials closes."""

    def __init__(self, experiment: LiveExperiment) -> None:
        self.experiment = experiment
        self._freed: anyio.Event | None = None
        experiment.add_close_watcher(self._on_close)

    def _on_close(self, trial_id: int) -> None:
        if self._freed is not None:
            self._freed.set()
            self._freed = None

    async def wait(self, timeout: float = math.inf) -> None:
        """Return when a trial closes, or after ``timeout`` seconds (whichever comes first)."""
        if self._freed is None:
            self._freed = anyio.Event()
        with anyio.move_on_after(timeout):
            await self._freed.wait()

    def close(self) -> None:
        """Stop watching (the driver is done with the experiment)."""
        self.experiment.remove_close_watcher(self._on_close)
