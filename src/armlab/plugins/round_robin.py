"""Round robin over the active arms, counted from a per-arm start: Sequential Halving's stages,
Successive Rejects' phases, the rounds of UCB-Improved and Median Elimination."""

from __future__ import annotations

import numpy as np

from armlab.plugins._fast.pulls_since_start import PullsSinceStart
from armlab.stats import ArmStats

__all__ = ["RoundRobin"]


class RoundRobin:
    """For every replica, the active arm with the fewest pulls (observed + pending) since its
    start, lowest index first.

    The owner calls :meth:`restart` whenever it eliminates arms of a replica or starts
    counting anew (the arms inactive then are out until the next restart), and may report
    every result with :meth:`observed`, which lets the pulls be kept between steps
    (:class:`~armlab.plugins._fast.pulls_since_start.PullsSinceStart`).
    """

    def __init__(self, replicas: int, n_arms: int) -> None:
        self._pulls = PullsSinceStart(replicas, n_arms)

    def restart(self, stats: ArmStats, rows: np.ndarray, start: np.ndarray | int) -> None:
        """Count the active arms of ``rows`` from ``start`` (pulls, per arm or one for all)."""
        self._pulls.count_from(stats, rows, start)

    def pulls(self, stats: ArmStats) -> np.ndarray:
        """Pulls since the start ``(R, K)`` of the active arms; eliminated arms get at least
        2**62.  Read it, do not keep it (it may be overwritten later)."""
        return self._pulls.current(stats)

    def select(self, stats: ArmStats) -> np.ndarray:
        """Each replica's next arm ``(R,)``."""
        return self.pulls(stats).argmin(axis=1)

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Results of ``arms`` of replicas ``rows`` were folded into ``stats`` (optional)."""
        self._pulls.observed(stats, rows, arms)
