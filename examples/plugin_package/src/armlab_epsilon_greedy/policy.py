"""The ``epsilon-greedy`` policy (the template ships epsilon-greedy), vectorized over replicas."""

from __future__ import annotations

import numpy as np
from pydantic import Field

from armlab import ArmStats, Objective, PluginParams, Policy


class EpsilonGreedyParams(PluginParams):
    epsilon: float = Field(0.1, ge=0.0, le=1.0, description="probability of pulling a uniformly random arm")


class EpsilonGreedy(Policy):
    """Epsilon-greedy (Sutton & Barto 2018, sec. 2.2): pull each arm once, then the arm with the
    best observed mean, or with probability epsilon a uniformly random arm.

    Any real rewards.  Pending pulls count in the first round (an arm whose first result is
    still in flight is not requested again); the greedy choice uses observed means only
    (ties and no results yet: lowest index).  Draws are keyed by (replica, trial index).
    """

    name = "epsilon-greedy"
    Params = EpsilonGreedyParams
    objectives = frozenset({Objective.REGRET, Objective.BEST_ARM})

    def select(self, stats: ArmStats) -> np.ndarray:
        unpulled = stats.pulls == 0
        draws = self.rng.uniform(stats.dispatched, 2)  # (R, 2): explore?, which arm
        random_arm = np.minimum((draws[:, 1] * stats.n_arms).astype(np.int64), stats.n_arms - 1)
        greedy = np.argmax(np.where(stats.counts > 0, stats.means, -np.inf), axis=1)
        arms = np.where(draws[:, 0] < self.params.epsilon, random_arm, greedy)
        return np.where(unpulled.any(axis=1), np.argmax(unpulled, axis=1), arms)
