"""Framework-owned per-arm statistics over replicas, shape ``(R, K)``.

Policies read these arrays instead of re-implementing bookkeeping.  ``counts``, ``means`` and
``m2`` (Welford's sum of squared deviations) describe *observed* rewards; ``pending`` counts
pulls dispatched whose result has not arrived yet (delayed feedback, trials in flight);
``active`` is the elimination mask policies may clear.  ``dispatched`` is the number of
trials each replica has started, observed or not, and ``observed`` the number of results
folded in (both shape ``(R,)``).
"""

from __future__ import annotations

import numpy as np

__all__ = ["ArmStats"]


class ArmStats:
    """Observed and pending statistics of ``replicas`` copies of one ``n_arms``-armed bandit."""

    def __init__(self, replicas: int, n_arms: int) -> None:
        self.replicas = replicas
        self.n_arms = n_arms
        self.counts = np.zeros((replicas, n_arms), dtype=np.int64)
        self.means = np.zeros((replicas, n_arms), dtype=np.float64)
        self.m2 = np.zeros((replicas, n_arms), dtype=np.float64)
        self.pending = np.zeros((replicas, n_arms), dtype=np.int64)
        self.active = np.ones((replicas, n_arms), dtype=bool)
        self.dispatched = np.zeros(replicas, dtype=np.int64)
        self.observed = np.zeros(replicas, dtype=np.int64)

    def __repr__(self) -> str:
        return (
            f"ArmStats(replicas={self.replicas}, n_arms={self.n_arms}, "
            f"observed={int(self.counts.sum())}, pending={int(self.pending.sum())})"
        )

    @property
    def pulls(self) -> np.ndarray:
        """Observed plus pending pulls per arm: what a schedule should count."""
        return self.counts + self.pending

    def variances(self, ddof: int = 0) -> np.ndarray:
        """Empirical variances; ``ddof=0`` is the biased ``M2/n``, ``ddof=1`` the sample one.

        Entries with too few observations (``n <= ddof``) are 0.
        """
        denom = self.counts - ddof
        out = np.zeros_like(self.m2)
        np.divide(self.m2, denom, out=out, where=denom > 0)
        return out

    def dispatch(self, rows: np.ndarray, arms: np.ndarray) -> None:
        """Record trials started on ``arms`` for replicas ``rows`` (unique rows)."""
        self.pending[rows, arms] += 1
        self.dispatched[rows] += 1

    def observe(self, rows: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Fold one result per row into the Welford statistics (``rows`` must be unique)."""
        self.pending[rows, arms] -= 1
        self.observed[rows] += 1
        n = self.counts[rows, arms] + 1
        self.counts[rows, arms] = n
        mean = self.means[rows, arms]
        delta = rewards - mean
        mean = mean + delta / n
        self.means[rows, arms] = mean
        self.m2[rows, arms] += delta * (rewards - mean)

    def release(self, rows: np.ndarray, arms: np.ndarray) -> None:
        """Drop pending trials that ended without a reward (failed, timed out, abandoned)."""
        self.pending[rows, arms] -= 1
