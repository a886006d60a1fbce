"""Uniform allocation: round robin, or a uniformly random arm at every step."""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from armlab.plugins._fast.active_arms import fewest_pulls, uniform_active_arm
from armlab.plugins.interfaces import PluginParams, Policy
from armlab.plugins.propensity import Propensities, one_hot
from armlab.stats import ArmStats


class UniformParams(PluginParams):
    order: Literal["round-robin", "random"] = Field(
        "round-robin",
        description="round-robin: arm (t - 1) mod K at step t (the heterogeneous-variance paper's Unif); random: an "
        "arm drawn uniformly at every step, keyed by (seed, replica, step) (the thresholding-bandits paper's UA)",
    )


class Uniform(Policy):
    """Uniform allocation over the active arms; recommends by empirical means.

    ``order = "round-robin"``: pull the active arm with the fewest pulls (observed +
    pending), lowest index first, i.e. arm ``(t - 1) mod K`` at step ``t``: baseline "Unif"
    of the heterogeneous-variance paper (docs/algorithms/fixed-budget.md).
    ``order = "random"``: pull an active arm drawn uniformly at random, with replacement,
    independently of the history: "UA" of the thresholding-bandits paper
    (docs/algorithms/thresholding.md; the authors' code draws ``random.randint``); the draw is
    a pure function of (seed, replica, step), so unpulled arms are possible and never counted
    above a threshold.  No reward assumption.  Pending pulls count in the round robin, so
    delayed feedback does not change either schedule.
    """

    honours_inactive_arms = True  # it selects among the active arms only

    name = "uniform"
    Params = UniformParams

    def propensities(self, stats: ArmStats, chosen: np.ndarray | None = None) -> Propensities:
        """Exact: ``1 / |active|`` per active arm (random order), 1 for the next arm of the round robin
        (``chosen``, when given: it is that arm)."""
        if self.params.order == "random":
            return stats.active / stats.active.sum(axis=1, keepdims=True), None
        return one_hot(fewest_pulls(stats) if chosen is None else chosen, stats.n_arms), None

    def select(self, stats: ArmStats) -> np.ndarray:
        if self.params.order == "random":
            return uniform_active_arm(stats, self.rng.uniform(stats.dispatched, 1)[:, 0])
        return fewest_pulls(stats)
