"""Round robin over the active arms, counted from a per-arm start (Sequential Halving's
stages, Successive Rejects' phases)."""

from __future__ import annotations

import numpy as np

from armlab.stats import ArmStats

__all__ = ["RoundRobin"]

#: Start given to eliminated arms, so their pulls since the start exceed any real count.
_ELIMINATED = -(2**61)


class RoundRobin:
    """The active arm with the fewest pulls (observed + pending) since its start, lowest index
    first, for every replica: one subtraction and one argmin over ``(R, K)``.

    Eliminated arms are folded into the starts (:meth:`restart` reads ``stats.active``), so
    no mask is applied per step; call :meth:`restart` whenever arms of a replica are
    eliminated or its counting restarts.
    """

    def __init__(self, replicas: int, n_arms: int) -> None:
        self._start = np.zeros((replicas, n_arms), dtype=np.int64)
        self._pulls = np.empty((replicas, n_arms), dtype=np.int64)

    def restart(self, stats: ArmStats, rows: np.ndarray, start: np.ndarray | int) -> None:
        """Count the active arms of ``rows`` from ``start`` (pulls, per arm or one for all)."""
        self._start[rows] = np.where(stats.active[rows], start, _ELIMINATED)

    def pulls(self, stats: ArmStats) -> np.ndarray:
        """Pulls since the start of the active arms; eliminated arms get more than 2**61.

        A buffer overwritten at the next call.  Without results in flight (every trial
        dispatched was observed) the pulls are the counts, which saves a pass.
        """
        if (stats.dispatched == stats.observed).all():
            return np.subtract(stats.counts, self._start, out=self._pulls)
        np.add(stats.counts, stats.pending, out=self._pulls)
        return np.subtract(self._pulls, self._start, out=self._pulls)

    def select(self, stats: ArmStats) -> np.ndarray:
        """Each replica's next arm ``(R,)``."""
        return np.argmin(self.pulls(stats), axis=1)
