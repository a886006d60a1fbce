"""The ``hand`` fixture of the regret tests: one policy on a regret problem, fed rewards by the test.

Runs in the engine use :func:`armlab.testing.simulate_policy` directly."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from armlab.plugins.interfaces import Policy
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats

UNBOUNDED = (-float("inf"), float("inf"))


class Hand:
    """One policy on ``replicas`` copies of a ``n_arms`` bandit, fed rewards by the test."""

    def __init__(self, policy: Policy, n_arms: int, budget: int = 1000, replicas: int = 1,
                 reward_range: tuple[float, float] = UNBOUNDED) -> None:
        self.policy = policy
        self.problem = Problem(objective=Objective.REGRET, budget=budget, n_arms=n_arms,
                               reward_range=reward_range, source="hand")
        policy.reset(self.problem, replicas, KeyedRandom(0, "policy", replicas=np.arange(replicas)))
        self.stats = ArmStats(replicas, n_arms)
        self.rows = np.arange(replicas)

    def select(self) -> np.ndarray:
        return self.policy.select(self.stats)

    def feed(self, arms, rewards) -> None:
        """Dispatch ``arms`` (one per replica) and observe ``rewards`` at once."""
        arms = np.broadcast_to(np.asarray(arms, dtype=np.int64), self.rows.shape).copy()
        rewards = np.broadcast_to(np.asarray(rewards, dtype=np.float64), self.rows.shape).copy()
        self.stats.dispatch(self.rows, arms)
        self.stats.observe(self.rows, arms, rewards)
        self.policy.update(self.stats, self.rows, arms, rewards)

    def step(self, reward_of: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """Select, then feed ``reward_of(arms)``; return the arms."""
        arms = self.select()
        self.feed(arms, reward_of(arms))
        return arms


@pytest.fixture(scope="session")
def hand() -> type[Hand]:
    return Hand
