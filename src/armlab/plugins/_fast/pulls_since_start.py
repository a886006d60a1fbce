"""The pulls of every arm since a per-arm start, as a round robin reads them, without a mask
and, for an owner that reports its results, without a pass over ``(R, K)`` per step."""

from __future__ import annotations

import numpy as np

from armlab.plugins import _fast
from armlab.plugins._fast.kept_per_arm import KeptPerArm
from armlab.stats import ArmStats

__all__ = ["ELIMINATED", "PullsSinceStart"]

#: What an eliminated arm counts as (at least): more pulls than any active arm can have.
ELIMINATED = 2**62


class PullsSinceStart(KeptPerArm):
    """``N_i``, the pulls (observed + pending) of every arm since its start, ``(R, K)`` int64,
    and at least :data:`ELIMINATED` for the arms eliminated: the values whose argmin is the
    round robin over the active arms (:class:`~armlab.plugins.round_robin.RoundRobin`).

    Definition, and reference path: ``where(active, counts + pending - start, ELIMINATED)``,
    computed at every call: four passes over ``(R, K)``.  Speed paths, each exact:

    * the start of an arm that is eliminated when the owner sets it (:meth:`count_from` reads
      ``stats.active``) is ``-ELIMINATED``, so no mask is applied per step; the owner calls
      :meth:`count_from` whenever it eliminates arms;
    * without results in flight (:meth:`ArmStats.all_observed`) the pulls are the counts;
    * an owner that reports every result (:meth:`observed`) gets the array kept between
      steps: only the entries of the arms just observed are recomputed (``R`` of them), and
      the whole array while results are in flight, since a dispatch changes an arm's pulls
      without telling the owner.

    Against the definition, the three make SH 1.6x, Successive Rejects 1.7x and UCB-Improved
    1.4x faster end to end (K = 100, R = 500); the kept array alone 1.07x (SH) and 1.17x (SR),
    the counts alone 1.1x for UCB-Improved, which does not report its results.
    """

    def __init__(self, replicas: int, n_arms: int) -> None:
        self._start = np.zeros((replicas, n_arms), dtype=np.int64)  # -ELIMINATED where eliminated
        self._pulls = np.zeros((replicas, n_arms), dtype=np.int64)
        self._flat_start, self._flat_pulls = self._start.reshape(-1), self._pulls.reshape(-1)  # views
        self._reported = False  # the owner reports its results: the kept array may be used
        self._current = False  # the kept array is current, but for the results reported since

    def count_from(self, stats: ArmStats, rows: np.ndarray, start: np.ndarray | int) -> None:
        """Count the active arms of ``rows`` from ``start`` (pulls, per arm or one for all)."""
        self._start[rows] = np.where(stats.active[rows], start, -ELIMINATED)
        self.refresh_rows(stats, rows)

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """Replicas ``rows`` changed: the whole array is recomputed at the next :meth:`current`."""
        self._current = False

    def current(self, stats: ArmStats) -> np.ndarray:
        """The pulls since the start now (with the speed paths: the kept array; read it, do
        not keep it)."""
        if not _fast.enabled():
            return np.where(stats.active, stats.pulls - self._start, ELIMINATED)
        nothing_in_flight = stats.all_observed()
        if not (self._reported and self._current and nothing_in_flight):
            np.subtract(stats.counts if nothing_in_flight else stats.pulls, self._start, out=self._pulls)
            self._current = True
        return self._pulls

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> None:
        """The results of ``arms`` of replicas ``rows`` were just folded into ``stats``."""
        self._reported = True
        if self._current:
            flat = stats.flat_index(rows, arms)
            self._flat_pulls[flat] = stats.pulls_at(flat) - self._flat_start[flat]
