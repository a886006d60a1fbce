"""Pending results of simulated trials, held back by a delay model until they are due."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from armlab.config import FeedbackConfig
from armlab.random import KeyedRandom

__all__ = ["DelayModel", "PendingLedger"]


class DelayModel:
    """When a trial dispatched at step ``s`` becomes visible, as a pure function of the seed.

    ``fixed``: at the end of step ``s + d`` (so the choice at step ``s + d + 1`` sees it);
    ``uniform``: ``d`` drawn uniformly from ``[delay, delay_max]`` keyed by (replica, trial);
    ``batch``: all trials of steps ``[j d, (j + 1) d)`` are released at the end of step
    ``(j + 1) d - 1`` (the greedy-confidence-pursuit paper's batched feedback).
    """

    def __init__(self, feedback: FeedbackConfig, seed: int, replicas: np.ndarray) -> None:
        self.feedback = feedback
        self._rng = (
            KeyedRandom(seed, "delay", replicas=replicas) if feedback.delay_model == "uniform" else None
        )

    @property
    def immediate(self) -> bool:
        """True when every result is visible before the next choice (no ledger needed)."""
        return self.feedback.longest_delay == 0 or (
            self.feedback.delay_model == "batch" and self.feedback.delay == 1
        )

    def due(self, step: int, rows: np.ndarray, trial: np.ndarray) -> np.ndarray:
        """Step at whose end each trial's result is released."""
        fb = self.feedback
        if fb.delay_model == "fixed":
            return np.full(rows.shape, step + fb.delay, dtype=np.int64)
        if fb.delay_model == "batch":
            return np.full(rows.shape, (step // fb.delay + 1) * fb.delay - 1, dtype=np.int64)
        assert self._rng is not None and fb.delay_max is not None
        u = self._rng.uniform(trial, 1, rows=rows)[:, 0]
        return step + fb.delay + np.floor(u * (fb.delay_max - fb.delay + 1)).astype(np.int64)


class PendingLedger:
    """Results in flight, ``capacity`` slots per replica."""

    def __init__(self, replicas: int, capacity: int) -> None:
        self.used = np.zeros((replicas, capacity), dtype=bool)
        self.due = np.zeros((replicas, capacity), dtype=np.int64)
        self.bandit = np.zeros((replicas, capacity), dtype=np.int64)
        self.arm = np.zeros((replicas, capacity), dtype=np.int64)
        self.reward = np.zeros((replicas, capacity))
        self.in_flight = np.zeros(replicas, dtype=np.int64)

    def push(self, rows, bandit: int, arms, rewards, due) -> None:
        """Hold results for ``rows`` (unique, each with a free slot)."""
        slot = np.argmin(self.used[rows], axis=1)
        self.used[rows, slot] = True
        self.due[rows, slot] = due
        self.bandit[rows, slot] = bandit
        self.arm[rows, slot] = arms
        self.reward[rows, slot] = rewards
        self.in_flight[rows] += 1

    def release(self, step: int) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
        """Yield waves ``(bandit, rows, arms, rewards)`` of results due by ``step``.

        Each wave has at most one result per replica, oldest due first.
        """
        if not self.in_flight.any():
            return
        while True:
            ready = self.used & (self.due <= step)
            rows = np.flatnonzero(ready.any(axis=1))
            if rows.size == 0:
                return
            slot = np.argmin(np.where(ready[rows], self.due[rows], np.iinfo(np.int64).max), axis=1)
            self.used[rows, slot] = False
            self.in_flight[rows] -= 1
            bandits = self.bandit[rows, slot]
            for b in np.unique(bandits):
                sel = bandits == b
                r, s = rows[sel], slot[sel]
                yield int(b), r, self.arm[r, s], self.reward[r, s]
