"""The round-robin warm-up that the greedy-confidence-pursuit paper's multi-bandit runs start with (authors' code)."""

from __future__ import annotations

import numpy as np

from armlab.stats import ArmStats

__all__ = ["WarmUp"]


class WarmUp:
    """The greedy-confidence-pursuit paper's multi-bandit warm-up: ``per_arm`` pulls of every arm of every bandit.

    While a replica has a bandit with an arm below ``per_arm`` pulls (pending included), the
    warm-up picks, among such bandits, the one with the fewest pulls (lowest index on ties:
    round-robin over bandits), and inside a bandit the arm with the fewest pulls.  Pulls only
    grow, so warmed-up (replica, bandit) pairs are remembered and never checked again.
    """

    def __init__(self, per_arm: int, replicas: int, bandits: int) -> None:
        self.per_arm = per_arm
        self.warmed = np.zeros((replicas, bandits), dtype=bool)
        self.done = np.zeros(replicas, dtype=bool)  # every bandit warmed up

    def __repr__(self) -> str:
        return f"WarmUp(per_arm={self.per_arm}, done={int(self.done.sum())}/{self.done.size})"

    def bandits(self, stats: list[ArmStats]) -> np.ndarray:
        """The bandit to warm up per replica, ``-1`` where the warm-up is over."""
        choice = np.full(self.done.size, -1, dtype=np.int64)
        rows = np.flatnonzero(~self.done)
        if rows.size:
            pulls = [st.pulls[rows] for st in stats]
            short = np.stack([p.min(axis=1) < self.per_arm for p in pulls], axis=1)
            self.warmed[rows] = ~short
            self.done[rows] = ~short.any(axis=1)
            totals = np.stack([p.sum(axis=1) for p in pulls], axis=1)
            pick = np.argmin(np.where(short, totals, np.iinfo(np.int64).max), axis=1)
            choice[rows] = np.where(short.any(axis=1), pick, -1)
        return choice

    def arms(self, stats: list[ArmStats], bandits: np.ndarray) -> np.ndarray:
        """The least-pulled arm of each replica's bandit while that bandit is short, else -1."""
        arms = np.full(self.done.size, -1, dtype=np.int64)
        rows = np.flatnonzero(bandits >= 0)
        rows = rows[~self.warmed[rows, bandits[rows]]]
        for b in np.unique(bandits[rows]):
            mine = rows[bandits[rows] == b]
            pulls = stats[b].pulls[mine]
            short = pulls.min(axis=1) < self.per_arm
            self.warmed[mine[~short], b] = True
            arms[mine[short]] = np.argmin(pulls[short], axis=1)
        return arms
