"""Progress of a simulated run off a terminal: a JSON log line at least every few seconds.

On a terminal ``armlab run`` draws progress bars; elsewhere (a batch job, CI, ``nohup``)
stderr carries JSON-lines logs, where checkpoints alone can be minutes apart.  A
:class:`ProgressLog` is the run's ``progress(label, done, total)`` callback there: it logs a
``progress`` event with the trials done and to do over every policy, the elapsed time and
the time left at the pace so far, at most once per :data:`PROGRESS_LOG_SECONDS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from armlab.log import get_logger

__all__ = ["PROGRESS_LOG_SECONDS", "ProgressLog"]

#: Seconds between two progress lines (the first comes this long after the start).
PROGRESS_LOG_SECONDS = 5.0

log = get_logger("armlab.cli")


class ProgressLog:
    """``progress(label, done, total)`` callback that logs the whole run's progress every
    ``interval`` seconds of ``clock``; ``totals`` holds each policy's trials to dispatch."""

    def __init__(self, totals: Mapping[str, int], interval: float = PROGRESS_LOG_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._total = sum(totals.values())
        self._done: dict[str, int] = {}
        self._started = self._last = clock()

    def __call__(self, label: str, done: int, total: int) -> None:
        self._done[label] = done
        now = self._clock()
        if now - self._last < self.interval:
            return
        self._last = now
        done_all, elapsed = sum(self._done.values()), now - self._started
        left = elapsed * (self._total - done_all) / done_all if done_all else None
        log.info("progress", trials=done_all, total=self._total,
                 percent=round(100 * done_all / self._total, 1) if self._total else None,
                 elapsed_seconds=round(elapsed, 1), seconds_left=None if left is None else round(left, 1))
