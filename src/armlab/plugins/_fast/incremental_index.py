"""An arm-wise index kept current by recomputing only the arms just observed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins import _fast
from armlab.plugins._fast.kept_per_arm import KeptPerArm
from armlab.stats import ArmStats

__all__ = ["IncrementalIndex", "IndexAt"]

#: ``(stats, rows, flat) -> values``: the index at flat positions ``flat`` (1-d) of replicas
#: ``rows`` (constants per replica are looked up by ``rows``).
IndexAt = Callable[[ArmStats, np.ndarray, np.ndarray], np.ndarray]


class IncrementalIndex(KeptPerArm):
    """An index whose value for an arm depends only on that arm's statistics (APT, UCB-E,
    UCBEV), kept as an ``(R, K)`` array.

    Each step changes the statistics of one arm per replica, so :meth:`observed` recomputes
    those ``R`` entries instead of all ``R x K``.  With results in flight a dispatch changes an
    arm's pull count without telling the policy, so then :meth:`current` recomputes the whole
    index.  Reference path: :meth:`current` recomputes it at every call.
    """

    def __init__(self, index_at: IndexAt, replicas: int, n_arms: int) -> None:
        self.index_at = index_at
        self._index = np.empty((replicas, n_arms))
        self._flat = self._index.reshape(-1)
        self._all_rows = np.repeat(np.arange(replicas), n_arms)
        self._all_flat = np.arange(replicas * n_arms)
        self._fresh = False

    def compute(self, stats: ArmStats) -> np.ndarray:
        """The whole index ``(R, K)``, recomputed (a new array)."""
        return self.index_at(stats, self._all_rows, self._all_flat).reshape(self._index.shape)

    def current(self, stats: ArmStats) -> np.ndarray:
        """The index now (the kept array: read it, do not keep it)."""
        if not (_fast.enabled() and self._fresh and stats.all_observed()):
            self._index[...] = self.compute(stats)
            self._fresh = True
        return self._index

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Recompute the entries of arms whose results were just folded into ``stats``."""
        flat = stats.flat_index(rows, arms)
        self._flat[flat] = self.index_at(stats, rows, flat)

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Recompute every arm of replicas ``rows`` (after a change of their constants)."""
        if rows.size:
            k = stats.n_arms
            flat = (rows[:, None] * k + np.arange(k)).reshape(-1)
            self._flat[flat] = self.index_at(stats, np.repeat(rows, k), flat)
