"""Helpers for the regret suite's tests: drive one policy by hand, or run it in the engine."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import Policy, RewardSource
from armlab.problem import Objective, Problem
from armlab.random import KeyedRandom
from armlab.stats import ArmStats
from armlab.testing import simulate_policy

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


def simulate(policy_factory: Callable[[], Policy], source: RewardSource, budget: int, *, replicas: int = 4,
             seed: int = 0, delay: int = 0, checkpoints: list[int] | None = None) -> Simulation:
    """Run ``policy_factory()`` to the end on ``source`` in the vectorized engine."""
    return simulate_policy(policy_factory, source, budget=budget, objective=Objective.REGRET, replicas=replicas,
                           seed=seed, delay=delay, checkpoints=checkpoints)


@pytest.fixture(scope="session")
def run_sim() -> Callable[..., Simulation]:
    return simulate
