"""Whether every active arm of a replica has its quota of results, known without reading every
arm (the rounds of Median Elimination and UCB-Improved)."""

from __future__ import annotations

import numpy as np

from armlab.plugins import _fast
from armlab.stats import ArmStats

__all__ = ["ResultQuota"]


class ResultQuota:
    """Per replica, a quota ``q`` of results that every active arm must reach before its round
    ends, and the number of active arms still short of it.

    A round-based policy checks at every step whether a replica's round is complete: every
    active arm has ``q`` results (counted by the policy: since the round began, or in all).
    That is a pass over ``(R, K)``; instead the number of arms short of the quota is set when
    a round starts (:meth:`start`) and counted down as arms reach it (:meth:`observed`), so
    :meth:`complete` is O(R).  The policy calls :meth:`start` again whenever it deactivates
    arms of a replica.  1.4x end to end for Median Elimination and UCB-Improved (K = 100,
    R = 500).

    Reference path: :meth:`complete` compares every arm's count with the quota.
    """

    def __init__(self, replicas: int, n_arms: int, quota: int) -> None:
        """Every replica starts a round that asks ``quota`` results of each of its ``n_arms`` arms."""
        self.quota = np.full(replicas, quota, dtype=np.int64)
        self._short = np.full(replicas, n_arms if quota > 0 else 0, dtype=np.int64)  # active arms short of it

    def start(self, stats: ArmStats, rows: np.ndarray, quota: np.ndarray, counts: np.ndarray) -> None:
        """Replicas ``rows`` begin a round that asks ``quota`` results of each active arm, which
        now have ``counts`` ``(len(rows), K)``."""
        self.quota[rows] = quota
        self._short[rows] = (stats.active[rows] & (counts < np.asarray(quota)[..., None])).sum(axis=1)

    def observed(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray, counts: np.ndarray) -> None:
        """One result of arm ``arms[j]`` of replica ``rows[j]`` (unique rows) was counted: it
        has ``counts[j]`` now."""
        reached = (counts == self.quota[rows]) & stats.active[rows, arms]
        self._short[rows[reached]] -= 1

    def complete(self, stats: ArmStats, counts: np.ndarray) -> np.ndarray:
        """Whether every active arm of each replica has reached its quota ``(R,)``, given every
        arm's count ``(R, K)``."""
        if not _fast.enabled():
            return ((counts >= self.quota[:, None]) | ~stats.active).all(axis=1)
        return self._short == 0
