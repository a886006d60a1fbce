"""Uniform allocation: round robin, or a uniformly random arm at every step."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins.interfaces import PluginParams, Policy
from armlab.stats import ArmStats


class UniformParams(PluginParams):
    order: Literal["round-robin", "random"] = Field(
        "round-robin",
        description="round-robin: arm (t - 1) mod K at step t (the heterogeneous-variance paper's Unif); random: an arm drawn "
        "uniformly at every step, keyed by (seed, replica, step) (the thresholding-bandits paper's UA)",
    )


class Uniform(Policy):
    """Uniform allocation over the active arms; recommends by empirical means.

    ``order = "round-robin"``: pull the active arm with the fewest pulls (observed +
    pending), lowest index first, i.e. arm ``(t - 1) mod K`` at step ``t`` -- baseline "Unif"
    of the heterogeneous-variance paper (docs/algorithms/fixed-budget.md).  ``order = "random"``: pull an active arm drawn uniformly at
    random, with replacement, independently of the history -- "UA" of the thresholding-bandits paper (docs/algorithms/thresholding.md;
    the authors' code draws ``random.randint``); the draw is a pure function of (seed,
    replica, step), so unpulled arms are possible and never counted above a threshold.
    No reward assumption.  Pending pulls count in the round robin, so delayed feedback does
    not change either schedule.

    Speed: the round robin is one argmin over ``(R, K)`` when every arm is active and no
    trial is in flight (see :meth:`_round_robin`).
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "uniform"
    Params = UniformParams

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.order == "random":
            return self._random_arm(stats)
        return self._round_robin(stats)

    def _round_robin(self, stats: ArmStats) -> np.ndarray:
        """The active arm with the fewest pulls, lowest index first.  With every arm active
        no mask is needed, and with every trial observed (:meth:`ArmStats.all_observed`) the
        pulls are the counts: one pass instead of three."""
        if not stats.active.all():
            return np.argmin(np.where(stats.active, stats.pulls, np.iinfo(np.int64).max), axis=1)
        return np.argmin(stats.counts if stats.all_observed() else stats.pulls, axis=1)

    def _random_arm(self, stats: ArmStats) -> np.ndarray:
        u = self.rng.uniform(stats.dispatched, 1)[:, 0]
        if stats.active.all():  # the usual case: the rank is the arm
            return np.floor(u * stats.n_arms).astype(np.int64)
        n_active = stats.active.sum(axis=1)
        rank = np.floor(u * n_active).astype(np.int64)  # u < 1, so rank < n_active
        return np.argmax(np.cumsum(stats.active, axis=1) > rank[:, None], axis=1)
