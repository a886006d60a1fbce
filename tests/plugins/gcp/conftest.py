"""The ``hand`` fixture: set up a greedy-confidence-pursuit arm rule on crafted statistics."""

from __future__ import annotations

import numpy as np
import pytest

from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats


class Hand:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    @staticmethod
    def start(policy, n_arms=3, replicas=1, budget=5000, top_m=1, reward_range=(0.0, 1.0)):
        objective = Objective.TOP_M if top_m > 1 else Objective.BEST_ARM
        problem = Problem(objective=objective, budget=budget, n_arms=n_arms, top_m=top_m,
                          source="test", reward_range=reward_range)
        policy.reset(problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
        return ArmStats(replicas, n_arms)

    @staticmethod
    def fill(stats, counts, successes):
        """Give every replica the same observed Bernoulli statistics."""
        counts = np.asarray(counts, dtype=float)
        stats.counts[:] = counts.astype(np.int64)
        stats.means[:] = np.asarray(successes) / counts
        stats.observed[:] = int(counts.sum())
        stats.dispatched[:] = int(counts.sum())


@pytest.fixture
def hand() -> type[Hand]:
    return Hand
