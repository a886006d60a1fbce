"""Per-arm values kept between steps, recomputed at the arms just observed."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from armlab.plugins import _fast
from armlab.plugins._fast.kept_per_arm import KeptPerArm
from armlab.stats import ArmStats

__all__ = ["KeptArmValues", "ValuesAt"]

#: ``(stats, rows, at) -> values``: the values at flat positions ``at``
#: (:meth:`ArmStats.flat_index`, 1-d) of replicas ``rows`` (one per position, for constants
#: per replica), flat.  With ``whole_arrays`` both are ``slice(None)`` for every arm.
ValuesAt = Callable[[ArmStats, "np.ndarray | slice", "np.ndarray | slice"], np.ndarray]


class KeptArmValues(KeptPerArm):
    """Values ``(R, K)`` of which an arm's entry changes only with that arm's statistics and
    constants of its replica (whose changes the owner reports by :meth:`refresh_rows`): the
    thresholding indices (APT, UCB-E, UCBEV, AugUCB), UGapE's widths, Sequential Halving's
    per-stage ratios (SHVar, SHAdaVar).

    Each step changes the statistics of one arm per replica, so :meth:`observed` recomputes
    those ``R`` entries instead of all ``R x K``.  While results are in flight a dispatch
    changes an arm's pulls without telling the owner, so :meth:`current` then recomputes all
    of them.  Reference path: :meth:`current` recomputes all at every call.

    One switch, ``whole_arrays``, says how *all* are recomputed:

    * ``False`` (for values that read constants per replica by row): by gathers at every flat
      position with its row, and :meth:`refresh_rows` recomputes the arms of those rows at once;
    * ``True`` (for values that need no row): ``values_at(stats, slice(None), slice(None))``,
      whole arrays without gathers, and :meth:`refresh_rows` leaves all to the next
      :meth:`current`.  Gathers made delayed SHVar 0.65x of whole arrays (K = 100, R = 500),
      which recompute all at every step while results are in flight.
    """

    def __init__(self, values_at: ValuesAt, replicas: int, n_arms: int, *, whole_arrays: bool = False) -> None:
        self.values_at = values_at
        self.whole_arrays = whole_arrays
        self._values = np.empty((replicas, n_arms))
        self._flat = self._values.reshape(-1)  # a view
        if not whole_arrays:
            self._all_rows = np.repeat(np.arange(replicas), n_arms)
            self._all_flat = np.arange(replicas * n_arms)
        self._current = False  # current, but for the results reported since

    def compute(self, stats: ArmStats) -> np.ndarray:
        """All values ``(R, K)``, recomputed (a new array)."""
        if self.whole_arrays:
            values = self.values_at(stats, slice(None), slice(None))
        else:
            values = self.values_at(stats, self._all_rows, self._all_flat)
        return values.reshape(self._values.shape)

    def current(self, stats: ArmStats) -> np.ndarray:
        """The values now (with the speed path the kept array: read it, do not keep it)."""
        if not _fast.enabled():
            return self.compute(stats)
        if not (self._current and stats.all_observed()):
            self._values[...] = self.compute(stats)
            self._current = True
        return self._values

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """Results of ``arms`` of replicas ``rows`` were just folded into ``stats``."""
        self.observed_at(stats, rows, stats.flat_index(rows, arms))

    def observed_at(self, stats: ArmStats, rows: np.ndarray, flat: np.ndarray) -> None:
        """:meth:`observed`, for an owner that has the flat positions of those arms at hand."""
        if self._current:
            self._flat[flat] = self.values_at(stats, rows, flat)

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """The constants of replicas ``rows`` changed: recompute their arms (now, or all at the
        next :meth:`current` with ``whole_arrays``)."""
        if not (rows.size and self._current):
            return
        if self.whole_arrays:
            self._current = False
            return
        k = self._values.shape[1]
        flat = (rows[:, None] * k + np.arange(k)).reshape(-1)
        self._flat[flat] = self.values_at(stats, np.repeat(rows, k), flat)
