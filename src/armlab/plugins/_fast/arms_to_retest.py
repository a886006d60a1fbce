"""The arms whose verdict under an arm-wise test can have changed since it was last run."""

from __future__ import annotations

import numpy as np

from armlab.plugins import _fast
from armlab.stats import ArmStats

__all__ = ["ArmsToRetest"]


class ArmsToRetest:
    """Which arms an arm-wise test (an elimination rule) must look at after results arrive.

    The test's verdict for an arm depends only on that arm's observed statistics and on
    constants of its replica.  Once every arm of a replica has been tested, a verdict can
    change only for an arm whose statistics changed (the arm whose result just arrived) or
    after the replica's constants changed (:meth:`refresh_rows`, the verb of
    :class:`~armlab.plugins._fast.kept_per_arm.KeptPerArm`).  :meth:`after_results`
    returns those arms: one per replica per step instead of all ``K``, which saves the test
    over ``(R, K)`` at every step.

    Reference path (while :func:`armlab.plugins._fast.reference_paths` is active): every arm
    of every replica that received a result, at every call.
    """

    def __init__(self, replicas: int, n_arms: int) -> None:
        self.n_arms = n_arms
        self._every_arm = np.ones(replicas, dtype=bool)  # none tested yet, or constants changed

    def refresh_rows(self, stats: ArmStats, rows: np.ndarray) -> None:
        """The constants of replicas ``rows`` changed: test all their arms at their next result."""
        self._every_arm[rows] = True

    def after_results(self, stats: ArmStats, rows: np.ndarray, arms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The arms to test once results of ``arms`` for replicas ``rows`` (unique) are in
        ``stats``: ``(replica, flat position)`` of each (:meth:`ArmStats.flat_index`), 1-d."""
        every = self._every_arm[rows] if _fast.enabled() else np.ones(rows.size, dtype=bool)
        whole = rows[every]
        self._every_arm[whole] = False
        if whole.size == 0:
            return rows, stats.flat_index(rows, arms)
        one = ~every
        k = self.n_arms
        return (
            np.concatenate([rows[one], np.repeat(whole, k)]),
            np.concatenate([stats.flat_index(rows[one], arms[one]), (whole[:, None] * k + np.arange(k)).reshape(-1)]),
        )
