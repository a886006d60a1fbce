"""Fixtures for the fixed-budget policies: run a policy by hand to the end, on alternating rewards.

Problems, statistics and single pulls come from :mod:`armlab.testing` (``problem_with_truth``,
``start_policy``, ``pull_once``, ``simulate_policy``), imported by the tests themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from armlab.plugins.interfaces import STOPPED, Policy
from armlab.stats import ArmStats
from armlab.testing import pull_once


def _run_to_end(policy: Policy, stats: ArmStats, reward_of: Callable[[int], float]) -> list[int]:
    arms = []
    while len(arms) < policy.problem.budget:
        arm = pull_once(policy, stats, reward_of)
        if arm == STOPPED:
            break
        arms.append(arm)
    return arms


def _alternating(means: Sequence[float], spread: float = 0.01) -> Callable[[int], float]:
    seen: dict[int, int] = {}

    def reward(arm: int) -> float:
        seen[arm] = seen.get(arm, 0) + 1
        return means[arm] + (spread if seen[arm] % 2 == 0 else -spread)

    return reward


@pytest.fixture(scope="session")
def run_to_end() -> Callable[..., list[int]]:
    """``run_to_end(policy, stats, reward_of)``: pull until the policy stops (or the budget is
    spent); returns the arms pulled."""
    return _run_to_end


@pytest.fixture(scope="session")
def alternating() -> Callable[..., Callable[[int], float]]:
    """``alternating(means, spread=0.01)``: deterministic rewards ``mean -+ spread`` alternating
    per arm (so the sample variance is positive)."""
    return _alternating
