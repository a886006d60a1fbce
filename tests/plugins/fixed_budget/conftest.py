"""Fixtures for the fixed-budget policies: drive a policy by hand, or run it in the engine."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from armlab.orchestrator.montecarlo.engine import Simulation
from armlab.plugins.interfaces import STOPPED, Policy, RewardSource
from armlab.plugins.sources.simulated import Gaussian
from armlab.stats import ArmStats
from armlab.testing import problem_with_truth, pull_once, simulate_policy, start_policy

ONE = np.array([0])


def run_to_end(policy: Policy, stats: ArmStats, reward_of: Callable[[int], float]) -> list[int]:
    """Pull until the policy stops (or the budget is spent); return the arms pulled."""
    arms = []
    while len(arms) < policy.problem.budget:
        arm = pull_once(policy, stats, reward_of)
        if arm == STOPPED:
            break
        arms.append(arm)
    return arms


def alternating(means: Sequence[float], spread: float = 0.01) -> Callable[[int], float]:
    """Deterministic rewards ``mean -+ spread`` alternating per arm (sample variance > 0)."""
    seen: dict[int, int] = {}

    def reward(arm: int) -> float:
        seen[arm] = seen.get(arm, 0) + 1
        return means[arm] + (spread if seen[arm] % 2 == 0 else -spread)

    return reward


def simulate(policy_factory: Callable[[], Policy], source: RewardSource | None = None, *, budget: int,
             means: Sequence[float] | None = None, variances: float | Sequence[float] = 0.25,
             **options: Any) -> Simulation:
    """Run a policy to the end in the engine (on ``source``, or Gaussian arms ``means``)."""
    if source is None:
        spread = variances if np.isscalar(variances) else list(variances)
        source = Gaussian({"means": list(means), "variances": spread})
    return simulate_policy(policy_factory, source, budget=budget, **options)


class Drive:
    """Namespace handed to tests (helpers cannot be imported across test files)."""

    ONE = ONE
    problem = staticmethod(problem_with_truth)
    start = staticmethod(start_policy)
    pull = staticmethod(pull_once)
    run_to_end = staticmethod(run_to_end)
    alternating = staticmethod(alternating)
    simulate = staticmethod(simulate)


@pytest.fixture(scope="session")
def drive() -> type[Drive]:
    return Drive
